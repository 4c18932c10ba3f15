package gpuio

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Stack serves Requests against a fixed set of files. It is not safe for concurrent use.
type Stack struct {
	opts        Options // defaults filled in
	fds         []int
	backend     Backend
	eng         engine
	arena       []byte   // the mmap'ed region, as returned by unix.Mmap
	slots       [][]byte // staging slots of MaxIOBytes, each BlockSize-aligned
	freeSlots   []int
	queue       []*read // planned reads not yet handed to the kernel, FIFO from queueHead
	queueHead   int
	inflight    int
	maxInflight int // min(QueueDepth, len(slots), ring entries)
	// limit is the in-flight cap the device lets this Stack have now (<= maxInflight): a read
	// the device turned away for want of queue slots (EAGAIN under RWF_NOWAIT) lowers it to the
	// reads still in flight, and it grows back by one per limit reads completed (AIMD, as TCP's
	// window). Each Stack learns its share on its own; Options.Budget, where set, bounds the
	// reads in flight of its Stacks together.
	limit, grow int
	// floorRefusals counts reads refused in a row at the smallest limit; past a bound the
	// files evidently cannot take NOWAIT reads at all (nowaitOff), and reads go in blocking.
	floorRefusals int
	nowaitOff     bool
	noNowait      []bool  // per file: refuses RWF_NOWAIT outright (EOPNOTSUPP, e.g. tmpfs)
	sqpollErr     error   // why Options.SQPoll could not be had, or nil
	spare         []*read // finished reads for plan to reuse
	order         []int   // plan's scratch
	reapedAt      time.Time
	stats         Stats
	closed        bool
	dev           *deviceCompletion // nil until AttachDevice
	wantGPURing   bool              // Options.Backend was BackendGPUURing
	gpu           *gpuPath          // the gpu-uring path, nil unless active
	gpuQueue      []*read           // device-only reads planned for the gpu-uring kernel
	// broken is set when reads may still land in staging that nothing tracks (a gpu-uring kernel
	// gave up waiting): every later call fails with it, and Close leaves the staging mapped.
	broken error

	// held is places of opts.Budget taken (by waiting for one) and not yet given to a read.
	held int
}

// read is one aligned read of a file into a staging slot, and the request bytes it feeds.
type read struct {
	file    int
	off     int64 // BlockSize-aligned
	length  int   // BlockSize multiple, <= MaxIOBytes
	pieces  []piece
	slot    int
	started time.Time
	// blocking: submit without RWF_NOWAIT (io_uring may then park the read on a worker thread
	// until the device has room), after a NOWAIT attempt was refused with nothing else in flight.
	blocking bool
	nowait   bool // submitted with RWF_NOWAIT
}

// need is how many bytes from the start of rd its pieces use.
func (rd *read) need() int {
	n := 0
	for _, p := range rd.pieces {
		n = max(n, p.src+p.n)
	}
	return n
}

// piece copies buf[src:src+n] of a completed read into dst, part of one Request's Dst, or,
// when dst is nil, to the device address devDst.
type piece struct {
	dst    []byte
	devDst uintptr
	n      int
	src    int
}

// engine moves reads to the disk: io_uring or pread workers.
type engine interface {
	start(s *Stack, rd *read) // hand rd to the kernel or a worker; never waits
	flush() error             // make started reads visible to the kernel
	// wait blocks until at least one read finished and calls done for each finished read.
	wait(done func(rd *read, n int, err error)) error
	close() error
}

var (
	_ engine = (*uringEngine)(nil)
	_ engine = (*preadEngine)(nil)
	_ engine = (*faultEngine)(nil)
)

