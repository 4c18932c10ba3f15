package featurestore

import (
	"errors"
	"fmt"
	"sync"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/tiers/gpu"
)

// The GPU path: a GPU tier of the hottest rows in device memory, the host tier pinned and read by
// kernels over PCIe (or packed and DMA'd), and SSD reads completed by the IO stacks' completion
// kernel, all writing into a caller's device buffer. It starts at Open when asked for
// (GPUCacheBytes, GPUTopology) or at the first device gather, and only where the CUDA shim and a
// GPU are there.

// ErrNoGPU is wrapped by errors of device calls on a store whose GPU path could not start.
var ErrNoGPU = errors.New("GPU path unavailable")

// gpuPath is what the GPU path holds. Its fields change only under the place lock (write).
type gpuPath struct {
	dev      int
	info     cuda.Device
	tier     *gpu.Tier // the stack lists it while it has rows (setTier)
	ctxs     *ctxPool
	lanes    lanes
	topo     *gpuTopology
	blocks   int // grid of the tier kernels
	ioBlocks int // grid of the completion kernel
}

// startGPU starts the GPU path once. A missing shim or GPU is remembered in gpuErr and is not an
// error; a GPU budget the device cannot hold is.
func (s *Store) startGPU() error {
	if s.gpu != nil || s.gpuErr != nil {
		return nil
	}
	info, err := cuda.Info(s.opt.GPUDevice) // loads the CUDA shim: its error where it cannot
	if err != nil {
		s.gpuErr = err
		return nil
	}
	rb := s.spec.RowBytes
	capacity := min(TierRows(tiers.GPU, s.opt.GPUCacheBytes, rb), s.NumNodes())
	if uint64(s.opt.GPUCacheBytes) > info.FreeBytes {
		return &OptionError{Option: "gpu_cache", Value: s.opt.GPUCacheBytes,
			Want: fmt.Sprintf("at most the %d bytes free on GPU %d (%s, %d total)", info.FreeBytes, info.Ordinal, info.Name, info.TotalBytes)}
	}
	g := &gpuPath{dev: info.Ordinal, info: info, blocks: info.SMs * 16, ioBlocks: max(1, info.SMs/32)}
	conc := s.opt.MaxConcurrentIO
	if g.tier, err = gpu.New(g.dev, rb, capacity, g.blocks, conc); err != nil {
		return fmt.Errorf("featurestore: %w", err)
	}
	g.ctxs = newCtxPool(g.dev, conc)
	s.gpu = g
	s.setTier(tiers.GPU, g.tier)
	// No IO stack is in use before the store is returned or while Place holds the lock, and
	// startGPU runs only then.
	if err := s.files.AttachDevice(g.dev, g.ioBlocks); err != nil {
		return fmt.Errorf("featurestore: %w", err)
	}
	if err := s.attachTiers(s.stack); err != nil {
		return err
	}
	if s.opt.GPUTopology != "" {
		if err := s.loadGPUTopology(); err != nil {
			return err
		}
	}
	return nil
}

// attachTiers attaches the tiers of ts that prepare for device copies (tiers.DeviceAttacher) to
// the GPU path's device; the caller holds the place lock for writing and the path runs.
func (s *Store) attachTiers(ts []tiers.Tier) error {
	for _, t := range ts {
		if a, ok := t.(tiers.DeviceAttacher); ok {
			if err := a.AttachDevice(s.gpu.dev, s.opt.MaxConcurrentIO); err != nil {
				return fmt.Errorf("featurestore: %w", err)
			}
		}
	}
	return nil
}

// ensureGPU starts the GPU path on first use by a device call.
func (s *Store) ensureGPU() (*gpuPath, error) {
	s.place.RLock()
	g, gerr := s.gpu, s.gpuErr
	s.place.RUnlock()
	if g == nil && gerr == nil {
		// No tierGen change: a GPU path started here holds no rows (a GPU tier with a budget
		// starts at Open) and attaching the other tiers to the device changes no contents, so
		// plans opened before stay valid.
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

// quiesce waits until no kernel of an earlier gather runs. Contexts are all idle (the place lock
// is held for writing), so each one's event says when its last call finished.
func (g *gpuPath) quiesce(s *Store) error {
	var err error
	for _, c := range g.ctxs.all {
		err = errors.Join(err, c.wait(s))
	}
	if g.lanes.busy() { // their kernels ran on the callers' streams: wait for the whole device
		err = errors.Join(err, cuda.DeviceSync(g.dev))
		g.lanes.harvest(s)
	}
	return err
}

// stopGPU releases the GPU path; Close calls it after every call has left.
func (s *Store) stopGPU() {
	g := s.gpu
	if g == nil {
		return
	}
	g.quiesce(s)
	for _, c := range g.ctxs.all {
		c.free(g.dev)
	}
	g.lanes.free(g.dev)
	s.setTier(tiers.GPU, nil)
	g.tier.Close()
	if g.topo != nil {
		g.topo.free(g.dev)
	}
	s.gpu = nil
}

// ctxPool hands out device-gather contexts, least recently released first: its last call is the
// likeliest to be done on the GPU, so taking it seldom waits.
type ctxPool struct {
	dev  int
	mu   sync.Mutex
	cond *sync.Cond
	free []*gatherCtx // a queue: free[0] was released first
	all  []*gatherCtx
}

func newCtxPool(dev, n int) *ctxPool {
	p := &ctxPool{dev: dev}
	p.cond = sync.NewCond(&p.mu)
	for range max(1, n) {
		c := &gatherCtx{}
		p.all = append(p.all, c)
		p.free = append(p.free, c)
	}
	return p
}

func (p *ctxPool) get() *gatherCtx {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.free) == 0 {
		p.cond.Wait()
	}
	c := p.free[0]
	p.free = p.free[1:]
	return c
}

func (p *ctxPool) put(c *gatherCtx) {
	p.mu.Lock()
	p.free = append(p.free, c)
	p.mu.Unlock()
	p.cond.Signal()
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

// GPUDevice is the CUDA device of the store's GPU path (Options.GPUDevice).
func (s *Store) GPUDevice() int { return s.opt.GPUDevice }
