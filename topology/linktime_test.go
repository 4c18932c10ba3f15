package topology

import (
	"slices"
	"strings"
	"testing"
)

// pygLinkSeeds is PyG's edge_sample layout of disjoint seeds written out from its code: per node
// type the seeds (src then src negatives, dst then dst negatives, triplet negative j of seed edge
// i at j*P + i; one node type: both in one list), and the seed time of each
// (src_time = dst_time = edge_label_time repeated; nil without times).
func pygLinkSeeds(numTypes int, et EdgeGraph, src, dst []int64, lk LinkLabels, mode NegativeMode, amount float64, elt []int64) (seeds [][]int64, times []int64) {
	p := len(src)
	negDst := lk.NegDst
	if mode == TripletNegatives {
		a := int(amount)
		negDst = make([]int64, len(lk.NegDst))
		for i := range p {
			for j := range a {
				negDst[j*p+i] = lk.NegDst[i*a+j]
			}
		}
	}
	srcSeeds, dstSeeds := slices.Concat(src, lk.NegSrc), slices.Concat(dst, negDst)
	repeat := func(n int) []int64 { // edge_label_time.repeat(...)[:n]
		var out []int64
		for len(out) < n {
			out = append(out, elt...)
		}
		return out[:n]
	}
	seeds = make([][]int64, numTypes)
	if et.Src == et.Dst {
		seeds[et.Src] = slices.Concat(srcSeeds, dstSeeds)
	} else {
		seeds[et.Src], seeds[et.Dst] = srcSeeds, dstSeeds
	}
	if elt != nil {
		times = repeat(len(dstSeeds))
		if et.Src == et.Dst {
			times = slices.Concat(repeat(len(srcSeeds)), times)
		}
	}
	return seeds, times
}

// checkLinkPositions checks a disjoint link sample's label index against PyG's: every label
// endpoint is the seed at its position, whose batch is its position mod the seed edges (a
// triplet's negatives: their seed edge).
func checkLinkPositions(t *testing.T, name string, et EdgeGraph, src, dst []int64, s *HeteroLinkSample) {
	t.Helper()
	p := int64(len(src))
	at := func(ty int, l int64) (int64, int64) { return s.Nodes[ty][l], s.Batch[ty][l] }
	if s.DstNegIndex != nil {
		perSeed := int64(len(s.NegDst)) / p
		for k, l := range s.DstNegIndex {
			if v, b := at(et.Dst, l); v != s.NegDst[k] || b != int64(k)/perSeed {
				t.Fatalf("%s: negative %d at %d is node %d of batch %d, want %d of batch %d", name, k, l, v, b, s.NegDst[k], int64(k)/perSeed)
			}
		}
		for i := range src {
			vs, bs := at(et.Src, s.SrcIndex[i])
			vd, bd := at(et.Dst, s.DstPosIndex[i])
			if vs != src[i] || vd != dst[i] || bs != int64(i) || bd != int64(i) {
				t.Fatalf("%s: seed edge %d is (%d, %d) of batches %d, %d; want (%d, %d) of batch %d", name, i, vs, vd, bs, bd, src[i], dst[i], i)
			}
		}
		return
	}
	ends := [2][]int64{slices.Concat(src, s.NegSrc), slices.Concat(dst, s.NegDst)}
	for end, ty := range [2]int{et.Src, et.Dst} {
		for k, l := range s.EdgeLabelIndex[end] {
			if v, b := at(ty, l); v != ends[end][k] || b != l%p {
				t.Fatalf("%s: label edge %d endpoint %d at %d is node %d of batch %d, want %d of batch %d (its position mod %d)", name, k, end, l, v, b, ends[end][k], l%p, p)
			}
		}
	}
}