// Open builds a Stack over fds (opened by the caller, normally O_DIRECT; the Stack never closes
// them). It maps the staging memory and sets up the backend named by opts.Backend; BackendAuto
// falls back to pread when io_uring setup or buffer registration fails.
func Open(fds []int, opts Options) (*Stack, error) {
	if err := fillDefaults(&opts); err != nil {
		return nil, err
	}
	s := &Stack{opts: opts, fds: slices.Clone(fds), noNowait: make([]bool, len(fds))}
	nSlots := opts.StagingBytes / opts.MaxIOBytes
	s.maxInflight = min(opts.QueueDepth, nSlots)
	pad := 0
	if page := unix.Getpagesize(); opts.BlockSize > page {
		pad = opts.BlockSize // mmap only aligns to pages
	}
	arena, err := unix.Mmap(-1, 0, nSlots*opts.MaxIOBytes+pad, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("gpuio: mmap %d bytes of staging: %w", nSlots*opts.MaxIOBytes+pad, err)
	}
	s.arena = arena
	base := int((-uintptr(unsafe.Pointer(&arena[0]))) & uintptr(opts.BlockSize-1))
	for i := range nSlots {
		at := base + i*opts.MaxIOBytes
		s.slots = append(s.slots, arena[at:at+opts.MaxIOBytes:at+opts.MaxIOBytes])
		s.freeSlots = append(s.freeSlots, nSlots-1-i)
	}
	backend := opts.Backend
	if backend == BackendGPUURing {
		s.wantGPURing, backend = true, BackendAuto
		s.stats.GPURing = "no device attached (AttachDevice)"
	}
	switch backend {
	case BackendIOUring, BackendAuto:
		eng, uerr := newURingEngine(s)
		if uerr == nil {
			s.eng, s.backend = eng, BackendIOUring
			break
		}
		if backend == BackendIOUring {
			_ = unix.Munmap(arena)
			return nil, fmt.Errorf("gpuio: io_uring was asked for and is unavailable here: %w (%w)", uerr, errors.ErrUnsupported)
		}
		fallthrough
	case BackendPread:
		s.eng, s.backend = newPreadEngine(s), BackendPread
	default:
		_ = unix.Munmap(arena)
		return nil, fmt.Errorf("gpuio: unknown backend %q", opts.Backend)
	}
	if opts.Faults != nil {
		s.eng = &faultEngine{engine: s.eng, s: s, faults: opts.Faults}
	}
	s.limit = s.maxInflight
	s.stats.Backend, s.stats.BlockSize, s.stats.CoalesceGap = s.backend, opts.BlockSize, opts.CoalesceGap
	if opts.NoCoalesce {
		s.stats.CoalesceGap = 0
	}
	return s, nil
}

func fillDefaults(o *Options) error {
	if o.BlockSize < 0 || o.QueueDepth < 0 || o.MaxIOBytes < 0 || o.StagingBytes < 0 || o.CoalesceGap < 0 {
		return fmt.Errorf("gpuio: negative option (BlockSize %d, QueueDepth %d, MaxIOBytes %d, StagingBytes %d, CoalesceGap %d)",
			o.BlockSize, o.QueueDepth, o.MaxIOBytes, o.StagingBytes, o.CoalesceGap)
	}
	if f, ok := o.Faults.(*Faults); ok && f == nil {
		o.Faults = nil // no rules: no fault engine, and the gpu-uring path stays open
	}
	if o.BlockSize == 0 {
		o.BlockSize = 4096
	}
	if o.BlockSize&(o.BlockSize-1) != 0 {
		return fmt.Errorf("gpuio: BlockSize %d is not a power of two", o.BlockSize)
	}
	if o.QueueDepth == 0 {
		o.QueueDepth = 128
	}
	if o.MaxIOBytes == 0 {
		o.MaxIOBytes = 128 << 10
	}
	o.MaxIOBytes = int(alignUp(int64(o.MaxIOBytes), int64(o.BlockSize)))
	if o.StagingBytes == 0 {
		o.StagingBytes = o.QueueDepth * o.MaxIOBytes
	}
	o.StagingBytes = max(o.StagingBytes, o.MaxIOBytes)
	return nil
}

func alignDown(x, a int64) int64 { return x &^ (a - 1) }
func alignUp(x, a int64) int64   { return (x + a - 1) &^ (a - 1) }

// Backend reports the backend in use (never BackendAuto).
func (s *Stack) Backend() Backend { return s.backend }

