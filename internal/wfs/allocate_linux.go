package wfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Allocate reserves the first size bytes of f on disk (fallocate), so that running out of space
// is this error instead of a SIGBUS when the file is written through a mapping;
// ErrUnsupported where the file system cannot.
func (f osFile) Allocate(size int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return ErrUnsupported
	}
	if err != nil {
		return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
	}
	return nil
}
