package featurestore

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierfs/tierfs/dataset"
)

// TestOpenRefusesNonRegularFiles: a store over a dataset whose labels file is a FIFO, whose
// sidecar is /dev/urandom or whose manifest is /dev/zero fails to open promptly (never blocking,
// never reading the device), with corruption naming the path.
func TestOpenRefusesNonRegularFiles(t *testing.T) {
	rng := newRand(t)
	for _, tc := range []struct {
		name, file string
		opt        Options
		make       func(path string) error
	}{
		{"FIFO labels", "labels.bin", Options{}, func(p string) error { return syscall.Mkfifo(p, 0o644) }},
		{"/dev/urandom sidecar", "labels.bin" + dataset.ChecksumSuffix, Options{},
			func(p string) error { return os.Symlink("/dev/urandom", p) }},
		{"/dev/zero manifest", dataset.ManifestName, Options{}, func(p string) error { return os.Symlink("/dev/zero", p) }},
	} {
		d := writeSplitDataset(t, 500, 8, 1, 4, rng)
		path := filepath.Join(d.Dir, tc.file)
		os.Remove(path)
		if err := tc.make(path); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			s, err := Open(d.Dir, tc.opt)
			if s != nil {
				s.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !dataset.IsCorrupt(err) || !strings.Contains(err.Error(), path) {
				t.Errorf("%s: open: %v; want corruption naming %s", tc.name, err, path)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: Open still running after 5 s", tc.name)
		}
	}
}
