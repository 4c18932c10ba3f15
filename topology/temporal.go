package topology

import (
	"cmp"
	"fmt"
	"slices"
)

// Temporal is a graph sampled in time (PyG's time_attr, as pyg-lib samples it): a node of the
// tree of seed index b draws only among the neighbors whose time is at most that tree's seed time
// (SampleOptions.SeedTimes[b]). Time is node-level (NodeTime[v], the time of source node v: a
// neighbor's time) or edge-level (EdgeTime[id], the time of edge id, its CSC position; G must be
// an EdgeIndexer): exactly one of the two is set, with NumNodes or NumEdges values.
//
// A node's qualifying neighbors, taken in time order (ties in list order: PyG's time-sorted CSC),
// are its list for the draw: uniform sampling over it (Strategy TimeUniform), or, with
// TimeLast and a fanout f >= 0, over its last f (the latest; without replacement: all of them,
// with replacement f draws among them, as pyg-lib). A sample's edges of a target come in that
// time order. A temporal sample is Disjoint (the seed time is a tree's); it draws on the host.
type Temporal struct {
	G        EdgeIndexer
	NodeTime []int64
	EdgeTime []int64
	Strategy TimeStrategy
}

// TimeStrategy is how a temporal sample draws among a node's qualifying neighbors (PyG's
// temporal_strategy).
type TimeStrategy int

const (
	// TimeUniform draws uniformly among them ("uniform").
	TimeUniform TimeStrategy = iota
	// TimeLast keeps the fanout latest of them ("last").
	TimeLast
)

func (g *Temporal) NumNodes() int64                          { return g.G.NumNodes() }
func (g *Temporal) NumEdges() int64                          { return g.G.NumEdges() }
func (g *Temporal) Degrees(nodes []int64, deg []int64) error { return g.G.Degrees(nodes, deg) }
func (g *Temporal) NeighborsAt(nodes, off, pos, out []int64) error {
	return g.G.NeighborsAt(nodes, off, pos, out)
}
func (g *Temporal) ListStarts(nodes []int64, start []int64) error {
	return g.G.ListStarts(nodes, start)
}

// check refuses a Temporal graph whose times do not fit it (numSrc: the node count of its
// neighbors' type, whose NodeTime it holds).
func (g *Temporal) check(numSrc int64) error {
	switch {
	case (g.NodeTime == nil) == (g.EdgeTime == nil):
		return fmt.Errorf("topology: a Temporal graph has node times (%d) or edge times (%d), exactly one of them", len(g.NodeTime), len(g.EdgeTime))
	case g.NodeTime != nil && int64(len(g.NodeTime)) != numSrc:
		return fmt.Errorf("topology: %d node times for a graph of %d nodes", len(g.NodeTime), numSrc)
	case g.EdgeTime != nil && int64(len(g.EdgeTime)) != g.NumEdges():
		return fmt.Errorf("topology: %d edge times for a graph of %d edges", len(g.EdgeTime), g.NumEdges())
	case g.Strategy != TimeUniform && g.Strategy != TimeLast:
		return fmt.Errorf("topology: time strategy %d; want TimeUniform or TimeLast", g.Strategy)
	}
	return nil
}

// seedTimes checks a sample of seeds whose graphs include the Temporal ones temporal (none: not
// temporal) with disjoint and given, its SeedTimes, and returns each tree's seed time: given,
// or without them the seeds' node times, seedTime (nil: the seeds' type has none). A sample
// without Temporal graphs takes no SeedTimes and gives nil.
func seedTimes(temporal []*Temporal, seeds []int64, disjoint bool, given, seedTime []int64) ([]int64, error) {
	if len(temporal) == 0 {
		if given != nil {
			return nil, fmt.Errorf("topology: %d SeedTimes for a graph that is not temporal; only *Temporal graphs sample in time", len(given))
		}
		return nil, nil
	}
	switch {
	case !disjoint:
		return nil, fmt.Errorf("topology: a temporal sample is disjoint (each tree has its seed's time, as PyG's temporal sampling implies disjoint=True); set Disjoint")
	case given != nil && len(given) != len(seeds):
		return nil, fmt.Errorf("topology: %d SeedTimes for %d seeds; want one a seed", len(given), len(seeds))
	case given != nil:
		return given, nil
	case seedTime == nil:
		return nil, fmt.Errorf("topology: a sample in time whose seeds have no node time (edge-level time, or none for the seeds' type) needs SeedTimes, one a seed")
	}
	st := make([]int64, len(seeds))
	for i, v := range seeds {
		st[i] = seedTime[v]
	}
	return st, nil
}

