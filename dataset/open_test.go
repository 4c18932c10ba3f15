package dataset

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// OpenFDIn and ReadIn refuse, promptly and before reading, every file that is not a regular file
// inside its root of at most the cap: a FIFO, a device (through a symlink), a directory, a
// symlink leading out of the root, a sparse file past the cap.
func TestOpenInRefuses(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(parent, "outside")
	if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "ok"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	must(os.Symlink("/dev/zero", filepath.Join(root, "zero")))
	must(os.Symlink(outside, filepath.Join(root, "out")))
	must(os.Symlink("ok", filepath.Join(root, "in"))) // a symlink inside the root is fine
	must(os.Mkdir(filepath.Join(root, "dir"), 0o755))
	f, err := os.Create(filepath.Join(root, "huge"))
	must(err)
	must(f.Truncate(1 << 40))
	f.Close()

	for _, tc := range []struct{ name, want string }{
		{"fifo", "FIFO"},
		{"zero", "outside"},
		{"out", "outside"},
		{"dir", "directory"},
		{"huge", "1099511627776 bytes, more than the 1024 bytes"},
		{"../outside", "escapes"},
	} {
		var err error
		prompt(t, tc.name, 1<<20, func() { _, err = ReadIn(root, tc.name, 1024) })
		if err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), filepath.Base(tc.name)) {
			t.Errorf("%s: %v; want an ErrCorrupt naming the file and saying %q", tc.name, err, tc.want)
		}
	}
	// A FIFO or device is refused without a root too.
	for _, p := range []string{filepath.Join(root, "fifo"), "/dev/zero"} {
		var err error
		prompt(t, p, 1<<20, func() { _, _, err = OpenRegularFD(p, 0) })
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("OpenRegularFD(%s): %v, want ErrCorrupt", p, err)
		}
	}
	for _, name := range []string{"ok", "in"} {
		if data, err := ReadIn(root, name, 1024); err != nil || string(data) != "hello" {
			t.Errorf("ReadIn(%s) = %q, %v", name, data, err)
		}
	}
	if _, err := ReadIn(root, "ok", 4); !errors.Is(err, ErrCorrupt) {
		t.Errorf("5 bytes with a cap of 4: %v", err)
	}
	if _, err := ReadIn(root, "missing", 4); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing: %v", err)
	}
}
