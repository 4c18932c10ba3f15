package featurestore

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/tiers/ssd"
)

// ErrIDOutOfRange is wrapped by errors about node ids outside [0, NumNodes).
var ErrIDOutOfRange = errors.New("node id out of range")

// ErrNotFound is wrapped by errors about a named thing (split, feature) the dataset lacks.
var ErrNotFound = errors.New("not found")

// TierStats describes one tier: what it holds and what it served.
type TierStats struct {
	Tier        tiers.Kind `json:"tier"`
	RowsHeld    int64      `json:"rows_held"`
	Capacity    int64      `json:"capacity_rows"` // rows the tier holds when full (memory tiers; every row for ssd)
	BytesHeld   int64      `json:"bytes_held"`    // memory the tier takes (rows and index); for ssd, bytes of the feature files
	Hits        uint64     `json:"hits"`          // rows served
	BytesServed uint64     `json:"bytes_served"`
	// Shared says how a host tier in shared memory is held: "created" (this process filled it,
	// Store.ShareHostTier) or "mapped" (another process did, Store.MapHostTier); empty when the
	// tier is the process's own.
	Shared string `json:"shared,omitempty"`
}

// Stats is a snapshot of a store's counters since Open.
type Stats struct {
	Dataset      string  `json:"dataset"`
	IOBackend    string  `json:"io_backend"`
	Gathers      uint64  `json:"gathers"`
	RowsGathered uint64  `json:"rows_gathered"`
	GatherTime   float64 `json:"gather_seconds"` // summed wall time of Gather calls
	// SplitTime and DiskTime are the parts of the gathers' time spent splitting ids by tier (on
	// the device path: the split kernel and the misses' trip to the host) and waiting on the SSD
	// tier's reads (submit to last completion); summed over gathers, so concurrent gathers can
	// add up to more than the wall time.
	SplitTime float64     `json:"split_seconds"`
	DiskTime  float64     `json:"disk_seconds"`
	Tiers     []TierStats `json:"tiers"` // fastest first
	IO        gpuio.Stats `json:"io"`    // disk reads of every IO stack, features and topology
	// ReadAmplification is IO.BytesRead / IO.BytesRequested: bytes read from disk per byte
	// wanted (alignment and bridged gaps, IO.GapBytes, make it exceed 1). ReadsPerGather is
	// IO.Reads / Gathers. Both count every read of the stacks, topology and labels included.
	ReadAmplification float64 `json:"read_amplification"`
	ReadsPerGather    float64 `json:"reads_per_gather"`
	// DiskProbe is what the disk probe measured at Open (Options.CoalesceGap -1), else nil.
	DiskProbe *ssd.DiskProbe `json:"disk_probe,omitempty"`
	// Fill is how the memory tiers' fills read their rows from the SSD tier, chunk by chunk a
	// scan or random reads by the disk model (ssd.Tier.Source), since Open.
	Fill    ssd.FillStats `json:"fill"`
	Samples uint64        `json:"samples"`
	GPU     GPUStats      `json:"gpu"`
	// NodeTypes holds, in a session of several tier stacks, each node type's stack's Stats (its
	// gathers and tiers; IO is the session's, shared), by node type; nil otherwise. The counts
	// above (gathers, rows, times, samples, fills, device gathers, every tier's rows, capacity,
	// bytes and hits) are then the whole store's: the sums over the types.
	NodeTypes map[string]Stats `json:"node_types,omitempty"`
}

// add counts o's gathers, samples, fills and tiers into st, as a session's whole-store stats sum
// its stacks'. IO, the disk probe and the GPU's state are the session's, shared: not added.
func (st *Stats) add(o Stats) {
	st.Gathers += o.Gathers
	st.RowsGathered += o.RowsGathered
	st.GatherTime += o.GatherTime
	st.SplitTime += o.SplitTime
	st.DiskTime += o.DiskTime
	st.Samples += o.Samples
	st.GPU.DeviceGathers += o.GPU.DeviceGathers
	f, of := &st.Fill, o.Fill
	f.ScanChunks, f.ScanRows, f.RandomChunks, f.RandomRows = f.ScanChunks+of.ScanChunks, f.ScanRows+of.ScanRows, f.RandomChunks+of.RandomChunks, f.RandomRows+of.RandomRows
	f.Reads, f.Bytes, f.ScanEstimate, f.RandomEstimate = f.Reads+of.Reads, f.Bytes+of.Bytes, f.ScanEstimate+of.ScanEstimate, f.RandomEstimate+of.RandomEstimate
	sum := make([]TierStats, len(st.Tiers)) // a new slice: st.Tiers may be a type's own
	for i, t := range st.Tiers {
		ot := o.Tier(t.Tier)
		t.RowsHeld, t.Capacity, t.BytesHeld = t.RowsHeld+ot.RowsHeld, t.Capacity+ot.Capacity, t.BytesHeld+ot.BytesHeld
		t.Hits, t.BytesServed = t.Hits+ot.Hits, t.BytesServed+ot.BytesServed
		sum[i] = t
	}
	st.Tiers = sum
	st.ReadsPerGather = 0
	if st.Gathers > 0 {
		st.ReadsPerGather = float64(st.IO.Reads) / float64(st.Gathers)
	}
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
	gathers, rows, gatherNanos, samples atomic.Uint64
	splitNanos, diskNanos               atomic.Uint64
	tierHits                            [len(stackKinds)]atomic.Uint64 // rows each kind served, by place in stackKinds
	deviceGathers                       atomic.Uint64
}