// Stats returns the counters accumulated since Open.
func (s *Stack) Stats() Stats {
	st := s.stats
	if e, ok := s.uring(); ok && e.ring != nil {
		st.Enters = e.ring.enters
	}
	return st
}

// Mode says how the Stack's reads reach the kernel, e.g. "registered files, registered
// buffers, SQPOLL".
func (s *Stack) Mode() string {
	e, ok := s.uring()
	if !ok {
		return "pread workers"
	}
	mode := "plain fds, registered buffers"
	if e.ring.fixedFiles {
		mode = "registered files, registered buffers"
	}
	switch {
	case e.ring.sqpoll:
		mode += ", SQPOLL"
	case s.sqpollErr != nil:
		mode += ", SQPOLL refused (" + s.sqpollErr.Error() + "): io_uring_enter submits"
	}
	return mode
}

// SQPoll reports whether a kernel thread polls the Stack's submission ring, and when
// Options.SQPoll asked for one that the kernel refused (not permitted, or too old), why.
func (s *Stack) SQPoll() (bool, error) {
	e, ok := s.uring()
	return ok && e.ring.sqpoll, s.sqpollErr
}

// uring is the Stack's io_uring engine, under a fault injector if there is one.
func (s *Stack) uring() (*uringEngine, bool) {
	eng := s.eng
	if f, ok := eng.(*faultEngine); ok {
		eng = f.engine
	}
	e, ok := eng.(*uringEngine)
	return e, ok
}

// Submit validates every request, plans aligned reads for them and hands as many to the kernel as
// the queue depth and staging allow; the rest wait for Complete. It never waits for a read. On a
// validation error nothing is queued. Dst of each request must stay untouched until Complete.
func (s *Stack) Submit(reqs []Request) error { return s.SubmitBridging(reqs, 0) }

// SubmitBridging is Submit with ranges of one file at most gap bytes apart (after alignment) read
// by one read of at most MaxIOBytes, the gap read and dropped, as Options.CoalesceGap does (the
// larger of the two applies; neither under NoCoalesce): for requests dense enough that reading a
// gap costs less than another read.
func (s *Stack) SubmitBridging(reqs []Request, gap int) error {
	if gap < 0 {
		return fmt.Errorf("gpuio: bridging gap %d, want >= 0", gap)
	}
	if s.closed {
		return errors.New("gpuio: Submit on a closed Stack")
	}
	if s.broken != nil {
		return s.broken
	}
	if err := s.check(reqs); err != nil {
		return err
	}
	devN := 0
	for _, r := range reqs {
		s.stats.Requests++
		s.stats.BytesRequested += uint64(r.Length)
		if r.Dst == nil {
			s.stats.DeviceRequests++
			devN++
		}
	}
	if s.gpu != nil && devN > 0 {
		// Device-bound requests go to the gpu-uring kernel at Complete; the rest as always.
		host := make([]Request, 0, len(reqs)-devN)
		dev := make([]Request, 0, devN)
		for _, r := range reqs {
			if r.Dst == nil {
				dev = append(dev, r)
			} else {
				host = append(host, r)
			}
		}
		cpuQueue := s.queue
		s.queue = s.gpuQueue
		s.plan(dev, gap)
		s.gpuQueue, s.queue = s.queue, cpuQueue
		reqs = host
	}
	s.plan(reqs, gap)
	return s.pump(true)
}

