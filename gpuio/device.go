package gpuio

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/tierfs/tierfs/cuda"
)

// deviceCompletion is the GPU completion step of a Stack: staged bytes bound for device memory
// are collected as pieces and moved by a completion kernel that reads the pinned staging over
// PCIe. A staging slot returns to the free list only after the kernel reading it has finished.
type deviceCompletion struct {
	dev       int
	maxBlocks int
	arenaDev  uintptr // device address of the staging arena
	arenaBase uintptr // host address of the staging arena

	pending      []cuda.Piece
	pendingSlots []int

	piecesHost []byte    // pinned array the kernel reads pieces from
	piecesAddr uintptr   // its address
	outgrown   []uintptr // smaller piece arrays, freed at close (cudaFreeHost synchronizes the device: cuda.Mirror says why not mid-run)
	launched   []int     // slots read by the kernel behind event
	event      cuda.Event
	active     bool // event guards launched
}

// AttachDevice lets the Stack deliver requests into device memory of CUDA device dev: it pins
// and maps the staging memory (already registered with io_uring) for the device. maxBlocks caps
// the completion kernel's grid (0: a few percent of the SMs).
func (s *Stack) AttachDevice(dev, maxBlocks int) error {
	if s.closed {
		return errors.New("gpuio: AttachDevice on a closed Stack")
	}
	if s.dev != nil {
		return fmt.Errorf("gpuio: Stack already attached to device %d", s.dev.dev)
	}
	if err := cuda.Load(); err != nil {
		return fmt.Errorf("gpuio: %w", err)
	}
	if maxBlocks <= 0 {
		info, err := cuda.Info(dev)
		if err != nil {
			return fmt.Errorf("gpuio: %w", err)
		}
		maxBlocks = max(1, info.SMs/32)
	}
	base := uintptr(unsafe.Pointer(&s.arena[0]))
	devAddr, err := cuda.HostRegister(dev, base, uint64(len(s.arena)))
	if err != nil {
		return fmt.Errorf("gpuio: pin staging for device %d: %w", dev, err)
	}
	ev, err := cuda.NewEvent(dev)
	if err != nil {
		cuda.HostUnregister(dev, base)
		return fmt.Errorf("gpuio: %w", err)
	}
	s.dev = &deviceCompletion{dev: dev, maxBlocks: maxBlocks, arenaDev: devAddr, arenaBase: base, event: ev}
	if s.wantGPURing {
		s.startGPURing()
	}
	return nil
}

// Device is the CUDA device the Stack delivers to, or -1.
func (s *Stack) Device() int {
	if s.dev == nil {
		return -1
	}
	return s.dev.dev
}

func (d *deviceCompletion) add(s *Stack, slot int, p piece) {
	src := uintptr(unsafe.Pointer(&s.slots[slot][p.src])) - d.arenaBase + d.arenaDev
	d.pending = append(d.pending, cuda.Piece{Src: uint64(src), Dst: uint64(p.devDst), Len: uint64(p.n)})
}

func (d *deviceCompletion) addSlot(slot int) { d.pendingSlots = append(d.pendingSlots, slot) }

func (d *deviceCompletion) hasPending() bool     { return len(d.pendingSlots) > 0 }
func (d *deviceCompletion) pendingReads() int    { return len(d.pendingSlots) }
func (d *deviceCompletion) launchedActive() bool { return d.active }

// reclaim waits for the last launched kernel and frees the slots it read.
func (d *deviceCompletion) reclaim(s *Stack) error {
	if !d.active {
		return nil
	}
	d.active = false
	err := cuda.SyncEvent(d.dev, d.event)
	s.freeSlots = append(s.freeSlots, d.launched...)
	d.launched = d.launched[:0]
	if err != nil {
		return fmt.Errorf("gpuio: completion kernel: %w", err)
	}
	return nil
}

// poll frees the slots of the last launched kernel if it has finished, without waiting.
func (d *deviceCompletion) poll(s *Stack) error {
	if !d.active {
		return nil
	}
	done, err := cuda.EventDone(d.dev, d.event)
	if err != nil || !done {
		return err
	}
	return d.reclaim(s)
}

// launch enqueues the completion kernel over the pending pieces on stream. One kernel is in
// flight at a time: the previous one is reclaimed first, so the pinned piece array is free.
func (d *deviceCompletion) launch(s *Stack, stream uintptr) error {
	if err := d.reclaim(s); err != nil {
		d.drop(s)
		return err
	}
	need := len(d.pending) * cuda.PieceBytes
	if need > len(d.piecesHost) {
		if d.piecesAddr != 0 {
			d.outgrown = append(d.outgrown, d.piecesAddr)
			d.piecesAddr, d.piecesHost = 0, nil
		}
		size := max(need, 64<<10)
		addr, buf, err := cuda.HostAlloc(d.dev, uint64(size))
		if err != nil {
			d.drop(s)
			return fmt.Errorf("gpuio: completion piece array: %w", err)
		}
		d.piecesAddr, d.piecesHost = addr, buf
	}
	copy(unsafe.Slice((*cuda.Piece)(unsafe.Pointer(&d.piecesHost[0])), len(d.pending)), d.pending)
	n := int64(len(d.pending))
	d.pending = d.pending[:0]
	d.launched = append(d.launched, d.pendingSlots...)
	d.pendingSlots = d.pendingSlots[:0]
	if err := cuda.CopyPieces(d.dev, d.piecesAddr, n, d.maxBlocks, cuda.Stream(stream)); err != nil {
		s.freeSlots = append(s.freeSlots, d.launched...) // the kernel never started
		d.launched = d.launched[:0]
		return fmt.Errorf("gpuio: %w", err)
	}
	s.stats.CompletionKernels++
	if err := cuda.Record(d.dev, d.event, cuda.Stream(stream)); err != nil {
		cuda.SyncStream(d.dev, cuda.Stream(stream))
		s.freeSlots = append(s.freeSlots, d.launched...)
		d.launched = d.launched[:0]
		return fmt.Errorf("gpuio: %w", err)
	}
	d.active = true
	return nil
}

// drop forgets the pending pieces (after an error) and frees their slots.
func (d *deviceCompletion) drop(s *Stack) {
	d.pending = d.pending[:0]
	s.freeSlots = append(s.freeSlots, d.pendingSlots...)
	d.pendingSlots = d.pendingSlots[:0]
}

// close waits for the last kernel and releases the device resources.
func (d *deviceCompletion) close(s *Stack) error {
	err := d.reclaim(s)
	d.drop(s)
	err = errors.Join(err, cuda.DestroyEvent(d.dev, d.event))
	for _, p := range append(d.outgrown, d.piecesAddr) {
		if p != 0 {
			err = errors.Join(err, cuda.HostFree(d.dev, p))
		}
	}
	return errors.Join(err, cuda.HostUnregister(d.dev, d.arenaBase))
}
