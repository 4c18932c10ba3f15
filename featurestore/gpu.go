package featurestore

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/internal/cuda"
	"github.com/tierfs/tierfs/tiers/host"
)

// The GPU path: a GPU tier of the hottest rows in device memory, the host tier pinned and read by
// a kernel over PCIe, and SSD reads completed by the IO stacks' completion kernel, all writing
// into a caller's device buffer. It starts at Open when asked for (GPUCacheBytes, GPUTopology) or
// at the first device gather, and only where the CUDA shim and a GPU are there.

// ErrNoGPU is wrapped by errors of device calls on a store whose GPU path could not start.
var ErrNoGPU = errors.New("GPU path unavailable")

// gpuState is what the GPU path holds. Its fields change only under the place lock (write).
type gpuState struct {
	dev  int
	info cuda.Device

	tier     host.Index // ids of the GPU tier; slot i lives at arena + i*RowBytes
	arena    uintptr    // device memory for capacity rows
	capacity int64
	hostBase uintptr // host tier arena as registered (0: none)
	hostDev  uintptr // its device address
	ctxs     *ctxPool
	topo     *gpuTopology
	blocks   int // grid of the tier kernels
	ioBlocks int // grid of the completion kernel
}

// gatherCtx is the per-call scratch of a device gather: pinned index pairs, their device copy,
// a stream per tier and the events that order them with the caller's stream. A context is
// reused only after its last call's work finished (acquire waits for its events).
type gatherCtx struct {
	idx     mirror         // (slot, output row) pairs of the memory tiers
	streams [3]cuda.Stream // gpu tier, host tier, ssd completion
	done    [3]cuda.Event
	entry   cuda.Event
	used    bool

	rows     mirror    // GPU-tier rows gathered for a host destination
	pack     [2]mirror // double-buffered chunks of packed host-tier rows
	packDone [2]cuda.Event
	packUsed [2]bool
}

// Host-tier rows narrower than hostPackBelow bytes are packed by CPU workers into pinned chunks
// of packChunkBytes, moved by DMA and scattered by a kernel in device memory: PCIe then carries
// full-width transfers instead of one small read per row, which a kernel reading the pinned tier
// row by row cannot fill.
const (
	hostPackBelow  = 256
	packChunkBytes = 8 << 20
)

// packHostRows delivers host-tier rows srcRows[k] to dst rows dstRows[k] (dstRows is a device
// array) by packing, DMA and a device-memory scatter, chunk by chunk on the host-tier stream.
func (s *Store) packHostRows(g *gpuState, ctx *gatherCtx, srcRows []int64, dstRows uintptr, dst uintptr) error {
	dev, st := g.dev, ctx.streams[1]
	rb := s.spec.RowBytes
	for b := range ctx.pack {
		if err := ctx.pack[b].ensure(dev, packChunkBytes, packChunkBytes); err != nil {
			return err
		}
		if ctx.packDone[b] == 0 {
			var err error
			if ctx.packDone[b], err = cuda.NewEvent(dev); err != nil {
				return err
			}
		}
	}
	arena := s.host.Arena()
	chunkRows := max(1, int(packChunkBytes/rb))
	workers := max(1, s.opt.CopyWorkers)
	for c, k0 := 0, 0; k0 < len(srcRows); c, k0 = c+1, k0+chunkRows {
		k1 := min(k0+chunkRows, len(srcRows))
		b := c % 2
		if ctx.packUsed[b] {
			if err := cuda.SyncEvent(dev, ctx.packDone[b]); err != nil {
				return err
			}
		}
		buf := ctx.pack[b].host
		pack := func(lo, hi int) {
			for j := lo; j < hi; j++ {
				src := srcRows[k0+j] * rb
				copy(buf[int64(j)*rb:int64(j+1)*rb], arena[src:src+rb])
			}
		}
		if n := k1 - k0; workers < 2 || n < 4096 {
			pack(0, n)
		} else {
			var wg sync.WaitGroup
			per := (n + workers - 1) / workers
			for lo := 0; lo < n; lo += per {
				wg.Go(func() { pack(lo, min(lo+per, n)) })
			}
			wg.Wait()
		}
		n := int64(k1 - k0)
		if err := cuda.Memcpy(dev, ctx.pack[b].dev, ctx.pack[b].hostAddr, uint64(n*rb), st); err != nil {
			return err
		}
		if err := cuda.GatherRows(dev, ctx.pack[b].dev, uint64(rb), 0, dstRows+uintptr(k0*8), n, dst, g.blocks, st); err != nil {
			return err
		}
		if err := cuda.Record(dev, ctx.packDone[b], st); err != nil {
			return err
		}
		ctx.packUsed[b] = true
	}
	return nil
}

