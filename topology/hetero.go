package topology

import (
	"errors"
	"fmt"
	"math"
	"runtime"
)

// EdgeGraph is one edge type of a heterogeneous graph: G is CSC over the nodes of type Dst, and
// the neighbor ids in its lists are ids of type Src. Src and Dst index the node types.
type EdgeGraph struct {
	Src, Dst int
	G        Graph
}

// HeteroSampleOptions configures SampleHetero.
type HeteroSampleOptions struct {
	// Fanouts holds, per edge type (indexed as SampleHetero's edges) and hop, how many
	// neighbors to sample for each node: -1 takes every neighbor, 0 none. Every edge type has
	// the same number of hops (zero: the seeds alone); a graph without edge types has none.
	Fanouts [][]int
	// Replace, Seed, Workers, NodesOnly, MaxEdges (over every edge type together), Disjoint
	// and SeedTimes mean what they mean in SampleOptions (see SampleHetero); the link samplers
	// take SeedTimes one a seed edge (PyG's edge_label_time; see sampleEdgesDisjoint).
	Replace   bool
	Seed      uint64
	Workers   int
	NodesOnly bool
	MaxEdges  int64
	Disjoint  bool
	SeedTimes []int64
}

// HeteroSample is a k-hop neighborhood of a heterogeneous graph, PyG's HeteroSamplerOutput.
// Local ids are per node type: indices into that type's Nodes.
//
// Each type's Nodes nest by hop as a Sample's do: the seeds first (in the seed type, exactly as
// given), then the nodes each hop reached first, so the nodes of hops 0..l of type T are the prefix
// Nodes[T][:NodesPerHop[T][0]+...+NodesPerHop[T][l]]. Within a hop, new nodes come in the order
// the hop's edges reached them: edge types in index order, then as in a Sample.
type HeteroSample struct {
	// Nodes holds, per node type, the global ids (of that type) of its sampled nodes.
	Nodes [][]int64
	// NodesPerHop holds, per node type, hops+1 counts: the seeds (0 but for the seed type), then
	// the nodes first reached at each hop.
	NodesPerHop [][]int64
	// Row, Col and EdgeIDs hold, per edge type, its sampled edges hop after hop, as a Sample's:
	// Row in local ids of the Src type, Col in local ids of the Dst type. EdgeIDs of an edge type
	// is nil unless its graph is an EdgeIndexer.
	Row, Col, EdgeIDs [][]int64
	// EdgesPerHop holds, per edge type, the number of edges sampled at each hop.
	EdgesPerHop [][]int64
	// Batch holds, per node type, a disjoint sample's seed index of every node (Sample.Batch);
	// nil otherwise.
	Batch [][]int64
}

// SampleHetero samples the k-hop in-neighborhood of seeds, ids of node type seedType, in a graph
// of len(numNodes) node types (numNodes[t] nodes of type t) and the edge types edges.
//
// Hop h samples, for each edge type e in index order, Fanouts[e][h] in-neighbors of every node of
// e's Dst type first reached at hop h-1 (hop 0: every distinct seed, once), exactly as
// SampleNeighbors samples a node. A node's draws depend only on (Seed, hop, e, node id): edge
// type e draws as SampleNeighbors with the seed EdgeTypeSeed(Seed, e), which is Seed for e = 0, so
// one node type with one edge type gives SampleNeighbors' sample. An edge type whose graph is a
// HopDrawer draws through DrawHop with that seed.
//
// A Disjoint sample gives seed index b its own tree, as SampleNeighbors does, over every node
// type (PyG's heterogeneous disjoint layout): each type's nodes are (b, id) pairs, and Batch[t]
// holds each node's seed index, parallel to Nodes[t]. Tree b is the sample of seeds[b] alone
// (Disjoint off) wherever the draws are determined (a fanout of -1, or no smaller than the
// degree without replacement); edge type e of tree b draws with DisjointSeed(EdgeTypeSeed(Seed,
// e), b). It draws on the host and needs len(seeds) * numNodes[t] to fit an int64 for every t.
// Edge types whose graphs are Temporal are sampled in time (Disjoint must be set): tree b takes
// their neighbors of time at most SeedTimes[b] (default: the seed's node time, from a Temporal
// edge type whose Src is seedType and that holds node times); the others uniformly, as pyg-lib.
//
// Each hop makes one Degrees and one NeighborsAt call on each edge type with nodes to sample. It
// fails on a bad input, naming it, or an error or out-of-range answer from a graph.
func SampleHetero(numNodes []int64, edges []EdgeGraph, seedType int, seeds []int64, opt HeteroSampleOptions) (*HeteroSample, error) {
	hops, err := checkHetero(numNodes, edges, seedType, seeds, opt)
	if err != nil {
		return nil, err
	}
	times, err := checkHeteroDisjoint(numNodes, edges, seedType, seeds, opt)
	if err != nil {
		return nil, err
	}
	typeSeeds := make([][]int64, len(numNodes))
	typeSeeds[seedType] = seeds
	return sampleHetero(numNodes, edges, hops, typeSeeds, opt, nil, times)
}

