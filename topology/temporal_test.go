package topology

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
)

// timeRef is a temporal graph written out plainly: each node's in-neighbors and their edge ids
// (list order), and the times of nodes or edges (one of them nil).
type timeRef struct {
	lists, ids         [][]int64
	nodeTime, edgeTime []int64
}

func newTimeRef(e edgeList, g *CSC, nodeTime, edgeTime []int64) timeRef {
	ref := timeRef{lists: e.lists(), ids: make([][]int64, e.numNodes), nodeTime: nodeTime, edgeTime: edgeTime}
	for v := range ref.ids {
		for id := g.Indptr[v]; id < g.Indptr[v+1]; id++ {
			ref.ids[v] = append(ref.ids[v], id)
		}
	}
	return ref
}

// time is the time of the neighbor at position j of v's list.
func (ref timeRef) time(v int64, j int) int64 {
	if ref.nodeTime != nil {
		return ref.nodeTime[ref.lists[v][j]]
	}
	return ref.edgeTime[ref.ids[v][j]]
}

// candidates is pyg-lib's rule plainly: the positions of v's list whose time is at most limit,
// in time order (ties in list order), the last fanout of them for "last".
func (ref timeRef) candidates(v, limit int64, fanout int, last bool) []int {
	var c []int
	for j := range ref.lists[v] {
		if ref.time(v, j) <= limit {
			c = append(c, j)
		}
	}
	sort.SliceStable(c, func(a, b int) bool { return ref.time(v, c[a]) < ref.time(v, c[b]) })
	if last && fanout >= 0 && len(c) > fanout {
		c = c[len(c)-fanout:]
	}
	return c
}

// tree is the one-seed temporal sample where every draw is determined (fanouts -1, or "last"
// without replacement): per hop, each new node in order takes its whole candidate list.
func (ref timeRef) tree(seed, limit int64, fanouts []int, last bool) *Sample {
	t := &Sample{Nodes: []int64{seed}, Row: []int64{}, Col: []int64{}, EdgeIDs: []int64{}}
	local := map[int64]int64{seed: 0}
	lo, hi := 0, 1
	for _, f := range fanouts {
		for target := lo; target < hi; target++ {
			v := t.Nodes[target]
			for _, j := range ref.candidates(v, limit, f, last) {
				nb := ref.lists[v][j]
				l, ok := local[nb]
				if !ok {
					l = int64(len(t.Nodes))
					local[nb] = l
					t.Nodes = append(t.Nodes, nb)
				}
				t.Row, t.Col, t.EdgeIDs = append(t.Row, l), append(t.Col, int64(target)), append(t.EdgeIDs, ref.ids[v][j])
			}
		}
		lo, hi = hi, len(t.Nodes)
	}
	return t
}

// randomTimes is n times in [0, span), many of them tied.
func randomTimes(r interface{ Int64N(int64) int64 }, n, span int64) []int64 {
	t := make([]int64, n)
	for i := range t {
		t[i] = r.Int64N(span)
	}
	return t
}

