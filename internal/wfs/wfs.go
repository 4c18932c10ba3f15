// Package wfs is the write side of the file system, the one interface every writer of tierfs's
// files goes through — the dataset writer (ingest, synth), upgrade — so that tests hand a writer
// an FS that fails the call they choose (Faulty), in the manner of pebble's vfs/errorfs, instead
// of swapping package variables. OS is the real one; a nil FS means OS (Or).
//
// Reads are not here: they go through gpuio's stacks, whose faults gpuio.Injector injects.
package wfs

import (
	"errors"
	"io"
	"os"
)

// File is a file open for writing; Allocate reserves its first size bytes on disk (fallocate;
// ErrUnsupported where the file system cannot), so that a file written through a mapping runs
// out of space with an error, not a SIGBUS.
type File interface {
	io.Writer
	io.WriterAt
	io.ReaderAt
	Sync() error
	Truncate(size int64) error
	Allocate(size int64) error
	Stat() (os.FileInfo, error)
	Close() error
	Name() string
	Fd() uintptr
}

// FS creates, writes, renames and removes files and directories. Its methods are os's of the
// same names, and SyncDir fsyncs a directory (the step that makes a rename durable). An FS is
// safe for concurrent use.
type FS interface {
	OpenFile(path string, flag int, perm os.FileMode) (File, error)
	Rename(oldpath, newpath string) error
	Remove(path string) error
	RemoveAll(path string) error
	Mkdir(path string, perm os.FileMode) error
	MkdirAll(path string, perm os.FileMode) error
	SyncDir(dir string) error
}

// ErrUnsupported is File.Allocate's error where the file system cannot reserve space.
var ErrUnsupported = errors.New("fallocate not supported")

// OS is the operating system's file system.
var OS FS = osFS{}

// Or is fsys, or OS when fsys is nil.
func Or(fsys FS) FS {
	if fsys == nil {
		return OS
	}
	return fsys
}

// Create creates or truncates path through fsys (nil: OS) for writing (mode 0644).
func Create(fsys FS, path string) (File, error) {
	return Or(fsys).OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
}

// WriteSynced writes data to path (created or truncated) and fsyncs it: after a nil return the
// file holds data, durably (its directory entry once the directory is synced too).
func WriteSynced(fsys FS, path string, data []byte) error {
	f, err := Create(fsys, path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

var (
	_ FS   = osFS{}
	_ File = osFile{}
	_ FS   = (*Faulty)(nil)
	_ File = (*faultyFile)(nil)
)

type osFS struct{}

func (osFS) OpenFile(path string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

// osFile is an *os.File with Allocate.
type osFile struct{ *os.File }

func (osFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (osFS) Remove(path string) error                     { return os.Remove(path) }
func (osFS) RemoveAll(path string) error                  { return os.RemoveAll(path) }
func (osFS) Mkdir(path string, perm os.FileMode) error    { return os.Mkdir(path, perm) }
func (osFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return &os.PathError{Op: "fsync", Path: dir, Err: err}
	}
	return nil
}
