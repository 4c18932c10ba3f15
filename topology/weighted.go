package topology

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
)

// Weighted is a graph whose neighbors are drawn in proportion to their edges' weights (PyG's
// weight_attr, as pyg-lib draws them): W[id] is the weight of edge id (its CSC position; G must
// be an EdgeIndexer and len(W) its NumEdges), each finite and >= 0 (CheckWeights). SampleNeighbors
// and SampleHetero draw a Weighted graph's hops on the host, never through a HopDrawer.
//
// A node of degree d and fanout f keeps its whole list as in uniform sampling (f < 0, or d <= f
// without replacement). Otherwise, with replacement each of the f draws takes position j with
// probability W[j] / (the weights' sum), and a node whose edges all weigh 0 fails the sample;
// without replacement it takes the f positions of largest key log(u_j) / W[j], u_j uniform in
// (0, 1) (Efraimidis and Spirakis: the law of drawing f times in proportion to the weights left,
// pyg-lib's), so edges of weight 0 come only after every edge of weight > 0, the first positions
// first. The u come from the node's generator (Seed, hop, node id), one a position in list
// order, so the draws do not depend on Workers.
type Weighted struct {
	G EdgeIndexer
	W []float32
}

func (g *Weighted) NumNodes() int64                          { return g.G.NumNodes() }
func (g *Weighted) NumEdges() int64                          { return g.G.NumEdges() }
func (g *Weighted) Degrees(nodes []int64, deg []int64) error { return g.G.Degrees(nodes, deg) }
func (g *Weighted) NeighborsAt(nodes, off, pos, out []int64) error {
	return g.G.NeighborsAt(nodes, off, pos, out)
}
func (g *Weighted) ListStarts(nodes []int64, start []int64) error {
	return g.G.ListStarts(nodes, start)
}

// CheckWeights refuses a weight that is negative, NaN or infinite, naming its edge id.
func CheckWeights(w []float32) error {
	for i, v := range w {
		if !(v >= 0) || math.IsInf(float64(v), 1) {
			return fmt.Errorf("topology: edge %d weighs %v; weights are finite and >= 0", i, v)
		}
	}
	return nil
}

// pickWeighted fills pos[off[i]:off[i+1]] with ascending positions for nodes[i], of degree deg[i]
// and list starting at edge id starts[i], drawn by w (Weighted's law; with DisjointSeed(seed,
// batch[i]) where batch is not nil).
func (p *positionPicker) pickWeighted(nodes, batch, deg, off, pos, starts []int64, w []float32, fanout int, replace bool, seed uint64, hop int) error {
	var failed atomic.Pointer[error]
	pickRange := func(worker, lo, hi int) {
		for i := lo; i < hi && failed.Load() == nil; i++ {
			dst := pos[off[i]:off[i+1]]
			d := deg[i]
			if takesAll(d, fanout, replace) {
				for j := range dst {
					dst[j] = int64(j)
				}
				continue
			}
			ws := w[starts[i] : starts[i]+d]
			r := nodeRNG(seedOf(seed, batch, i), hop, nodes[i])
			if replace {
				if err := p.drawWithReplacement(worker, dst, ws, &r); err != nil {
					err = fmt.Errorf("topology: node %d at hop %d: %w", nodes[i], hop, err)
					failed.CompareAndSwap(nil, &err)
				}
				continue
			}
			p.topKeys(worker, dst, ws, &r)
		}
	}
	p.inChunks(len(nodes), pickRange)
	if err := failed.Load(); err != nil {
		return *err
	}
	return nil
}

// unit is a uniform draw in (0, 1) from r.
func unit(r *splitmix) float64 {
	return (float64(r.next()>>11) + 0.5) / (1 << 53)
}

// drawWithReplacement fills dst with len(dst) positions, each j with probability ws[j]/sum(ws),
// ascending; all weights 0 is an error.
func (p *positionPicker) drawWithReplacement(worker int, dst []int64, ws []float32, r *splitmix) error {
	cum := p.floats(worker, len(ws))
	var total float64
	last := -1 // the last position of weight > 0
	for j, v := range ws {
		total += float64(v)
		cum[j] = total
		if v > 0 {
			last = j
		}
	}
	if last < 0 {
		return fmt.Errorf("its %d in-edges all weigh 0: nothing to draw with replacement", len(ws))
	}
	for k := range dst {
		x := unit(r) * total
		// the first position whose prefix sum passes x (never one of weight 0)
		j, _ := slices.BinarySearchFunc(cum, x, func(c, x float64) int {
			if c > x {
				return 1
			}
			return -1
		})
		dst[k] = int64(min(j, last)) // x rounded up to the sum: the last weighed position
	}
	slices.Sort(dst)
	return nil
}

// topKeys fills dst with the len(dst) positions of largest key log(u_j)/ws[j] (ties, the
// zero-weight keys of -Inf among them, to the first positions), ascending.
func (p *positionPicker) topKeys(worker int, dst []int64, ws []float32, r *splitmix) {
	keys := p.floats(worker, len(ws))
	for j, v := range ws {
		keys[j] = math.Log(unit(r)) / float64(v) // v = 0: -Inf
	}
	idx := p.ints(worker, len(ws))
	for j := range idx {
		idx[j] = int64(j)
	}
	slices.SortStableFunc(idx, func(a, b int64) int { return cmp.Compare(keys[b], keys[a]) })
	copy(dst, idx[:len(dst)])
	slices.Sort(dst)
}

// floats and ints are a worker's scratch of n values.
func (p *positionPicker) floats(worker, n int) []float64 {
	if cap(p.wkeys[worker]) < n {
		p.wkeys[worker] = make([]float64, n)
	}
	return p.wkeys[worker][:n]
}

func (p *positionPicker) ints(worker, n int) []int64 {
	if cap(p.widx[worker]) < n {
		p.widx[worker] = make([]int64, n)
	}
	return p.widx[worker][:n]
}
