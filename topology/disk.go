package topology

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
)

// ReadFunc serves a batch of reads of a dataset's files and returns once every one is in place
// (a store's IO stacks).
type ReadFunc func(reqs []gpuio.Request) error

// DiskCSC is CSC topology read from a dataset's files through a ReadFunc: one batched read of
// index pointers for Degrees, reused by the NeighborsAt on the same nodes that follows it, and
// one read of the picked entries. The neighbor lists of some nodes may be held in memory
// (CacheNeighbors, e.g. a placement's memory-tier topology); only the rest is read from disk.
// Its methods may run concurrently.
type DiskCSC struct {
	n, edges                int64
	srcN                    int64 // neighbor ids lie in [0, srcN)
	indexSize               int64 // 4 or 8
	indptrFile, indicesFile int   // the files' indexes for read
	read                    ReadFunc
	cache                   atomic.Pointer[neighborCache] // nil: nothing cached
	recent                  recentPointers
}

var _ Graph = (*DiskCSC)(nil)

// NewDiskCSC serves a topology of nodes nodes and edges edges whose index pointers (int64) are
// file indptrFile and neighbor ids (indexSize bytes: 4 or 8) file indicesFile of read.
func NewDiskCSC(nodes, edges, indexSize int64, indptrFile, indicesFile int, read ReadFunc) (*DiskCSC, error) {
	return NewBipartiteDiskCSC(nodes, nodes, edges, indexSize, indptrFile, indicesFile, read)
}

// NewBipartiteDiskCSC is NewDiskCSC for an edge type whose neighbor ids are ids of another node
// type, of srcNodes nodes; nodes is the count of the type the lists belong to.
func NewBipartiteDiskCSC(srcNodes, nodes, edges, indexSize int64, indptrFile, indicesFile int, read ReadFunc) (*DiskCSC, error) {
	if srcNodes < 0 || nodes < 0 || edges < 0 || (indexSize != 4 && indexSize != 8) || read == nil {
		return nil, fmt.Errorf("topology: disk CSC of %d nodes (neighbors of %d), %d edges, %d-byte ids", nodes, srcNodes, edges, indexSize)
	}
	return &DiskCSC{n: nodes, srcN: srcNodes, edges: edges, indexSize: indexSize, indptrFile: indptrFile, indicesFile: indicesFile, read: read}, nil
}

func (g *DiskCSC) NumNodes() int64 { return g.n }
func (g *DiskCSC) NumEdges() int64 { return g.edges }

// CachedNodes is how many nodes' neighbor lists are held in memory.
func (g *DiskCSC) CachedNodes() int64 {
	if c := g.cache.Load(); c != nil {
		return int64(len(c.ids))
	}
	return 0
}

func (g *DiskCSC) checkNodes(nodes []int64) error {
	for i, v := range nodes {
		if uint64(v) >= uint64(g.n) {
			return fmt.Errorf("topology: nodes[%d] = %d is out of range [0, %d)", i, v, g.n)
		}
	}
	return nil
}

// pointers returns, for every node, the start and end of its list: ptr[2i], ptr[2i+1]. For a node
// the cache holds, slot[i] >= 0 is its cache slot and the pair indexes the cache's entries;
// otherwise slot[i] is -1 (slot is nil without a cache) and the pair is indptr[v], indptr[v+1]
// read from disk.
func (g *DiskCSC) pointers(nodes []int64, cache *neighborCache) ([]int64, []int32, error) {
	if err := g.checkNodes(nodes); err != nil {
		return nil, nil, err
	}
	ptr := make([]int64, 2*len(nodes))
	buf := dataset.BytesOf(ptr)
	var slot []int32
	if cache != nil {
		slot = make([]int32, len(nodes))
	}
	reqs := make([]gpuio.Request, 0, len(nodes))
	for i, v := range nodes {
		if slot != nil {
			if c := cache.slot(v); c >= 0 {
				slot[i] = int32(c)
				ptr[2*i], ptr[2*i+1] = cache.ptr[c], cache.ptr[c+1]
				continue
			}
			slot[i] = -1
		}
		reqs = append(reqs, gpuio.Request{File: g.indptrFile, Offset: 8 * v, Length: 16, Dst: buf[16*i : 16*(i+1)]})
	}
	if err := g.read(reqs); err != nil {
		return nil, nil, fmt.Errorf("topology: read index pointers: %w", err)
	}
	// The file is unchecked input: a pointer outside the index file must never size anything.
	for i, v := range nodes {
		if slot != nil && slot[i] >= 0 {
			continue
		}
		if a, b := ptr[2*i], ptr[2*i+1]; a < 0 || a > b || b > g.edges {
			return nil, nil, fmt.Errorf("topology: index pointers of node %d are indptr[%d] = %d, indptr[%d] = %d; want 0 <= indptr[v] <= indptr[v+1] <= %d edges: %w",
				v, v, a, v+1, b, g.edges, dataset.ErrCorrupt)
		}
	}
	return ptr, slot, nil
}