// A disjoint link sample is PyG's layout over trees that are each the reference sample of its
// seeds alone: its negatives are the non-disjoint sample's, its nodes and edges those of the
// disjoint sample of PyG's seed lists with Batch mod the seed edges, which tree by tree (random
// draws included, the seed edges excluded or not) is refSampleHeteroFrom of the tree's seeds with
// DisjointSeed; the label index points at the seeds in PyG's positions.
func TestLinkDisjointMatchesPyGLayout(t *testing.T) {
	r := testRand(t)
	h := randomHeteroOf(r, linkTypes)
	indexed := make([]bool, len(h.types))
	for e := range indexed {
		indexed[e] = true
	}
	mem, _ := h.graphs(t, make([]bool, len(h.types)))
	for _, seedEdgeType := range []int{0, 1} { // one node type; two
		for _, neg := range []struct {
			mode   NegativeMode
			amount float64
		}{{NoNegatives, 0}, {BinaryNegatives, 1}, {BinaryNegatives, 1.5}, {TripletNegatives, 2}} {
			et := h.types[seedEdgeType]
			src, dst := seedEdgesFor(r, h, seedEdgeType, 1+r.IntN(6))
			labels := []int64(nil)
			if neg.mode != TripletNegatives {
				labels = make([]int64, len(src))
				for i := range labels {
					labels[i] = 1 + r.Int64N(3)
				}
			}
			opt := HeteroLinkSampleOptions{
				HeteroSampleOptions: HeteroSampleOptions{Fanouts: linkFanoutCases[0], Replace: r.IntN(2) == 0, Seed: r.Uint64(), Workers: 1 + r.IntN(3), Disjoint: true},
				LinkOptions:         LinkOptions{Negatives: neg.mode, NegAmount: neg.amount, ExcludeSeedEdges: r.IntN(2) == 0, ReverseEdgeTypes: linkReverse},
			}
			name := linkCase{seedEdgeType: seedEdgeType, src: src, dst: dst, labels: labels, opt: opt}.String()
			s, err := SampleHeteroFromEdges(h.numNodes, mem, seedEdgeType, src, dst, labels, opt)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			joint := opt
			joint.Disjoint = false
			js, err := SampleHeteroFromEdges(h.numNodes, mem, seedEdgeType, src, dst, labels, joint)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.NegSrc, js.NegSrc) || !slices.Equal(s.NegDst, js.NegDst) || !slices.Equal(s.EdgeLabel, js.EdgeLabel) {
				t.Fatalf("%s: negatives %v %v labels %v, want the non-disjoint sample's %v %v %v", name, s.NegSrc, s.NegDst, s.EdgeLabel, js.NegSrc, js.NegDst, js.EdgeLabel)
			}
			seeds, _ := pygLinkSeeds(len(h.numNodes), et, src, dst, s.LinkLabels, neg.mode, neg.amount, nil)
			exclude := excludeSeedEdges(len(mem), seedEdgeType, src, dst, opt.LinkOptions)
			hops, _ := checkHeteroGraph(h.numNodes, mem, opt.HeteroSampleOptions)
			trees, err := sampleHetero(h.numNodes, mem, hops, seeds, opt.HeteroSampleOptions, exclude, nil)
			if err != nil {
				t.Fatal(err)
			}
			for ty := range trees.Nodes {
				batch := slices.Clone(trees.Batch[ty])
				for i := range batch {
					batch[i] %= int64(len(src))
				}
				if !slices.Equal(s.Nodes[ty], trees.Nodes[ty]) || !slices.Equal(s.Batch[ty], batch) {
					t.Fatalf("%s: type %d nodes %v batch %v, want the trees of PyG's seeds %v, batch mod %d %v", name, ty, brief(s.Nodes[ty]), brief(s.Batch[ty]), brief(trees.Nodes[ty]), len(src), brief(batch))
				}
			}
			for e := range mem {
				if !slices.Equal(s.Row[e], trees.Row[e]) || !slices.Equal(s.Col[e], trees.Col[e]) {
					t.Fatalf("%s: edge type %d differs from the trees of PyG's seeds", name, e)
				}
			}
			excluded := func(e int, a, b int64) bool {
				if !opt.ExcludeSeedEdges {
					return false
				}
				for i := range src {
					if (e == seedEdgeType && a == src[i] && b == dst[i]) || (e == linkReverse[seedEdgeType] && a == dst[i] && b == src[i]) {
						return true
					}
				}
				return false
			}
			for b := range max(len(seeds[et.Src]), len(seeds[et.Dst])) {
				typeSeeds := make([][]int64, len(h.numNodes))
				for ty, ids := range seeds {
					if b < len(ids) {
						typeSeeds[ty] = ids[b : b+1]
					}
				}
				one := opt.HeteroSampleOptions
				one.Disjoint = false
				want := refSampleHeteroFrom(h, indexed, typeSeeds, one, excluded, func(e int) uint64 { return DisjointSeed(EdgeTypeSeed(opt.Seed, e), int64(b)) })
				got := restrictHetero(trees, mem, int64(b))
				for ty := range got.Nodes {
					if !slices.Equal(got.Nodes[ty], want.Nodes[ty]) {
						t.Fatalf("%s: tree %d type %d nodes %v, want %v", name, b, ty, brief(got.Nodes[ty]), brief(want.Nodes[ty]))
					}
				}
				for e := range mem {
					if !slices.Equal(got.Row[e], want.Row[e]) || !slices.Equal(got.Col[e], want.Col[e]) {
						t.Fatalf("%s: tree %d edge type %d rows %v cols %v, want %v %v", name, b, e, brief(got.Row[e]), brief(got.Col[e]), brief(want.Row[e]), brief(want.Col[e]))
					}
				}
			}
			checkLinkPositions(t, name, et, src, dst, s)
		}
	}
}