// startGPU starts the GPU path once. A missing shim or GPU is remembered in gpuErr and is not an
// error; a GPU budget the device cannot hold is.
func (s *Store) startGPU() error {
	if s.gpu != nil || s.gpuErr != nil {
		return nil
	}
	if err := cuda.Load(); err != nil {
		s.gpuErr = err
		return nil
	}
	info, err := cuda.Info(s.opt.GPUDevice)
	if err != nil {
		s.gpuErr = err
		return nil
	}
	rb := s.spec.RowBytes
	capacity := min(s.opt.GPUCacheBytes/rb, s.NumNodes())
	if uint64(s.opt.GPUCacheBytes) > info.FreeBytes {
		return fmt.Errorf("featurestore: GPU cache of %d bytes is more than the %d bytes free on GPU %d (%s, %d total)",
			s.opt.GPUCacheBytes, info.FreeBytes, info.Ordinal, info.Name, info.TotalBytes)
	}
	g := &gpuState{dev: info.Ordinal, info: info, capacity: capacity,
		blocks: info.SMs * 16, ioBlocks: max(1, info.SMs/32)}
	if capacity > 0 {
		if g.arena, err = cuda.Malloc(g.dev, uint64(capacity*rb)); err != nil {
			return fmt.Errorf("featurestore: GPU tier: %w", err)
		}
	}
	// Attach every IO stack; none is in use before the store is returned or while Place holds
	// the lock, and startGPU runs only then.
	stacks := make([]*gpuio.Stack, 0, cap(s.stacks))
	for range cap(s.stacks) {
		stacks = append(stacks, <-s.stacks)
	}
	var attachErr error
	for _, st := range stacks {
		if attachErr == nil && st.Device() < 0 {
			attachErr = st.AttachDevice(g.dev, g.ioBlocks)
		}
		s.stacks <- st
	}
	g.ctxs = newCtxPool(g.dev, cap(s.stacks))
	s.gpu = g
	if attachErr != nil {
		return fmt.Errorf("featurestore: %w", attachErr)
	}
	if err := g.registerHost(s.host); err != nil {
		return err
	}
	if s.opt.GPUTopology != "" {
		if err := s.loadGPUTopology(); err != nil {
			return err
		}
	}
	return nil
}

// ensureGPU starts the GPU path on first use by a device call.
func (s *Store) ensureGPU() (*gpuState, error) {
	s.place.RLock()
	g, gerr := s.gpu, s.gpuErr
	s.place.RUnlock()
	if g == nil && gerr == nil {
		s.place.Lock()
		err := s.startGPU()
		g, gerr = s.gpu, s.gpuErr
		s.place.Unlock()
		if err != nil {
			return nil, err
		}
	}
	if g == nil {
		return nil, fmt.Errorf("featurestore: %w: %v", ErrNoGPU, gerr)
	}
	return g, nil
}

// gpuCapacityRows is how many rows the GPU tier holds (0 without a GPU).
func (s *Store) gpuCapacityRows() int64 {
	if s.gpu == nil {
		return 0
	}
	return s.gpu.capacity
}

// fillTiers puts ids[:gpuRows] (ids are hottest first) in the GPU tier and the rest in the host
// tier. The caller holds the place lock; kernels of earlier gathers may still read the tiers,
// so they are waited for first.
func (s *Store) fillTiers(ids []int64, gpuRows int64) error {
	g := s.gpu
	if g == nil {
		return s.host.Fill(ids, s.loadRows)
	}
	if err := g.quiesce(); err != nil {
		return err
	}
	gpuRows = min(gpuRows, int64(len(ids)))
	if err := g.unregisterHost(); err != nil {
		return err
	}
	err := s.host.Fill(ids[gpuRows:], s.loadRows)
	if rerr := g.registerHost(s.host); rerr != nil {
		return errors.Join(err, rerr)
	}
	if err != nil {
		return err
	}
	return s.fillGPUTier(ids[:gpuRows])
}

