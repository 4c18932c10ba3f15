package topology

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// restrict is tree b of disjoint sample s relabeled: its nodes in order, and its edges with local
// ids among them.
func restrict(s *Sample, b int64) *Sample {
	local := map[int64]int64{}
	t := &Sample{Nodes: []int64{}, Row: []int64{}, Col: []int64{}}
	for i, v := range s.Nodes {
		if s.Batch[i] == b {
			local[int64(i)] = int64(len(t.Nodes))
			t.Nodes = append(t.Nodes, v)
		}
	}
	for i := range s.Row {
		lr, okr := local[s.Row[i]]
		lc, okc := local[s.Col[i]]
		if okr != okc {
			panic("an edge between two trees")
		}
		if okr {
			t.Row, t.Col = append(t.Row, lr), append(t.Col, lc)
			if s.EdgeIDs != nil {
				t.EdgeIDs = append(t.EdgeIDs, s.EdgeIDs[i])
			}
		}
	}
	return t
}

// A disjoint sample is, tree by tree, the plain sample of the tree's seed alone drawn with the
// tree's seed (DisjointSeed), on random graphs, uniform and weighted, with and without
// replacement; its per-hop counts are the trees' sums, and the nodes of each hop come after the
// previous hop's.
func TestDisjointMatchesPerSeedSamples(t *testing.T) {
	r := testRand(t)
	for _, e := range randomGraphs(r) {
		g := e.csc(t)
		w := make([]float32, g.NumEdges())
		for i := range w {
			w[i] = float32(r.IntN(4)) + 0.5
		}
		for _, graph := range []Graph{g, &Weighted{G: g, W: w}} {
			for _, replace := range []bool{false, true} {
				seeds := make([]int64, 1+r.IntN(12))
				for i := range seeds {
					seeds[i] = r.Int64N(e.numNodes)
				}
				seeds = append(seeds, seeds[0], 7) // a repeated seed, the hub
				opt := SampleOptions{Fanouts: []int{3, 2, -1}, Replace: replace, Seed: r.Uint64(), Workers: 1 + r.IntN(3), Disjoint: true}
				s, err := SampleNeighbors(graph, seeds, opt)
				if err != nil {
					t.Fatalf("%s %T replace %v: %v", e.name, graph, replace, err)
				}
				if len(s.Batch) != len(s.Nodes) || !slices.Equal(s.Batch[:len(seeds)], seedIndices(len(seeds))) || !slices.Equal(s.Nodes[:len(seeds)], seeds) {
					t.Fatalf("%s: batch %v nodes %v: want the seeds first, each its own index", e.name, s.Batch, s.Nodes)
				}
				nodesPerHop := make([]int64, len(opt.Fanouts)+1)
				edgesPerHop := make([]int64, len(opt.Fanouts))
				for b, seed := range seeds {
					one := opt
					one.Disjoint, one.Seed = false, DisjointSeed(opt.Seed, int64(b))
					want, err := SampleNeighbors(graph, []int64{seed}, one)
					if err != nil {
						t.Fatal(err)
					}
					got := restrict(s, int64(b))
					if !slices.Equal(got.Nodes, want.Nodes) || !slices.Equal(got.Row, want.Row) || !slices.Equal(got.Col, want.Col) || !slices.Equal(got.EdgeIDs, want.EdgeIDs) {
						t.Fatalf("%s %T replace %v tree %d (seed %d): got nodes %v rows %v cols %v, want %v %v %v", e.name, graph, replace, b, seed, got.Nodes, got.Row, got.Col, want.Nodes, want.Row, want.Col)
					}
					for h := range nodesPerHop {
						nodesPerHop[h] += want.NodesPerHop[h]
					}
					for h := range edgesPerHop {
						edgesPerHop[h] += want.EdgesPerHop[h]
					}
				}
				if !slices.Equal(s.NodesPerHop, nodesPerHop) || !slices.Equal(s.EdgesPerHop, edgesPerHop) {
					t.Fatalf("%s: per hop nodes %v edges %v, want the trees' sums %v %v", e.name, s.NodesPerHop, s.EdgesPerHop, nodesPerHop, edgesPerHop)
				}
				// hop-major order: the edges of hop h target the nodes first reached at hop h-1
				var lo, e0 int64
				for h, c := range s.EdgesPerHop {
					hi := lo + s.NodesPerHop[h]
					for _, col := range s.Col[e0 : e0+c] {
						if col < lo || col >= hi {
							t.Fatalf("%s: an edge of hop %d targets local %d, not among [%d, %d)", e.name, h, col, lo, hi)
						}
					}
					lo, e0 = hi, e0+c
				}
			}
		}
	}
}

