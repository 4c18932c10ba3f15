package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tfs_io_open takes regular files only: a FIFO is refused at once (it used to block the call
// forever), /dev/zero and a directory are refused too, each as TFS_EINVAL naming the path.
func TestIOOpenRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, make([]byte, 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{fifo, "FIFO"}, {"/dev/zero", "character device"}, {dir, "directory"},
	} {
		done := make(chan error, 1)
		go func() {
			fd, _, err := openIOFile(tc.path)
			if err == nil {
				unix.Close(fd)
			}
			done <- err
		}()
		select {
		case err := <-done:
			if classify(err, stEIO) != stEINVAL || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("open %s: %v (status %d); want TFS_EINVAL naming it and saying %q", tc.path, err, classify(err, stEIO), tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("open %s still blocks after 5 s", tc.path)
		}
	}
	fd, size, err := openIOFile(file)
	if err != nil || size != 8192 {
		t.Fatalf("open a regular file: %d bytes, %v", size, err)
	}
	if fl, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); fl&unix.O_NONBLOCK != 0 {
		t.Error("the file is left non-blocking")
	}
	unix.Close(fd)
	if _, _, err := openIOFile(filepath.Join(dir, "missing")); classify(err, stEIO) != stENOENT {
		t.Errorf("a missing file: %v, status %d", err, classify(err, stEIO))
	}
}
