package dataset

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// MaxManifestBytes caps the size of manifest.json: Load refuses a larger one as corrupt before
// reading it.
const MaxManifestBytes = 64 << 20

// checkPaths checks every path of the files list: a relative path must stay inside the dataset
// directory (filepath.IsLocal: no "..", not empty); an absolute path is allowed only for a feature
// stripe (the format's files on other devices) and for that stripe's sidecar, named
// <stripe>.xxh64 (or, while an upgrade moves it, <stripe>.xxh64.upgrade). Labels, splits and
// topology must be in the files list (Validate's need), so this covers every path the manifest
// names.
func (m *Manifest) checkPaths() error {
	stripes := map[string]bool{}
	for _, f := range m.allFeatures() {
		for _, p := range f.Files {
			stripes[p] = true
		}
	}
	for i := range m.Files {
		f := &m.Files[i]
		if err := checkPath(f.Path, stripes[f.Path]); err != nil {
			return fmt.Errorf("manifest files[%d] path: %w", i, err)
		}
		// An upgrade names the bound sidecar beside the old one until it has taken its name.
		if filepath.IsAbs(f.Checksums) && f.Checksums != f.Path+ChecksumSuffix && f.Checksums != f.Path+ChecksumSuffix+upgradeSuffix {
			return fmt.Errorf("manifest files[%d] checksums %q: an absolute sidecar path must be its file's path + %s", i, f.Checksums, ChecksumSuffix)
		}
		if err := checkPath(f.Checksums, stripes[f.Path]); err != nil {
			return fmt.Errorf("manifest files[%d] checksums: %w", i, err)
		}
	}
	return nil
}

func checkPath(p string, absOK bool) error {
	if filepath.IsAbs(p) {
		if !absOK {
			return fmt.Errorf("%q is absolute; only feature stripes (and their sidecars) may live outside the dataset directory", p)
		}
		if filepath.Clean(p) != p {
			return fmt.Errorf("%q is not a clean absolute path", p)
		}
		return nil
	}
	if !filepath.IsLocal(p) {
		return fmt.Errorf("%q escapes the dataset directory", p)
	}
	return nil
}

// allowed reports whether p may be opened as a file of the dataset: a path of the files list
// (data file or sidecar), which Validate has checked.
func (m *Manifest) allowed(p string) error {
	for i := range m.Files {
		if m.Files[i].Path == p || m.Files[i].Checksums == p {
			return nil
		}
	}
	// A manifest built in memory (not loaded) may name files not yet listed; hold them to the
	// same rule as listed ones, absolute paths allowed only for feature stripes.
	for _, f := range m.allFeatures() {
		for _, s := range f.Files {
			if s == p || s+ChecksumSuffix == p {
				return checkPath(p, true)
			}
		}
	}
	return checkPath(p, false)
}

// allFeatures is every node and edge feature of m.
func (m *Manifest) allFeatures() []*FeatureSpec {
	var out []*FeatureSpec
	for i := range m.NodeTypes {
		for j := range m.NodeTypes[i].Features {
			out = append(out, &m.NodeTypes[i].Features[j])
		}
	}
	for i := range m.EdgeTypes {
		for j := range m.EdgeTypes[i].Features {
			out = append(out, &m.EdgeTypes[i].Features[j])
		}
	}
	return out
}

// OpenFD opens the dataset file p (a path of the manifest, resolved by Path) for reading with the
// extra open flags (unix.O_DIRECT, say; O_CLOEXEC is always added) and returns its descriptor and
// size. It is the one way the store, checksum loading and Verify open a dataset's files: p must be
// a path the manifest names (inside the dataset directory, or a declared feature stripe), and the
// file must be a regular file — a device, FIFO, socket or directory is refused as ErrCorrupt
// before any read, and the open never blocks (O_NONBLOCK, cleared once the file is known to be
// regular). Errors name the path; a failed open wraps its errno.
func (m *Manifest) OpenFD(p string, flags int) (fd int, size int64, err error) {
	full := m.Path(p)
	if err := m.allowed(p); err != nil {
		return -1, 0, fmt.Errorf("dataset: %s: %v: %w", full, err, ErrCorrupt)
	}
	fd, size, err = openRegular(full, flags)
	if err != nil {
		return fd, size, err
	}
	if f := m.File(p); f != nil && f.InPlace {
		if err := checkUnchanged(fd, full, f); err != nil {
			unix.Close(fd)
			return -1, 0, err
		}
	}
	return fd, size, nil
}