// gather counts a gather whose tiers ts served count[t] rows each.
func (c *counters) gather(ts []tiers.Tier, count []int, took time.Duration) {
	c.gathers.Add(1)
	rows := 0
	for t, n := range count {
		rows += n
		c.hits(ts[t].Kind()).Add(uint64(n))
	}
	c.rows.Add(uint64(rows))
	c.gatherNanos.Add(uint64(took.Nanoseconds()))
}

// since adds the time since start to counter n.
func since(n *atomic.Uint64, start time.Time) { n.Add(uint64(time.Since(start).Nanoseconds())) }

// hits is the counter of the rows tiers of kind k served (the last kind's for a kind outside
// stackKinds).
func (c *counters) hits(k tiers.Kind) *atomic.Uint64 {
	_, i := kindOf(k)
	if i < 0 {
		i = len(stackKinds) - 1
	}
	return &c.tierHits[i]
}

// Stats returns the store's counters: the whole session's, with each type's below (NodeTypes),
// for the store Open returns of a session of several tier stacks. After Close it still answers:
// the memory tiers then hold nothing.
func (s *Store) Stats() Stats {
	if leave, err := s.enter(); err == nil {
		defer leave()
	} else {
		s.guard.waitReleased() // the tiers read below are released and empty, not being released
	}
	c := &s.stats
	rb := uint64(s.spec.RowBytes)
	st := Stats{
		Dataset: s.m.Dir(), IOBackend: string(s.files.Backend()),
		Gathers: c.gathers.Load(), RowsGathered: c.rows.Load(), GatherTime: float64(c.gatherNanos.Load()) / 1e9,
		Samples: c.samples.Load(), SplitTime: float64(c.splitNanos.Load()) / 1e9, DiskTime: float64(c.diskNanos.Load()) / 1e9,
	}
	st.GPU = GPUStats{DeviceGathers: c.deviceGathers.Load()}
	st.IO = s.files.Stats()
	st.ReadAmplification = st.IO.ReadAmplification()
	if st.Gathers > 0 {
		st.ReadsPerGather = float64(st.IO.Reads) / float64(st.Gathers)
	}
	st.DiskProbe = s.files.Probe()
	if s.ssd != nil { // a type without features has no feature file to fill from
		st.Fill = s.ssd.FillStats()
	}
	leave, err := s.enter()
	if err != nil { // closed: the counters, no tiers
		st.GPU.Reason = err.Error()
		return st
	}
	defer leave()
	s.place.RLock()
	if g := s.gpu; g != nil {
		g.ctxs.harvestIdle(s)
		g.lanes.harvest(s)
		info := g.info
		st.GPU.Available, st.GPU.Library, st.GPU.Device = true, cuda.Path(), &info
		st.GPU.KernelBlocks, st.GPU.CompletionBlocks = g.blocks, g.ioBlocks
		st.GPU.CompletionSMShare = float64(g.ioBlocks) / float64(max(1, info.SMs))
		if g.topo != nil || s.sess.gpuEdges != nil {
			st.GPU.Topology = s.opt.GPUTopology // its own, or the session's edge types
		}
	} else if s.gpuErr != nil {
		st.GPU.Reason = s.gpuErr.Error()
	} else {
		st.GPU.Reason = "not started: no GPU cache, GPU topology or device gather was asked for"
	}
	held := map[tiers.Kind]TierStats{}
	for _, t := range s.tierList() {
		ts := TierStats{RowsHeld: t.Rows(), Capacity: min(s.NumNodes(), s.capacityRows(t)), BytesHeld: t.Bytes()}
		if sh, ok := t.(tiers.Sharer); ok {
			if path, created := sh.SharedPath(); path != "" {
				ts.Shared = map[bool]string{true: "created", false: "mapped"}[created]
			}
		}
		held[t.Kind()] = ts
	}
	s.place.RUnlock()
	for _, k := range TierKinds() {
		ts := held[k]
		ts.Tier, ts.Hits = k, c.hits(k).Load()
		ts.BytesServed = ts.Hits * rb
		st.Tiers = append(st.Tiers, ts)
	}
	if s.owns && s.sess.stacks() > 1 {
		whole, types := st, map[string]Stats{}
		for _, n := range s.sess.nodes {
			if n.stack == s {
				types[n.spec.Name] = st
			} else if n.stack != nil {
				o := n.stack.Stats()
				types[n.spec.Name] = o
				whole.add(o)
			}
		}
		whole.NodeTypes = types
		return whole
	}
	return st
}
