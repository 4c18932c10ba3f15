package featurestore

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/tiers"
)

// The device sink. A device gather splits its ids on the GPU: one kernel looks every id up in the
// GPU-resident indexes of the GPU tier and of the static host tier (rows of host.PackBelow bytes
// or more, read over PCIe; each tier says so itself as a tiers.DeviceIndexer), copies the rows those tiers hold straight into the destination, and
// lists the rest. When the memory tiers in the kernel hold every row, nothing else happens and the
// call returns without waiting for the GPU; with device ids it is then a single launch on the
// caller's stream (per-stream counters, no context or event). Otherwise the host waits for the kernel, takes the
// missed ids and positions (only they cross to the host), splits them among the remaining tiers
// (SIEVE or packed host tier, SSD) with the host splitter, and those tiers enqueue their copies
// on their own streams, which the caller's stream then waits for.

// gatherCtx is the per-call scratch of a device gather. A context is reused only after its last
// call finished on the GPU (wait).
type gatherCtx struct {
	ids     cuda.Mirror // host ids staged in pinned memory, read by the kernel over PCIe
	miss    cuda.Mirror // missed ids, then their positions: n int64 each
	counts  cuda.Mirror // the kernel's scratch on the device, its counters in pinned memory
	pairs   cuda.Mirror // the host split of the misses, uploaded for the tiers' kernels
	streams [2]cuda.Stream
	done    [2]cuda.Event
	split   cuda.Event // the kernel and its counters are done; later, the pairs are uploaded
	end     cuda.Event // the call's last work on the caller's stream

	used        bool
	unchecked   bool // counters not read yet (the call did not wait for the GPU)
	badReported bool // reportBad has reported the call's bad id
	countsZero  bool // the kernel's scratch is zero (no call failed since it was zeroed)
	n           int  // ids of the last call
	first       int  // where they start in their gather (chunks of large ones)
	deviceIDs   bool // the last call's ids were device memory (not checked on the host)
}

// setup creates streams and events on first use and sizes the buffers for n ids.
func (c *gatherCtx) setup(dev, n int, hostIDs bool) error {
	if c.end == 0 {
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
		if c.split, err = cuda.NewEvent(dev); err != nil {
			return err
		}
		if c.end, err = cuda.NewEvent(dev); err != nil {
			return err
		}
	}
	if !c.countsZero { // the kernel leaves its scratch zero; zero it once, and after a failure
		if err := c.counts.Ensure(dev, 8*cuda.SplitScratch, 8*cuda.SplitScratch); err != nil {
			return err
		}
		// On the context's own (non-blocking) stream: a wait on the legacy default stream waits
		// for the training loop's work and through it for NCCL collectives in flight (lanes.get).
		if err := cuda.Memset(dev, c.counts.Dev, 0, 8*cuda.SplitScratch, c.streams[0]); err != nil {
			return err
		}
		if err := cuda.SyncStream(dev, c.streams[0]); err != nil {
			return err
		}
		c.countsZero = true
	}
	need := max(16*n, 1<<16)
	if err := c.miss.Ensure(dev, need, need+need/2); err != nil {
		return err
	}
	if hostIDs {
		need = max(8*n, 1<<16)
		return c.ids.Ensure(dev, need, need+need/2)
	}
	return nil
}

// wait blocks until the context's last call finished on the GPU and takes in its counters.
func (c *gatherCtx) wait(s *Store) error {
	if !c.used {
		return nil
	}
	c.used = false
	err := cuda.SyncEvent(s.gpu.dev, c.end)
	if err == nil {
		s.harvest(c)
	}
	return err
}

// harvest counts the tier hits of a call that did not wait for the GPU and reports its bad ids
// (reportBad). The call's work is done.
func (s *Store) harvest(c *gatherCtx) {
	if !c.unchecked {
		return
	}
	s.reportBad(c)
	c.unchecked = false
	counts := cuda.Int64s(c.counts.Host, cuda.SplitCounts)
	for t, k := range splitKinds {
		s.stats.hits(k).Add(uint64(counts[2+t]))
	}
}

