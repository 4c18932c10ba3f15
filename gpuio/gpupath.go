package gpuio

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/tierfs/tierfs/cuda"
	"golang.org/x/sys/unix"
)

// gpuPath is the gpu-uring backend of a Stack with a device: a gpuRing whose rings, staging and
// descriptor arrays the device maps. Complete hands the device-bound reads to one kernel
// (cuda.URingReads) that writes their SQEs as staging slots free up, polls the CQ and copies
// each read's pieces into device memory; the calling goroutine only waits, waking the SQ thread
// if it fell asleep. Reads bound for host memory keep the CPU engine.
type gpuPath struct {
	ring     *gpuRing
	desc     cuda.URing
	ringsDev uintptr // device address of ring.rings (registered)
	sqesDev  uintptr // device address of ring.sqeMem (registered)

	reads       pinnedArray // []cuda.URingRead
	pieces      pinnedArray // []cuda.Piece
	statusAddr  uintptr     // pinned, mapped: cuda.URingStatus
	statusBytes []byte
	event       cuda.Event
}

// gpuRingTimeout is how long a gpu-uring kernel waits for a completion before it gives up.
const gpuRingTimeout = 30 * time.Second

// GPURing reports whether the gpu-uring backend serves this Stack's device requests and, where
// it was asked for and does not, why.
func (s *Stack) GPURing() (bool, string) {
	if s.gpu != nil {
		return true, ""
	}
	return false, s.stats.GPURing
}

// startGPURing sets up the gpu-uring path after AttachDevice; a failure leaves the Stack on the
// CPU-submitted path with the reason in Stats.GPURing.
func (s *Stack) startGPURing() {
	why := func() string {
		switch {
		case s.opts.Verify != nil:
			return "verified reads are checked on the CPU"
		case s.opts.Faults != nil:
			return "fault injection runs on the CPU path"
		case len(s.slots) > cuda.URingMaxSlots:
			return fmt.Sprintf("%d staging slots, over the kernel's %d", len(s.slots), cuda.URingMaxSlots)
		}
		return ""
	}()
	if why == "" {
		g, err := s.newGPUPath()
		if err == nil {
			s.gpu, s.stats.GPURing = g, "active"
			return
		}
		why = err.Error()
	}
	s.stats.GPURing = "fell back to CPU submission: " + why
}

func (s *Stack) newGPUPath() (_ *gpuPath, err error) {
	dev := s.dev.dev
	entries := uint32(1)
	for entries < uint32(s.maxInflight) {
		entries <<= 1
	}
	ring, err := newGPURing(entries)
	if err != nil {
		return nil, err
	}
	g := &gpuPath{ring: ring}
	defer func() {
		if err != nil {
			err = errors.Join(err, g.close(s))
		}
	}()
	slot0 := unsafe.Pointer(&s.slots[0][0])
	if err := ring.registerStaging(&s.slots[0][0], len(s.slots)*s.opts.MaxIOBytes); err != nil {
		return g, err
	}
	if err := ring.registerFiles(s.fds); err != nil {
		return g, err
	}
	if g.ringsDev, err = cuda.HostRegister(dev, uintptr(unsafe.Pointer(&ring.rings[0])), uint64(len(ring.rings))); err != nil {
		return g, fmt.Errorf("gpuio: gpu-uring: map rings for device %d: %w", dev, err)
	}
	if g.sqesDev, err = cuda.HostRegister(dev, uintptr(unsafe.Pointer(&ring.sqeMem[0])), uint64(len(ring.sqeMem))); err != nil {
		return g, fmt.Errorf("gpuio: gpu-uring: map SQEs for device %d: %w", dev, err)
	}
	if g.event, err = cuda.NewEvent(dev); err != nil {
		return g, fmt.Errorf("gpuio: gpu-uring: %w", err)
	}
	statusBytes := uint64(unsafe.Sizeof(cuda.URingStatus{}))
	if g.statusAddr, g.statusBytes, err = cuda.HostAlloc(dev, statusBytes); err != nil {
		return g, fmt.Errorf("gpuio: gpu-uring: status: %w", err)
	}
	at := func(off uint32) uintptr { return g.ringsDev + uintptr(off) }
	p := &ring.p
	g.desc = cuda.URing{
		SQHead: at(p.sqOff.head), SQTail: at(p.sqOff.tail), SQFlags: at(p.sqOff.flags),
		CQHead: at(p.cqOff.head), CQTail: at(p.cqOff.tail),
		SQMask: *ringU32(ring.rings, p.sqOff.ringMask), SQEntries: p.sqEntries,
		CQMask: *ringU32(ring.rings, p.cqOff.ringMask), CQEntries: p.cqEntries,
		SQEs: g.sqesDev, CQEs: at(p.cqOff.cqes),
		StagingUser: uint64(uintptr(slot0)),
		StagingDev:  s.dev.arenaDev + (uintptr(slot0) - s.dev.arenaBase),
		SlotBytes:   uint64(s.opts.MaxIOBytes),
		Slots:       uint32(min(len(s.slots), int(p.sqEntries))),
		FixedFiles:  ring.fixed,
		TimeoutNs:   uint64(gpuRingTimeout.Nanoseconds()),
	}
	return g, nil
}