// fillGPUTier loads the rows of ids into device memory through a pinned bounce buffer.
func (s *Store) fillGPUTier(ids []int64) error {
	g := s.gpu
	index, err := host.NewIndex(ids)
	if err != nil {
		return fmt.Errorf("featurestore: GPU tier: %w", err)
	}
	g.tier = host.Index{}
	sorted := index.IDs()
	rb := s.spec.RowBytes
	if len(sorted) > 0 {
		chunkRows := max(1, (32<<20)/rb)
		bounceAddr, bounce, err := cuda.HostAlloc(g.dev, uint64(min(chunkRows, int64(len(sorted)))*rb))
		if err != nil {
			return fmt.Errorf("featurestore: GPU tier fill: %w", err)
		}
		defer cuda.HostFree(g.dev, bounceAddr)
		for lo := int64(0); lo < int64(len(sorted)); lo += chunkRows {
			part := sorted[lo:min(lo+chunkRows, int64(len(sorted)))]
			if err := s.loadRows(part, bounce[:int64(len(part))*rb]); err != nil {
				return fmt.Errorf("featurestore: GPU tier fill: %w", err)
			}
			if err := cuda.Memcpy(g.dev, g.arena+uintptr(lo*rb), bounceAddr, uint64(int64(len(part))*rb), 0); err != nil {
				return fmt.Errorf("featurestore: GPU tier fill: %w", err)
			}
			if err := cuda.SyncStream(g.dev, 0); err != nil {
				return fmt.Errorf("featurestore: GPU tier fill: %w", err)
			}
		}
	}
	g.tier = index
	return nil
}

func (g *gpuState) registerHost(c *host.Cache) error {
	arena := c.Arena()
	if len(arena) == 0 {
		return nil
	}
	base := uintptr(unsafe.Pointer(&arena[0]))
	devAddr, err := cuda.HostRegister(g.dev, base, uint64(len(arena)))
	if err != nil {
		return fmt.Errorf("featurestore: pin host tier for GPU %d: %w", g.dev, err)
	}
	g.hostBase, g.hostDev = base, devAddr
	return nil
}

func (g *gpuState) unregisterHost() error {
	if g.hostBase == 0 {
		return nil
	}
	base := g.hostBase
	g.hostBase, g.hostDev = 0, 0
	if err := cuda.HostUnregister(g.dev, base); err != nil {
		return fmt.Errorf("featurestore: unpin host tier: %w", err)
	}
	return nil
}

// quiesce waits until no kernel of an earlier gather runs. Contexts are all idle (the place lock
// is held for writing), so each one's events say when its last call finished.
func (g *gpuState) quiesce() error {
	var err error
	for _, c := range g.ctxs.all {
		err = errors.Join(err, c.wait(g.dev))
	}
	return err
}

// stopGPU releases the GPU path; Close calls it after every call has left.
func (s *Store) stopGPU() {
	g := s.gpu
	if g == nil {
		return
	}
	g.quiesce()
	for _, c := range g.ctxs.all {
		c.free(g.dev)
	}
	g.unregisterHost()
	if g.arena != 0 {
		cuda.Free(g.dev, g.arena)
	}
	if g.topo != nil {
		g.topo.free(g.dev)
	}
	s.gpu = nil
}

// ctxPool hands out gather contexts. It prefers the most recently released context whose last
// call has finished on the GPU (set up, buffers sized, nothing to wait for), else the most recent
// one (a short wait beats setting up a fresh context: streams, events, pinned buffers).
type ctxPool struct {
	dev  int
	mu   sync.Mutex
	cond *sync.Cond
	free []*gatherCtx // a stack: the last was released last
	all  []*gatherCtx
}

func newCtxPool(dev, n int) *ctxPool {
	p := &ctxPool{dev: dev}
	p.cond = sync.NewCond(&p.mu)
	for range n {
		c := &gatherCtx{}
		p.all = append(p.all, c)
		p.free = append([]*gatherCtx{c}, p.free...)
	}
	return p
}