func (g *DiskCSC) Degrees(nodes []int64, deg []int64) error {
	cache := g.cache.Load()
	ptr, slot, err := g.pointers(nodes, cache)
	if err != nil {
		return err
	}
	for i := range nodes {
		deg[i] = ptr[2*i+1] - ptr[2*i]
	}
	g.recent.put(nodes, ptr, slot, cache)
	return nil
}

var _ EdgeIndexer = (*DiskCSC)(nil)

// pointersOf is the index pointers of nodes, their cache slots and the cache those index, as
// the Degrees call on the same nodes read them (its entry taken out of g.recent with take), else
// read now.
func (g *DiskCSC) pointersOf(nodes []int64, take bool) ([]int64, []int32, *neighborCache, error) {
	if ptr, slot, cache, ok := g.recent.get(nodes, take); ok {
		return ptr, slot, cache, nil
	}
	cache := g.cache.Load()
	ptr, slot, err := g.pointers(nodes, cache)
	return ptr, slot, cache, err
}

// ListStarts implements EdgeIndexer from the index pointers the Degrees call on the same nodes
// read (else it reads them); a cached node's start is kept with its list.
func (g *DiskCSC) ListStarts(nodes []int64, start []int64) error {
	ptr, slot, cache, err := g.pointersOf(nodes, false)
	if err != nil {
		return err
	}
	for i := range nodes {
		if slot != nil && slot[i] >= 0 {
			start[i] = cache.starts[slot[i]]
		} else {
			start[i] = ptr[2*i]
		}
	}
	return nil
}

func (g *DiskCSC) NeighborsAt(nodes []int64, off []int64, pos []int64, out []int64) error {
	ptr, slot, cache, err := g.pointersOf(nodes, true)
	if err != nil {
		return err
	}
	isz := g.indexSize
	raw := make([]byte, int64(len(pos))*isz)
	reqs := make([]gpuio.Request, 0, len(pos))
	var fromDisk []bool
	if slot != nil {
		fromDisk = make([]bool, len(pos))
	}
	for i, v := range nodes {
		deg := ptr[2*i+1] - ptr[2*i]
		cached := slot != nil && slot[i] >= 0
		for j := off[i]; j < off[i+1]; j++ {
			if pos[j] < 0 || pos[j] >= deg {
				return fmt.Errorf("topology: position %d of node %d is out of range [0, %d)", pos[j], v, deg)
			}
			switch {
			case cached && cache.idx32 != nil:
				out[j] = int64(cache.idx32[ptr[2*i]+pos[j]])
			case cached:
				out[j] = cache.idx64[ptr[2*i]+pos[j]]
			default:
				if slot != nil {
					fromDisk[j] = true
				}
				reqs = append(reqs, gpuio.Request{File: g.indicesFile, Offset: (ptr[2*i] + pos[j]) * isz, Length: int(isz), Dst: raw[j*isz : (j+1)*isz]})
			}
		}
	}
	if len(reqs) == 0 {
		return nil
	}
	if err := g.read(reqs); err != nil {
		return fmt.Errorf("topology: read neighbor ids: %w", err)
	}
	for j := range pos {
		if slot != nil && !fromDisk[j] {
			continue
		}
		if isz == 4 {
			out[j] = int64(int32(binary.LittleEndian.Uint32(raw[4*j:])))
		} else {
			out[j] = int64(binary.LittleEndian.Uint64(raw[8*j:]))
		}
		if uint64(out[j]) >= uint64(g.srcN) {
			return fmt.Errorf("topology: neighbor id %d (position %d of its list) is not a node id in [0, %d): %w", out[j], pos[j], g.srcN, dataset.ErrCorrupt)
		}
	}
	return nil
}

