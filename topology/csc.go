package topology

import (
	"errors"
	"fmt"
	"math"
)

// CSC is an in-memory Graph: the in-neighbors of node v are Indices[Indptr[v]:Indptr[v+1]],
// where Indices is Indices32 or Indices64, whichever is set (Indices64 when the node count
// exceeds math.MaxInt32). The node count is len(Indptr)-1. Build it with NewCSC or FromEdges;
// a CSC must not be modified once in use.
type CSC struct {
	Indptr    []int64
	Indices32 []int32
	Indices64 []int64
}

var _ Graph = (*CSC)(nil)

// NewCSC checks and wraps CSC arrays: indptr is non-empty, starts at 0, never decreases and ends
// at the number of indices; at most one of indices32 and indices64 is non-nil; every index is a
// node id in [0, len(indptr)-1). The slices are kept, not copied.
func NewCSC(indptr []int64, indices32 []int32, indices64 []int64) (*CSC, error) {
	if len(indptr) == 0 {
		return nil, errors.New("topology: indptr is empty; it needs numNodes+1 entries")
	}
	return NewBipartiteCSC(int64(len(indptr)-1), indptr, indices32, indices64)
}

// NewBipartiteCSC is NewCSC for an edge type whose neighbors are of another node type, of numSrc
// nodes: every index is a node id in [0, numSrc) rather than one of the len(indptr)-1 nodes the
// lists belong to.
func NewBipartiteCSC(numSrc int64, indptr []int64, indices32 []int32, indices64 []int64) (*CSC, error) {
	if len(indptr) == 0 {
		return nil, errors.New("topology: indptr is empty; it needs numNodes+1 entries")
	}
	if indices32 != nil && indices64 != nil {
		return nil, errors.New("topology: both indices32 and indices64 are set; pass one")
	}
	if indptr[0] != 0 {
		return nil, fmt.Errorf("topology: indptr[0] is %d, want 0", indptr[0])
	}
	for i := 1; i < len(indptr); i++ {
		if indptr[i] < indptr[i-1] {
			return nil, fmt.Errorf("topology: indptr decreases at position %d: %d after %d", i, indptr[i], indptr[i-1])
		}
	}
	numNodes := int64(len(indptr) - 1)
	numIndices := int64(len(indices32) + len(indices64))
	if last := indptr[numNodes]; last != numIndices {
		return nil, fmt.Errorf("topology: indptr ends at %d but there are %d indices", last, numIndices)
	}
	for i, v := range indices32 {
		if v < 0 || int64(v) >= numSrc {
			return nil, fmt.Errorf("topology: indices32[%d] = %d is not a node id in [0, %d)", i, v, numSrc)
		}
	}
	for i, v := range indices64 {
		if v < 0 || v >= numSrc {
			return nil, fmt.Errorf("topology: indices64[%d] = %d is not a node id in [0, %d)", i, v, numSrc)
		}
	}
	return &CSC{Indptr: indptr, Indices32: indices32, Indices64: indices64}, nil
}

// FromEdges builds the CSC of numNodes nodes and the edges src[i] -> dst[i]: src[i] is an
// in-neighbor of dst[i]. Each node's list keeps its edges in input order, duplicates and self
// loops included.
func FromEdges(numNodes int64, src, dst []int64) (*CSC, error) {
	if numNodes < 0 {
		return nil, fmt.Errorf("topology: numNodes %d is negative", numNodes)
	}
	return FromBipartiteEdges(numNodes, numNodes, src, dst)
}