// A temporal link sample (SeedTimes: PyG's edge_label_time) is the temporal disjoint sample of
// PyG's seeds at PyG's seed times (edge_label_time repeated over the negatives), batch mod the
// seed edges, on random graphs with node- and edge-level time, uniform and "last"; negatives keep
// within their seed edge's time where the time is node-level (PyG's neg_sample), or are the
// earliest node.
func TestLinkTemporalMatchesPyGSeedTimes(t *testing.T) {
	r := testRand(t)
	for _, e := range randomGraphs(r)[:3] {
		g := e.csc(t)
		nodeTime, edgeTime := randomTimes(r, e.numNodes, 50), randomTimes(r, g.NumEdges(), 50)
		for _, level := range []string{"node", "edge"} {
			for _, neg := range []struct {
				mode   NegativeMode
				amount float64
			}{{NoNegatives, 0}, {BinaryNegatives, 1.5}, {TripletNegatives, 2}} {
				tg := &Temporal{G: g, NodeTime: nodeTime, Strategy: TimeStrategy(r.IntN(2))}
				if level == "edge" {
					tg = &Temporal{G: g, EdgeTime: edgeTime, Strategy: TimeStrategy(r.IntN(2))}
				}
				p := 1 + r.IntN(8)
				src, dst := make([]int64, p), make([]int64, p)
				for i := range src {
					src[i], dst[i] = r.Int64N(e.numNodes), r.Int64N(e.numNodes)
				}
				elt := randomTimes(r, int64(p), 60)
				opt := LinkSampleOptions{
					SampleOptions: SampleOptions{Fanouts: []int{4, 3}, Replace: r.IntN(2) == 0, Seed: r.Uint64(), Workers: 1 + r.IntN(3), Disjoint: true, SeedTimes: elt},
					LinkOptions:   LinkOptions{Negatives: neg.mode, NegAmount: neg.amount},
				}
				name := e.name + " " + level + "-level " + string(neg.mode)
				s, err := SampleFromEdges(tg, src, dst, nil, opt)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				seeds, times := pygLinkSeeds(1, EdgeGraph{}, src, dst, s.LinkLabels, neg.mode, neg.amount, elt)
				want, err := SampleNeighbors(tg, seeds[0], SampleOptions{Fanouts: opt.Fanouts, Replace: opt.Replace, Seed: EdgeTypeSeed(opt.Seed, 0), Workers: 1, Disjoint: true, SeedTimes: times})
				if err != nil {
					t.Fatal(err)
				}
				for i := range want.Batch {
					want.Batch[i] %= int64(p)
				}
				if !slices.Equal(s.Nodes, want.Nodes) || !slices.Equal(s.Batch, want.Batch) || !slices.Equal(s.Row, want.Row) || !slices.Equal(s.Col, want.Col) || !slices.Equal(s.EdgeIDs, want.EdgeIDs) {
					t.Fatalf("%s: nodes %v batch %v, want PyG's seeds at PyG's times %v %v", name, brief(s.Nodes), brief(s.Batch), brief(want.Nodes), brief(want.Batch))
				}
				hs := &HeteroLinkSample{HeteroSample: *s.Typed(), LinkLabels: s.LinkLabels}
				checkLinkPositions(t, name, EdgeGraph{}, src, dst, hs)
				earliest := int64(slices.Index(nodeTime, slices.Min(nodeTime)))
				for end, ids := range [2][]int64{s.NegSrc, s.NegDst} {
					for k, v := range ids {
						limit := elt[k%p]
						if neg.mode == TripletNegatives {
							limit = elt[k/int(neg.amount)]
						}
						if level == "node" && nodeTime[v] > limit && v != earliest {
							t.Fatalf("%s: negative %d (endpoint %d) is node %d of time %d, after its seed edge's time %d", name, k, end, v, nodeTime[v], limit)
						}
					}
				}
			}
		}
	}
}

