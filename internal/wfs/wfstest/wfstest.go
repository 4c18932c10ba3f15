// Package wfstest is what the fault walks of the writers' tests share.
package wfstest

import (
	"os"
	"testing"
)

// MemDir is a new directory, removed when t ends, in /dev/shm where there is one (else
// t.TempDir()): a fault walk writes a dataset or a plan hundreds of times, whose fsyncs would
// cost seconds on a disk.
func MemDir(t testing.TB) string {
	t.Helper()
	if st, err := os.Stat("/dev/shm"); err != nil || !st.IsDir() {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp("/dev/shm", "tierfs-faults-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
