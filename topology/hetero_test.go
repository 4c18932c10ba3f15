package topology

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// heteroGraph is a random heterogeneous test graph: numNodes per node type, and per edge type its
// (src, dst) types and edges.
type heteroGraph struct {
	numNodes []int64
	types    []EdgeGraph // Src and Dst only
	edges    []edgeList  // edges[e]: dst ids of type Dst, src ids of type Src
}

// heteroTypes are the edge types of the random graphs: a self-relation (0 -> 0), two relations
// between the same pair (1 -> 0 twice), and a cycle through type 2 (2 -> 1, 0 -> 2).
var heteroTypes = []EdgeGraph{{Src: 0, Dst: 0}, {Src: 1, Dst: 0}, {Src: 1, Dst: 0}, {Src: 2, Dst: 1}, {Src: 0, Dst: 2}}

// randomHetero draws a graph of 3 node types over heteroTypes: each edge type with duplicate
// edges, isolated destinations (the top tenth of the ids) and a hub (node 7 % n) of in-degree 300.
func randomHetero(r *rand.Rand) heteroGraph { return randomHeteroOf(r, heteroTypes) }

// randomHeteroOf draws a graph as randomHetero does over the edge types types.
func randomHeteroOf(r *rand.Rand, types []EdgeGraph) heteroGraph {
	h := heteroGraph{numNodes: []int64{300 + r.Int64N(200), 200 + r.Int64N(100), 20 + r.Int64N(40)}, types: types}
	for _, et := range types {
		ns, nd := h.numNodes[et.Src], h.numNodes[et.Dst]
		e := edgeList{name: fmt.Sprintf("%d->%d", et.Src, et.Dst), numNodes: nd}
		add := func(s, d int64) { e.src = append(e.src, s); e.dst = append(e.dst, d) }
		live := nd * 9 / 10
		for range 500 + r.IntN(3000) {
			add(r.Int64N(ns), r.Int64N(live))
		}
		for range len(e.src) / 20 {
			i := r.IntN(len(e.src))
			add(e.src[i], e.dst[i])
		}
		for range 300 {
			add(r.Int64N(ns), 7%live)
		}
		h.edges = append(h.edges, e)
	}
	return h
}

// graphs returns the edge types over in-memory CSCs (wrapping those marked in plain so they are
// no EdgeIndexer) and over DiskCSCs laid out from them.
func (h heteroGraph) graphs(t *testing.T, plain []bool) (mem, disk []EdgeGraph) {
	t.Helper()
	for e, el := range h.edges {
		numSrc := h.numNodes[h.types[e].Src]
		g, err := FromBipartiteEdges(numSrc, el.numNodes, el.src, el.dst)
		if err != nil {
			t.Fatal(err)
		}
		pf, xf := diskOf(g.Indptr, g.Indices32)
		d, err := NewBipartiteDiskCSC(numSrc, g.NumNodes(), g.NumEdges(), 4, 0, 1, memFiles(pf, xf))
		if err != nil {
			t.Fatal(err)
		}
		var mg, dg Graph = g, d
		if plain[e] {
			mg, dg = plainGraph{g}, plainGraph{d}
		}
		mem = append(mem, EdgeGraph{Src: h.types[e].Src, Dst: h.types[e].Dst, G: mg})
		disk = append(disk, EdgeGraph{Src: h.types[e].Src, Dst: h.types[e].Dst, G: dg})
	}
	return mem, disk
}

// plainGraph hides every method of a Graph but the Graph ones (no edge ids, no DrawHop).
type plainGraph struct{ Graph }

// refPositions is the contract's draw for one node, written plainly: the positions of a node of
// degree d, fanout f, with the node's generator.
func refPositions(d int64, f int, replace bool, seed uint64, hop int, node int64) []int64 {
	var pos []int64
	if d == 0 || f < 0 || (!replace && d <= int64(f)) {
		for j := range d {
			pos = append(pos, j)
		}
		return pos
	}
	r := nodeRNG(seed, hop, node)
	if replace {
		for range f {
			pos = append(pos, int64(r.below(uint64(d))))
		}
	} else { // Floyd: for j = d-f .. d-1, draw t in [0, j]; take j instead if t is taken.
		taken := map[int64]bool{}
		for j := d - int64(f); j < d; j++ {
			t := int64(r.below(uint64(j + 1)))
			if taken[t] {
				t = j
			}
			taken[t] = true
			pos = append(pos, t)
		}
	}
	slices.Sort(pos)
	return pos
}

