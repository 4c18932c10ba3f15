package wfs

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Fault is what Faulty does to the call it fails.
type Fault string

const (
	ENOSPC     Fault = "enospc" // the call fails with ENOSPC (any call)
	EIO        Fault = "eio"    // the call fails with EIO (any call)
	ShortWrite Fault = "short"  // a write writes half its bytes, then fails with ENOSPC (writes only)
	SyncFail   Fault = "fsync"  // an fsync of a file or directory fails with EIO (syncs only)
)

// Faults are every Fault, for tests that walk them all.
var Faults = []Fault{ENOSPC, EIO, ShortWrite, SyncFail}

// Faulty is an FS over another (nil: OS) that fails its Nth call that the Fault applies to
// (counted from 1, over every file it opened), once, and passes every other call through; ENOSPC
// and EIO apply to every call (open, write, truncate, allocate, fsync, close, rename, remove,
// mkdir), ShortWrite to writes, SyncFail to fsyncs of files and directories. Hit names the
// call that failed: a test walks N = 1, 2, ... until a write completes with Hit empty, so every
// call of the write has failed once. Then, when positive, is a second fault in the same run: the
// Then-th removal (remove, removeall) after the first failure fails too, with EIO — the
// cleanup's own removal failing; ThenHit names it. Safe for concurrent use; the order of
// concurrent calls decides which of them is the Nth.
type Faulty struct {
	FS    FS
	Fault Fault
	N     int
	Then  int

	mu       sync.Mutex
	calls    int
	hit      string // the call that failed, "" if none
	removals int    // removals after the first failure
	thenHit  string // the removal that failed second, "" if none
}

// Hit is the call that failed ("open /x/y", "write /x/y"), or "" when none did.
func (f *Faulty) Hit() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hit
}

// ThenHit is the removal that failed as the second fault (Then), or "" when none did.
func (f *Faulty) ThenHit() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.thenHit
}

