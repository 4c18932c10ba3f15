package ingest

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/dataset"
)

// openInput opens an input file for reading: a regular file, or an error naming the path and
// what it is instead (a FIFO, device, directory or socket), never an open that blocks on a FIFO
// or reads a device without end. Every input is read more than once or at offsets, so a pipe
// could not serve anyway.
func openInput(path string) (*os.File, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("ingest: input %s is %s; inputs must be regular files", path, dataset.FileKind(st.Mode))
	}
	fd, _, err := dataset.OpenRegularFD(path, 0) // refuses a file swapped for another kind since
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}