// refSampleHetero is SampleHetero written plainly from its contract: maps, no pooling, no batching.
func refSampleHetero(h heteroGraph, indexed []bool, seedType int, seeds []int64, opt HeteroSampleOptions) *HeteroSample {
	typeSeeds := make([][]int64, len(h.numNodes))
	typeSeeds[seedType] = seeds
	return refSampleHeteroFrom(h, indexed, typeSeeds, opt, nil, nil)
}

// refSampleHeteroFrom is refSampleHetero with seeds of every node type (typeSeeds[t] of type t)
// and, when excluded is not nil, without the drawn edges it reports (edge type, src, dst); edge
// type e draws with edgeSeed(e) (nil: EdgeTypeSeed(opt.Seed, e), the contract's).
func refSampleHeteroFrom(h heteroGraph, indexed []bool, typeSeeds [][]int64, opt HeteroSampleOptions, excluded func(e int, src, dst int64) bool, edgeSeed func(e int) uint64) *HeteroSample {
	if edgeSeed == nil {
		edgeSeed = func(e int) uint64 { return opt.Seed ^ mix64(uint64(e)) }
	}
	numTypes, numEdgeTypes, hops := len(h.numNodes), len(h.types), len(opt.Fanouts[0])
	s := &HeteroSample{
		Nodes: make([][]int64, numTypes), NodesPerHop: make([][]int64, numTypes),
		Row: make([][]int64, numEdgeTypes), Col: make([][]int64, numEdgeTypes), EdgeIDs: make([][]int64, numEdgeTypes),
		EdgesPerHop: make([][]int64, numEdgeTypes),
	}
	local := make([]map[int64]int64, numTypes)
	frontier := make([][]int64, numTypes) // local ids
	for t := range numTypes {
		local[t] = map[int64]int64{}
		s.Nodes[t] = []int64{}
		s.NodesPerHop[t] = make([]int64, hops+1)
	}
	for seedType, seeds := range typeSeeds {
		for i, v := range seeds {
			s.Nodes[seedType] = append(s.Nodes[seedType], v)
			if _, ok := local[seedType][v]; !ok {
				local[seedType][v] = int64(i)
				frontier[seedType] = append(frontier[seedType], int64(i))
			}
		}
		s.NodesPerHop[seedType][0] = int64(len(seeds))
	}
	lists := make([][][]int64, numEdgeTypes)
	firstEdge := make([][]int64, numEdgeTypes) // edge id of each list's first edge
	for e, el := range h.edges {
		lists[e] = el.lists()
		firstEdge[e] = make([]int64, el.numNodes)
		for v := int64(1); v < el.numNodes; v++ {
			firstEdge[e][v] = firstEdge[e][v-1] + int64(len(lists[e][v-1]))
		}
		s.Row[e], s.Col[e] = []int64{}, []int64{}
		if indexed[e] && !opt.NodesOnly {
			s.EdgeIDs[e] = []int64{}
		}
		s.EdgesPerHop[e] = make([]int64, hops)
	}
	for hop := range hops {
		before := make([]int, numTypes)
		for t := range numTypes {
			before[t] = len(s.Nodes[t])
		}
		for e, et := range h.types {
			f := opt.Fanouts[e][hop]
			if f == 0 {
				continue
			}
			for _, target := range frontier[et.Dst] {
				v := s.Nodes[et.Dst][target]
				for _, p := range refPositions(int64(len(lists[e][v])), f, opt.Replace, edgeSeed(e), hop, v) {
					nb := lists[e][v][p]
					if excluded != nil && excluded(e, nb, v) {
						continue
					}
					l, ok := local[et.Src][nb]
					if !ok {
						l = int64(len(s.Nodes[et.Src]))
						local[et.Src][nb] = l
						s.Nodes[et.Src] = append(s.Nodes[et.Src], nb)
					}
					s.EdgesPerHop[e][hop]++
					if opt.NodesOnly {
						continue
					}
					s.Row[e] = append(s.Row[e], l)
					s.Col[e] = append(s.Col[e], target)
					if indexed[e] {
						s.EdgeIDs[e] = append(s.EdgeIDs[e], firstEdge[e][v]+p)
					}
				}
			}
		}
		for t := range numTypes {
			s.NodesPerHop[t][hop+1] = int64(len(s.Nodes[t]) - before[t])
			frontier[t] = frontier[t][:0]
			for l := before[t]; l < len(s.Nodes[t]); l++ {
				frontier[t] = append(frontier[t], int64(l))
			}
		}
	}
	return s
}