// FromBipartiteEdges is FromEdges for an edge type from numSrc nodes of one type (src ids) to
// numDst nodes of another (dst ids, the nodes the lists belong to).
func FromBipartiteEdges(numSrc, numDst int64, src, dst []int64) (*CSC, error) {
	if numSrc < 0 || numDst < 0 {
		return nil, fmt.Errorf("topology: numSrc %d or numDst %d is negative", numSrc, numDst)
	}
	if len(src) != len(dst) {
		return nil, fmt.Errorf("topology: %d sources but %d destinations", len(src), len(dst))
	}
	for i := range src {
		if src[i] < 0 || src[i] >= numSrc || dst[i] < 0 || dst[i] >= numDst {
			if numSrc == numDst {
				return nil, fmt.Errorf("topology: edge %d (%d -> %d) has a node id outside [0, %d)", i, src[i], dst[i], numDst)
			}
			return nil, fmt.Errorf("topology: edge %d (%d -> %d) has a source outside [0, %d) or a destination outside [0, %d)", i, src[i], dst[i], numSrc, numDst)
		}
	}
	indptr := make([]int64, numDst+1)
	for _, d := range dst {
		indptr[d+1]++
	}
	for v := int64(0); v < numDst; v++ {
		indptr[v+1] += indptr[v]
	}
	next := make([]int64, numDst) // next free slot in each node's list
	copy(next, indptr[:numDst])
	g := &CSC{Indptr: indptr}
	if numSrc > math.MaxInt32 {
		g.Indices64 = make([]int64, len(src))
		for i, d := range dst {
			g.Indices64[next[d]] = src[i]
			next[d]++
		}
	} else {
		g.Indices32 = make([]int32, len(src))
		for i, d := range dst {
			g.Indices32[next[d]] = int32(src[i])
			next[d]++
		}
	}
	return g, nil
}

// NumNodes returns len(Indptr)-1.
func (g *CSC) NumNodes() int64 { return int64(len(g.Indptr) - 1) }

// NumEdges returns the number of indices.
func (g *CSC) NumEdges() int64 { return g.Indptr[len(g.Indptr)-1] }

// Degrees implements Graph. It fails, naming the index and id, on a node id outside
// [0, NumNodes).
func (g *CSC) Degrees(nodes []int64, deg []int64) error {
	if len(deg) != len(nodes) {
		return fmt.Errorf("topology: Degrees got %d nodes but %d degree slots", len(nodes), len(deg))
	}
	n := g.NumNodes()
	for i, v := range nodes {
		if v < 0 || v >= n {
			return fmt.Errorf("topology: nodes[%d] = %d is not a node id in [0, %d)", i, v, n)
		}
		deg[i] = g.Indptr[v+1] - g.Indptr[v]
	}
	return nil
}

// ListStarts implements EdgeIndexer: start[i] = Indptr[nodes[i]].
func (g *CSC) ListStarts(nodes []int64, start []int64) error {
	n := g.NumNodes()
	for i, v := range nodes {
		if v < 0 || v >= n {
			return fmt.Errorf("topology: nodes[%d] = %d is not a node id in [0, %d)", i, v, n)
		}
		start[i] = g.Indptr[v]
	}
	return nil
}

var _ EdgeIndexer = (*CSC)(nil)

// NeighborsAt implements Graph. It fails, naming the index and value, on a node id outside
// [0, NumNodes), a position outside [0, degree), or inconsistent slice lengths or offsets.
func (g *CSC) NeighborsAt(nodes []int64, off []int64, pos []int64, out []int64) error {
	if len(off) != len(nodes)+1 {
		return fmt.Errorf("topology: NeighborsAt got %d nodes but %d offsets, want nodes+1", len(nodes), len(off))
	}
	if off[0] != 0 {
		return fmt.Errorf("topology: off[0] is %d, want 0", off[0])
	}
	if total := off[len(nodes)]; int64(len(pos)) != total || int64(len(out)) != total {
		return fmt.Errorf("topology: offsets end at %d but there are %d positions and %d outputs", total, len(pos), len(out))
	}
	n := g.NumNodes()
	for i, v := range nodes {
		if v < 0 || v >= n {
			return fmt.Errorf("topology: nodes[%d] = %d is not a node id in [0, %d)", i, v, n)
		}
		lo, hi := off[i], off[i+1]
		if hi < lo {
			return fmt.Errorf("topology: off decreases at position %d: %d after %d", i+1, hi, lo)
		}
		base, deg := g.Indptr[v], g.Indptr[v+1]-g.Indptr[v]
		for j := lo; j < hi; j++ {
			p := pos[j]
			if p < 0 || p >= deg {
				return fmt.Errorf("topology: pos[%d] = %d is not a position in [0, %d) of node %d", j, p, deg, v)
			}
			if g.Indices64 != nil {
				out[j] = g.Indices64[base+p]
			} else {
				out[j] = int64(g.Indices32[base+p])
			}
		}
	}
	return nil
}