// checkHeteroDisjoint refuses a disjoint or temporal heterogeneous sample SampleHetero cannot key
// or draw, and returns a temporal sample's seed times (nil: not temporal).
func checkHeteroDisjoint(numNodes []int64, edges []EdgeGraph, seedType int, seeds []int64, opt HeteroSampleOptions) ([]int64, error) {
	var temporal []*Temporal
	var seedTime []int64
	for e, eg := range edges {
		if opt.Disjoint {
			if err := checkDisjoint(eg.G, len(seeds), true); err != nil {
				return nil, fmt.Errorf("topology: edges[%d]: %w", e, err)
			}
		}
		tg, ok := eg.G.(*Temporal)
		if !ok {
			continue
		}
		if err := tg.check(numNodes[eg.Src]); err != nil {
			return nil, fmt.Errorf("topology: edges[%d]: %w", e, err)
		}
		temporal = append(temporal, tg)
		if eg.Src == seedType && tg.NodeTime != nil && seedTime == nil {
			seedTime = tg.NodeTime
		}
	}
	if opt.Disjoint {
		for t, n := range numNodes {
			if len(seeds) > 0 && n > 0 && int64(len(seeds)) > (math.MaxInt64-1)/n {
				return nil, fmt.Errorf("topology: a disjoint sample of %d seeds with node type %d of %d nodes: the pairs (seed index, node) do not fit an int64; sample fewer seeds a batch", len(seeds), t, n)
			}
		}
	}
	return seedTimes(temporal, seeds, opt.Disjoint, opt.SeedTimes, seedTime)
}