// diffHetero describes the first difference between two samples, or returns "".
func diffHetero(got, want *HeteroSample) string {
	for _, f := range []struct {
		name      string
		got, want [][]int64
	}{
		{"Nodes", got.Nodes, want.Nodes}, {"NodesPerHop", got.NodesPerHop, want.NodesPerHop},
		{"Row", got.Row, want.Row}, {"Col", got.Col, want.Col}, {"EdgeIDs", got.EdgeIDs, want.EdgeIDs},
		{"EdgesPerHop", got.EdgesPerHop, want.EdgesPerHop},
	} {
		if len(f.got) != len(f.want) {
			return fmt.Sprintf("%s has %d types, want %d", f.name, len(f.got), len(f.want))
		}
		for i := range f.got {
			if !slices.Equal(f.got[i], f.want[i]) || (f.got[i] == nil) != (f.want[i] == nil) {
				return fmt.Sprintf("%s[%d] = %v, want %v", f.name, i, brief(f.got[i]), brief(f.want[i]))
			}
		}
	}
	return ""
}

var heteroFanoutCases = [][][]int{
	{{5, 3}, {2, 2}, {-1, 1}, {3, 3}, {4, 2}},
	{{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}},
	{{0, 4}, {3, 0}, {2, 2}, {0, -1}, {5, 0}},
	{{10, 2, 2}, {1, 0, 3}, {0, 0, 0}, {2, 2, 2}, {-1, 1, 1}},
	{{100}, {1}, {0}, {7}, {3}},
}

// TestSampleHeteroMatchesReference compares SampleHetero with refSampleHetero on random graphs,
// seed types, fanouts (-1 and 0 among them), with and without replacement, NodesOnly, Workers 1 and
// 4, with and without edge ids, and over in-memory and on-disk topology: every output must agree
// exactly.
func TestSampleHeteroMatchesReference(t *testing.T) {
	r := testRand(t)
	for g := range 3 {
		h := randomHetero(r)
		plain := make([]bool, len(h.types))
		for e := range plain {
			plain[e] = r.IntN(3) == 0
		}
		indexed := make([]bool, len(plain))
		for e := range plain {
			indexed[e] = !plain[e]
		}
		mem, disk := h.graphs(t, plain)
		for _, fanouts := range heteroFanoutCases {
			for _, replace := range []bool{false, true} {
				for _, nodesOnly := range []bool{false, true} {
					seedType := r.IntN(len(h.numNodes))
					seeds := seedsFor(r, h.numNodes[seedType], 1+r.IntN(600))
					opt := HeteroSampleOptions{Fanouts: fanouts, Replace: replace, Seed: r.Uint64(), NodesOnly: nodesOnly}
					name := fmt.Sprintf("graph %d, seed type %d, %d seeds, fanouts %v, replace %v, seed %d, NodesOnly %v",
						g, seedType, len(seeds), fanouts, replace, opt.Seed, nodesOnly)
					want := refSampleHetero(h, indexed, seedType, seeds, opt)
					for _, workers := range []int{1, 4} {
						opt.Workers = workers
						for i, edges := range [][]EdgeGraph{mem, disk} {
							got, err := SampleHetero(h.numNodes, edges, seedType, seeds, opt)
							if err != nil {
								t.Fatalf("%s: %v", name, err)
							}
							if d := diffHetero(got, want); d != "" {
								t.Fatalf("%s, Workers %d, disk %v: %s", name, workers, i == 1, d)
							}
						}
					}
				}
			}
		}
	}
}