// A temporal sample whose draws are determined (every neighbor, or "last" without replacement)
// is, tree by tree, the plain rule's: neighbors within the seed's time, in time order, the
// latest fanout for "last"; node-level and edge-level time, given and default seed times.
func TestTemporalMatchesPlainRule(t *testing.T) {
	r := testRand(t)
	for _, e := range randomGraphs(r) {
		g := e.csc(t)
		nodeTime, edgeTime := randomTimes(r, e.numNodes, 50), randomTimes(r, g.NumEdges(), 50)
		for _, level := range []string{"node", "edge"} {
			for _, last := range []bool{false, true} {
				tg := &Temporal{G: g, NodeTime: nodeTime}
				ref := newTimeRef(e, g, nodeTime, nil)
				if level == "edge" {
					tg = &Temporal{G: g, EdgeTime: edgeTime}
					ref = newTimeRef(e, g, nil, edgeTime)
				}
				fanouts := []int{-1, -1}
				if last {
					tg.Strategy = TimeLast
					fanouts = []int{3, 2, 4}
				}
				seeds := []int64{7, r.Int64N(e.numNodes), r.Int64N(e.numNodes), 7}
				opt := SampleOptions{Fanouts: fanouts, Seed: r.Uint64(), Workers: 1 + r.IntN(3), Disjoint: true, SeedTimes: randomTimes(r, int64(len(seeds)), 60)}
				if level == "node" && r.IntN(2) == 0 {
					opt.SeedTimes = nil // the seeds' own times
				}
				s, err := SampleNeighbors(tg, seeds, opt)
				if err != nil {
					t.Fatalf("%s %s-level last %v: %v", e.name, level, last, err)
				}
				for b, seed := range seeds {
					limit := nodeTime[seed]
					if opt.SeedTimes != nil {
						limit = opt.SeedTimes[b]
					}
					want, got := ref.tree(seed, limit, fanouts, last), restrict(s, int64(b))
					if !slices.Equal(got.Nodes, want.Nodes) || !slices.Equal(got.Row, want.Row) || !slices.Equal(got.Col, want.Col) || !slices.Equal(got.EdgeIDs, want.EdgeIDs) {
						t.Fatalf("%s %s-level last %v tree %d (seed %d, time %d): got nodes %v edge ids %v, want %v %v", e.name, level, last, b, seed, limit, got.Nodes, got.EdgeIDs, want.Nodes, want.EdgeIDs)
					}
				}
			}
		}
	}
}

// Random temporal draws keep the rule: every sampled edge of a tree is among its target's
// candidates (within the seed's time; for "last" among the latest fanout), a target's edges come
// in time order, and without replacement a target draws min(fanout, candidates) distinct ones.
func TestTemporalDrawsObeyTheRule(t *testing.T) {
	r := testRand(t)
	e := randomGraphs(r)[1]
	g := e.csc(t)
	edgeTime := randomTimes(r, g.NumEdges(), 40)
	ref := newTimeRef(e, g, nil, edgeTime)
	listOf := make([]int64, g.NumEdges()) // edge id -> its target, position
	posOf := make([]int, g.NumEdges())
	for v, ids := range ref.ids {
		for j, id := range ids {
			listOf[id], posOf[id] = int64(v), j
		}
	}
	for _, strategy := range []TimeStrategy{TimeUniform, TimeLast} {
		for _, replace := range []bool{false, true} {
			seeds := []int64{7, 7, r.Int64N(e.numNodes), r.Int64N(e.numNodes), 3}
			fanouts := []int{4, 3}
			opt := SampleOptions{Fanouts: fanouts, Replace: replace, Seed: r.Uint64(), Workers: 2, Disjoint: true, SeedTimes: randomTimes(r, int64(len(seeds)), 45)}
			s, err := SampleNeighbors(&Temporal{G: g, EdgeTime: edgeTime, Strategy: strategy}, seeds, opt)
			if err != nil {
				t.Fatal(err)
			}
			perTarget := map[int64][]int64{} // global local id of the target -> its edge ids
			var e0 int64
			for h, c := range s.EdgesPerHop {
				for k := e0; k < e0+c; k++ {
					perTarget[s.Col[k]] = append(perTarget[s.Col[k]], s.EdgeIDs[k])
				}
				e0 += c
				_ = h
			}
			hopOf := make([]int, len(s.Nodes)) // the hop whose fanout a node draws with
			var lo int64
			for h, c := range s.NodesPerHop {
				for i := lo; i < lo+c; i++ {
					hopOf[i] = h
				}
				lo += c
			}
			for target, ids := range perTarget {
				v, b := s.Nodes[target], s.Batch[target]
				f := fanouts[hopOf[target]]
				cand := ref.candidates(v, opt.SeedTimes[b], f, strategy == TimeLast)
				var prev int64 = math.MinInt64
				for _, id := range ids {
					if listOf[id] != v || !slices.Contains(cand, posOf[id]) {
						t.Fatalf("strategy %d replace %v: tree %d node %d drew edge %d (time %d), not among its candidates %v (seed time %d)", strategy, replace, b, v, id, edgeTime[id], cand, opt.SeedTimes[b])
					}
					if edgeTime[id] < prev {
						t.Fatalf("strategy %d: node %d's edges %v are not in time order", strategy, v, ids)
					}
					prev = edgeTime[id]
				}
				if want := min(f, len(cand)); !replace && (len(ids) != want || len(slices.Compact(slices.Sorted(slices.Values(ids)))) != want) {
					t.Fatalf("strategy %d: node %d drew %v, want %d distinct of %d candidates", strategy, v, ids, want, len(cand))
				}
				if replace && len(ids) != f {
					t.Fatalf("strategy %d replace: node %d drew %d, want %d", strategy, v, len(ids), f)
				}
			}
		}
	}
}

