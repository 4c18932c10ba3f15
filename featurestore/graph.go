package featurestore

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"unsafe"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/topology"
)

// openGraph holds the topology in memory when it fits Options.TopologyMemoryBytes, otherwise
// serves it from disk through the IO stacks.
func (s *Store) openGraph() error {
	if err := s.checkPlacement(); err != nil {
		return err
	}
	et := s.m.Edges()
	if et == nil {
		return nil
	}
	n := s.NumNodes()
	isz := int64(et.Indices.DType.Size())
	need := (n+1)*8 + et.Count*isz
	if s.opt.TopologyMemoryBytes < 0 || need > s.opt.TopologyMemoryBytes {
		g := &diskGraph{s: s, n: n, edges: et.Count, indexSize: isz}
		s.graph = g
		return g.cachePlan(s.opt.Placement)
	}
	indptr := make([]int64, n+1)
	if err := readArray(s.m.Path(et.Indptr.File), unsafe.Slice((*byte)(unsafe.Pointer(&indptr[0])), len(indptr)*8)); err != nil {
		return err
	}
	var g *topology.CSC
	var err error
	if et.Indices.DType == dataset.Int32 {
		idx := make([]int32, et.Count)
		if err := readArray(s.m.Path(et.Indices.File), int32Bytes(idx)); err != nil {
			return err
		}
		g, err = topology.NewCSC(indptr, idx, nil)
	} else {
		idx := make([]int64, et.Count)
		if err := readArray(s.m.Path(et.Indices.File), int64Bytes(idx)); err != nil {
			return err
		}
		g, err = topology.NewCSC(indptr, nil, idx)
	}
	if err != nil {
		return fmt.Errorf("featurestore: topology of %s: %w", s.m.Dir(), err)
	}
	s.graph = g
	return nil
}

func int32Bytes(v []int32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*4)
}

func int64Bytes(v []int64) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*8)
}

// readArray fills dst from the start of path (arrays are little-endian, as is every machine
// tierfs builds for).
func readArray(path string, dst []byte) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("featurestore: %w", err)
	}
	defer f.Close()
	if _, err := io.ReadFull(f, dst); err != nil {
		return fmt.Errorf("featurestore: read %d bytes of %s: %w", len(dst), path, err)
	}
	return nil
}

// diskGraph is CSC topology read from the dataset's files through the store's IO stacks: one
// batched read of index pointers for Degrees, reused by the NeighborsAt on the same nodes that
// follows it, and one read of the picked entries. With a placement (Options.Placement) the
// neighbor lists of the plan's memory-tier nodes are held in memory (cache) and only the rest is
// read from disk.
type diskGraph struct {
	s         *Store
	n, edges  int64
	indexSize int64
	cache     atomic.Pointer[topoCache] // nil without a placement; ApplyPlacement swaps it
	recent    recentPointers
}

func (g *diskGraph) NumNodes() int64 { return g.n }
func (g *diskGraph) NumEdges() int64 { return g.edges }

func (g *diskGraph) checkNodes(nodes []int64) error {
	for i, v := range nodes {
		if uint64(v) >= uint64(g.n) {
			return fmt.Errorf("topology: nodes[%d] = %d is out of range [0, %d): %w", i, v, g.n, ErrIDOutOfRange)
		}
	}
	return nil
}

// pointers returns, for every node, the start and end of its list: ptr[2i], ptr[2i+1]. For a node
// the cache holds, slot[i] >= 0 is its cache slot and the pair indexes the cache's entries;
// otherwise slot[i] is -1 (slot is nil without a cache) and the pair is indptr[v], indptr[v+1]
// read from disk.
func (g *diskGraph) pointers(nodes []int64, cache *topoCache) ([]int64, []int32, error) {
	if err := g.checkNodes(nodes); err != nil {
		return nil, nil, err
	}
	ptr := make([]int64, 2*len(nodes))
	buf := int64Bytes(ptr)
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
		reqs = append(reqs, gpuio.Request{File: g.s.indptrFile, Offset: 8 * v, Length: 16, Dst: buf[16*i : 16*(i+1)]})
	}
	leave, err := g.s.enter()
	if err != nil {
		return nil, nil, err
	}
	defer leave()
	if err := g.s.read(reqs); err != nil {
		return nil, nil, fmt.Errorf("topology: read index pointers: %w", err)
	}
	return ptr, slot, nil
}

func (g *diskGraph) Degrees(nodes []int64, deg []int64) error {
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

func (g *diskGraph) NeighborsAt(nodes []int64, off []int64, pos []int64, out []int64) error {
	ptr, slot, cache, ok := g.recent.take(nodes)
	if !ok {
		var err error
		cache = g.cache.Load()
		if ptr, slot, err = g.pointers(nodes, cache); err != nil {
			return err
		}
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
				reqs = append(reqs, gpuio.Request{File: g.s.indptrFile + 1, Offset: (ptr[2*i] + pos[j]) * isz, Length: int(isz), Dst: raw[j*isz : (j+1)*isz]})
			}
		}
	}
	if len(reqs) == 0 {
		return nil
	}
	leave, err := g.s.enter()
	if err != nil {
		return err
	}
	defer leave()
	if err := g.s.read(reqs); err != nil {
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
	}
	return nil
}
