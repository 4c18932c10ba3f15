package gpuio

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// WriteRequest asks for Src to be written at byte Offset of file File (an index into the fds the
// Writer was opened with). Src must lie in the Writer's region, and its address, Offset and
// length must be BlockSize multiples (O_DIRECT's rule, kept for every file alike).
type WriteRequest struct {
	File   int
	Offset int64
	Src    []byte
	// Err is set by Write: nil once every byte of Src is on its way to the file (written, not
	// synced), else why not, naming the file and the offset of the write that carried it.
	Err error
}

// WriteStats counts what a Writer did since it was opened.
type WriteStats struct {
	Backend      Backend `json:"backend"`
	Requests     uint64  `json:"requests"`      // requests written or failed
	Writes       uint64  `json:"writes"`        // writes issued, after merging adjacent requests
	BytesWritten uint64  `json:"bytes_written"` // bytes of the writes that succeeded
	Failed       uint64  `json:"failed"`        // writes that failed or came up short
}

// Writer writes byte ranges of a fixed set of files from one region of memory its caller owns
// (mmap'ed or C memory, never the Go heap: the kernel reads it while a write is in flight):
// through io_uring, WRITE_FIXED from the region registered as buffers, or by pwrite(2) from a
// few goroutines where io_uring is unavailable. A Write's requests that are adjacent in their
// file and in the region go as one write of at most MaxIOBytes, with up to QueueDepth writes in
// flight. A Writer is used by one goroutine at a time; it may run beside a Stack over the same
// files (reads and writes of distinct ranges).
type Writer struct {
	opts    Options // defaults filled in; Backend, BlockSize, QueueDepth, MaxIOBytes, NoCoalesce, Faults, Paths apply
	fds     []int
	region  []byte
	base    uintptr // &region[0]
	backend Backend
	ring    *uring // nil: pwrite
	chunk   int    // bytes per registered buffer (the region is registered in chunks of it)
	stats   WriteStats
	order   []int // Write's scratch
	closed  bool
	broken  error // the ring failed with writes in flight: every later Write fails with it
}

// writeOp is one write: n bytes at off of file, from region[at:], carrying the requests
// order[first:last].
type writeOp struct {
	file        int
	off         int64
	at, n       int
	first, last int
	err         error
}

// OpenWriter builds a Writer of fds (opened by the caller for writing, normally O_DIRECT; it
// never closes them) writing from region, whose start must be BlockSize-aligned (mmap'ed memory
// is). BackendAuto falls back to pwrite where io_uring or registering region fails;
// BackendIOUring fails instead.
func OpenWriter(fds []int, region []byte, opts Options) (*Writer, error) {
	if err := fillDefaults(&opts); err != nil {
		return nil, err
	}
	if len(region) == 0 {
		return nil, errors.New("gpuio: OpenWriter: empty region")
	}
	w := &Writer{opts: opts, fds: slices.Clone(fds), region: region, base: uintptr(unsafe.Pointer(&region[0]))}
	if w.base%uintptr(opts.BlockSize) != 0 {
		return nil, fmt.Errorf("gpuio: OpenWriter: region at %#x is not %d-aligned", w.base, opts.BlockSize)
	}
	w.chunk = max(opts.BlockSize, (1<<30)/opts.BlockSize*opts.BlockSize) // a registered buffer is at most 1 GiB
	switch opts.Backend {
	case BackendIOUring, BackendAuto:
		err := w.openURing()
		if err == nil {
			w.backend = BackendIOUring
			break
		}
		if opts.Backend == BackendIOUring {
			return nil, fmt.Errorf("gpuio: io_uring was asked for and is unavailable here: %w (%w)", err, errors.ErrUnsupported)
		}
		fallthrough
	case BackendPread:
		w.backend = BackendPread
	default:
		return nil, fmt.Errorf("gpuio: OpenWriter: backend %q does not write (want %q, %q or %q)", opts.Backend, BackendAuto, BackendIOUring, BackendPread)
	}
	w.stats.Backend = w.backend
	return w, nil
}

func (w *Writer) openURing() error {
	ring, err := newURing(uint32(w.opts.QueueDepth), false)
	if err != nil {
		return err
	}
	w.opts.QueueDepth = min(w.opts.QueueDepth, int(ring.sqEntries))
	var iovs []unix.Iovec
	for at := 0; at < len(w.region); at += w.chunk {
		iov := unix.Iovec{Base: &w.region[at]}
		iov.SetLen(min(w.chunk, len(w.region)-at))
		iovs = append(iovs, iov)
	}
	if err := ring.registerBuffers(iovs); err != nil {
		ring.close()
		return err
	}
	fds := make([]int32, len(w.fds))
	for i, fd := range w.fds {
		fds[i] = int32(fd)
	}
	if ring.registerFiles(fds) != nil {
		ring.fixedFiles = false // plain fds work too
	}
	w.ring = ring
	return nil
}