// TestSampleHeteroOneTypeIsSampleNeighbors: one node type with one edge type samples exactly what
// SampleNeighbors does (edge type 0 draws with Seed itself), on memory and disk graphs.
func TestSampleHeteroOneTypeIsSampleNeighbors(t *testing.T) {
	r := testRand(t)
	for _, e := range randomGraphs(r) {
		g := e.csc(t)
		graphs := []Graph{g, plainGraph{g}}
		if g.Indices32 != nil {
			pf, xf := diskOf(g.Indptr, g.Indices32)
			disk, err := NewDiskCSC(g.NumNodes(), g.NumEdges(), 4, 0, 1, memFiles(pf, xf))
			if err != nil {
				t.Fatal(err)
			}
			graphs = append(graphs, disk)
		}
		for _, gr := range graphs {
			for _, fanouts := range fanoutCases {
				for _, replace := range []bool{false, true} {
					for _, nodesOnly := range []bool{false, true} {
						seeds := seedsFor(r, e.numNodes, 1+r.IntN(400))
						opt := SampleOptions{Fanouts: fanouts, Replace: replace, Seed: r.Uint64(), Workers: 1 + r.IntN(4), NodesOnly: nodesOnly}
						want, err := SampleNeighbors(gr, seeds, opt)
						if err != nil {
							t.Fatal(err)
						}
						got, err := SampleHetero([]int64{e.numNodes}, []EdgeGraph{{G: gr}}, 0, seeds, HeteroSampleOptions{
							Fanouts: [][]int{fanouts}, Replace: replace, Seed: opt.Seed, Workers: opt.Workers, NodesOnly: nodesOnly,
						})
						if err != nil {
							t.Fatal(err)
						}
						one := &HeteroSample{
							Nodes: [][]int64{want.Nodes}, NodesPerHop: [][]int64{want.NodesPerHop},
							Row: [][]int64{want.Row}, Col: [][]int64{want.Col}, EdgeIDs: [][]int64{want.EdgeIDs}, EdgesPerHop: [][]int64{want.EdgesPerHop},
						}
						if d := diffHetero(got, one); d != "" {
							t.Fatalf("%s (%T) %+v: %s", e.name, gr, opt, d)
						}
					}
				}
			}
		}
	}
}

// drawingGraph is a HopDrawer that draws as the host does, counting its calls and keeping the
// seeds it was given.
type drawingGraph struct {
	*CSC
	seeds []uint64
}

func (d *drawingGraph) DrawHop(nodes, deg, off []int64, fanout int, replace bool, seed uint64, hop int, pos, out []int64) error {
	d.seeds = append(d.seeds, seed)
	p := make([]int64, len(out))
	newPositionPicker(1).pick(nodes, nil, deg, off, p, fanout, replace, seed, hop)
	if pos != nil {
		copy(pos, p)
	}
	return d.NeighborsAt(nodes, off, p, out)
}

// TestSampleHeteroDrawHop: a HopDrawer gets each edge type's seed (Seed for edge type 0) and, drawing
// as the host does, gives the host's sample.
func TestSampleHeteroDrawHop(t *testing.T) {
	r := testRand(t)
	h := randomHetero(r)
	mem, _ := h.graphs(t, make([]bool, len(h.types)))
	drawers := slices.Clone(mem)
	for e := range drawers {
		drawers[e].G = &drawingGraph{CSC: mem[e].G.(*CSC)}
	}
	seeds := seedsFor(r, h.numNodes[0], 100)
	opt := HeteroSampleOptions{Fanouts: heteroFanoutCases[0], Seed: r.Uint64()}
	want, err := SampleHetero(h.numNodes, mem, 0, seeds, opt)
	if err != nil {
		t.Fatal(err)
	}
	got, err := SampleHetero(h.numNodes, drawers, 0, seeds, opt)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffHetero(got, want); d != "" {
		t.Fatalf("HopDrawer sample differs: %s", d)
	}
	for e, eg := range drawers {
		for _, s := range eg.G.(*drawingGraph).seeds {
			if s != EdgeTypeSeed(opt.Seed, e) || (e == 0 && s != opt.Seed) {
				t.Fatalf("edge type %d drew with seed %d, want %d", e, s, EdgeTypeSeed(opt.Seed, e))
			}
		}
	}
}