// check validates reqs against the Stack's files and device; it reads only what Open and
// AttachDevice set, so it may run beside the Stack's own goroutine.
func (s *Stack) check(reqs []Request) error {
	for i, r := range reqs {
		switch {
		case r.File < 0 || r.File >= len(s.fds):
			return fmt.Errorf("gpuio: request %d: file index %d out of range [0, %d)", i, r.File, len(s.fds))
		case r.Offset < 0:
			return fmt.Errorf("gpuio: request %d: negative offset %d", i, r.Offset)
		case r.Length <= 0:
			return fmt.Errorf("gpuio: request %d: length %d, want > 0", i, r.Length)
		case r.Dst != nil && len(r.Dst) != r.Length:
			return fmt.Errorf("gpuio: request %d: len(Dst) %d != Length %d", i, len(r.Dst), r.Length)
		case r.Dst == nil && r.DevDst == 0:
			return fmt.Errorf("gpuio: request %d: neither Dst nor DevDst is set", i)
		case r.Dst == nil && s.dev == nil:
			return fmt.Errorf("gpuio: request %d: device destination 0x%x on a Stack without a device (AttachDevice)", i, r.DevDst)
		case r.Offset > math.MaxInt64-int64(r.Length)-int64(s.opts.BlockSize):
			return fmt.Errorf("gpuio: request %d: offset %d + length %d overflows", i, r.Offset, r.Length)
		}
	}
	return nil
}

// plan appends the reads covering reqs to the queue. Requests of one file whose aligned ranges
// overlap or touch form a run (each request its own run under NoCoalesce); consecutive runs at
// most max(CoalesceGap, bridge) bytes apart join one read while it stays within MaxIOBytes; a
// run longer than MaxIOBytes is cut into reads of at most MaxIOBytes and joins nothing.
func (s *Stack) plan(reqs []Request, bridge int) {
	bs := int64(s.opts.BlockSize)
	maxIO, gap := int64(s.opts.MaxIOBytes), int64(max(s.opts.CoalesceGap, bridge))
	order := s.order[:0]
	for i := range reqs {
		order = append(order, i)
	}
	s.order = order
	if !s.opts.NoCoalesce {
		slices.SortFunc(order, func(a, b int) int {
			return cmp.Or(cmp.Compare(reqs[a].File, reqs[b].File), cmp.Compare(reqs[a].Offset, reqs[b].Offset))
		})
	}
	// The pending group: order[gi:j] of file gfile, covering [gstart, gend).
	gi, gfile, gstart, gend := 0, -1, int64(0), int64(0)
	for i := 0; i < len(order); {
		first := reqs[order[i]]
		start, end := alignDown(first.Offset, bs), alignUp(first.Offset+int64(first.Length), bs)
		j := i + 1
		for ; !s.opts.NoCoalesce && j < len(order); j++ {
			r := reqs[order[j]]
			if r.File != first.File || alignDown(r.Offset, bs) > end {
				break
			}
			end = max(end, alignUp(r.Offset+int64(r.Length), bs))
		}
		// order[i:j] is one run: join it to the pending group or start a new group.
		if gfile == first.File && !s.opts.NoCoalesce && start-gend <= gap && end-gstart <= maxIO {
			s.stats.GapBytes += uint64(start - gend)
			gend = end
		} else {
			if gfile >= 0 {
				s.planGroup(reqs, order[gi:i], gfile, gstart, gend)
			}
			gi, gfile, gstart, gend = i, first.File, start, end
		}
		i = j
	}
	if gfile >= 0 {
		s.planGroup(reqs, order[gi:], gfile, gstart, gend)
	}
}

func (s *Stack) planGroup(reqs []Request, group []int, file int, start, end int64) {
	maxIO := int64(s.opts.MaxIOBytes)
	first := len(s.queue)
	for off := start; off < end; off += maxIO {
		var rd *read
		if n := len(s.spare); n > 0 {
			rd, s.spare = s.spare[n-1], s.spare[:n-1]
			*rd = read{pieces: rd.pieces[:0]}
		} else {
			rd = new(read)
		}
		rd.file, rd.off, rd.length, rd.slot = file, off, int(min(maxIO, end-off)), -1
		s.queue = append(s.queue, rd)
	}
	reads := s.queue[first:]
	for _, ri := range group {
		r := reqs[ri]
		a, b := r.Offset, r.Offset+int64(r.Length)
		for k := (a - start) / maxIO; k <= (b-1-start)/maxIO; k++ {
			rd := reads[k]
			lo, hi := max(a, rd.off), min(b, rd.off+int64(rd.length))
			pc := piece{n: int(hi - lo), src: int(lo - rd.off)}
			if r.Dst != nil {
				pc.dst = r.Dst[lo-a : hi-a]
			} else {
				pc.devDst = r.DevDst + uintptr(lo-a)
			}
			rd.pieces = append(rd.pieces, pc)
		}
	}
}