// Backend reports the backend in use (BackendIOUring or BackendPread; "pread" names pwrite here).
func (w *Writer) Backend() Backend { return w.backend }

// Stats returns the counters accumulated since OpenWriter.
func (w *Writer) Stats() WriteStats { return w.stats }

// Write writes every request and returns once none is in flight. Requests are checked first (a
// file index out of range, a Src outside the region or not aligned, two requests overlapping in
// a file): a bad one, or a closed or broken Writer, writes nothing and is every request's Err.
// Otherwise each request's Err says whether it was written, and Write returns the first failure
// (and how many writes failed), or nil. A write that fails or comes up short fails every request
// it carries; the others are written.
func (w *Writer) Write(reqs []WriteRequest) error {
	err := w.broken
	switch {
	case w.closed:
		err = errors.New("gpuio: Write on a closed Writer")
	case err == nil:
		err = w.check(reqs)
	}
	if err != nil {
		for i := range reqs {
			reqs[i].Err = err
		}
		return err
	}
	ops := w.plan(reqs)
	if w.ring != nil {
		w.runURing(ops)
	} else {
		w.runPwrite(ops)
	}
	var first error
	failed := 0
	for i := range ops {
		op := &ops[i]
		w.stats.Writes++
		if op.err == nil {
			w.stats.BytesWritten += uint64(op.n)
		} else {
			w.stats.Failed++
			failed++
			first = cmp.Or(first, op.err)
		}
		for _, r := range w.order[op.first:op.last] {
			reqs[r].Err = op.err
		}
	}
	w.stats.Requests += uint64(len(reqs))
	if failed > 1 {
		return fmt.Errorf("%w (and %d more writes failed)", first, failed-1)
	}
	return first
}

// check validates reqs and leaves w.order holding their indices by file and offset.
func (w *Writer) check(reqs []WriteRequest) error {
	bs := int64(w.opts.BlockSize)
	for i, r := range reqs {
		at := int64(0)
		if len(r.Src) > 0 {
			at = int64(uintptr(unsafe.Pointer(&r.Src[0])) - w.base)
		}
		switch {
		case r.File < 0 || r.File >= len(w.fds):
			return fmt.Errorf("gpuio: write request %d: file index %d out of range [0, %d)", i, r.File, len(w.fds))
		case len(r.Src) == 0:
			return fmt.Errorf("gpuio: write request %d: empty Src", i)
		case at < 0 || at > int64(len(w.region)-len(r.Src)):
			return fmt.Errorf("gpuio: write request %d: Src (%d bytes) is not in the Writer's region", i, len(r.Src))
		case r.Offset < 0 || r.Offset%bs != 0 || int64(len(r.Src))%bs != 0 || at%bs != 0:
			return fmt.Errorf("gpuio: write request %d: offset %d, length %d, region offset %d: each must be a multiple of %d", i, r.Offset, len(r.Src), at, bs)
		}
	}
	w.order = w.order[:0]
	for i := range reqs {
		w.order = append(w.order, i)
	}
	slices.SortFunc(w.order, func(a, b int) int {
		return cmp.Or(cmp.Compare(reqs[a].File, reqs[b].File), cmp.Compare(reqs[a].Offset, reqs[b].Offset))
	})
	for k := 1; k < len(w.order); k++ {
		a, b := reqs[w.order[k-1]], reqs[w.order[k]]
		if a.File == b.File && b.Offset < a.Offset+int64(len(a.Src)) {
			return fmt.Errorf("gpuio: write requests %d and %d overlap in file %d (offsets %d and %d)", w.order[k-1], w.order[k], a.File, a.Offset, b.Offset)
		}
	}
	return nil
}

// plan groups the requests, in w.order, into writes: a request joins the write before it when
// it follows it in the file and in the region, within one registered buffer and MaxIOBytes.
func (w *Writer) plan(reqs []WriteRequest) []writeOp {
	var ops []writeOp
	for k, i := range w.order {
		r := reqs[i]
		at := int(uintptr(unsafe.Pointer(&r.Src[0])) - w.base)
		if n := len(ops); n > 0 && !w.opts.NoCoalesce {
			op := &ops[n-1]
			if op.file == r.File && op.off+int64(op.n) == r.Offset && op.at+op.n == at &&
				op.n+len(r.Src) <= w.opts.MaxIOBytes && op.at/w.chunk == (at+len(r.Src)-1)/w.chunk {
				op.n += len(r.Src)
				op.last = k + 1
				continue
			}
		}
		ops = append(ops, writeOp{file: r.File, off: r.Offset, at: at, n: len(r.Src), first: k, last: k + 1})
	}
	return ops
}