func (p *ctxPool) get() *gatherCtx {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.free) == 0 {
		p.cond.Wait()
	}
	pick := len(p.free) - 1
	for i := len(p.free) - 1; i >= 0; i-- {
		if c := p.free[i]; c.used && c.finished(p.dev) {
			pick = i
			break
		}
	}
	c := p.free[pick]
	p.free = append(p.free[:pick], p.free[pick+1:]...)
	return c
}

func (p *ctxPool) put(c *gatherCtx) {
	p.mu.Lock()
	p.free = append(p.free, c)
	p.mu.Unlock()
	p.cond.Signal()
}

// finished reports, without waiting, whether the context's last call is done on the GPU.
func (c *gatherCtx) finished(dev int) bool {
	for _, ev := range c.done {
		if done, err := cuda.EventDone(dev, ev); err != nil || !done {
			return false
		}
	}
	return true
}

// wait blocks until the context's last call finished on the GPU.
func (c *gatherCtx) wait(dev int) error {
	if !c.used {
		return nil
	}
	c.used = false
	c.packUsed = [2]bool{} // the host-tier stream's done event follows every chunk
	var err error
	for _, ev := range c.done {
		err = errors.Join(err, cuda.SyncEvent(dev, ev))
	}
	return err
}

// setup creates the streams and events on first use and sizes the index buffers for n pairs.
func (c *gatherCtx) setup(dev, pairs int) error {
	if c.entry == 0 {
		for i := range c.streams {
			var err error
			if c.streams[i], err = cuda.NewStream(dev); err != nil {
				return err
			}
			if c.done[i], err = cuda.NewEvent(dev); err != nil {
				return err
			}
		}
		var err error
		if c.entry, err = cuda.NewEvent(dev); err != nil {
			return err
		}
	}
	need := max(pairs*16, 1<<16)
	return c.idx.ensure(dev, need, need+need/2)
}

func (c *gatherCtx) free(dev int) {
	for i := range c.streams {
		if c.streams[i] != 0 {
			cuda.DestroyStream(dev, c.streams[i])
			cuda.DestroyEvent(dev, c.done[i])
		}
	}
	if c.entry != 0 {
		cuda.DestroyEvent(dev, c.entry)
	}
	c.idx.free(dev)
	c.rows.free(dev)
	for b := range c.pack {
		c.pack[b].free(dev)
		if c.packDone[b] != 0 {
			cuda.DestroyEvent(dev, c.packDone[b])
		}
	}
	*c = gatherCtx{}
}

// GPUAvailable reports whether the GPU path runs, and if not, why.
func (s *Store) GPUAvailable() (bool, string) {
	s.place.RLock()
	defer s.place.RUnlock()
	switch {
	case s.gpu != nil:
		return true, ""
	case s.gpuErr != nil:
		return false, s.gpuErr.Error()
	}
	return false, "not started: no GPU cache, GPU topology or device gather was asked for"
}