// pump starts queued reads while queue depth and staging allow and, with flush, hands them to
// the kernel (else the engine's next wait does, in the same system call). Staging still read by
// a completion kernel is reclaimed (waited for) only when no slot is free.
func (s *Stack) pump(flush bool) error {
	var now time.Time
	for s.queueHead < len(s.queue) && s.inflight < s.limit {
		if len(s.freeSlots) == 0 {
			if s.dev == nil || !s.dev.launchedActive() {
				break
			}
			if err := s.dev.reclaim(s); err != nil {
				return err
			}
		}
		if b := s.opts.Budget; b != nil {
			if s.held > 0 {
				s.held--
			} else if !b.tryTake() {
				break // the other Stacks of the budget fill the disk's queue
			}
		}
		rd := s.queue[s.queueHead]
		s.queue[s.queueHead] = nil
		s.queueHead++
		rd.slot = s.freeSlots[len(s.freeSlots)-1]
		s.freeSlots = s.freeSlots[:len(s.freeSlots)-1]
		if now.IsZero() {
			now = time.Now()
		}
		rd.started = now
		s.inflight++
		s.stats.Reads++
		s.eng.start(s, rd)
	}
	if s.queueHead == len(s.queue) {
		s.queue, s.queueHead = s.queue[:0], 0
	}
	if !flush {
		return nil
	}
	return s.eng.flush()
}

// requeue puts rd, turned away by the device, back at the head of the queue.
func (s *Stack) requeue(rd *read) {
	rd.slot = -1
	if s.queueHead > 0 {
		s.queueHead--
		s.queue[s.queueHead] = rd
		return
	}
	s.queue = slices.Insert(s.queue, 0, rd)
}

// refillEvery is how many completions Complete finishes before it starts and submits the reads
// their slots can take, rather than once per round of completions. Measured on four memory-backed
// loop devices (BENCHMARKS, "IO engine vs iobench"): 4 threads went from 0.76–0.83 to 0.92–0.93
// of iobench; 32 was in between.
const refillEvery = 8

// Complete waits for every submitted request: it reaps reads, checks and verifies them, copies
// the requested bytes into each Dst and starts queued reads as staging frees up. On the first
// error it stops starting reads (the requests not yet read are dropped and their Dst contents are
// unspecified), still waits for every read in flight, and returns that error; the Stack stays
// usable. Device destinations are served as by CompleteOn on the legacy default stream.
func (s *Stack) Complete() error { return s.CompleteOn(0) }

// CompleteOn is Complete for a Stack that may hold device requests: their staged bytes are moved
// by completion kernels enqueued on stream (a cudaStream_t), each over a batch of reaped reads,
// while later reads are still in flight. It returns once every read is reaped and every kernel
// enqueued, without waiting for the last kernel: work queued on stream after CompleteOn returns
// sees every row in place.
func (s *Stack) CompleteOn(stream uintptr) error {
	err := s.completeCPU(stream)
	if len(s.gpuQueue) > 0 {
		if err == nil {
			err = s.completeGPU(stream)
		} else {
			s.dropGPUQueue()
		}
	}
	return err
}