// runURing writes ops through the ring, QueueDepth at a time, and sets each op's err.
func (w *Writer) runURing(ops []writeOp) {
	r := w.ring
	next, inflight := 0, 0
	var ringErr error
	for next < len(ops) || inflight > 0 {
		for ; ringErr == nil && next < len(ops) && inflight < w.opts.QueueDepth; next++ {
			op := &ops[next]
			file := int32(op.file)
			if !r.fixedFiles {
				file = int32(w.fds[op.file])
			}
			r.pushWriteFixed(file, op.off, unsafe.Pointer(&w.region[op.at]), op.n, op.at/w.chunk, uint64(next))
			op.err = errInFlight
			inflight++
		}
		if ringErr != nil && inflight == 0 {
			break
		}
		err := r.submit(!r.cqReady())
		busy := errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EBUSY)
		if err != nil && (!busy || !r.cqReady()) {
			// Busy with nothing to reap: wait for completions alone. Failed: fail what is not
			// yet written, and reap the rest.
			if !busy {
				ringErr = err
			}
			if werr := r.wait(); werr != nil {
				ringErr = cmp.Or(ringErr, werr)
				// Writes may still be in flight from memory the caller will reuse: no more.
				w.broken = fmt.Errorf("gpuio: the Writer's ring failed with %d writes in flight: %w", inflight, ringErr)
				break
			}
		}
		r.reap(func(userData uint64, res int32) {
			inflight--
			op := &ops[userData]
			if res < 0 {
				w.finish(op, 0, unix.Errno(-res))
			} else {
				w.finish(op, int(res), nil)
			}
		})
	}
	for i := range ops {
		if op := &ops[i]; i >= next || op.err == errInFlight {
			op.err = fmt.Errorf("gpuio: write of %s at offset %d (%d bytes) not completed: %w", w.fileName(op.file), op.off, op.n, ringErr)
		}
	}
}

// errInFlight marks an op handed to the ring and not reaped yet.
var errInFlight = errors.New("gpuio: write in flight")

// runPwrite writes ops by pwrite(2) from up to QueueDepth goroutines (at most 32) and sets each
// op's err; only this goroutine touches w.
func (w *Writer) runPwrite(ops []writeOp) {
	type result struct {
		i, n int
		err  error
	}
	jobs := make(chan int, len(ops))
	results := make(chan result, len(ops))
	for i := range ops {
		jobs <- i
	}
	close(jobs)
	var wg sync.WaitGroup
	for range min(w.opts.QueueDepth, 32, len(ops)) {
		wg.Go(func() {
			for i := range jobs {
				op := ops[i]
				n, err := pwriteOnce(w.fds[op.file], w.region[op.at:op.at+op.n], op.off)
				results <- result{i, n, err}
			}
		})
	}
	wg.Wait()
	close(results)
	for r := range results {
		w.finish(&ops[r.i], r.n, r.err)
	}
}

// pwriteOnce is one pwrite of buf, retried on EINTR.
func pwriteOnce(fd int, buf []byte, off int64) (int, error) {
	for {
		n, err := unix.Pwrite(fd, buf, off)
		if err != unix.EINTR {
			return max(n, 0), err
		}
	}
}

// finish applies the injected faults to a completed write and sets op.err for a failed or short one.
func (w *Writer) finish(op *writeOp, n int, ioErr error) {
	op.err = nil
	if ioErr == nil && w.opts.Faults != nil {
		path := ""
		if op.file < len(w.opts.Paths) {
			path = w.opts.Paths[op.file]
		}
		for _, f := range w.opts.Faults.Inject(CompletedRead{File: op.file, Path: path, Off: op.off, Length: op.n, Write: true}) {
			switch f.Kind {
			case FaultEIO:
				n, ioErr = 0, unix.EIO
			case FaultShort:
				n /= 2
			case FaultDelay:
				time.Sleep(f.Delay)
			}
		}
	}
	switch {
	case ioErr != nil:
		name := ""
		if errno, ok := ioErr.(unix.Errno); ok {
			name = unix.ErrnoName(errno) + " "
		}
		op.err = fmt.Errorf("gpuio: write of %s at offset %d (%d bytes) failed: %s%w", w.fileName(op.file), op.off, op.n, name, ioErr)
	case n != op.n:
		op.err = fmt.Errorf("gpuio: short write of %s at offset %d: %d of %d bytes written (the disk full?)", w.fileName(op.file), op.off, n, op.n)
	}
}

// fileName names file i: its path where Options.Paths has it, else its index.
func (w *Writer) fileName(i int) string {
	if i < len(w.opts.Paths) && w.opts.Paths[i] != "" {
		return w.opts.Paths[i]
	}
	return fmt.Sprintf("file %d", i)
}

// Close tears down the ring (no write is in flight between calls). It does not close the fds or
// unmap the region.
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	if w.ring == nil {
		return nil
	}
	return w.ring.close()
}