// What a temporal or disjoint link sample cannot be is refused by name.
func TestLinkTimeRefusals(t *testing.T) {
	g, err := FromEdges(4, []int64{0, 1, 2}, []int64{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	tg := &Temporal{G: g, NodeTime: []int64{0, 1, 2, 3}}
	src, dst := []int64{0, 1}, []int64{1, 2}
	cases := []struct {
		name string
		g    Graph
		opt  LinkSampleOptions
		want string
	}{
		{"seed times without disjoint", tg, LinkSampleOptions{SampleOptions: SampleOptions{Fanouts: []int{2}, SeedTimes: []int64{1, 2}}}, "not Disjoint"},
		{"time without seed times", tg, LinkSampleOptions{SampleOptions: SampleOptions{Fanouts: []int{2}, Disjoint: true}}, "edge_label_time"},
		{"seed times not one a seed edge", tg, LinkSampleOptions{SampleOptions: SampleOptions{Fanouts: []int{2}, Disjoint: true, SeedTimes: []int64{1}}}, "1 SeedTimes for 2 seed edges"},
		{"seed times of a graph not temporal", g, LinkSampleOptions{SampleOptions: SampleOptions{Fanouts: []int{2}, Disjoint: true, SeedTimes: []int64{1, 2}}}, "not temporal"},
		{"strict negatives in time", tg, LinkSampleOptions{SampleOptions: SampleOptions{Fanouts: []int{2}, Disjoint: true, SeedTimes: []int64{1, 2}}, LinkOptions: LinkOptions{Negatives: BinaryNegatives, StrictNegatives: true}}, "StrictNegatives"},
	}
	for _, c := range cases {
		_, err := SampleFromEdges(c.g, src, dst, nil, c.opt)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error naming %q", c.name, err, c.want)
		}
	}
	// no seed edges: an empty sample, in time or not
	for _, opt := range []LinkSampleOptions{
		{SampleOptions: SampleOptions{Fanouts: []int{2}, Disjoint: true}, LinkOptions: LinkOptions{Negatives: TripletNegatives}},
		{SampleOptions: SampleOptions{Fanouts: []int{2}, Disjoint: true, SeedTimes: []int64{}}, LinkOptions: LinkOptions{Negatives: BinaryNegatives}},
	} {
		graph := Graph(g)
		if opt.SeedTimes != nil {
			graph = tg
		}
		s, err := SampleFromEdges(graph, []int64{}, []int64{}, nil, opt)
		if err != nil || len(s.Nodes) != 0 || len(s.Batch) != 0 {
			t.Errorf("no seed edges (%v): %v, %+v; want an empty sample", opt.Negatives, err, s)
		}
	}
}