// timeLists is, for every node of a hop's frontier, the list positions it draws among: those
// of its neighbors within its tree's time, in time order, pos[base[i] : base[i]+deg[i]] (deg as
// the hop then holds it).
type timeLists struct{ base, pos []int64 }

// timeLists narrows the lists of a temporal hop: for frontier[i], of degree deg[i] and tree
// batch[i], it finds the positions whose time is at most the tree's seed time, sorts them by time
// (stably) and, for TimeLast with fanout >= 0, keeps the last fanout of them; deg[i] becomes
// their count. It reads every position's time (node time: every neighbor's id, one NeighborsAt
// call over the whole lists), so it refuses lists of more positions in all than the sample's
// edge bound.
func (hs *hopSampler) timeLists(g *Temporal, frontier, batch, deg []int64, fanout, h int) (timeLists, error) {
	if batch == nil {
		return timeLists{}, fmt.Errorf("topology: a Temporal graph is sampled disjoint (SampleNeighbors with Disjoint); SampleHetero does not sample in time")
	}
	sc := hs.sc
	n := len(frontier)
	listOff, base := resize(sc.toff, n+1), resize(sc.tbase, n)
	sc.toff, sc.tbase = listOff, base
	listOff[0] = 0
	for i, d := range deg {
		if d < 0 {
			return timeLists{}, fmt.Errorf("topology: graph gave degree %d for node %d", d, frontier[i])
		}
		if d > hs.maxEdges-listOff[i] {
			return timeLists{}, fmt.Errorf("%w: hop %d of a temporal sample reads the times of %d nodes' whole lists, more than the sample's bound of %d edges (MaxEdges); sample fewer seeds or raise the bound", ErrSampleTooLarge, h, n, hs.maxEdges)
		}
		listOff[i+1] = listOff[i] + d
	}
	total := listOff[n]
	pos, times := resize(sc.tpos, int(total)), resize(sc.ttimes, int(total))
	sc.tpos, sc.ttimes = pos, times
	for i := range n {
		for j := listOff[i]; j < listOff[i+1]; j++ {
			pos[j] = j - listOff[i]
		}
	}
	if g.EdgeTime != nil {
		starts := resize(sc.starts, n)
		sc.starts = starts
		if err := g.ListStarts(frontier, starts); err != nil {
			return timeLists{}, err
		}
		for i := range n {
			copy(times[listOff[i]:listOff[i+1]], g.EdgeTime[starts[i]:starts[i]+deg[i]])
		}
	} else {
		if err := g.NeighborsAt(frontier, listOff, pos, times); err != nil {
			return timeLists{}, err
		}
		for k, v := range times {
			if v < 0 || v >= int64(len(g.NodeTime)) {
				return timeLists{}, fmt.Errorf("topology: graph gave neighbor %d, not a node id in [0, %d)", v, len(g.NodeTime))
			}
			times[k] = g.NodeTime[v]
		}
	}
	hs.picker.inChunks(n, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			limit := hs.seedTimes[batch[i]]
			list, t := pos[listOff[i]:listOff[i+1]], times[listOff[i]:listOff[i+1]]
			q := 0
			for j, tj := range t {
				if tj <= limit {
					list[q], t[q] = list[j], tj
					q++
				}
			}
			list, t = list[:q], t[:q]
			if !slices.IsSorted(t) {
				sortByTime(list, t)
			}
			skip := 0
			if g.Strategy == TimeLast && fanout >= 0 {
				skip = max(0, q-fanout)
			}
			base[i] = listOff[i] + int64(skip)
			deg[i] = int64(q - skip)
		}
	})
	return timeLists{base: base, pos: pos}, nil
}

// sortByTime sorts positions list by their times t (parallel), stably: ties stay in list order.
func sortByTime(list, t []int64) {
	idx := make([]int, len(list))
	for j := range idx {
		idx[j] = j
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(t[a], t[b]) })
	sorted := make([]int64, len(list))
	for j, k := range idx {
		sorted[j] = list[k]
	}
	copy(list, sorted)
}

// positions maps the draws of a temporal hop, indices into each node's time list
// (pos[off[i]:off[i+1]] for frontier node i), to list positions.
func (tl timeLists) positions(off, pos []int64) {
	for i := range len(off) - 1 {
		for k := off[i]; k < off[i+1]; k++ {
			pos[k] = tl.pos[tl.base[i]+pos[k]]
		}
	}
}
