package featurestore

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"unsafe"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/topology"
)

// openGraph holds the topology in memory when it fits Options.TopologyMemoryBytes, otherwise
// serves it from disk through the IO stacks.
func (s *Store) openGraph() error {
	et := s.m.Edges()
	if et == nil {
		return nil
	}
	n := s.NumNodes()
	isz := int64(et.Indices.DType.Size())
	need := (n+1)*8 + et.Count*isz
	if s.opt.TopologyMemoryBytes < 0 || need > s.opt.TopologyMemoryBytes {
		s.graph = &diskGraph{s: s, n: n, edges: et.Count, indexSize: isz}
		return nil
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
// batched read of index pointers for Degrees, and two (pointers, then the picked entries) for
// NeighborsAt. Nothing of it stays in memory.
type diskGraph struct {
	s         *Store
	n, edges  int64
	indexSize int64
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

// pointers reads indptr[v] (and indptr[v+1] when pairs) for every node.
func (g *diskGraph) pointers(nodes []int64, pairs bool) ([]int64, error) {
	if err := g.checkNodes(nodes); err != nil {
		return nil, err
	}
	width := 1
	if pairs {
		width = 2
	}
	ptr := make([]int64, width*len(nodes))
	buf := int64Bytes(ptr)
	reqs := make([]gpuio.Request, len(nodes))
	for i, v := range nodes {
		reqs[i] = gpuio.Request{File: g.s.indptrFile, Offset: 8 * v, Length: 8 * width, Dst: buf[8*width*i : 8*width*(i+1)]}
	}
	leave, err := g.s.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	if err := g.s.read(reqs); err != nil {
		return nil, fmt.Errorf("topology: read index pointers: %w", err)
	}
	return ptr, nil
}

func (g *diskGraph) Degrees(nodes []int64, deg []int64) error {
	ptr, err := g.pointers(nodes, true)
	if err != nil {
		return err
	}
	for i := range nodes {
		deg[i] = ptr[2*i+1] - ptr[2*i]
	}
	return nil
}

func (g *diskGraph) NeighborsAt(nodes []int64, off []int64, pos []int64, out []int64) error {
	ptr, err := g.pointers(nodes, true)
	if err != nil {
		return err
	}
	isz := g.indexSize
	raw := make([]byte, int64(len(pos))*isz)
	reqs := make([]gpuio.Request, 0, len(pos))
	for i, v := range nodes {
		deg := ptr[2*i+1] - ptr[2*i]
		for j := off[i]; j < off[i+1]; j++ {
			if pos[j] < 0 || pos[j] >= deg {
				return fmt.Errorf("topology: position %d of node %d is out of range [0, %d)", pos[j], v, deg)
			}
			reqs = append(reqs, gpuio.Request{File: g.s.indptrFile + 1, Offset: (ptr[2*i] + pos[j]) * isz, Length: int(isz), Dst: raw[j*isz : (j+1)*isz]})
		}
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
		if isz == 4 {
			out[j] = int64(int32(binary.LittleEndian.Uint32(raw[4*j:])))
		} else {
			out[j] = int64(binary.LittleEndian.Uint64(raw[8*j:]))
		}
	}
	return nil
}
