package featurestore

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/internal/cuda"
	"github.com/tierfs/tierfs/tiers"
)

// ErrIDOutOfRange is wrapped by errors about node ids outside [0, NumNodes).
var ErrIDOutOfRange = errors.New("node id out of range")

// ErrNotFound is wrapped by errors about a named thing (split, feature) the dataset lacks.
var ErrNotFound = errors.New("not found")

// TierStats describes one tier: what it holds and what it served.
type TierStats struct {
	Tier        tiers.Kind `json:"tier"`
	RowsHeld    int64      `json:"rows_held"`
	BytesHeld   int64      `json:"bytes_held"` // memory the tier takes (rows and index); for ssd, bytes of the feature files
	Hits        uint64     `json:"hits"`       // rows served
	BytesServed uint64     `json:"bytes_served"`
}

// Stats is a snapshot of a store's counters since Open.
type Stats struct {
	Dataset      string      `json:"dataset"`
	IOBackend    string      `json:"io_backend"`
	Gathers      uint64      `json:"gathers"`
	RowsGathered uint64      `json:"rows_gathered"`
	GatherTime   float64     `json:"gather_seconds"` // summed wall time of Gather calls
	Tiers        []TierStats `json:"tiers"`          // fastest first
	IO           gpuio.Stats `json:"io"`             // disk reads of every IO stack, features and topology
	Samples      uint64      `json:"samples"`
	GPU          GPUStats    `json:"gpu"`
}

// Tier is the stats of tier kind (zero counts when the store has no such tier).
func (st Stats) Tier(kind tiers.Kind) TierStats {
	for _, t := range st.Tiers {
		if t.Tier == kind {
			return t
		}
	}
	return TierStats{Tier: kind}
}

// GPUStats says whether the GPU path runs, on which device, and if not, why.
type GPUStats struct {
	Available     bool         `json:"available"`
	Reason        string       `json:"reason,omitempty"` // why not, when not available
	Library       string       `json:"library,omitempty"`
	Device        *cuda.Device `json:"device,omitempty"`
	DeviceGathers uint64       `json:"device_gathers"`
	Topology      string       `json:"topology,omitempty"` // where GPU sampling reads the topology
	// KernelBlocks and CompletionBlocks are the grids of the tier kernels and the IO completion
	// kernel (256 threads a block); CompletionSMShare is the completion grid's share of the SMs.
	KernelBlocks      int     `json:"kernel_blocks,omitempty"`
	CompletionBlocks  int     `json:"completion_blocks,omitempty"`
	CompletionSMShare float64 `json:"completion_sm_share,omitempty"`
}

type counters struct {
	gathers, rows, hostHits, ssdHits, rowBytes, gatherNanos, samples atomic.Uint64
	gpuHits, deviceGathers                                           atomic.Uint64

	ioMu sync.Mutex
	io   map[*gpuio.Stack]gpuio.Stats
}

func (c *counters) gather(rows, hostHits, ssdHits int, rowBytes int64, took time.Duration) {
	c.gathers.Add(1)
	c.rows.Add(uint64(rows))
	c.hostHits.Add(uint64(hostHits))
	c.ssdHits.Add(uint64(ssdHits))
	c.rowBytes.Store(uint64(rowBytes))
	c.gatherNanos.Add(uint64(took.Nanoseconds()))
}

func (c *counters) gatherDevice(rows, gpuHits, hostHits, ssdHits int, rowBytes int64, took time.Duration) {
	c.deviceGathers.Add(1)
	c.gpuHits.Add(uint64(gpuHits))
	c.gather(rows, hostHits, ssdHits, rowBytes, took)
}

// noteIO records a stack's counters; called by the goroutine that holds the stack.
func (c *counters) noteIO(st *gpuio.Stack) {
	c.ioMu.Lock()
	if c.io == nil {
		c.io = map[*gpuio.Stack]gpuio.Stats{}
	}
	c.io[st] = st.Stats()
	c.ioMu.Unlock()
}

// Stats returns the store's counters. After Close it still answers: the memory tiers then hold
// nothing.
func (s *Store) Stats() Stats {
	if leave, err := s.enter(); err == nil {
		defer leave()
	} else {
		s.guard.waitReleased() // the tiers read below are released and empty, not being released
	}
	c := &s.stats
	rb := uint64(s.spec.RowBytes)
	st := Stats{
		Dataset: s.m.Dir(), IOBackend: string(s.backend),
		Gathers: c.gathers.Load(), RowsGathered: c.rows.Load(), GatherTime: float64(c.gatherNanos.Load()) / 1e9,
		Samples: c.samples.Load(),
	}
	s.place.RLock()
	hostRows, hostBytes := s.host.Rows(), s.host.Bytes()
	if s.dyn != nil {
		hostRows, hostBytes = s.dyn.Rows(), s.dyn.Bytes()
	}
	var gpuRows, gpuBytes int64
	st.GPU = GPUStats{DeviceGathers: c.deviceGathers.Load()}
	if g := s.gpu; g != nil {
		gpuRows, gpuBytes = g.tier.Rows(), g.capacity*int64(rb)
		info := g.info
		st.GPU.Available, st.GPU.Library, st.GPU.Device = true, cuda.Path(), &info
		st.GPU.KernelBlocks, st.GPU.CompletionBlocks = g.blocks, g.ioBlocks
		st.GPU.CompletionSMShare = float64(g.ioBlocks) / float64(max(1, info.SMs))
		if g.topo != nil {
			st.GPU.Topology = s.opt.GPUTopology
		}
	} else if s.gpuErr != nil {
		st.GPU.Reason = s.gpuErr.Error()
	} else {
		st.GPU.Reason = "not started: no GPU cache, GPU topology or device gather was asked for"
	}
	s.place.RUnlock()
	var ssdBytes int64
	for k := range s.spec.Files {
		ssdBytes += s.spec.ContentBytesOfFile(k)
	}
	st.Tiers = []TierStats{
		{Tier: tiers.GPU, RowsHeld: gpuRows, BytesHeld: gpuBytes, Hits: c.gpuHits.Load(), BytesServed: c.gpuHits.Load() * rb},
		{Tier: tiers.Host, RowsHeld: hostRows, BytesHeld: hostBytes, Hits: c.hostHits.Load(), BytesServed: c.hostHits.Load() * rb},
		{Tier: tiers.SSD, RowsHeld: s.NumNodes(), BytesHeld: ssdBytes, Hits: c.ssdHits.Load(), BytesServed: c.ssdHits.Load() * rb},
	}
	c.ioMu.Lock()
	st.IO.Backend = s.backend
	for _, io := range c.io {
		st.IO.Requests += io.Requests
		st.IO.Reads += io.Reads
		st.IO.BytesRequested += io.BytesRequested
		st.IO.BytesRead += io.BytesRead
		st.IO.DeviceRequests += io.DeviceRequests
		st.IO.CompletionKernels += io.CompletionKernels
		for i, n := range io.LatencyHistogram {
			st.IO.LatencyHistogram[i] += n
		}
	}
	c.ioMu.Unlock()
	return st
}