// reportBad keeps, for the next device call, the error of an out-of-range device id that a call
// which did not wait for the GPU met. It reads the pinned counters without waiting: the call
// zeroed them and the kernel's last block writes them as it ends.
func (s *Store) reportBad(c *gatherCtx) {
	if !c.unchecked || c.badReported {
		return
	}
	bad := atomic.LoadInt64(&cuda.Int64s(c.counts.Host, cuda.SplitCounts)[1])
	if bad == 0 {
		return
	}
	c.badReported = true
	s.deferBadID(int64(c.first) + bad - 1)
}

// deferBadID keeps, for the next device call, the error of an out-of-range device id at position
// pos of a gather that did not wait for the GPU.
func (s *Store) deferBadID(pos int64) {
	err := fmt.Errorf("featurestore: device ids[%d] is out of range [0, %d) (a row of zeros was written; reported by a later call because the gather did not wait for the GPU): %w",
		pos, s.NumNodes(), ErrIDOutOfRange)
	s.deferredMu.Lock()
	s.deferredErr = errors.Join(s.deferredErr, err)
	s.deferredMu.Unlock()
}

// checkIdle reports the bad ids of the idle contexts' calls whose counters have landed.
func (p *ctxPool) checkIdle(s *Store) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.free {
		s.reportBad(c)
	}
}

// harvestIdle harvests the idle contexts whose last call is done on the GPU, without waiting.
func (p *ctxPool) harvestIdle(s *Store) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.free {
		if c.used && c.unchecked {
			if done, err := cuda.EventDone(p.dev, c.end); err == nil && done {
				s.harvest(c)
			}
		}
	}
}

// takeDeferred returns (once) the errors of earlier device gathers found after they returned.
func (s *Store) takeDeferred() error {
	s.deferredMu.Lock()
	defer s.deferredMu.Unlock()
	err := s.deferredErr
	s.deferredErr = nil
	return err
}

func (c *gatherCtx) free(dev int) {
	for i := range c.streams {
		if c.streams[i] != 0 {
			cuda.DestroyStream(dev, c.streams[i])
			cuda.DestroyEvent(dev, c.done[i])
		}
	}
	for _, ev := range []cuda.Event{c.split, c.end} {
		if ev != 0 {
			cuda.DestroyEvent(dev, ev)
		}
	}
	c.ids.Free(dev)
	c.miss.Free(dev)
	c.counts.Free(dev)
	c.pairs.Free(dev)
	*c = gatherCtx{}
}

// lanes are the per-stream counters of device gathers that need no context: device ids, every
// row in the kernel's tiers. Kernels of one stream run one at a time, so they share a lane's
// scratch and add up its counts without events. At most maxLanes streams get one; gathers on
// other streams take a context. (A stream handle reused after its stream was destroyed, while
// kernels of the old one still run, could mix their counters: the rows are unaffected.)
type lanes struct {
	mu       sync.Mutex
	byStream map[uintptr]*lane
}

// lane is one stream's split-kernel scratch (device) and counts (pinned, added up by the kernels),
// and the counts already taken into the store's stats.
type lane struct {
	counts cuda.Mirror
	taken  [cuda.SplitCounts]int64
	broken bool // a launch failed: the scratch may not be zero
}

const maxLanes = 16