// failRemoval says whether the removal op of path fails: the first fault's or the second's.
func (f *Faulty) failRemoval(op, path string) (bool, error) {
	if f.fail(op, path) {
		return true, f.errno(op, path)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Then <= 0 || f.hit == "" || f.thenHit != "" {
		return false, nil
	}
	f.removals++
	if f.removals != f.Then {
		return false, nil
	}
	f.thenHit = op + " " + path
	return true, &os.PathError{Op: op + " (injected second fault eio)", Path: path, Err: unix.EIO}
}

// fail says whether the call op of path is the one to fail, counting it when the fault applies.
func (f *Faulty) fail(op, path string) bool {
	switch f.Fault {
	case ShortWrite:
		if op != "write" {
			return false
		}
	case SyncFail:
		if op != "fsync" {
			return false
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls != f.N {
		return false
	}
	f.hit = op + " " + path
	return true
}

// errno is the error the failed call returns.
func (f *Faulty) errno(op, path string) error {
	e := unix.EIO
	if f.Fault == ENOSPC || f.Fault == ShortWrite {
		e = unix.ENOSPC
	}
	return &os.PathError{Op: op + " (injected " + string(f.Fault) + ")", Path: path, Err: e}
}

func (f *Faulty) inner() FS { return Or(f.FS) }

func (f *Faulty) OpenFile(path string, flag int, perm os.FileMode) (File, error) {
	if f.fail("open", path) {
		return nil, f.errno("open", path)
	}
	file, err := f.inner().OpenFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultyFile{File: file, fs: f}, nil
}

func (f *Faulty) Rename(oldpath, newpath string) error {
	if f.fail("rename", oldpath) {
		return f.errno("rename", oldpath)
	}
	return f.inner().Rename(oldpath, newpath)
}

func (f *Faulty) Remove(path string) error {
	if failed, err := f.failRemoval("remove", path); failed {
		return err
	}
	return f.inner().Remove(path)
}

func (f *Faulty) RemoveAll(path string) error {
	if failed, err := f.failRemoval("removeall", path); failed {
		return err
	}
	return f.inner().RemoveAll(path)
}

func (f *Faulty) Mkdir(path string, perm os.FileMode) error {
	if f.fail("mkdir", path) {
		return f.errno("mkdir", path)
	}
	return f.inner().Mkdir(path, perm)
}

func (f *Faulty) MkdirAll(path string, perm os.FileMode) error {
	if f.fail("mkdir", path) {
		return f.errno("mkdir", path)
	}
	return f.inner().MkdirAll(path, perm)
}

func (f *Faulty) SyncDir(dir string) error {
	if f.fail("fsync", dir) {
		return f.errno("fsync", dir)
	}
	return f.inner().SyncDir(dir)
}

// faultyFile fails its calls as its Faulty says.
type faultyFile struct {
	File
	fs *Faulty
}

func (f *faultyFile) Write(p []byte) (int, error) {
	if f.fs.fail("write", f.Name()) {
		return f.short(p, func(q []byte) (int, error) { return f.File.Write(q) })
	}
	return f.File.Write(p)
}

func (f *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.fail("write", f.Name()) {
		return f.short(p, func(q []byte) (int, error) { return f.File.WriteAt(q, off) })
	}
	return f.File.WriteAt(p, off)
}

// short is a failed write of p: half of it written first for ShortWrite, nothing otherwise.
func (f *faultyFile) short(p []byte, write func([]byte) (int, error)) (int, error) {
	n := 0
	if f.fs.Fault == ShortWrite {
		n, _ = write(p[:len(p)/2])
	}
	return n, f.fs.errno("write", f.Name())
}

func (f *faultyFile) Sync() error {
	if f.fs.fail("fsync", f.Name()) {
		return f.fs.errno("fsync", f.Name())
	}
	return f.File.Sync()
}

func (f *faultyFile) Truncate(size int64) error {
	if f.fs.fail("truncate", f.Name()) {
		return f.fs.errno("truncate", f.Name())
	}
	return f.File.Truncate(size)
}

func (f *faultyFile) Allocate(size int64) error {
	if f.fs.fail("allocate", f.Name()) {
		return f.fs.errno("allocate", f.Name())
	}
	return f.File.Allocate(size)
}

func (f *faultyFile) Close() error {
	err := f.File.Close()
	if f.fs.fail("close", f.Name()) && err == nil {
		err = f.fs.errno("close", f.Name())
	}
	return err
}

var (
	_ FS   = (*Faulty)(nil)
	_ File = osFile{}
	_ File = (*faultyFile)(nil)
)

// String names the fault and the call it fails, for test logs.
func (f *Faulty) String() string {
	if f.Then > 0 {
		return fmt.Sprintf("%s at call %d, then removal %d", f.Fault, f.N, f.Then)
	}
	return fmt.Sprintf("%s at call %d", f.Fault, f.N)
}

// Walk is the writers' fault walk: for every Fault, run with N = 1, 2, ... until a run hits no
// fault (hit false), and after each EIO also with Then = 1, 2, ... up to maxThen (0: until a
// run's second fault hits nothing). run makes its Faulty of fault, n and then, writes through
// it, checks what is left and says whether each fault hit. It returns the runs whose first fault
// hit and those whose second did.
func Walk(maxThen int, run func(fault Fault, n, then int) (hit, thenHit bool)) (walked, seconds int) {
	for _, fault := range Faults {
		for n := 1; ; n++ {
			if hit, _ := run(fault, n, 0); !hit {
				walked += n - 1
				break
			}
			// EIO fails every call: its first faults are every place a cleanup starts from.
			for then := 1; fault == EIO && (maxThen == 0 || then <= maxThen); then++ {
				if _, thenHit := run(fault, n, then); !thenHit {
					break
				}
				seconds++
			}
		}
	}
	return walked, seconds
}
