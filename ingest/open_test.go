package ingest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestIngestRefusesFIFOInputs: a FIFO given as features (copied or in place), labels or edges
// (.npy or text) is refused at once, naming it, instead of an open that waits for a writer.
func TestIngestRefusesFIFOInputs(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"x.npy", "e.npy", "e.csv", "y.npy"} {
		if err := unix.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
	}
	fifo := func(name string) string { return filepath.Join(dir, name) }
	for i, opt := range []Options{
		{Features: fifo("x.npy")},
		{Features: fifo("x.npy"), FeaturesInPlace: true},
		{Edges: fifo("e.npy")},
		{Edges: fifo("e.csv")},
		{Labels: fifo("y.npy")},
	} {
		opt.Out = filepath.Join(dir, "out", string(rune('a'+i)))
		done := make(chan error, 1)
		go func() { _, err := Ingest(opt); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "a FIFO") {
				t.Errorf("%+v: %v, want an error saying the input is a FIFO", opt, err)
			}
			if _, statErr := os.Stat(opt.Out); statErr == nil {
				t.Errorf("%+v: the refused ingest left %s", opt, opt.Out)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%+v: ingest still waits on a FIFO after 10 s", opt)
		}
	}
}