// sampleHetero is SampleHetero on checked input with seeds of every node type (seeds[t] of type
// t, as given: NodesPerHop[t][0] is len(seeds[t]); a Disjoint sample's of one type), leaving out
// of edge type e the edges in exclude[e] (exclude nil or exclude[e] nil: none) as hopSampler.hop
// does, at seedTimes (a temporal sample's; nil: not temporal).
func sampleHetero(numNodes []int64, edges []EdgeGraph, hops int, seeds [][]int64, opt HeteroSampleOptions, exclude []pairSet, seedTimes []int64) (*HeteroSample, error) {
	workers := opt.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	numTypes := len(numNodes)
	s := &HeteroSample{
		Nodes:       make([][]int64, numTypes),
		NodesPerHop: make([][]int64, numTypes),
		Row:         make([][]int64, len(edges)),
		Col:         make([][]int64, len(edges)),
		EdgeIDs:     make([][]int64, len(edges)),
		EdgesPerHop: make([][]int64, len(edges)),
	}

	// A NodesOnly sample marks the ids of each type in a bitset while their sum stays within
	// maxBitsetNodes; the other types map ids.
	nodes := make([]nodeSet, numTypes)
	bitsLeft := int64(maxBitsetNodes)
	for t, n := range numNodes {
		bitset := opt.NodesOnly && !opt.Disjoint && n <= bitsLeft
		if bitset {
			bitsLeft -= n
		}
		nodes[t] = newNodeSet(n, seeds[t], bitset)
		if opt.Disjoint {
			nodes[t].batch = seedIndices(len(seeds[t])) // the seeds' indices; empty for another type
		}
		defer nodes[t].release()
		s.NodesPerHop[t] = make([]int64, hops+1)
		s.NodesPerHop[t][0] = int64(len(seeds[t]))
	}
	sc := scratches.Get().(*sampleScratch)
	defer scratches.Put(sc)

	// frontier[t] holds the nodes of type t first reached at the previous hop, targets[t] their
	// local ids (nil: consecutive from firstTarget[t]); hopStart[t] is where this hop's new nodes
	// of type t begin.
	frontier := make([][]int64, numTypes)
	frontierBatch := make([][]int64, numTypes) // a disjoint sample's seed indices of frontier
	targets := make([][]int64, numTypes)
	firstTarget := make([]int64, numTypes)
	hopStart := make([]int64, numTypes)
	scratchUsed := false
	for t := range nodes {
		if len(seeds[t]) == 0 {
			continue
		}
		if !scratchUsed { // the first seed type reuses the scratch's storage, kept for the next sample
			frontier[t], targets[t] = nodes[t].distinctSeeds(sc.seeds[:0], sc.targets[:0])
			sc.seeds, sc.targets, scratchUsed = frontier[t], targets[t], true
		} else {
			frontier[t], targets[t] = nodes[t].distinctSeeds(nil, nil)
		}
		frontierBatch[t] = nodes[t].batch
	}
	out := make([]sampledEdges, len(edges))
	for e, eg := range edges {
		out[e] = newSampledEdges(eg.G, opt.NodesOnly)
		s.EdgesPerHop[e] = make([]int64, hops)
	}
	hs := hopSampler{picker: newPositionPicker(workers), replace: opt.Replace, nodesOnly: opt.NodesOnly, sc: sc, maxEdges: edgeBound(opt.MaxEdges), seedTimes: seedTimes}
	for h := range hops {
		for t := range nodes {
			hopStart[t] = int64(len(nodes[t].ids))
		}
		for e, eg := range edges {
			fanout := opt.Fanouts[e][h]
			if len(frontier[eg.Dst]) == 0 || fanout == 0 {
				continue
			}
			var excl pairSet
			if exclude != nil {
				excl = exclude[e]
			}
			total, err := hs.hop(eg.G, e, frontier[eg.Dst], frontierBatch[eg.Dst], targets[eg.Dst], firstTarget[eg.Dst], fanout, EdgeTypeSeed(opt.Seed, e), h, &nodes[eg.Src], &out[e], excl)
			if errors.Is(err, ErrSampleTooLarge) {
				var n int
				for _, ts := range seeds {
					n += len(ts)
				}
				return nil, fmt.Errorf("topology: a sample of %d seeds with fanouts %v (per edge type): %w", n, opt.Fanouts, err)
			}
			if err != nil {
				return nil, err
			}
			s.EdgesPerHop[e][h] = total
		}
		for t := range nodes {
			start, end := hopStart[t], int64(len(nodes[t].ids))
			s.NodesPerHop[t][h+1] = end - start
			frontier[t], targets[t], firstTarget[t] = nodes[t].ids[start:end:end], nil, start
			if opt.Disjoint {
				frontierBatch[t] = nodes[t].batch[start:end:end]
			}
		}
	}
	for t := range nodes {
		s.Nodes[t] = nodes[t].ids
	}
	if opt.Disjoint {
		s.Batch = make([][]int64, numTypes)
		for t := range nodes {
			s.Batch[t] = nodes[t].batch
		}
	}
	for e := range edges {
		s.Row[e], s.Col[e], s.EdgeIDs[e] = out[e].row, out[e].col, out[e].ids
	}
	return s, nil
}

// EdgeTypeSeed is the seed edge type e of a heterogeneous sample draws with, as SampleNeighbors
// draws with its Seed: seed itself for e = 0 (mix64(0) is 0), so the one-type case is
// SampleNeighbors'.
func EdgeTypeSeed(seed uint64, e int) uint64 {
	return seed ^ mix64(uint64(e))
}