// get returns stream's lane, making it on first use; nil when maxLanes streams have one.
func (l *lanes) get(dev int, stream uintptr) *lane {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ln := l.byStream[stream]; ln != nil && !ln.broken {
		return ln
	}
	if l.byStream == nil {
		l.byStream = map[uintptr]*lane{}
	}
	if len(l.byStream) >= maxLanes {
		return nil
	}
	ln := &lane{}
	if ln.counts.Ensure(dev, 8*cuda.SplitScratch, 8*cuda.SplitScratch) != nil {
		return nil
	}
	// Zeroed on the lane's own stream, ahead of its kernels: no host wait, and nothing on the
	// legacy default stream, which waits for the training loop's work and through it for NCCL
	// collectives in flight (a wait there can deadlock against a peer rank).
	if err := cuda.Memset(dev, ln.counts.Dev, 0, 8*cuda.SplitScratch, cuda.Stream(stream)); err != nil {
		ln.counts.Free(dev)
		return nil
	}
	clear(ln.counts.Host)
	if old := l.byStream[stream]; old != nil { // broken: its launch failed, nothing runs on it
		old.counts.Free(dev)
	}
	l.byStream[stream] = ln
	return ln
}

// harvest takes the lanes' counts that have landed into the store's stats, and keeps the error
// of a bad id for the next call.
func (l *lanes) harvest(s *Store) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ln := range l.byStream {
		counts := cuda.Int64s(ln.counts.Host, cuda.SplitCounts)
		for t, k := range splitKinds {
			now := atomic.LoadInt64(&counts[2+t])
			s.stats.hits(k).Add(uint64(now - ln.taken[2+t]))
			ln.taken[2+t] = now
		}
		if bad := atomic.SwapInt64(&counts[1], 0); bad != 0 {
			s.deferBadID(bad - 1)
		}
	}
}

// free releases every lane; no kernel may run.
func (l *lanes) free(dev int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ln := range l.byStream {
		ln.counts.Free(dev)
	}
	l.byStream = nil
}

// busy reports whether any lane exists (its kernels may still run).
func (l *lanes) busy() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byStream) > 0
}

// GatherDevice writes the feature row of ids[i] to device memory at dst + i*RowBytes on CUDA
// device Options.GPUDevice, ordered on stream (a cudaStream_t; 0 is the legacy default stream):
// work the caller queues on stream afterwards sees every row, and work queued before it finishes
// before any row is written. ids are host memory, checked before anything is queued, may repeat
// and come in any order; dst holds len(ids)*RowBytes bytes. The host returns once every disk read
// is reaped and every kernel enqueued, without waiting for the kernels.
func (s *Store) GatherDevice(ids []int64, dst uintptr, stream uintptr) error {
	if err := s.needFeature("GatherDevice"); err != nil {
		return err
	}
	return s.gatherDevice(ids, 0, len(ids), dst, stream)
}

// GatherDeviceIDs is GatherDevice with the n ids in device memory of the store's device (int64,
// e.g. a CUDA tensor's data): they are split on the GPU and only the ids no memory tier holds
// cross to the host. When the memory tiers hold every row the call does not wait for the GPU: an
// id out of range then gets a row of zeros and its error comes back from a later device call.
func (s *Store) GatherDeviceIDs(ids uintptr, n int, dst uintptr, stream uintptr) error {
	if err := s.needFeature("GatherDeviceIDs"); err != nil {
		return err
	}
	if ids == 0 && n > 0 {
		return errors.New("featurestore: device gather with null device ids")
	}
	if n < 0 {
		return fmt.Errorf("featurestore: device gather of %d ids", n)
	}
	return s.gatherDevice(nil, ids, n, dst, stream)
}

func (s *Store) gatherDevice(hostIDs []int64, devIDs uintptr, n int, dst uintptr, stream uintptr) error {
	return s.gatherDeviceVia(hostIDs, devIDs, n, dst, stream, nil)
}

// deviceVia changes what a device gather serves from (a planned batch: planned/device.go): last
// serves what the memory tiers miss, in place of the SSD tier, and check runs under the place
// lock before any id is split.
type deviceVia struct {
	last  tiers.Tier
	check func() error
}