// neighborCache holds the neighbor lists of some nodes in memory, CSC-like: the list of ids[i] is
// idx[ptr[i]:ptr[i+1]] (idx32 or idx64, as the dataset's indices).
type neighborCache struct {
	ids    []int64 // ascending
	ptr    []int64
	starts []int64 // per cached node: its list's start in the CSC (its first edge id)
	idx32  []int32
	idx64  []int64
}

// slot is i where ids[i] == v, or -1.
func (c *neighborCache) slot(v int64) int {
	if i, ok := slices.BinarySearch(c.ids, v); ok {
		return i
	}
	return -1
}

// Bytes is the memory the cache holds.
func (c *neighborCache) Bytes() int64 {
	return 8*int64(len(c.ids)+len(c.ptr)+len(c.starts)) + 4*int64(len(c.idx32)) + 8*int64(len(c.idx64))
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
	cache *neighborCache // the cache slot indexes
}

const recentPointerEntries = 16

func (r *recentPointers) put(nodes, ptr []int64, slot []int32, cache *neighborCache) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.entries) == recentPointerEntries {
		r.entries = slices.Delete(r.entries, 0, 1)
	}
	r.entries = append(r.entries, ptrEntry{slices.Clone(nodes), ptr, slot, cache})
}

// get returns the entry for exactly nodes, if any: removed with take, else kept.
func (r *recentPointers) get(nodes []int64, take bool) (ptr []int64, slot []int32, cache *neighborCache, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.entries) - 1; i >= 0; i-- {
		if e := r.entries[i]; slices.Equal(e.nodes, nodes) {
			if take {
				r.entries = slices.Delete(r.entries, i, i+1)
			}
			return e.ptr, e.slot, e.cache, true
		}
	}
	return nil, nil, nil, false
}

// CacheNeighbors reads the neighbor lists of nodes (any order, no duplicates) into memory,
// replacing any earlier cache (samplers running meanwhile finish on the one they started with);
// no nodes drops the cache. Memory: the lists plus 16 bytes a node.
func (g *DiskCSC) CacheNeighbors(nodes []int64) error {
	nodes = slices.Clone(nodes)
	if len(nodes) == 0 {
		g.cache.Store(nil)
		return nil
	}
	slices.Sort(nodes)
	ptr, _, err := g.pointers(nodes, nil)
	if err != nil {
		return err
	}
	c := &neighborCache{ids: nodes, ptr: make([]int64, len(nodes)+1), starts: make([]int64, len(nodes))}
	for i := range nodes {
		c.ptr[i+1] = c.ptr[i] + ptr[2*i+1] - ptr[2*i]
		c.starts[i] = ptr[2*i]
	}
	isz := g.indexSize
	raw := make([]byte, c.ptr[len(nodes)]*isz)
	if isz == 4 {
		c.idx32 = make([]int32, c.ptr[len(nodes)])
		raw = dataset.BytesOf(c.idx32)
	} else {
		c.idx64 = make([]int64, c.ptr[len(nodes)])
		raw = dataset.BytesOf(c.idx64)
	}
	const batch = 1 << 14
	reqs := make([]gpuio.Request, 0, batch)
	flush := func() error {
		err := g.read(reqs)
		reqs = reqs[:0]
		if err != nil {
			return fmt.Errorf("topology: cache neighbor lists: %w", err)
		}
		return nil
	}
	for i := range nodes {
		if lo, hi := c.ptr[i], c.ptr[i+1]; hi > lo {
			reqs = append(reqs, gpuio.Request{File: g.indicesFile, Offset: ptr[2*i] * isz, Length: int((hi - lo) * isz), Dst: raw[lo*isz : hi*isz]})
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
		if v < 0 || int64(v) >= g.srcN {
			return fmt.Errorf("topology: cached neighbor %d (entry %d) is not a node id in [0, %d): %w", v, j, g.srcN, dataset.ErrCorrupt)
		}
	}
	for j, v := range c.idx64 {
		if v < 0 || v >= g.srcN {
			return fmt.Errorf("topology: cached neighbor %d (entry %d) is not a node id in [0, %d): %w", v, j, g.srcN, dataset.ErrCorrupt)
		}
	}
	g.cache.Store(c)
	return nil
}