// completeCPU is CompleteOn for the reads CPU threads submit and reap.
func (s *Stack) completeCPU(stream uintptr) error {
	var firstErr error
	sinceRefill := 0
	done := func(rd *read, n int, err error) {
		if err := s.finish(rd, n, err); err != nil && firstErr == nil {
			firstErr = err
		}
		// Keep the queue full while a round's completions are finished: their copies take long
		// enough that waiting for the whole round leaves the device short of reads.
		if sinceRefill++; sinceRefill == refillEvery && firstErr == nil {
			sinceRefill = 0
			if err := s.pump(true); err != nil {
				firstErr = err
			}
		}
	}
	fail := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
	}
	for {
		if firstErr == nil {
			if s.dev != nil && len(s.freeSlots) == 0 && s.dev.hasPending() {
				if err := s.dev.launch(s, stream); err != nil {
					fail(err)
				}
			}
			if err := s.pump(false); err != nil {
				fail(err)
			}
			if s.opts.Budget != nil && s.inflight == 0 && s.queueHead < len(s.queue) && firstErr == nil {
				// Nothing of ours in flight to wait for: wait for a place of the budget.
				s.opts.Budget.take()
				s.held++
				if err := s.pump(false); err != nil {
					fail(err)
				}
			}
		}
		if firstErr != nil {
			s.queue, s.queueHead = s.queue[:0], 0
		}
		if s.inflight == 0 {
			s.releaseHeld()
			if s.dev != nil && s.dev.hasPending() {
				if firstErr == nil {
					fail(s.dev.launch(s, stream))
				} else {
					s.dev.drop(s)
				}
			}
			return firstErr
		}
		s.reapedAt = time.Time{}
		if err := s.eng.wait(done); err != nil {
			return errors.Join(firstErr, fmt.Errorf("gpuio: %d reads still in flight: %w", s.inflight, err))
		}
		// Staging held by reaped reads and by a running kernel is staging the disk cannot use:
		// hand it to a kernel early and take it back as soon as that kernel is done.
		if firstErr == nil && s.dev != nil {
			fail(s.dev.poll(s))
			if s.dev.pendingReads() >= max(1, s.maxInflight/16) && !s.dev.launchedActive() {
				fail(s.dev.launch(s, stream))
			}
		}
	}
}

// releaseHeld gives back the budget places taken and not used.
func (s *Stack) releaseHeld() {
	for ; s.held > 0; s.held-- {
		s.opts.Budget.give()
	}
}

// finish accounts for one completed read, checks it, verifies and scatters it, and frees its slot.
func (s *Stack) finish(rd *read, n int, ioErr error) error {
	s.inflight--
	if s.opts.Budget != nil {
		s.opts.Budget.give()
	}
	if ioErr == unix.EOPNOTSUPP && rd.nowait && !s.closed {
		// The file takes no NOWAIT reads at all: read it, now and later, without.
		s.noNowait[rd.file] = true
		s.stats.Retries++
		s.stats.Reads--
		s.freeSlots = append(s.freeSlots, rd.slot)
		rd.blocking = true
		s.requeue(rd)
		return nil
	}
	if ioErr == unix.EAGAIN && rd.nowait && !s.closed {
		// The device had no room (RWF_NOWAIT): queue rd again with at most as many reads in
		// flight as now. At the smallest limit rd goes in blocking (io_uring parks it on a
		// worker until the device has room), so every read makes progress.
		s.stats.Retries++
		s.stats.Reads--
		s.freeSlots = append(s.freeSlots, rd.slot)
		floor := max(1, min(4, s.maxInflight/8))
		if s.inflight <= floor {
			rd.blocking = true
			if s.floorRefusals++; s.floorRefusals > 64 {
				s.nowaitOff, s.limit = true, s.maxInflight
			}
		}
		if !s.nowaitOff {
			s.limit, s.grow = max(floor, s.inflight), 0
		}
		s.requeue(rd)
		return nil
	}
	if !rd.blocking {
		s.floorRefusals = 0
	}
	if s.limit < s.maxInflight {
		if s.grow++; s.grow >= s.limit {
			s.limit, s.grow = s.limit+1, 0
		}
	}
	if s.reapedAt.IsZero() {
		s.reapedAt = time.Now()
	}
	us := uint64(s.reapedAt.Sub(rd.started).Microseconds())
	s.stats.LatencyHistogram[min(max(bits.Len64(us), 1)-1, LatencyBuckets-1)]++
	buf := s.slots[rd.slot][:rd.length]
	deviceBound := false
	defer func() {
		if !deviceBound {
			s.freeSlots = append(s.freeSlots, rd.slot)
		}
		clear(rd.pieces)
		s.spare = append(s.spare, rd)
	}()
	if n > 0 {
		s.stats.BytesRead += uint64(n)
	}
	if ioErr != nil {
		name := ""
		if errno, ok := ioErr.(unix.Errno); ok {
			name = unix.ErrnoName(errno) + " "
		}
		return fmt.Errorf("gpuio: read of file %d at offset %d (%d bytes) failed: %s%w", rd.file, rd.off, rd.length, name, ioErr)
	}
	if n != rd.length && n < rd.need() {
		// A read may end early only at the end of a file whose size is no BlockSize multiple,
		// past every byte a request wants.
		return &ShortReadError{File: rd.file, Offset: rd.off, Want: rd.length, Got: n}
	}
	if verify := s.opts.Verify; verify != nil {
		// Every block read, the last one partial where the file's end cut the read short.
		for at := 0; at < min(n, rd.length); at += s.opts.BlockSize {
			if err := verify(rd.file, rd.off+int64(at), buf[at:min(at+s.opts.BlockSize, n)]); err != nil {
				return fmt.Errorf("gpuio: verify of file %d block at offset %d: %w", rd.file, rd.off+int64(at), err)
			}
		}
	}
	for _, p := range rd.pieces {
		if p.dst != nil {
			copy(p.dst, buf[p.src:])
		} else {
			s.dev.add(s, rd.slot, p)
			deviceBound = true
		}
	}
	if deviceBound {
		s.dev.addSlot(rd.slot)
	}
	return nil
}