// pinnedArray is pinned host memory mapped for the device, grown on demand.
type pinnedArray struct {
	addr uintptr
	buf  []byte
}

// ensure grows a to hold n bytes.
func (a *pinnedArray) ensure(dev, n int) error {
	if n <= len(a.buf) {
		return nil
	}
	if err := a.free(dev); err != nil {
		return err
	}
	size := max(n, 64<<10)
	addr, buf, err := cuda.HostAlloc(dev, uint64(size))
	if err != nil {
		return fmt.Errorf("gpuio: gpu-uring: descriptor array of %d bytes: %w", size, err)
	}
	a.addr, a.buf = addr, buf
	return nil
}

func (a *pinnedArray) free(dev int) error {
	if a.addr == 0 {
		return nil
	}
	err := cuda.HostFree(dev, a.addr)
	a.addr, a.buf = 0, nil
	return err
}

// completeGPU serves the queued device-bound reads with one gpu-uring kernel on stream and waits
// for it: staging is the kernel's while it runs, and its errors are the call's.
func (s *Stack) completeGPU(stream uintptr) error {
	g, dev := s.gpu, s.dev.dev
	reads := s.gpuQueue
	defer s.dropGPUQueue()
	if err := s.dev.reclaim(s); err != nil { // every staging slot free for the kernel
		return err
	}
	npieces := 0
	for _, rd := range reads {
		npieces += len(rd.pieces)
	}
	if err := g.reads.ensure(dev, len(reads)*int(unsafe.Sizeof(cuda.URingRead{}))); err != nil {
		return err
	}
	if err := g.pieces.ensure(dev, max(npieces, 1)*cuda.PieceBytes); err != nil {
		return err
	}
	descs := unsafe.Slice((*cuda.URingRead)(unsafe.Pointer(&g.reads.buf[0])), len(reads))
	pieces := unsafe.Slice((*cuda.Piece)(unsafe.Pointer(&g.pieces.buf[0])), npieces)
	k := 0
	for i, rd := range reads {
		file := int32(rd.file)
		if !g.ring.fixed {
			file = int32(s.fds[rd.file])
		}
		descs[i] = cuda.URingRead{File: file, Len: uint32(rd.length), Offset: uint64(rd.off), Need: uint32(rd.need()),
			NPieces: uint32(len(rd.pieces)), FirstPiece: uint64(k)}
		for _, p := range rd.pieces {
			pieces[k] = cuda.Piece{Src: uint64(p.src), Dst: uint64(p.devDst), Len: uint64(p.n)}
			k++
		}
	}
	status := (*cuda.URingStatus)(unsafe.Pointer(&g.statusBytes[0]))
	*status = cuda.URingStatus{FirstFailed: -1}
	if err := cuda.URingReads(dev, &g.desc, g.reads.addr, int64(len(reads)), g.pieces.addr, g.statusAddr, 0, cuda.Stream(stream)); err != nil {
		return fmt.Errorf("gpuio: gpu-uring: %w", err)
	}
	if err := cuda.Record(dev, g.event, cuda.Stream(stream)); err != nil {
		cuda.SyncStream(dev, cuda.Stream(stream))
		return fmt.Errorf("gpuio: gpu-uring: %w", err)
	}
	s.stats.GPURingKernels++
	// Wait, waking the SQ thread whenever it went to sleep with SQEs left: the only CPU work.
	var werr error
	for pause := time.Microsecond; ; pause = min(2*pause, 50*time.Microsecond) {
		done, err := cuda.EventDone(dev, g.event)
		if err != nil {
			return fmt.Errorf("gpuio: gpu-uring kernel: %w", err)
		}
		if done {
			break
		}
		if werr == nil {
			werr = g.ring.wakeIfSleeping()
		}
		time.Sleep(pause)
	}
	s.stats.GPURingWakeups = g.ring.wakeups
	st := *status
	s.stats.GPURingSQWaits += uint64(st.SQWaits)
	s.stats.GPURingReads += uint64(st.Completed)
	s.stats.Reads += uint64(st.Completed)
	for _, rd := range reads[:min(int(st.Completed), len(reads))] {
		s.stats.BytesRead += uint64(rd.length) // reads that completed short fail the call below
	}
	if st.TimedOut != 0 {
		// Reads may still land in staging after the ring is closed (its teardown runs on in the
		// kernel): the Stack refuses every later request rather than reuse that staging.
		s.broken = fmt.Errorf("gpuio: gpu-uring: no completion within %v (%d of %d reads reaped); this IO stack is out of service (reopen the store)",
			gpuRingTimeout, st.Completed, len(reads))
		s.gpu = nil
		s.stats.GPURing = "out of service: a kernel timed out"
		return errors.Join(s.broken, werr, g.close(s))
	}
	if st.Failed > 0 {
		rd := reads[st.FirstFailed]
		if st.FirstRes < 0 {
			errno := unix.Errno(-st.FirstRes)
			return fmt.Errorf("gpuio: read of file %d at offset %d (%d bytes) failed: %s %w (gpu-uring; %d reads failed)",
				rd.file, rd.off, rd.length, unix.ErrnoName(errno), errno, st.Failed)
		}
		return &ShortReadError{File: rd.file, Offset: rd.off, Want: rd.length, Got: int(st.FirstRes)}
	}
	return werr
}

