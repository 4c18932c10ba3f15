package dataset

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// OpenRegularFD opens path for reading with the extra open flags (unix.O_DIRECT, say; O_CLOEXEC
// is always added) when it is a regular file, and returns its descriptor and size: a directory, device,
// FIFO or socket is refused as ErrCorrupt before any read, and the open never blocks (O_NONBLOCK,
// cleared once the file is known to be regular). It is for files that belong to no dataset (the
// files of a bare IO stack); a dataset's own files open through OpenFD, its sidecars through
// OpenFDIn. Errors name the path; a failed open wraps its errno.
func OpenRegularFD(path string, flags int) (fd int, size int64, err error) {
	return openRegular(path, flags)
}

// OpenFDIn opens the file name of the directory root (a dataset directory, or a directory of
// files tierfs wrote, such as an epoch plan) the way OpenRegularFD does, and also refuses, as
// ErrCorrupt, a name whose symlinks lead outside root and a file of more than maxBytes bytes
// (the error names the file, its size and the cap; maxBytes < 0: no cap). Every sidecar tierfs
// reads (a saved placement, an epoch plan's index and packed files) opens here. A missing file
// gives an error wrapping os.ErrNotExist.
func OpenFDIn(root, name string, flags int, maxBytes int64) (fd int, size int64, err error) {
	full := filepath.Join(root, name)
	if !filepath.IsLocal(name) {
		return -1, 0, fmt.Errorf("dataset: %s: %q escapes %s: %w", full, name, root, ErrCorrupt)
	}
	resolved, err := filepath.EvalSymlinks(full)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			pe.Path = full
			return -1, 0, pe
		}
		return -1, 0, err
	}
	base, err := filepath.EvalSymlinks(root)
	if err != nil {
		return -1, 0, err
	}
	if rel, err := filepath.Rel(base, resolved); err != nil || !filepath.IsLocal(rel) {
		return -1, 0, fmt.Errorf("dataset: %s leads to %s, outside %s: %w", full, resolved, root, ErrCorrupt)
	}
	// O_NOFOLLOW: a symlink swapped in after the check is refused (ELOOP), not followed.
	fd, size, err = openRegular(resolved, flags|unix.O_NOFOLLOW)
	if err != nil {
		return -1, 0, err
	}
	if maxBytes >= 0 && size > maxBytes {
		unix.Close(fd)
		return -1, 0, &SizeError{Path: full, Size: size, Max: maxBytes}
	}
	return fd, size, nil
}

// SizeError says a file is larger than tierfs reads of its kind. It wraps ErrCorrupt.
type SizeError struct {
	Path      string
	Size, Max int64
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("dataset: %s has %d bytes, more than the %d bytes such a file may hold", e.Path, e.Size, e.Max)
}
func (e *SizeError) Unwrap() error { return ErrCorrupt }

// ReadIn reads the whole file name of root, opened by OpenFDIn with the cap maxBytes (which also
// bounds what is read should the file grow meanwhile).
func ReadIn(root, name string, maxBytes int64) ([]byte, error) {
	fd, size, err := OpenFDIn(root, name, 0, maxBytes)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), filepath.Join(root, name))
	defer f.Close()
	limit := size
	if maxBytes >= 0 {
		limit = maxBytes
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("dataset: read %s: %w", f.Name(), err)
	}
	if int64(len(data)) > limit {
		return nil, &SizeError{Path: filepath.Join(root, name), Size: int64(len(data)), Max: limit}
	}
	return data, nil
}