// Close drops queued reads, waits for the ones in flight, tears down the backend and unmaps the
// staging memory. It does not close the fds.
func (s *Stack) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.queue, s.queueHead = nil, 0
	if s.opts.Budget != nil {
		s.releaseHeld()
	}
	s.dropGPUQueue()
	var err error
	for s.inflight > 0 && err == nil {
		s.reapedAt = time.Time{}
		err = s.eng.wait(func(rd *read, n int, ioErr error) { _ = s.finish(rd, n, ioErr) })
	}
	if s.gpu != nil {
		err = errors.Join(err, s.gpu.close(s))
	}
	if s.dev != nil {
		err = errors.Join(err, s.dev.close(s))
	}
	err = errors.Join(err, s.eng.close())
	if s.inflight == 0 && s.broken == nil { // never unmap memory the kernel may still write
		err = errors.Join(err, unix.Munmap(s.arena))
	}
	s.arena, s.slots = nil, nil
	return err
}

// uringEngine issues READ_FIXED into registered staging; user_data is the staging slot.
type uringEngine struct {
	ring        *uring
	bySlot      []*read
	slotsPerBuf int         // staging slots per registered buffer (each at most 1 GiB)
	direct      []bool      // per file: opened O_DIRECT, so reads go in with RWF_NOWAIT
	refuse      func() bool // tests: true turns a NOWAIT read's completion into EAGAIN
}

func newURingEngine(s *Stack) (*uringEngine, error) {
	ring, err := newURing(uint32(s.maxInflight), s.opts.SQPoll)
	if err != nil && s.opts.SQPoll {
		s.sqpollErr = err // not permitted or not supported here: submit with io_uring_enter
		ring, err = newURing(uint32(s.maxInflight), false)
	}
	if err != nil {
		return nil, err
	}
	if ring.sqEntries < uint32(s.maxInflight) {
		s.maxInflight = int(ring.sqEntries)
	}
	e := &uringEngine{ring: ring, bySlot: make([]*read, len(s.slots)), slotsPerBuf: max(1, (1<<30)/s.opts.MaxIOBytes)}
	var iovs []unix.Iovec
	for i := 0; i < len(s.slots); i += e.slotsPerBuf {
		n := min(e.slotsPerBuf, len(s.slots)-i)
		iov := unix.Iovec{Base: &s.slots[i][0]}
		iov.SetLen(n * s.opts.MaxIOBytes)
		iovs = append(iovs, iov)
	}
	if err := ring.registerBuffers(iovs); err != nil {
		ring.close()
		return nil, err
	}
	fds := make([]int32, len(s.fds))
	for i, fd := range s.fds {
		fds[i] = int32(fd)
	}
	if ring.registerFiles(fds) != nil {
		ring.fixedFiles = false // plain fds work too
	}
	for _, fd := range s.fds {
		fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		e.direct = append(e.direct, err == nil && fl&unix.O_DIRECT != 0)
	}
	return e, nil
}