// Uniform temporal draws are uniform over the candidates: the hub seeded in many trees, at a
// time that lets 6 of its in-edges through, draws each of them 2/6 of the time without
// replacement; and never an edge later than the seed time.
func TestTemporalUniformFrequencies(t *testing.T) {
	r := testRand(t)
	const d, ok, trees = 10, 6, 3000
	src := make([]int64, d)
	dst := make([]int64, d)
	edgeTime := make([]int64, d)
	for j := range d {
		src[j], dst[j] = int64(j+1), 0
		edgeTime[j] = int64((j * 7) % d) // times 0, 7, 4, 1, 8, 5, 2, 9, 6, 3
	}
	g, err := FromEdges(d+1, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	seeds := make([]int64, trees)
	times := make([]int64, trees)
	for i := range times {
		times[i] = ok - 1 // edges of time 0..5 qualify
	}
	for _, replace := range []bool{false, true} {
		s, err := SampleNeighbors(&Temporal{G: g, EdgeTime: edgeTime}, seeds, SampleOptions{Fanouts: []int{2}, Replace: replace, Seed: r.Uint64(), Disjoint: true, SeedTimes: times})
		if err != nil {
			t.Fatal(err)
		}
		count := make([]float64, d)
		for _, id := range s.EdgeIDs {
			count[id]++
		}
		for id, c := range count {
			p := 0.0
			if edgeTime[id] < ok {
				p = 2.0 / ok
			}
			mean, sd := trees*p, math.Sqrt(trees*p*(1-p))
			if math.Abs(c-mean) > 5*sd+0.5 {
				t.Fatalf("replace %v: edge %d (time %d) drawn %v times in %d trees, want %.0f ± %.0f", replace, id, edgeTime[id], c, trees, mean, 5*sd)
			}
		}
	}
}

// What a temporal sample refuses, by name: one that is not disjoint, edge time without seed
// times, seed times of another length or for a graph that is not temporal, times of another
// length than the graph's nodes or edges.
func TestTemporalRefusals(t *testing.T) {
	g, err := FromEdges(3, []int64{0, 1}, []int64{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		g    Graph
		opt  SampleOptions
		want string
	}{
		{"not disjoint", &Temporal{G: g, NodeTime: []int64{0, 1, 2}}, SampleOptions{Fanouts: []int{1}}, "disjoint"},
		{"edge time, no seed times", &Temporal{G: g, EdgeTime: []int64{0, 1}}, SampleOptions{Fanouts: []int{1}, Disjoint: true}, "SeedTimes"},
		{"seed times of another length", &Temporal{G: g, NodeTime: []int64{0, 1, 2}}, SampleOptions{Fanouts: []int{1}, Disjoint: true, SeedTimes: []int64{1, 2}}, "2 SeedTimes for 1 seeds"},
		{"seed times, plain graph", g, SampleOptions{Fanouts: []int{1}, Disjoint: true, SeedTimes: []int64{1}}, "only *Temporal graphs"},
		{"node times of another length", &Temporal{G: g, NodeTime: []int64{0}}, SampleOptions{Fanouts: []int{1}, Disjoint: true}, "1 node times for a graph of 3 nodes"},
		{"both times", &Temporal{G: g, NodeTime: []int64{0, 1, 2}, EdgeTime: []int64{0, 1}}, SampleOptions{Fanouts: []int{1}, Disjoint: true}, "exactly one"},
	} {
		_, err := SampleNeighbors(c.g, []int64{2}, c.opt)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// PyG's test_temporal_neighbor_loader_single_link (test/loader/test_neighbor_loader.py) in the
// core: seeds of type a (no time) at times 0..9, one hop of every neighbor; a's in-neighbors of
// type b (times 0..9) are each within its seed's time, those of type c (times 1..10) none. Edge
// types whose source type has no time draw without a time rule, as pyg-lib's.
func TestTemporalHeteroSingleLink(t *testing.T) {
	ids := make([]int64, 10)
	bTime, cTime, seedTime := make([]int64, 10), make([]int64, 10), make([]int64, 10)
	for i := range ids {
		ids[i], bTime[i], cTime[i], seedTime[i] = int64(i), int64(i), int64(i+1), int64(i)
	}
	g := func() *CSC { return must(FromEdges(10, ids, ids)) } // node i <- node i
	const a, b, c = 0, 1, 2
	edges := []EdgeGraph{
		{Src: b, Dst: a, G: &Temporal{G: g(), NodeTime: bTime}},
		{Src: a, Dst: b, G: g()},
		{Src: c, Dst: a, G: &Temporal{G: g(), NodeTime: cTime}},
		{Src: a, Dst: c, G: g()},
	}
	s, err := SampleHetero([]int64{10, 10, 10}, edges, a, ids, HeteroSampleOptions{Fanouts: [][]int{{-1}, {-1}, {-1}, {-1}}, Disjoint: true, SeedTimes: seedTime})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Nodes[a]) != 10 || len(s.Nodes[b]) != 10 || len(s.Nodes[c]) != 0 {
		t.Fatalf("nodes per type a %d, b %d, c %d; want 10, 10, 0", len(s.Nodes[a]), len(s.Nodes[b]), len(s.Nodes[c]))
	}
	if !slices.Equal(s.Batch[b], ids) {
		t.Fatalf("type b's batch %v, want each node in its seed's tree", s.Batch[b])
	}
	if _, err := SampleHetero([]int64{10, 10, 10}, edges, a, ids, HeteroSampleOptions{Fanouts: [][]int{{-1}, {-1}, {-1}, {-1}}, Disjoint: true}); err == nil || !strings.Contains(err.Error(), "needs SeedTimes") {
		t.Fatalf("seeds of a type without time and no SeedTimes: %v, want a refusal", err)
	}
}

// BenchmarkSampleTemporal samples fanouts [25, 10] for 1024 seeds, disjoint, on a uniform graph
// of 1M nodes and 10M edges: plain, and in node and edge time (times in [0, 1000), seed times
// 500: about half of each list qualifies, so the samples are smaller; compare edges/s), uniform
// and "last".
func BenchmarkSampleTemporal(b *testing.B) {
	const numNodes, numEdges, numSeeds = 1 << 20, 10 << 20, 1024
	r := rand.New(rand.NewPCG(1, 2))
	src, dst := make([]int64, numEdges), make([]int64, numEdges)
	for i := range src {
		src[i], dst[i] = r.Int64N(numNodes), r.Int64N(numNodes)
	}
	g, err := FromEdges(numNodes, src, dst)
	if err != nil {
		b.Fatal(err)
	}
	seeds, seedTimes := make([]int64, numSeeds), make([]int64, numSeeds)
	for i := range seeds {
		seeds[i], seedTimes[i] = r.Int64N(numNodes), 500
	}
	nodeTime, edgeTime := randomTimes(r, numNodes, 1000), randomTimes(r, numEdges, 1000)
	for _, c := range []struct {
		name  string
		g     Graph
		times []int64
	}{
		{"disjoint", g, nil},
		{"node-uniform", &Temporal{G: g, NodeTime: nodeTime}, seedTimes},
		{"edge-uniform", &Temporal{G: g, EdgeTime: edgeTime}, seedTimes},
		{"edge-last", &Temporal{G: g, EdgeTime: edgeTime, Strategy: TimeLast}, seedTimes},
	} {
		b.Run(c.name, func(b *testing.B) {
			opt := SampleOptions{Fanouts: []int{25, 10}, Disjoint: true, SeedTimes: c.times}
			runs, edges := 0, int64(0)
			for b.Loop() {
				opt.Seed = uint64(runs)
				s, err := SampleNeighbors(c.g, seeds, opt)
				if err != nil {
					b.Fatal(err)
				}
				edges += int64(len(s.Row))
				runs++
			}
			b.ReportMetric(float64(runs*numSeeds)/b.Elapsed().Seconds(), "seeds/s")
			b.ReportMetric(float64(edges)/b.Elapsed().Seconds(), "edges/s")
		})
	}
}