func (s *Store) gatherDeviceVia(hostIDs []int64, devIDs uintptr, n int, dst uintptr, stream uintptr, via *deviceVia) error {
	leave, err := s.enter()
	if err != nil {
		return err
	}
	defer leave()
	g, err := s.ensureGPU()
	if err != nil {
		return err
	}
	if dst == 0 && n > 0 {
		return errors.New("featurestore: device gather into a null destination")
	}
	if n == 0 {
		return s.takeDeferred()
	}
	start := time.Now()
	s.place.RLock()
	defer s.place.RUnlock()
	g = s.gpu
	g.ctxs.checkIdle(s)
	g.lanes.harvest(s)
	if err := s.takeDeferred(); err != nil {
		return err
	}
	dev, rb := g.dev, s.spec.RowBytes
	kernel, covered, rest := s.splitTiers()
	if via != nil {
		if err := via.check(); err != nil {
			return err
		}
		rest = append(slices.Clone(rest[:len(rest)-1]), via.last)
	}
	caller := cuda.Stream(stream)
	args := cuda.SplitArgs{IDs: devIDs, N: int64(n), NumNodes: s.NumNodes(), Tiers: kernel[:], RowBytes: uint64(rb), Dst: dst}

	if hostIDs == nil && covered == s.NumNodes() {
		if ln := g.lanes.get(dev, stream); ln != nil {
			// No id can miss and the ids are the caller's: one launch on the caller's stream, with
			// the stream's own counters; no context, no event.
			args.Scratch, args.HostCounts = ln.counts.Dev, ln.counts.HostAddr
			if err := cuda.SplitGather(dev, args, g.blocks, caller); err != nil {
				ln.broken = true
				return wrapDevice(err)
			}
			s.stats.deviceGathers.Add(1)
			s.stats.gather(nil, nil, time.Since(start))
			s.stats.rows.Add(uint64(n))
			return nil
		}
	}

	for lo := 0; lo < n; lo += MaxGatherChunk {
		hi := min(lo+MaxGatherChunk, n)
		var chunkIDs []int64
		if hostIDs != nil {
			chunkIDs = hostIDs[lo:hi]
		}
		args.IDs, args.N, args.Dst = devIDs+uintptr(8*lo), int64(hi-lo), dst+uintptr(int64(lo)*rb)
		if err := s.gatherDeviceChunk(g, args, chunkIDs, covered, rest, caller, lo, start); err != nil {
			return err
		}
		start = time.Now()
	}
	return nil
}