// GatherDevice writes the feature row of ids[i] to device memory at dst + i*RowBytes on CUDA
// device Options.GPUDevice, ordered on stream (a cudaStream_t; 0 is the legacy default stream):
// work the caller queues on stream afterwards sees every row, and work queued before it finishes
// before any row is written. ids are host memory, may repeat and come in any order; dst holds
// len(ids)*RowBytes bytes.
//
// GPU-tier rows are copied by a kernel from device memory, host-tier rows by a kernel reading the
// pinned host tier over PCIe, and the rest are read from disk into pinned staging and moved by
// the completion kernel, each on its own stream; the host thread returns once every disk read is
// reaped and every kernel enqueued, without waiting for the kernels.
func (s *Store) GatherDevice(ids []int64, dst uintptr, stream uintptr) error {
	leave, err := s.enter()
	if err != nil {
		return err
	}
	defer leave()
	g, err := s.ensureGPU()
	if err != nil {
		return err
	}
	if dst == 0 && len(ids) > 0 {
		return errors.New("featurestore: device gather into a null destination")
	}
	if err := s.checkIDs(ids); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	start := time.Now()
	s.place.RLock()
	defer s.place.RUnlock()
	g = s.gpu

	rb := s.spec.RowBytes
	n := len(ids)
	// Split the ids by tier in parallel chunks: first each chunk's counts, then, at the chunk's
	// offsets, each tier's (slot, output row) pairs straight into pinned memory.
	workers := max(1, s.opt.CopyWorkers)
	splitChunk := max(2048, (n+4*workers-1)/(4*workers)) // about 4 chunks a worker
	chunks := (n + splitChunk - 1) / splitChunk
	slot := make([]int64, n)
	tierOf := make([]uint8, n) // 0 GPU, 1 host, 2 disk
	counts := make([][3]int, chunks+1)
	parallelChunks(chunks, workers, func(c int) {
		var k [3]int
		for i := c * splitChunk; i < min((c+1)*splitChunk, n); i++ {
			t := uint8(2)
			if sl := g.tier.Slot(ids[i]); sl >= 0 {
				slot[i], t = sl, 0
			} else if sl := s.host.Slot(ids[i]); sl >= 0 {
				slot[i], t = sl, 1
			}
			tierOf[i] = t
			k[t]++
		}
		counts[c+1] = k
	})
	for c := 1; c <= chunks; c++ { // counts[c] becomes the offsets of chunk c's pairs
		for t := range 3 {
			counts[c][t] += counts[c-1][t]
		}
	}
	gpuHits, hostHits, diskReads := counts[chunks][0], counts[chunks][1], counts[chunks][2]

	ctx := g.ctxs.get()
	defer g.ctxs.put(ctx)
	if err := ctx.wait(g.dev); err != nil {
		return fmt.Errorf("featurestore: device gather: earlier gather failed on the GPU: %w", err)
	}
	if err := ctx.setup(g.dev, gpuHits+hostHits); err != nil {
		return fmt.Errorf("featurestore: device gather: %w", err)
	}
	pairs := unsafe.Slice((*int64)(unsafe.Pointer(&ctx.idx.host[0])), len(ctx.idx.host)/8)
	gpuSrc, gpuDst := pairs[:gpuHits], pairs[gpuHits:2*gpuHits]
	hostBase := 2 * gpuHits
	hostSrc, hostDst := pairs[hostBase:hostBase+hostHits], pairs[hostBase+hostHits:hostBase+2*hostHits]
	reqs := make([]gpuio.Request, diskReads)
	parallelChunks(chunks, workers, func(c int) {
		k := counts[c]
		for i := c * splitChunk; i < min((c+1)*splitChunk, n); i++ {
			switch tierOf[i] {
			case 0:
				gpuSrc[k[0]], gpuDst[k[0]] = slot[i], int64(i)
				k[0]++
			case 1:
				hostSrc[k[1]], hostDst[k[1]] = slot[i], int64(i)
				k[1]++
			default:
				file, off := s.spec.Locate(ids[i])
				reqs[k[2]] = gpuio.Request{File: file, Offset: off, Length: int(rb), DevDst: dst + uintptr(int64(i)*rb)}
				k[2]++
			}
		}
	})

	dev := g.dev
	callerStream := cuda.Stream(stream)
	// Every stream of ours waits for what the caller queued before (dst may still be in use).
	if err := cuda.Record(dev, ctx.entry, callerStream); err != nil {
		return fmt.Errorf("featurestore: device gather: %w", err)
	}
	for _, st := range ctx.streams {
		if err := cuda.WaitEvent(dev, st, ctx.entry); err != nil {
			return fmt.Errorf("featurestore: device gather: %w", err)
		}
	}
	ctx.used = true

	// Disk reads go out first; the memory tiers are copied while they are in flight.
	var ioStack *gpuio.Stack
	if len(reqs) > 0 {
		ioStack = <-s.stacks
		defer func() {
			s.stats.noteIO(ioStack)
			s.stacks <- ioStack
		}()
		if err := ioStack.Submit(reqs); err != nil {
			ioStack.CompleteOn(uintptr(ctx.streams[2]))
			cuda.Record(dev, ctx.done[2], ctx.streams[2])
			return fmt.Errorf("featurestore: device gather: %w", err)
		}
	}
	var kernelErr error
	launch := func(tier int, src uintptr, base int, srcRows []int64) {
		count := len(srcRows)
		if count == 0 || kernelErr != nil {
			return
		}
		st := ctx.streams[tier]
		off := uintptr(base * 8)
		if err := cuda.Memcpy(dev, ctx.idx.dev+off, ctx.idx.hostAddr+off, uint64(2*count*8), st); err != nil {
			kernelErr = err
			return
		}
		if tier == 1 && rb < hostPackBelow {
			kernelErr = s.packHostRows(g, ctx, srcRows, ctx.idx.dev+off+uintptr(count*8), dst)
			return
		}
		kernelErr = cuda.GatherRows(dev, src, uint64(rb), ctx.idx.dev+off, ctx.idx.dev+off+uintptr(count*8), int64(count), dst, g.blocks, st)
	}
	launch(0, g.arena, 0, gpuSrc)
	var hostDone sync.WaitGroup
	hostDone.Go(func() { // packing small rows is CPU work: overlap it with reaping the disk reads
		launch(1, g.hostDev, hostBase, hostSrc)
	})
	var ioErr error
	if ioStack != nil {
		ioErr = ioStack.CompleteOn(uintptr(ctx.streams[2]))
	}
	hostDone.Wait()
	var syncErr error
	for i, st := range ctx.streams {
		syncErr = errors.Join(syncErr, cuda.Record(dev, ctx.done[i], st), cuda.WaitEvent(dev, callerStream, ctx.done[i]))
	}
	s.stats.gatherDevice(n, gpuHits, hostHits, len(reqs), rb, time.Since(start))
	if err := errors.Join(kernelErr, ioErr, syncErr); err != nil {
		return fmt.Errorf("featurestore: device gather: %w", err)
	}
	return nil
}