// dropGPUQueue forgets the queued device-bound reads.
func (s *Stack) dropGPUQueue() {
	for _, rd := range s.gpuQueue {
		clear(rd.pieces)
		s.spare = append(s.spare, rd)
	}
	clear(s.gpuQueue)
	s.gpuQueue = s.gpuQueue[:0]
}

// close releases the device mappings and the ring (closing the ring waits for reads in flight).
func (g *gpuPath) close(s *Stack) error {
	var err error
	dev := s.dev.dev
	if g.event != 0 {
		err = errors.Join(err, cuda.DestroyEvent(dev, g.event))
	}
	err = errors.Join(err, g.reads.free(dev), g.pieces.free(dev))
	if g.statusAddr != 0 {
		err = errors.Join(err, cuda.HostFree(dev, g.statusAddr))
	}
	ringErr := g.ring.closeFD() // the kernel stops touching the memory first
	if g.ringsDev != 0 {
		err = errors.Join(err, cuda.HostUnregister(dev, uintptr(unsafe.Pointer(&g.ring.rings[0]))))
	}
	if g.sqesDev != 0 {
		err = errors.Join(err, cuda.HostUnregister(dev, uintptr(unsafe.Pointer(&g.ring.sqeMem[0]))))
	}
	g.ring.unmap()
	return errors.Join(err, ringErr)
}