// checkHetero validates SampleHetero's input, all of it before anything is sampled, and returns
// the number of hops.
func checkHetero(numNodes []int64, edges []EdgeGraph, seedType int, seeds []int64, opt HeteroSampleOptions) (int, error) {
	hops, err := checkHeteroGraph(numNodes, edges, opt)
	if err != nil {
		return 0, err
	}
	if seedType < 0 || seedType >= len(numNodes) {
		return 0, fmt.Errorf("topology: seedType = %d is not a node type in [0, %d)", seedType, len(numNodes))
	}
	n := numNodes[seedType]
	for i, v := range seeds {
		if v < 0 || v >= n {
			return 0, fmt.Errorf("topology: seeds[%d] = %d is not a node id of seedType %d in [0, %d)", i, v, seedType, n)
		}
	}
	return hops, nil
}

// checkHeteroGraph validates the graph and options of a heterogeneous sample and returns the
// number of hops.
func checkHeteroGraph(numNodes []int64, edges []EdgeGraph, opt HeteroSampleOptions) (int, error) {
	numTypes := len(numNodes)
	for t, n := range numNodes {
		if n < 0 {
			return 0, fmt.Errorf("topology: numNodes[%d] = %d is negative", t, n)
		}
	}
	if opt.Workers < 0 {
		return 0, fmt.Errorf("topology: Workers = %d is negative", opt.Workers)
	}
	if len(opt.Fanouts) != len(edges) {
		return 0, fmt.Errorf("topology: %d rows of Fanouts for %d edge types; give one row per edge type", len(opt.Fanouts), len(edges))
	}
	if len(edges) == 0 {
		return 0, nil // a graph without edge types: zero hops, every sample its seeds alone
	}
	hops := len(opt.Fanouts[0])
	for e, eg := range edges {
		switch {
		case eg.Src < 0 || eg.Src >= numTypes:
			return 0, fmt.Errorf("topology: edges[%d].Src = %d is not a node type in [0, %d)", e, eg.Src, numTypes)
		case eg.Dst < 0 || eg.Dst >= numTypes:
			return 0, fmt.Errorf("topology: edges[%d].Dst = %d is not a node type in [0, %d)", e, eg.Dst, numTypes)
		case eg.G == nil:
			return 0, fmt.Errorf("topology: edges[%d].G is nil", e)
		case eg.G.NumNodes() != numNodes[eg.Dst]:
			return 0, fmt.Errorf("topology: edges[%d].G has %d nodes, but its Dst type %d has numNodes[%d] = %d", e, eg.G.NumNodes(), eg.Dst, eg.Dst, numNodes[eg.Dst])
		case len(opt.Fanouts[e]) != hops:
			return 0, fmt.Errorf("topology: Fanouts[%d] has %d hops, Fanouts[0] has %d; every edge type samples the same hops", e, len(opt.Fanouts[e]), hops)
		}
		for h, f := range opt.Fanouts[e] {
			if f < -1 {
				return 0, fmt.Errorf("topology: Fanouts[%d][%d] = %d; want -1 (every neighbor) or a count >= 0", e, h, f)
			}
		}
	}
	return hops, nil
}

// Typed is s as the HeteroSample of a graph of one node type and one edge type (index 0 of
// each), sharing s's arrays: the one-type case of SampleHetero, whose draws SampleNeighbors makes.
func (s *Sample) Typed() *HeteroSample {
	h := &HeteroSample{
		Nodes: [][]int64{s.Nodes}, NodesPerHop: [][]int64{s.NodesPerHop},
		Row: [][]int64{s.Row}, Col: [][]int64{s.Col}, EdgeIDs: [][]int64{s.EdgeIDs}, EdgesPerHop: [][]int64{s.EdgesPerHop},
	}
	if s.Batch != nil {
		h.Batch = [][]int64{s.Batch}
	}
	return h
}

// OneType is h as a Sample, sharing h's arrays, when h is of one node type and one edge type;
// false otherwise.
func (h *HeteroSample) OneType() (*Sample, bool) {
	if len(h.Nodes) != 1 || len(h.Row) != 1 {
		return nil, false
	}
	s := &Sample{Nodes: h.Nodes[0], NodesPerHop: h.NodesPerHop[0], Row: h.Row[0], Col: h.Col[0], EdgeIDs: h.EdgeIDs[0], EdgesPerHop: h.EdgesPerHop[0]}
	if h.Batch != nil {
		s.Batch = h.Batch[0]
	}
	return s, true
}