// parallelChunks runs fn(c) for every chunk c in [0, chunks) on up to workers goroutines.
func parallelChunks(chunks, workers int, fn func(c int)) {
	if chunks <= 1 || workers < 2 {
		for c := range chunks {
			fn(c)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, chunks) {
		wg.Go(func() {
			for {
				c := int(next.Add(1)) - 1
				if c >= chunks {
					return
				}
				fn(c)
			}
		})
	}
	wg.Wait()
}

// copyGPUHitsToHost serves the host-destination Gather's GPU-tier rows: the rows in GPU-tier
// slots[k] are gathered in device memory, copied to pinned memory and from there into row pos[k]
// of dst. The caller holds the place lock for reading.
func (s *Store) copyGPUHitsToHost(slots []int64, pos []int, dst []byte) error {
	g := s.gpu
	rb := s.spec.RowBytes
	ctx := g.ctxs.get()
	defer g.ctxs.put(ctx)
	if err := ctx.wait(g.dev); err != nil {
		return err
	}
	n := len(pos)
	if err := ctx.setup(g.dev, n); err != nil {
		return err
	}
	need := n * int(rb)
	if err := ctx.rows.ensure(g.dev, need, need+need/2); err != nil {
		return err
	}
	copy(unsafe.Slice((*int64)(unsafe.Pointer(&ctx.idx.host[0])), n), slots)
	st := ctx.streams[0]
	bytes := uint64(int64(n) * rb)
	err := cuda.Memcpy(g.dev, ctx.idx.dev, ctx.idx.hostAddr, uint64(n*8), st)
	if err == nil {
		err = cuda.GatherRows(g.dev, g.arena, uint64(rb), ctx.idx.dev, 0, int64(n), ctx.rows.dev, g.blocks, st)
	}
	if err == nil {
		err = cuda.Memcpy(g.dev, ctx.rows.hostAddr, ctx.rows.dev, bytes, st)
	}
	if serr := cuda.SyncStream(g.dev, st); err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("GPU tier rows to the host: %w", err)
	}
	for k, i := range pos {
		copy(dst[int64(i)*rb:int64(i+1)*rb], ctx.rows.host[int64(k)*rb:int64(k+1)*rb])
	}
	return nil
}

// GPUDevice is the CUDA device of the store's GPU path (Options.GPUDevice).
func (s *Store) GPUDevice() int { return s.opt.GPUDevice }