func (e *uringEngine) start(s *Stack, rd *read) {
	e.bySlot[rd.slot] = rd
	file := int32(rd.file)
	if !e.ring.fixedFiles {
		file = int32(s.fds[rd.file])
	}
	buf := s.slots[rd.slot]
	rd.nowait = (e.direct[rd.file] || e.refuse != nil) && !rd.blocking && !s.nowaitOff && !s.noNowait[rd.file]
	e.ring.pushReadFixed(file, rd.off, unsafe.Pointer(&buf[0]), rd.length, rd.slot/e.slotsPerBuf, uint64(rd.slot), rd.nowait)
}

// flush submits started reads; EAGAIN and EBUSY are left for wait to retry after reaping.
func (e *uringEngine) flush() error {
	err := e.ring.submit(false)
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EBUSY) {
		return nil
	}
	return err
}

func (e *uringEngine) wait(done func(rd *read, n int, err error)) error {
	deliver := func(userData uint64, res int32) {
		rd := e.bySlot[userData]
		e.bySlot[userData] = nil
		if e.refuse != nil && rd.nowait && e.refuse() {
			res = -int32(unix.EAGAIN)
		}
		if res < 0 {
			done(rd, 0, unix.Errno(-res))
		} else {
			done(rd, int(res), nil)
		}
	}
	// One io_uring_enter per round: it hands over the reads started since the last one and,
	// when no completion is waiting yet, waits for one.
	for {
		err := e.ring.submit(!e.ring.cqReady())
		if err != nil && !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EBUSY) {
			return err
		}
		if e.ring.reap(deliver) > 0 {
			return nil
		}
		if err != nil { // EAGAIN/EBUSY with nothing to reap: wait for completions alone
			if err := e.ring.wait(); err != nil {
				return err
			}
		}
	}
}

func (e *uringEngine) close() error { return e.ring.close() }

// preadEngine runs pread(2) on a few worker goroutines, into the same staging slots.
type preadEngine struct {
	jobs    chan *read
	results chan preadResult
	workers sync.WaitGroup
}

type preadResult struct {
	rd  *read
	n   int
	err error
}

func newPreadEngine(s *Stack) *preadEngine {
	e := &preadEngine{jobs: make(chan *read, s.maxInflight), results: make(chan preadResult, s.maxInflight)}
	fds, slots := s.fds, s.slots // workers must not touch s: it belongs to the caller's goroutine
	for range min(s.maxInflight, 8) {
		e.workers.Go(func() {
			for rd := range e.jobs {
				n, err := preadFull(fds[rd.file], slots[rd.slot][:rd.length], rd.off)
				e.results <- preadResult{rd, n, err}
			}
		})
	}
	return e
}

// preadFull reads until buf is full, EOF or an error.
func preadFull(fd int, buf []byte, off int64) (int, error) {
	total := 0
	for total < len(buf) {
		n, err := unix.Pread(fd, buf[total:], off+int64(total))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return total, err
		}
		if n == 0 {
			break
		}
		total += n
	}
	return total, nil
}

func (e *preadEngine) start(_ *Stack, rd *read) { e.jobs <- rd }
func (e *preadEngine) flush() error             { return nil }

func (e *preadEngine) wait(done func(rd *read, n int, err error)) error {
	r := <-e.results
	done(r.rd, r.n, r.err)
	for {
		select {
		case r := <-e.results:
			done(r.rd, r.n, r.err)
		default:
			return nil
		}
	}
}

func (e *preadEngine) close() error {
	close(e.jobs)
	e.workers.Wait()
	return nil
}