// checkUnchanged refuses an in-place file (open as fd) whose size or modification time is no
// longer what ingest checksummed.
func checkUnchanged(fd int, path string, f *File) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Size == f.Bytes && st.Mtim.Nano() == f.MTimeNS {
		return nil
	}
	return fmt.Errorf("dataset: %s, the feature file this dataset reads in place, changed after ingest (now %d bytes, modified %s; ingest saw %d bytes, modified %s): its checksums no longer hold; restore it or ingest again: %w",
		path, st.Size, time.Unix(0, st.Mtim.Nano()).UTC().Format(time.RFC3339Nano), f.Bytes, time.Unix(0, f.MTimeNS).UTC().Format(time.RFC3339Nano), ErrCorrupt)
}

// openRegular opens path read-only when it is a regular file (after following symlinks).
func openRegular(path string, flags int) (int, int64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return -1, 0, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if err := regular(path, st.Mode); err != nil {
		return -1, 0, err
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|flags, 0)
	if err != nil {
		return -1, 0, &os.PathError{Op: "open", Path: path, Err: err}
	}
	// Stat again through the descriptor: the path may have been replaced since the first stat.
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, 0, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if err := regular(path, st.Mode); err != nil {
		unix.Close(fd)
		return -1, 0, err
	}
	// Regular-file reads must block as usual (io_uring honours O_NONBLOCK with EAGAIN).
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil {
		_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
		if err != nil {
			unix.Close(fd)
			return -1, 0, &os.PathError{Op: "fcntl", Path: path, Err: err}
		}
	} else {
		unix.Close(fd)
		return -1, 0, &os.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return fd, st.Size, nil
}

func regular(path string, mode uint32) error {
	if mode&unix.S_IFMT == unix.S_IFREG {
		return nil
	}
	return fmt.Errorf("dataset: %s is %s, not a regular file: %w", path, FileKind(mode), ErrCorrupt)
}

// FileKind names the kind of file a stat mode says: "a regular file", "a directory", "a FIFO",
// and so on.
func FileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	}
	return "not a regular file"
}

// readCapped reads exactly want bytes of the regular file at path, refusing (as corrupt) a file
// of any other size; it never reads more than want bytes.
func readCapped(path string, fd int, size, want int64) ([]byte, error) {
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if size != want {
		return nil, fmt.Errorf("dataset: %s has %d bytes, want %d: %w", path, size, want, ErrCorrupt)
	}
	buf := make([]byte, want)
	if _, err := io.ReadFull(f, buf); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("dataset: %s ends before its %d bytes: %w", path, want, ErrCorrupt)
		}
		return nil, fmt.Errorf("dataset: read %s: %w", path, err)
	}
	return buf, nil
}

// ReadManifest reads the bytes of dir/manifest.json, unparsed: it must be a regular file (after
// following symlinks) of at most MaxManifestBytes, else the error wraps ErrCorrupt. Everything
// that reads a manifest reads it here.
func ReadManifest(dir string) ([]byte, error) {
	path := filepath.Join(dir, ManifestName)
	fd, size, err := openRegular(path, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if size > MaxManifestBytes {
		return nil, fmt.Errorf("dataset: %s has %d bytes, more than the %d a manifest may hold: %w", path, size, MaxManifestBytes, ErrCorrupt)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("dataset: read %s: %w", path, err)
	}
	if len(data) > MaxManifestBytes {
		return nil, fmt.Errorf("dataset: %s grew past the %d bytes a manifest may hold: %w", path, MaxManifestBytes, ErrCorrupt)
	}
	return data, nil
}
