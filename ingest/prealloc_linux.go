package ingest

import (
	"errors"

	"golang.org/x/sys/unix"
)

// allocate reserves the first size bytes of f on disk; errUnsupported when the file system
// cannot.
func allocate(fd uintptr, size int64) error {
	err := unix.Fallocate(int(fd), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return errUnsupported
	}
	return err
}