// gatherDeviceChunk runs the split kernel over one chunk of a device gather (args: the kernel's
// tiers, ids, count and destination; hostIDs: the chunk's host ids, nil for device ids) with a
// context, and serves its misses from rest. first is the chunk's position in the call, for
// errors.
func (s *Store) gatherDeviceChunk(g *gpuPath, args cuda.SplitArgs, hostIDs []int64, covered int64, rest []tiers.Tier, caller cuda.Stream, first int, start time.Time) error {
	dev, n := g.dev, int(args.N)
	ctx := g.ctxs.get()
	defer g.ctxs.put(ctx)
	if err := ctx.wait(s); err != nil {
		return fmt.Errorf("featurestore: device gather: earlier gather failed on the GPU: %w", err)
	}
	if err := s.takeDeferred(); err != nil {
		return err
	}
	if err := ctx.setup(dev, n, hostIDs != nil); err != nil {
		return fmt.Errorf("featurestore: device gather: %w", err)
	}
	clear(ctx.counts.Host) // the kernel adds to it; reportBad reads it before the kernel ends
	if hostIDs != nil {
		if err := s.stageIDs(cuda.Int64s(ctx.ids.Host, n), hostIDs, first); err != nil {
			return err
		}
		args.IDs = ctx.ids.HostAddr
	}
	counts := ctx.counts
	args.MissIDs, args.MissPos, args.Scratch, args.HostCounts = ctx.miss.Dev, ctx.miss.Dev+uintptr(8*n), counts.Dev, counts.HostAddr
	ctx.countsZero = false // until the kernel is known to have run
	if err := cuda.SplitGather(dev, args, g.blocks, caller); err != nil {
		return wrapDevice(err)
	}
	ctx.countsZero = true
	ctx.used, ctx.n, ctx.first, ctx.deviceIDs = true, n, first, hostIDs == nil
	s.stats.deviceGathers.Add(1)
	if covered == s.NumNodes() { // no id can miss: do not wait for the GPU
		ctx.unchecked, ctx.badReported = true, false
		s.stats.gather(nil, nil, time.Since(start))
		s.stats.rows.Add(uint64(n))
		return wrapDevice(cuda.Record(dev, ctx.end, caller))
	}

	// Wait for the kernel, then serve the misses from the remaining tiers.
	if err := cuda.Record(dev, ctx.split, caller); err != nil {
		return wrapDevice(err)
	}
	if err := cuda.SyncEvent(dev, ctx.split); err != nil {
		return wrapDevice(err)
	}
	c := cuda.Int64s(counts.Host, cuda.SplitCounts)
	if bad := c[1]; bad != 0 {
		cuda.Record(dev, ctx.end, caller)
		return fmt.Errorf("featurestore: device ids[%d] is out of range [0, %d): %w", int64(first)+bad-1, s.NumNodes(), ErrIDOutOfRange)
	}
	misses := int(c[0])
	all := s.tierList()
	count := make([]int, len(all))
	for t, k := range splitKinds {
		if i := slices.IndexFunc(all, func(x tiers.Tier) bool { return x.Kind() == k }); i >= 0 {
			count[i] += int(c[2+t])
		}
	}
	var err error
	if misses > 0 {
		err = s.serveMisses(ctx, rest, misses, args.Dst, caller, count[len(all)-len(rest):])
	}
	s.stats.gather(all, count, time.Since(start))
	return errors.Join(wrapDevice(err), wrapDevice(cuda.Record(dev, ctx.end, caller)))
}

// splitKinds are the tiers of the split kernel, in their fixed places.
var splitKinds = [cuda.MaxSplitTiers]tiers.Kind{tiers.GPU, tiers.Host}

// splitTiers is what the split kernel looks ids up in, in fixed places (splitKinds; count 0
// where a tier is absent): the fastest tiers, in order, that hand it their index
// (tiers.DeviceIndexer) — the GPU tier, and the static host tier when its rows are read over PCIe
// row by row; covered is how many rows they hold, rest the tiers that serve what they miss (the
// last is SSD). The kernel's tiers come first so that every id still goes to the first tier
// holding it. The caller holds the place lock.
func (s *Store) splitTiers() (kernel [cuda.MaxSplitTiers]cuda.TierIndex, covered int64, rest []tiers.Tier) {
	rest = s.tierList()
	for place, kind := range splitKinds {
		if len(rest) == 0 || rest[0].Kind() != kind {
			continue // absent: count 0 in its place
		}
		di, ok := rest[0].(tiers.DeviceIndexer)
		if !ok {
			break
		}
		idx, ok := di.DeviceIndex()
		if !ok {
			break
		}
		kernel[place], covered, rest = idx, covered+rest[0].Rows(), rest[1:]
	}
	return kernel, covered, rest
}

