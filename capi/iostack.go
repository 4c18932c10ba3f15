package main

// The asynchronous IO stack on its own (tfs_io_*): a gpuio.Stack over files the handle opened and
// owns. A gpuio.Stack is used by one goroutine at a time, so each handle holds a mutex that
// serializes the C calls on it; parallel IO takes one handle per thread.
//
// Destinations are C memory owned by the caller. Submit views each host dst with unsafe.Slice and
// hands the view to the stack, which writes it during the next Complete: the view outlives the
// Submit call, which is sound because it is C memory (the Go GC neither scans nor moves it) and
// the caller promises, per tierfs.h, to keep it valid and untouched until that Complete. Device
// destinations are plain addresses (Request.DevDst).

/*
#include <stddef.h>
#include <stdint.h>
#include "tierfs.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
)

// ioRec is what a tfs_io handle holds.
type ioRec struct {
	mu        sync.Mutex // serializes the calls on the handle; guards everything below
	st        *gpuio.Stack
	fds       []int
	paths     []string
	sizes     []int64 // file sizes at open (refreshed when a request reaches past one)
	device    int     // CUDA ordinal, -1 for host destinations only
	blockSize int64
	pending   int64 // requests submitted since the last complete
	closed    bool
	greqs     []gpuio.Request // reused by submit
}

//export tfsgo_io_open
func tfsgo_io_open(paths **C.char, nPaths C.int32_t, opts *C.tfs_io_options, out unsafe.Pointer, h *C.uintptr_t) C.int {
	return call("tfs_io_open", stEIO, func() error { return ioOpen(paths, int64(nPaths), opts, out, h) })
}

func ioOpen(paths **C.char, nPaths int64, opts *C.tfs_io_options, out unsafe.Pointer, h *C.uintptr_t) error {
	if nPaths <= 0 {
		return fail(stEINVAL, "n_paths = %d; want at least one file", nPaths)
	}
	if paths == nil {
		return fail(stEINVAL, "paths is NULL (with n_paths = %d)", nPaths)
	}
	if out == nil {
		return fail(stEINVAL, "out is NULL")
	}
	var o C.tfs_io_options
	device := -1 // opts NULL, or a struct too old to hold device: host destinations only
	if opts != nil {
		var err error
		if o, err = readOptions(opts, unsafe.Offsetof(o.backend)+unsafe.Sizeof(o.backend), "tfs_io_options"); err != nil {
			return err
		}
		if uintptr(opts.struct_size) >= unsafe.Offsetof(o.device)+unsafe.Sizeof(o.device) {
			device = int(o.device)
		}
		// coalesce_gap came after device: an older struct leaves it zero (readOptions).
	}
	var gopts gpuio.Options
	if o.backend != nil {
		gopts.Backend = gpuio.Backend(C.GoString(o.backend))
	}
	switch gopts.Backend {
	case gpuio.BackendAuto, gpuio.BackendIOUring, gpuio.BackendPread, gpuio.BackendGPUURing:
	default:
		return fail(stEINVAL, "backend %q is not one of \"io_uring\", \"pread\", \"gpu-uring\" (or NULL/\"\" to pick)", gopts.Backend)
	}
	switch {
	case o.block_size < 0:
		return fail(stEINVAL, "block_size = %d is negative", o.block_size)
	case o.block_size&(o.block_size-1) != 0:
		return fail(stEINVAL, "block_size = %d is not a power of two", o.block_size)
	case o.queue_depth < 0:
		return fail(stEINVAL, "queue_depth = %d is negative", o.queue_depth)
	case o.max_io_bytes < 0:
		return fail(stEINVAL, "max_io_bytes = %d is negative", o.max_io_bytes)
	case o.staging_bytes < 0:
		return fail(stEINVAL, "staging_bytes = %d is negative", o.staging_bytes)
	case device < -1:
		return fail(stEINVAL, "device = %d; want -1 (host destinations only) or a CUDA ordinal", device)
	case o.coalesce_gap < 0:
		return fail(stEINVAL, "coalesce_gap = %d is negative (0: merge only touching blocks)", o.coalesce_gap)
	}
	gopts.BlockSize = int(o.block_size)
	gopts.QueueDepth = int(o.queue_depth)
	gopts.MaxIOBytes = int(o.max_io_bytes)
	gopts.StagingBytes = int(o.staging_bytes)
	gopts.NoCoalesce = o.no_coalesce != 0
	gopts.CoalesceGap = int(o.coalesce_gap)
	faults, err := envFaults()
	if err != nil {
		return err
	}
	if device >= 0 {
		// Before opening anything: the usual reason to fail is a machine without CUDA.
		if err := cuda.Load(); err != nil {
			return failWrap(stENOTSUP, err, "device = %d: device destinations need CUDA", device)
		}
		if n, err := cuda.DeviceCount(); err != nil {
			return failWrap(stENOTSUP, err, "device = %d", device)
		} else if device >= n {
			return fail(stEINVAL, "device = %d; this machine has %d CUDA device(s)", device, n)
		}
	}

	rec := &ioRec{device: device, blockSize: 4096}
	if gopts.BlockSize > 0 {
		rec.blockSize = int64(gopts.BlockSize)
	}
	ok := false
	defer func() {
		if !ok {
			for _, fd := range rec.fds {
				unix.Close(fd)
			}
		}
	}()
	for i, p := range unsafe.Slice(paths, nPaths) {
		if p == nil {
			return fail(stEINVAL, "paths[%d] is NULL", i)
		}
		path := C.GoString(p)
		fd, size, err := openIOFile(path)
		if err != nil {
			return fmt.Errorf("paths[%d]: %w", i, err)
		}
		rec.fds = append(rec.fds, fd)
		rec.paths, rec.sizes = append(rec.paths, path), append(rec.sizes, size)
	}
	if faults != nil {
		gopts.Faults, gopts.Paths = faults, rec.paths
	}
	st, err := gpuio.Open(rec.fds, gopts)
	if err != nil {
		return err // forcing an unavailable io_uring wraps errors.ErrUnsupported: TFS_ENOTSUP
	}
	if device >= 0 {
		if err := st.AttachDevice(device, 0); err != nil {
			_ = st.Close()
			return fmt.Errorf("device = %d: %w", device, err) // cuda.ErrUnavailable: TFS_ENOTSUP
		}
	}
	rec.st = st
	ok = true
	*h = C.uintptr_t(register(kindIO, rec))
	return nil
}

// openIOFile opens path for a tfs_io: a regular file (dataset.OpenRegularFD: a FIFO, device,
// socket or directory is refused as TFS_EINVAL without blocking), with O_DIRECT where its file
// system takes it. Errors name the path and, for a failed open, the errno.
func openIOFile(path string) (fd int, size int64, err error) {
	fd, size, err = dataset.OpenRegularFD(path, unix.O_DIRECT)
	if errors.Is(err, unix.EINVAL) { // file systems without O_DIRECT (tmpfs) read through the page cache
		fd, size, err = dataset.OpenRegularFD(path, 0)
	}
	switch {
	case errors.Is(err, dataset.ErrCorrupt):
		return -1, 0, fail(stEINVAL, "%v", err)
	case err != nil:
		return -1, 0, fmt.Errorf("open %s: %s %w", path, unix.ErrnoName(errnoOf(err)), err)
	}
	return fd, size, nil
}

// errnoOf is err's errno, or 0.
func errnoOf(err error) unix.Errno {
	var errno unix.Errno
	errors.As(err, &errno)
	return errno
}

// ioLock looks up a live tfs_io and locks it; the caller unlocks rec.mu.
func ioLock(h uintptr) (*ioRec, error) {
	rec, err := lookup[*ioRec](h, kindIO)
	if err != nil {
		return nil, err
	}
	rec.mu.Lock()
	if rec.closed { // closed while this call waited for the lock
		rec.mu.Unlock()
		return nil, fail(stECLOSED, "the io handle %#x was already closed", h)
	}
	return rec, nil
}

//export tfsgo_io_submit
func tfsgo_io_submit(io C.uintptr_t, reqs *C.tfs_io_request, n C.int64_t) C.int {
	return call("tfs_io_submit", stEIO, func() error { return ioSubmit(uintptr(io), reqs, int64(n)) })
}

func ioSubmit(h uintptr, reqs *C.tfs_io_request, n int64) error {
	rec, err := ioLock(h)
	if err != nil {
		return err
	}
	defer rec.mu.Unlock()
	if err := checkArray(unsafe.Pointer(reqs), "reqs", n, "n"); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	greqs := rec.greqs[:0]
	for i, r := range unsafe.Slice(reqs, n) {
		file, off, length := int(r.file), int64(r.offset), int64(r.length)
		switch {
		case file < 0 || file >= len(rec.fds):
			return fail(stEINVAL, "reqs[%d].file = %d is out of range [0, %d)", i, file, len(rec.fds))
		case off < 0:
			return fail(stEINVAL, "reqs[%d].offset = %d is negative", i, off)
		case length <= 0:
			return fail(stEINVAL, "reqs[%d].length = %d; want > 0", i, length)
		case r.dst == nil:
			return fail(stEINVAL, "reqs[%d].dst is NULL", i)
		case r.dst_is_device != 0 && rec.device < 0:
			return fail(stEINVAL, "reqs[%d].dst_is_device is set, but the tfs_io was opened with device = -1 (host destinations only)", i)
		case off > math.MaxInt64-length-rec.blockSize:
			return fail(stEINVAL, "reqs[%d]: offset %d + length %d overflows", i, off, length)
		}
		if err := rec.checkEnd(file, off, length); err != nil {
			return fmt.Errorf("reqs[%d]: %w", i, err)
		}
		g := gpuio.Request{File: file, Offset: off, Length: int(length)}
		if r.dst_is_device != 0 {
			g.DevDst = uintptr(r.dst)
		} else {
			// C memory of the caller, kept by the stack until the next complete (see the top).
			g.Dst = unsafe.Slice((*byte)(r.dst), length)
		}
		greqs = append(greqs, g)
	}
	err = rec.st.Submit(greqs)
	// Every request passed the stack's checks, so any error is from handing reads to the kernel:
	// the requests are queued all the same and the next complete serves them.
	rec.pending += n
	clear(greqs) // no pointer to the caller's memory beyond the stack's own
	rec.greqs = greqs[:0]
	return err
}

// checkEnd reports a request reaching past the end of its (regular) file; the size is read again
// before failing, in case the file grew since open.
func (rec *ioRec) checkEnd(file int, off, length int64) error {
	size := rec.sizes[file]
	if size < 0 || off+length <= size {
		return nil
	}
	var sb unix.Stat_t
	if err := unix.Fstat(rec.fds[file], &sb); err == nil {
		rec.sizes[file] = sb.Size
		if off+length <= sb.Size {
			return nil
		}
		size = sb.Size
	}
	return fail(stEINVAL, "offset %d + length %d = %d is past the end of file %d (%s, %d bytes)", off, length, off+length, file, rec.paths[file], size)
}

//export tfsgo_io_complete
func tfsgo_io_complete(io C.uintptr_t, stream unsafe.Pointer) C.int {
	return call("tfs_io_complete", stEIO, func() error { return ioComplete(uintptr(io), uintptr(stream)) })
}

func ioComplete(h uintptr, stream uintptr) error {
	rec, err := ioLock(h)
	if err != nil {
		return err
	}
	defer rec.mu.Unlock()
	rec.pending = 0
	return rec.st.CompleteOn(stream)
}

// ioStats is the JSON of tfs_io_stats_json: the stack's counters and a little about the handle.
type ioStats struct {
	gpuio.Stats
	Files   int   `json:"files"`
	Device  int   `json:"device"`
	Pending int64 `json:"pending_requests"` // submitted since the last complete
}

//export tfsgo_io_stats_json
func tfsgo_io_stats_json(io C.uintptr_t, buf *C.char, capacity C.size_t, needed *C.size_t) C.int {
	return call("tfs_io_stats_json", stEINTERNAL, func() error {
		rec, err := ioLock(uintptr(io))
		if err != nil {
			return err
		}
		stats := ioStats{Stats: rec.st.Stats(), Files: len(rec.fds), Device: rec.device, Pending: rec.pending}
		rec.mu.Unlock()
		return writeJSON(buf, capacity, needed, copyJSON, func() (any, error) { return stats, nil })
	})
}

//export tfsgo_io_close
func tfsgo_io_close(io C.uintptr_t) C.int {
	return call("tfs_io_close", stEIO, func() error {
		rec, err := release[*ioRec](uintptr(io), kindIO)
		if err != nil {
			return err
		}
		rec.mu.Lock() // waits for a call in flight on the handle
		defer rec.mu.Unlock()
		rec.closed = true
		err = rec.st.Close()
		rec.st = nil
		if err == nil { // Close waited for every read in flight, so the fds are free to close
			for i, fd := range rec.fds {
				if cerr := unix.Close(fd); cerr != nil {
					err = errors.Join(err, fmt.Errorf("close %s: %w", rec.paths[i], cerr))
				}
			}
		}
		rec.fds = nil
		return err
	})
}