// TestSampleHeteroUnreachedType: an edge type whose Dst type no hop reaches samples nothing and
// calls nothing on its graph; seeds of a type no edge type ends in sample nothing at all.
func TestSampleHeteroUnreachedType(t *testing.T) {
	// Types: 0 (seeds), 1, 2. Edges: 1 -> 0, 0 -> 0, 0 -> 2. Nothing has Src 2, so no node of type
	// 2 is ever reached.
	g10, _ := FromEdges(3, []int64{0, 1}, []int64{0, 0})
	g00, _ := FromEdges(3, []int64{2}, []int64{0})
	g02 := &countingGraph{Graph: must(FromEdges(2, []int64{0, 1}, []int64{0, 1}))}
	edges := []EdgeGraph{{Src: 1, Dst: 0, G: g10}, {Src: 0, Dst: 0, G: g00}, {Src: 0, Dst: 2, G: g02}}
	got, err := SampleHetero([]int64{3, 2, 2}, edges, 0, []int64{0, 0}, HeteroSampleOptions{Fanouts: [][]int{{-1, -1}, {-1, -1}, {-1, -1}}})
	if err != nil {
		t.Fatal(err)
	}
	want := &HeteroSample{
		Nodes:       [][]int64{{0, 0, 2}, {0, 1}, {}},
		NodesPerHop: [][]int64{{2, 1, 0}, {0, 2, 0}, {0, 0, 0}},
		Row:         [][]int64{{0, 1}, {2}, {}},
		Col:         [][]int64{{0, 0}, {0}, {}},
		EdgeIDs:     [][]int64{{0, 1}, {0}, nil},
		EdgesPerHop: [][]int64{{2, 0}, {1, 0}, {0, 0}},
	}
	if d := diffHetero(got, want); d != "" {
		t.Fatalf("%s\ngot %+v", d, got)
	}
	if g02.degrees != 0 || g02.neighborsAt != 0 {
		t.Fatalf("edge type 2 was asked %d Degrees and %d NeighborsAt, want none", g02.degrees, g02.neighborsAt)
	}
	// Seeds of type 1, which no edge type ends in: nothing to sample.
	got, err = SampleHetero([]int64{3, 2, 2}, edges[:2], 1, []int64{1}, HeteroSampleOptions{Fanouts: [][]int{{3}, {3}}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Nodes, [][]int64{{}, {1}, {}}) || !reflect.DeepEqual(got.EdgesPerHop, [][]int64{{0}, {0}}) {
		t.Fatalf("seeds of a type no edge type ends in sampled %+v", got)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestSampleHeteroErrors(t *testing.T) {
	g, err := FromEdges(5, []int64{1, 2}, []int64{0, 0}) // 5 nodes of type 0, neighbors of type 1
	if err != nil {
		t.Fatal(err)
	}
	ioErr := errors.New("disk on fire")
	numNodes := []int64{5, 3}
	one := func(fanouts ...int) HeteroSampleOptions { return HeteroSampleOptions{Fanouts: [][]int{fanouts}} }
	edges := []EdgeGraph{{Src: 1, Dst: 0, G: g}}
	for _, c := range []struct {
		numNodes []int64
		edges    []EdgeGraph
		seedType int
		seeds    []int64
		opt      HeteroSampleOptions
		want     string
	}{
		{numNodes, edges, 2, []int64{0}, one(1), "topology: seedType = 2 is not a node type in [0, 2)"},
		{numNodes, edges, -1, []int64{0}, one(1), "topology: seedType = -1 is not a node type in [0, 2)"},
		{numNodes, edges, 0, []int64{0, 5}, one(1), "topology: seeds[1] = 5 is not a node id of seedType 0 in [0, 5)"},
		{numNodes, edges, 1, []int64{3}, one(1), "topology: seeds[0] = 3 is not a node id of seedType 1 in [0, 3)"},
		{[]int64{5, -1}, edges, 0, []int64{0}, one(1), "topology: numNodes[1] = -1 is negative"},
		{numNodes, []EdgeGraph{{Src: 2, Dst: 0, G: g}}, 0, []int64{0}, one(1), "topology: edges[0].Src = 2 is not a node type in [0, 2)"},
		{numNodes, []EdgeGraph{{Src: 1, Dst: -1, G: g}}, 0, []int64{0}, one(1), "topology: edges[0].Dst = -1 is not a node type in [0, 2)"},
		{numNodes, []EdgeGraph{{Src: 1, Dst: 0}}, 0, []int64{0}, one(1), "topology: edges[0].G is nil"},
		{numNodes, []EdgeGraph{{Src: 0, Dst: 1, G: g}}, 0, []int64{0}, one(1), "topology: edges[0].G has 5 nodes, but its Dst type 1 has numNodes[1] = 3"},
		{numNodes, nil, 0, []int64{0}, one(1), "topology: 1 rows of Fanouts for 0 edge types; give one row per edge type"},
		{numNodes, edges, 0, []int64{0}, HeteroSampleOptions{}, "topology: 0 rows of Fanouts for 1 edge types; give one row per edge type"},
		{numNodes, append(edges, edges[0]), 0, []int64{0}, HeteroSampleOptions{Fanouts: [][]int{{1, 2}, {1}}}, "topology: Fanouts[1] has 1 hops, Fanouts[0] has 2; every edge type samples the same hops"},
		{numNodes, edges, 0, []int64{0}, one(1, -2), "topology: Fanouts[0][1] = -2; want -1 (every neighbor) or a count >= 0"},
		{numNodes, edges, 0, []int64{0}, HeteroSampleOptions{Fanouts: [][]int{{1}}, Workers: -1}, "topology: Workers = -1 is negative"},
		// The graph's neighbors are ids of type 0 (5 nodes), not of the Src type 1 (3 nodes).
		{[]int64{5, 2}, edges, 0, []int64{0}, one(-1), "topology: edges[0] gave neighbor 2 of node 0, not a node id of its Src type in [0, 2)"},
		{[]int64{10, 10}, []EdgeGraph{{Src: 0, Dst: 1, G: faultyGraph{degree: -1}}}, 1, []int64{4}, one(3), "topology: edges[0] gave degree -1 for node 4"},
		{[]int64{10, 10}, []EdgeGraph{{Src: 0, Dst: 1, G: faultyGraph{degree: 2, err: ioErr}}}, 1, []int64{4}, one(3), "topology: edges[0]: disk on fire"},
	} {
		_, err := SampleHetero(c.numNodes, c.edges, c.seedType, c.seeds, c.opt)
		if err == nil || err.Error() != c.want {
			t.Errorf("SampleHetero(%v, seed type %d, %v, %+v) error = %v, want %q", c.numNodes, c.seedType, c.seeds, c.opt, err, c.want)
		}
		if c.want == "topology: edges[0]: disk on fire" && !errors.Is(err, ioErr) {
			t.Errorf("the graph's error is not wrapped: %v", err)
		}
	}
	for _, seed := range []uint64{0, 1, 1 << 63, 12345} {
		if EdgeTypeSeed(seed, 0) != seed || EdgeTypeSeed(seed, 1) == seed {
			t.Fatalf("EdgeTypeSeed(%d, 0) = %d, EdgeTypeSeed(%d, 1) = %d; want the seed itself for edge type 0 only", seed, EdgeTypeSeed(seed, 0), seed, EdgeTypeSeed(seed, 1))
		}
	}
}

// BenchmarkSampleHetero samples 2 hops for 1024 seeds of type 0 on uniform random edge types
// shaped like heteroTypes (types of 512K, 256K and 64K nodes, 4M edges each), fanouts [15, 10]
// per edge type, so its seeds/s compares with BenchmarkSample's.
func BenchmarkSampleHetero(b *testing.B) {
	numNodes := []int64{512 << 10, 256 << 10, 64 << 10}
	const numEdges, numSeeds = 4 << 20, 1024
	r := rand.New(rand.NewPCG(1, 2))
	edges := make([]EdgeGraph, len(heteroTypes))
	fanouts := make([][]int, len(heteroTypes))
	for e, et := range heteroTypes {
		src, dst := make([]int64, numEdges), make([]int64, numEdges)
		for i := range src {
			src[i], dst[i] = r.Int64N(numNodes[et.Src]), r.Int64N(numNodes[et.Dst])
		}
		g, err := FromBipartiteEdges(numNodes[et.Src], numNodes[et.Dst], src, dst)
		if err != nil {
			b.Fatal(err)
		}
		edges[e] = EdgeGraph{Src: et.Src, Dst: et.Dst, G: g}
		fanouts[e] = []int{15, 10}
	}
	seeds := make([]int64, numSeeds)
	for i := range seeds {
		seeds[i] = r.Int64N(numNodes[0])
	}
	opt := HeteroSampleOptions{Fanouts: fanouts}
	runs := 0
	for b.Loop() {
		opt.Seed = uint64(runs)
		if _, err := SampleHetero(numNodes, edges, 0, seeds, opt); err != nil {
			b.Fatal(err)
		}
		runs++
	}
	b.ReportMetric(float64(runs*numSeeds)/b.Elapsed().Seconds(), "seeds/s")
}

// A graph without edge types samples zero hops: the seeds alone, as given, with no edge
// types in the sample.
func TestSampleHeteroWithoutEdgeTypes(t *testing.T) {
	seeds := []int64{3, 1, 3}
	got, err := SampleHetero([]int64{4, 2}, nil, 0, seeds, HeteroSampleOptions{Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Nodes[0], seeds) {
		t.Fatalf("nodes %v of seeds %v", got.Nodes[0], seeds)
	}
	if len(got.Nodes[1]) != 0 || len(got.Row) != 0 || len(got.EdgesPerHop) != 0 || len(got.NodesPerHop[0]) != 1 || got.NodesPerHop[0][0] != int64(len(got.Nodes[0])) {
		t.Fatalf("sample without edge types: %+v", got)
	}
}
