package featurestore

import (
	"fmt"
	"slices"
	"sync"

	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/placement"
	"github.com/tierfs/tierfs/tiers/host"
)

// checkPlacement rejects an Options.Placement made for another node count or row size.
func (s *Store) checkPlacement() error { return s.checkPlan(s.opt.Placement) }

// checkPlan rejects a placement made for another node count or row size.
func (s *Store) checkPlan(p *placement.Placement) error {
	if p == nil {
		return nil
	}
	if p.NumNodes() != s.NumNodes() {
		return fmt.Errorf("featurestore: placement of %d nodes for a dataset of %d", p.NumNodes(), s.NumNodes())
	}
	if p.RowBytes != s.spec.RowBytes {
		return fmt.Errorf("featurestore: placement planned for %d-byte rows, feature %q has %d-byte rows", p.RowBytes, s.spec.Name, s.spec.RowBytes)
	}
	return nil
}

// planRows lists the feature rows placement p puts in memory, GPU rows first when the
// store has a GPU tier (gpuRows > 0). They must fit the k rows the tiers hold.
func (s *Store) planRows(p *placement.Placement, k, gpuRows int64) ([]int64, error) {
	var ids []int64
	if gpuRows > 0 {
		ids = p.Nodes(placement.KindFeature, placement.TierGPU)
	}
	ids = append(ids, p.Nodes(placement.KindFeature, placement.TierHost)...)
	if int64(len(ids)) > k {
		return nil, fmt.Errorf("featurestore: placement puts %d feature rows in memory, the caches hold %d (HostCacheBytes %d, GPU rows %d); plan with a budget that matches the caches and Sizes.FeatureOverhead %d",
			len(ids), k, s.opt.HostCacheBytes, gpuRows, host.IndexBytesPerRow)
	}
	return ids, nil
}

// topoCache holds the neighbor lists of some nodes in memory, CSC-like: the list of ids[i] is
// idx[ptr[i]:ptr[i+1]] (idx32 or idx64, as the dataset's indices).
type topoCache struct {
	ids   []int64 // ascending
	ptr   []int64
	idx32 []int32
	idx64 []int64
}

// slot is i where ids[i] == v, or -1.
func (c *topoCache) slot(v int64) int {
	if i, ok := slices.BinarySearch(c.ids, v); ok {
		return i
	}
	return -1
}

// Bytes is the memory the cache holds.
func (c *topoCache) Bytes() int64 {
	return 8*int64(len(c.ids)+len(c.ptr)) + 4*int64(len(c.idx32)) + 8*int64(len(c.idx64))
}

// cachePlan reads into memory the neighbor lists of the nodes whose topology Options.Placement
// puts in GPU or host memory (there is no GPU topology cache yet, so both live in host memory),
// replacing any earlier cache (samplers running meanwhile finish on the one they started with).
// Memory: the plan's topology bytes plus 8 bytes a node; the plan's budget bounds it.
func (g *diskGraph) cachePlan(p *placement.Placement) error {
	if p == nil {
		return nil
	}
	nodes := p.Nodes(placement.KindTopology, placement.TierGPU)
	nodes = append(nodes, p.Nodes(placement.KindTopology, placement.TierHost)...)
	if len(nodes) == 0 {
		g.cache.Store(nil)
		return nil
	}
	slices.Sort(nodes)
	ptr, _, err := g.pointers(nodes, nil)
	if err != nil {
		return err
	}
	c := &topoCache{ids: nodes, ptr: make([]int64, len(nodes)+1)}
	for i := range nodes {
		c.ptr[i+1] = c.ptr[i] + ptr[2*i+1] - ptr[2*i]
	}
	isz := g.indexSize
	raw := make([]byte, c.ptr[len(nodes)]*isz)
	if isz == 4 {
		c.idx32 = make([]int32, c.ptr[len(nodes)])
		raw = int32Bytes(c.idx32)
	} else {
		c.idx64 = make([]int64, c.ptr[len(nodes)])
		raw = int64Bytes(c.idx64)
	}
	const batch = 1 << 14
	reqs := make([]gpuio.Request, 0, batch)
	flush := func() error {
		err := g.s.read(reqs)
		reqs = reqs[:0]
		if err != nil {
			return fmt.Errorf("topology: cache neighbor lists: %w", err)
		}
		return nil
	}
	for i := range nodes {
		if lo, hi := c.ptr[i], c.ptr[i+1]; hi > lo {
			reqs = append(reqs, gpuio.Request{File: g.s.indptrFile + 1, Offset: ptr[2*i] * isz, Length: int((hi - lo) * isz), Dst: raw[lo*isz : hi*isz]})
		}
		if len(reqs) == batch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	for j, v := range c.idx32 { // the file is unchecked input: ids must be node ids
		if v < 0 || int64(v) >= g.n {
			return fmt.Errorf("topology: cached neighbor %d (entry %d) is not a node id in [0, %d)", v, j, g.n)
		}
	}
	for j, v := range c.idx64 {
		if v < 0 || v >= g.n {
			return fmt.Errorf("topology: cached neighbor %d (entry %d) is not a node id in [0, %d)", v, j, g.n)
		}
	}
	g.cache.Store(c)
	return nil
}

// recentPointers keeps the index pointers a Degrees call read, for the NeighborsAt call on the
// same nodes that follows it in a sampling hop, so each hop reads them once. It holds a few
// entries (concurrent samplers each have one in flight) and forgets the oldest.
type recentPointers struct {
	mu      sync.Mutex
	entries []ptrEntry
}

type ptrEntry struct {
	nodes []int64 // a copy of the nodes asked about
	ptr   []int64
	slot  []int32
	cache *topoCache // the cache slot indexes
}

const recentPointerEntries = 16

func (r *recentPointers) put(nodes, ptr []int64, slot []int32, cache *topoCache) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.entries) == recentPointerEntries {
		r.entries = slices.Delete(r.entries, 0, 1)
	}
	r.entries = append(r.entries, ptrEntry{slices.Clone(nodes), ptr, slot, cache})
}

// take removes and returns the entry for exactly nodes, if any.
func (r *recentPointers) take(nodes []int64) (ptr []int64, slot []int32, cache *topoCache, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.entries) - 1; i >= 0; i-- {
		if e := r.entries[i]; slices.Equal(e.nodes, nodes) {
			r.entries = slices.Delete(r.entries, i, i+1)
			return e.ptr, e.slot, e.cache, true
		}
	}
	return nil, nil, nil, false
}