// stageIDs checks ids and copies them to pinned memory, in parallel chunks for large batches.
func (s *Store) stageIDs(pinned, ids []int64, first int) error {
	const chunk = 1 << 16
	chunks := (len(ids) + chunk - 1) / chunk
	errs := make([]error, chunks)
	parallelChunks(chunks, s.opt.CopyWorkers, func(c int) {
		lo, hi := c*chunk, min((c+1)*chunk, len(ids))
		if errs[c] = s.checkIDsFrom(ids[lo:hi], first+lo); errs[c] == nil {
			copy(pinned[lo:hi], ids[lo:hi])
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func wrapDevice(err error) error {
	if err != nil {
		return fmt.Errorf("featurestore: device gather: %w", err)
	}
	return nil
}

// serveMisses moves the rows of the kernel's misses (ctx.miss, the counters read) from the tiers
// rest; count gets how many each served.
func (s *Store) serveMisses(ctx *gatherCtx, rest []tiers.Tier, misses int, dst uintptr, caller cuda.Stream, count []int) error {
	dev, n := s.gpu.dev, ctx.n
	splitStart := time.Now()
	// The missed ids and positions come to the host.
	err := cuda.Memcpy(dev, ctx.miss.HostAddr, ctx.miss.Dev, uint64(8*misses), caller)
	if err == nil {
		err = cuda.Memcpy(dev, ctx.miss.HostAddr+uintptr(8*n), ctx.miss.Dev+uintptr(8*n), uint64(8*misses), caller)
	}
	if err == nil {
		err = cuda.Record(dev, ctx.split, caller)
	}
	if err == nil {
		err = cuda.SyncEvent(dev, ctx.split)
	}
	if err != nil {
		return err
	}
	view := cuda.Int64s(ctx.miss.Host, 2*n)
	missIDs, missPos := view[:misses], view[n:n+misses]
	if ctx.deviceIDs {
		if err := s.checkIDs(missIDs); err != nil { // the kernel lists only ids in range
			return err
		}
	}
	need := 16 * misses
	if err := ctx.pairs.Ensure(dev, need, need+need/2); err != nil {
		return err
	}
	held, release := heldTiers(rest)
	released := false
	defer func() {
		if !released {
			release()
		}
	}()
	sp := splitIDs(missIDs, held, cuda.Int64s(ctx.pairs.Host, 2*misses), missPos, s.opt.CopyWorkers)
	copy(count, sp.count)
	if lt, ok := held[len(held)-1].(tiers.CallerLeaver); ok { // the counters count the rows it serves
		count[len(count)-1] -= lt.LeftToCaller(sp.slots(len(held) - 1))
	}
	since(&s.stats.splitNanos, splitStart)
	// The pairs go up once; every tier's stream waits for them (and for what the caller queued).
	if err := cuda.Memcpy(dev, ctx.pairs.Dev, ctx.pairs.HostAddr, uint64(need), caller); err != nil {
		return err
	}
	if err := cuda.Record(dev, ctx.split, caller); err != nil {
		return err
	}
	last := len(held) - 1
	errs := make([]error, len(held))
	copyOn := func(t int) {
		st := ctx.streams[t%len(ctx.streams)]
		if errs[t] = cuda.WaitEvent(dev, st, ctx.split); errs[t] != nil {
			return
		}
		b := sp.base(t)
		errs[t] = held[t].EnqueueToDevice(tiers.DeviceCopy{N: sp.count[t], Slots: sp.slots(t), Pos: sp.pos(t),
			DevSlots: ctx.pairs.Dev + uintptr(8*b), DevPos: ctx.pairs.Dev + uintptr(8*(b+sp.count[t])), Dst: dst, Stream: uintptr(st)})
		errs[t] = errors.Join(errs[t], cuda.Record(dev, ctx.done[t%len(ctx.done)], st), cuda.WaitEvent(dev, caller, ctx.done[t%len(ctx.done)]))
	}
	// The SSD tier's reads go out first; the memory tiers (packing is CPU work) overlap reaping,
	// and tiers that change under gathers are released once their copies are queued.
	var disk, memory sync.WaitGroup
	if sp.count[last] > 0 {
		disk.Go(func() {
			defer since(&s.stats.diskNanos, time.Now())
			copyOn(last)
		})
	}
	for t := last - 1; t >= 0; t-- {
		if sp.count[t] > 0 {
			memory.Go(func() { copyOn(t) })
		}
	}
	memory.Wait()
	release()
	released = true
	disk.Wait()
	return errors.Join(errs...)
}