// Two trees holding the same id draw independently: the hub (5000 in-neighbors) seeded twice
// draws two different neighbor sets, and each tree keeps a node once however often it is drawn.
func TestDisjointTreesDrawIndependently(t *testing.T) {
	r := testRand(t)
	g := randomGraphs(r)[0].csc(t)
	s, err := SampleNeighbors(g, []int64{7, 7}, SampleOptions{Fanouts: []int{10}, Seed: r.Uint64(), Disjoint: true})
	if err != nil {
		t.Fatal(err)
	}
	a, b := restrict(s, 0), restrict(s, 1)
	if slices.Equal(a.Nodes, b.Nodes) {
		t.Fatalf("trees of the same seed drew the same nodes %v", a.Nodes)
	}
	if s.NodesPerHop[0] != 2 || s.EdgesPerHop[0] != 20 {
		t.Fatalf("per hop nodes %v edges %v, want 2 seeds and 20 edges", s.NodesPerHop, s.EdgesPerHop)
	}
}

// A disjoint sample's nodes-only form counts the same nodes; a sample without Disjoint has no Batch.
func TestDisjointNodesOnlyAndOff(t *testing.T) {
	r := testRand(t)
	g := randomGraphs(r)[1].csc(t)
	seeds := []int64{1, 2, 1, 7}
	opt := SampleOptions{Fanouts: []int{4, 3}, Seed: r.Uint64(), Disjoint: true}
	full, err := SampleNeighbors(g, seeds, opt)
	if err != nil {
		t.Fatal(err)
	}
	opt.NodesOnly = true
	counts, err := SampleNeighbors(g, seeds, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(full.Nodes, counts.Nodes) || !slices.Equal(full.Batch, counts.Batch) || len(counts.Row) != 0 {
		t.Fatalf("nodes-only nodes %v batch %v, want %v %v and no edges", counts.Nodes, counts.Batch, full.Nodes, full.Batch)
	}
	opt.NodesOnly, opt.Disjoint = false, false
	plain, err := SampleNeighbors(g, seeds, opt)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Batch != nil {
		t.Fatalf("a sample without Disjoint has Batch %v", plain.Batch)
	}
}

type selfDrawer struct{ *CSC }

func (selfDrawer) DrawHop(nodes, deg, off []int64, fanout int, replace bool, seed uint64, hop int, pos, out []int64) error {
	return nil
}

// A graph that draws its own hops (the GPU sampler's) is refused a disjoint sample, by name.
func TestDisjointRefusesHopDrawer(t *testing.T) {
	g, err := FromEdges(3, []int64{0, 1}, []int64{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	_, err = SampleNeighbors(selfDrawer{g}, []int64{2}, SampleOptions{Fanouts: []int{1}, Disjoint: true})
	if err == nil || !strings.Contains(err.Error(), "disjoint") || !strings.Contains(err.Error(), "selfDrawer") {
		t.Fatalf("got %v, want a refusal naming disjoint and the graph", err)
	}
}

// restrictHetero is tree b of a disjoint heterogeneous sample relabeled: each type's nodes of the
// tree in order, each edge type's edges among them.
func restrictHetero(s *HeteroSample, edges []EdgeGraph, b int64) *HeteroSample {
	t := &HeteroSample{Nodes: make([][]int64, len(s.Nodes)), Row: make([][]int64, len(edges)), Col: make([][]int64, len(edges)), EdgeIDs: make([][]int64, len(edges))}
	local := make([]map[int64]int64, len(s.Nodes))
	for ty := range s.Nodes {
		local[ty], t.Nodes[ty] = map[int64]int64{}, []int64{}
		for i, v := range s.Nodes[ty] {
			if s.Batch[ty][i] == b {
				local[ty][int64(i)] = int64(len(t.Nodes[ty]))
				t.Nodes[ty] = append(t.Nodes[ty], v)
			}
		}
	}
	for e, eg := range edges {
		t.Row[e], t.Col[e] = []int64{}, []int64{}
		if s.EdgeIDs[e] != nil {
			t.EdgeIDs[e] = []int64{}
		}
		for i := range s.Row[e] {
			lr, okr := local[eg.Src][s.Row[e][i]]
			lc, okc := local[eg.Dst][s.Col[e][i]]
			if okr != okc {
				panic("an edge between two trees")
			}
			if okr {
				t.Row[e], t.Col[e] = append(t.Row[e], lr), append(t.Col[e], lc)
				if s.EdgeIDs[e] != nil {
					t.EdgeIDs[e] = append(t.EdgeIDs[e], s.EdgeIDs[e][i])
				}
			}
		}
	}
	return t
}

// A disjoint heterogeneous sample is, tree by tree, the reference sample of the tree's seed alone
// with edge type e drawing DisjointSeed(EdgeTypeSeed(Seed, e), b) (random draws included), on
// random graphs of three node types, with and without replacement; every type carries Batch,
// the seeds' type the seed indices first; per-hop counts are the trees' sums.
func TestDisjointHeteroMatchesPerSeedReference(t *testing.T) {
	r := testRand(t)
	h := randomHetero(r)
	plain := make([]bool, len(h.types))
	indexed := make([]bool, len(h.types))
	for e := range indexed {
		indexed[e] = true
	}
	mem, _ := h.graphs(t, plain)
	for _, fanouts := range heteroFanoutCases[:3] {
		for _, replace := range []bool{false, true} {
			seedType := r.IntN(len(h.numNodes))
			seeds := seedsFor(r, h.numNodes[seedType], 1+r.IntN(8))
			seeds = append(seeds, seeds[0], 7%h.numNodes[seedType])
			opt := HeteroSampleOptions{Fanouts: fanouts, Replace: replace, Seed: r.Uint64(), Workers: 1 + r.IntN(3), Disjoint: true}
			s, err := SampleHetero(h.numNodes, mem, seedType, seeds, opt)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Batch) != len(h.numNodes) || !slices.Equal(s.Batch[seedType][:len(seeds)], seedIndices(len(seeds))) {
				t.Fatalf("fanouts %v: batch %v, want every type's and the seeds' indices first", fanouts, s.Batch)
			}
			nodesPerHop := make([][]int64, len(h.numNodes))
			for ty := range nodesPerHop {
				nodesPerHop[ty] = make([]int64, len(fanouts[0])+1)
				if len(s.Batch[ty]) != len(s.Nodes[ty]) {
					t.Fatalf("type %d: %d batch entries for %d nodes", ty, len(s.Batch[ty]), len(s.Nodes[ty]))
				}
			}
			for b, seed := range seeds {
				edgeSeed := func(e int) uint64 { return DisjointSeed(EdgeTypeSeed(opt.Seed, e), int64(b)) }
				typeSeeds := make([][]int64, len(h.numNodes))
				typeSeeds[seedType] = []int64{seed}
				one := opt
				one.Disjoint = false
				want := refSampleHeteroFrom(h, indexed, typeSeeds, one, nil, edgeSeed)
				got := restrictHetero(s, mem, int64(b))
				for ty := range got.Nodes {
					if !slices.Equal(got.Nodes[ty], want.Nodes[ty]) {
						t.Fatalf("fanouts %v replace %v tree %d (seed %d of type %d): type %d nodes %v, want %v", fanouts, replace, b, seed, seedType, ty, brief(got.Nodes[ty]), brief(want.Nodes[ty]))
					}
					for hp := range nodesPerHop[ty] {
						nodesPerHop[ty][hp] += want.NodesPerHop[ty][hp]
					}
				}
				for e := range mem {
					if !slices.Equal(got.Row[e], want.Row[e]) || !slices.Equal(got.Col[e], want.Col[e]) || !slices.Equal(got.EdgeIDs[e], want.EdgeIDs[e]) {
						t.Fatalf("fanouts %v replace %v tree %d: edge type %d differs: rows %v cols %v, want %v %v", fanouts, replace, b, e, brief(got.Row[e]), brief(got.Col[e]), brief(want.Row[e]), brief(want.Col[e]))
					}
				}
			}
			for ty := range nodesPerHop {
				if !slices.Equal(s.NodesPerHop[ty], nodesPerHop[ty]) {
					t.Fatalf("type %d: per hop %v, want the trees' sums %v", ty, s.NodesPerHop[ty], nodesPerHop[ty])
				}
			}
		}
	}
	// The one-type case is SampleNeighbors' disjoint sample.
	g := randomGraphs(r)[2].csc(t)
	seeds := []int64{1, 2, 1}
	one, err := SampleNeighbors(g, seeds, SampleOptions{Fanouts: []int{3, 2}, Seed: 5, Disjoint: true})
	if err != nil {
		t.Fatal(err)
	}
	typed, err := SampleHetero([]int64{g.NumNodes()}, []EdgeGraph{{G: g}}, 0, seeds, HeteroSampleOptions{Fanouts: [][]int{{3, 2}}, Seed: 5, Disjoint: true})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(typed, one.Typed()) {
		t.Fatalf("one-type SampleHetero %+v, want SampleNeighbors' %+v", typed, one.Typed())
	}
}
