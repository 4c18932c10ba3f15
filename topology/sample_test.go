package topology

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// wantCount is the number of neighbors a node of degree deg must get, per the contract.
func wantCount(deg int64, fanout int, replace bool) int64 {
	switch {
	case fanout < 0:
		return deg
	case replace:
		if deg == 0 {
			return 0
		}
		return int64(fanout)
	default:
		return min(deg, int64(fanout))
	}
}

// checkSample verifies every guarantee of SampleNeighbors against the graph's in-neighbor lists.
func checkSample(t *testing.T, lists [][]int64, seeds []int64, opt SampleOptions, s *Sample) {
	t.Helper()
	hops := len(opt.Fanouts)
	if len(s.NodesPerHop) != hops+1 || len(s.EdgesPerHop) != hops {
		t.Fatalf("%d NodesPerHop and %d EdgesPerHop for %d hops", len(s.NodesPerHop), len(s.EdgesPerHop), hops)
	}
	// nodeStart[h] is where the nodes first reached at hop h-1 begin (nodeStart[0] = 0 for seeds).
	nodeStart := make([]int64, hops+2)
	for h, c := range s.NodesPerHop {
		nodeStart[h+1] = nodeStart[h] + c
	}
	edgeStart := make([]int64, hops+1)
	for h, c := range s.EdgesPerHop {
		edgeStart[h+1] = edgeStart[h] + c
	}
	if nodeStart[hops+1] != int64(len(s.Nodes)) {
		t.Fatalf("NodesPerHop sums to %d, len(Nodes) = %d", nodeStart[hops+1], len(s.Nodes))
	}
	if edgeStart[hops] != int64(len(s.Row)) || len(s.Row) != len(s.Col) {
		t.Fatalf("EdgesPerHop sums to %d, len(Row) = %d, len(Col) = %d", edgeStart[hops], len(s.Row), len(s.Col))
	}
	if s.NodesPerHop[0] != int64(len(seeds)) || !slices.Equal(s.Nodes[:len(seeds)], seeds) {
		t.Fatal("Nodes does not start with the seeds as given")
	}

	// firstLocal maps each global id to its first local id; past the seeds, ids are unique.
	firstLocal := map[int64]int64{}
	var frontier []int64 // local ids sampled for at hop 0: first positions of the seeds
	for i, v := range s.Nodes {
		if v < 0 || v >= int64(len(lists)) {
			t.Fatalf("Nodes[%d] = %d is not a node", i, v)
		}
		if _, seen := firstLocal[v]; seen {
			if i >= len(seeds) {
				t.Fatalf("Nodes[%d] = %d appears earlier too", i, v)
			}
			continue
		}
		firstLocal[v] = int64(i)
		if i < len(seeds) {
			frontier = append(frontier, int64(i))
		}
	}

	for h, fanout := range opt.Fanouts {
		rows, cols := s.Row[edgeStart[h]:edgeStart[h+1]], s.Col[edgeStart[h]:edgeStart[h+1]]
		// Edges come grouped by target, targets in frontier order.
		e := 0
		for _, target := range frontier {
			lo := e
			for e < len(cols) && cols[e] == target {
				e++
			}
			list := lists[s.Nodes[target]]
			got := make([]int64, e-lo)
			for i, row := range rows[lo:e] {
				if row < 0 || row >= nodeStart[h+2] {
					t.Fatalf("hop %d: Row %d outside the prefix of hops 0..%d (%d nodes)", h, row, h, nodeStart[h+2])
				}
				if firstLocal[s.Nodes[row]] != row {
					t.Fatalf("hop %d: Row %d is not the first local id of node %d", h, row, s.Nodes[row])
				}
				got[i] = s.Nodes[row]
			}
			if want := wantCount(int64(len(list)), fanout, opt.Replace); int64(len(got)) != want {
				t.Fatalf("hop %d: node %d of degree %d got %d neighbors, want %d", h, s.Nodes[target], len(list), len(got), want)
			}
			if int64(len(got)) == int64(len(list)) && (fanout < 0 || !opt.Replace) {
				if !slices.Equal(got, list) {
					t.Fatalf("hop %d: node %d takes all neighbors but got %v, want %v", h, s.Nodes[target], brief(got), brief(list))
				}
			} else if !inListOrder(got, list, opt.Replace) {
				t.Fatalf("hop %d: neighbors %v of node %d are not drawn from ascending positions of %v (replace %v)",
					h, brief(got), s.Nodes[target], brief(list), opt.Replace)
			}
		}
		if e != len(cols) {
			t.Fatalf("hop %d: edge %d has target %d, not a node first reached at the previous hop (in order)", h, e, cols[e])
		}
		// New nodes appear in order of first reference by this hop's edges.
		next := nodeStart[h+1]
		for _, row := range rows {
			if row == next {
				next++
			} else if row > next {
				t.Fatalf("hop %d: Row %d referenced before new node %d", h, row, next)
			}
		}
		if next != nodeStart[h+2] {
			t.Fatalf("hop %d: reached %d new nodes, NodesPerHop says %d", h, next-nodeStart[h+1], s.NodesPerHop[h+1])
		}
		frontier = frontier[:0]
		for l := nodeStart[h+1]; l < nodeStart[h+2]; l++ {
			frontier = append(frontier, l)
		}
	}
}

// inListOrder reports whether got can be read from list at ascending positions: strictly
// ascending without replacement (so no position twice and no neighbor more often than its
// multiplicity), non-decreasing with it. Greedy earliest matching decides this exactly.
func inListOrder(got, list []int64, replace bool) bool {
	p := 0
	for i, v := range got {
		if replace && i > 0 && got[i-1] == v {
			continue // the same position again
		}
		for p < len(list) && list[p] != v {
			p++
		}
		if p == len(list) {
			return false
		}
		if !replace {
			p++
		}
	}
	return true
}

// brief formats ids for a failure message, eliding all but the first few.
func brief(ids []int64) string {
	if len(ids) <= 20 {
		return fmt.Sprint(ids)
	}
	return fmt.Sprintf("%v... (%d ids)", ids[:20], len(ids))
}

// seedsFor draws seeds with duplicates, isolated nodes and the hub.
func seedsFor(r *rand.Rand, numNodes int64, count int) []int64 {
	seeds := make([]int64, 0, count+3)
	for range count {
		seeds = append(seeds, r.Int64N(numNodes))
	}
	if count > 0 {
		seeds = append(seeds, seeds[0], numNodes-1, 7%numNodes) // a duplicate, an isolated node, the hub
	}
	return seeds
}

var fanoutCases = [][]int{{5, 3}, {-1, 2}, {0, 4}, {3, 0, 2}, {100}, {1}, {2, 2, 2}, {10, -1}}

func TestSampleGuarantees(t *testing.T) {
	r := testRand(t)
	for _, e := range randomGraphs(r) {
		g, lists := e.csc(t), e.lists()
		for _, fanouts := range fanoutCases {
			for _, replace := range []bool{false, true} {
				for _, numSeeds := range []int{1, 10, 300} {
					t.Run(fmt.Sprintf("%s/%v/replace=%v/seeds=%d", e.name, fanouts, replace, numSeeds), func(t *testing.T) {
						seeds := seedsFor(r, e.numNodes, numSeeds)
						opt := SampleOptions{Fanouts: fanouts, Replace: replace, Seed: r.Uint64(), Workers: 1 + r.IntN(4)}
						s, err := SampleNeighbors(g, seeds, opt)
						if err != nil {
							t.Fatal(err)
						}
						checkSample(t, lists, seeds, opt, s)
					})
				}
			}
		}
	}
}

func TestSampleDeterministicAcrossWorkers(t *testing.T) {
	r := testRand(t)
	for _, e := range randomGraphs(r)[:2] {
		g := e.csc(t)
		seeds := seedsFor(r, e.numNodes, 1000) // frontiers span several chunks
		for _, replace := range []bool{false, true} {
			opt := SampleOptions{Fanouts: []int{10, 5, 100}, Replace: replace, Seed: r.Uint64(), Workers: 1}
			want, err := SampleNeighbors(g, seeds, opt)
			if err != nil {
				t.Fatal(err)
			}
			for _, workers := range []int{2, 7, 0} {
				opt.Workers = workers
				got, err := SampleNeighbors(g, seeds, opt)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s, replace %v: Workers=%d differs from Workers=1", e.name, replace, workers)
				}
			}
			opt.Seed++
			other, err := SampleNeighbors(g, seeds, opt)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Equal(other.Nodes, want.Nodes) && slices.Equal(other.Row, want.Row) {
				t.Fatalf("%s, replace %v: Seed %d and %d give the same sample", e.name, replace, opt.Seed-1, opt.Seed)
			}
		}
	}
}

// countingGraph counts the calls made on a Graph.
type countingGraph struct {
	Graph
	degrees, neighborsAt int
}

func (c *countingGraph) Degrees(nodes, deg []int64) error {
	c.degrees++
	return c.Graph.Degrees(nodes, deg)
}

func (c *countingGraph) NeighborsAt(nodes, off, pos, out []int64) error {
	c.neighborsAt++
	return c.Graph.NeighborsAt(nodes, off, pos, out)
}

func TestSampleOneBatchPerHop(t *testing.T) {
	r := testRand(t)
	e := randomGraphs(r)[0]
	g := &countingGraph{Graph: e.csc(t)}
	if _, err := SampleNeighbors(g, seedsFor(r, e.numNodes, 500), SampleOptions{Fanouts: []int{4, 3, 2}}); err != nil {
		t.Fatal(err)
	}
	if g.degrees != 3 || g.neighborsAt != 3 {
		t.Fatalf("%d Degrees and %d NeighborsAt calls for 3 hops, want 3 each", g.degrees, g.neighborsAt)
	}
}

func TestSampleEmptySeeds(t *testing.T) {
	g, err := FromEdges(3, []int64{0, 1}, []int64{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	s, err := SampleNeighbors(g, nil, SampleOptions{Fanouts: []int{2, -1}})
	if err != nil {
		t.Fatal(err)
	}
	want := &Sample{Nodes: []int64{}, Row: []int64{}, Col: []int64{}, NodesPerHop: []int64{0, 0, 0}, EdgesPerHop: []int64{0, 0}, EdgeIDs: []int64{}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got %+v, want %+v", s, want)
	}
}

func TestSampleSmallExample(t *testing.T) {
	// In-neighbors: 0 <- [1, 2]; 1 <- [3]; 2 <- [3, 0]; 3 <- [].
	g, err := FromEdges(4, []int64{1, 2, 3, 3, 0}, []int64{0, 0, 1, 2, 2})
	if err != nil {
		t.Fatal(err)
	}
	s, err := SampleNeighbors(g, []int64{2, 0, 2}, SampleOptions{Fanouts: []int{-1, -1}})
	if err != nil {
		t.Fatal(err)
	}
	want := &Sample{
		Nodes:       []int64{2, 0, 2, 3, 1},
		Row:         []int64{3, 1, 4, 0, 3},
		Col:         []int64{0, 0, 1, 1, 4},
		NodesPerHop: []int64{3, 2, 0},
		EdgesPerHop: []int64{4, 1},
		EdgeIDs:     []int64{3, 4, 0, 1, 2}, // CSC positions: 0 <- [1, 2] at 0, 1; 1 <- [3] at 2; 2 <- [3, 0] at 3, 4
	}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got %+v, want %+v", s, want)
	}
}

// chiSquare returns the statistic of counts against equal expected frequencies.
func chiSquare(counts []int) float64 {
	total := 0
	for _, c := range counts {
		total += c
	}
	expected := float64(total) / float64(len(counts))
	var x float64
	for _, c := range counts {
		d := float64(c) - expected
		x += d * d / expected
	}
	return x
}

func TestSampleUniform(t *testing.T) {
	// Node 0 has in-neighbors 1..4; node 5 has 6..10. Seeds are fixed, so this cannot flake; the
	// bounds sit near p = 1e-6 of the chi-square distribution.
	g, err := FromEdges(11, []int64{1, 2, 3, 4, 6, 7, 8, 9, 10}, []int64{0, 0, 0, 0, 5, 5, 5, 5, 5})
	if err != nil {
		t.Fatal(err)
	}
	const runs = 8000
	for _, replace := range []bool{false, true} {
		counts := make([]int, 4)
		for seed := range uint64(runs) {
			s, err := SampleNeighbors(g, []int64{0}, SampleOptions{Fanouts: []int{1}, Replace: replace, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			counts[s.Nodes[1]-1]++
		}
		if x := chiSquare(counts); x > 33 { // 3 degrees of freedom
			t.Errorf("replace %v: 1 of 4 neighbors picked %v times in %d runs, chi-square %.1f", replace, counts, runs, x)
		}
	}
	// 2 distinct of 5: each of the 10 pairs equally likely.
	pairs := map[[2]int64]int{}
	for seed := range uint64(runs) {
		s, err := SampleNeighbors(g, []int64{5}, SampleOptions{Fanouts: []int{2}, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		pairs[[2]int64{s.Nodes[1], s.Nodes[2]}]++
	}
	counts := make([]int, 0, 10)
	for a := int64(6); a <= 10; a++ {
		for b := a + 1; b <= 10; b++ {
			counts = append(counts, pairs[[2]int64{a, b}])
		}
	}
	if x := chiSquare(counts); x > 50 || len(pairs) != 10 { // 9 degrees of freedom
		t.Errorf("2 of 5 neighbors: pairs %v in %d runs, chi-square %.1f", pairs, runs, x)
	}
}

func TestFloydPositions(t *testing.T) {
	p := newPositionPicker(1)
	r := testRand(t)
	for range 2000 {
		deg := 2 + r.Int64N(300)
		k := 1 + r.Int64N(deg-1)
		dst := make([]int64, k)
		rng := splitmix{r.Uint64()}
		p.floyd(0, dst, deg, &rng)
		for i, v := range dst {
			if v < 0 || v >= deg || (i > 0 && v <= dst[i-1]) {
				t.Fatalf("%d of %d: positions %v not distinct, ascending and in range", k, deg, dst)
			}
		}
	}
	// Above smallPick a set replaces the scan: every position is still equally likely
	// (0.7 here; the bound is over 6 standard deviations; seeds are fixed).
	const deg, k, runs = 100, 70, 2000
	hits := make([]int, deg)
	dst := make([]int64, k)
	for seed := range uint64(runs) {
		rng := nodeRNG(seed, 0, 0)
		p.floyd(0, dst, deg, &rng)
		for _, v := range dst {
			hits[v]++
		}
	}
	for pos, h := range hits {
		if h < runs*k/deg-130 || h > runs*k/deg+130 {
			t.Fatalf("position %d picked %d times in %d runs of %d of %d, want about %d", pos, h, runs, k, deg, runs*k/deg)
		}
	}
}

// faultyGraph answers with a fixed degree and neighbor, however wrong.
type faultyGraph struct {
	degree, neighbor int64
	err              error
}

func (f faultyGraph) NumNodes() int64 { return 10 }
func (f faultyGraph) NumEdges() int64 { return 10 }
func (f faultyGraph) Degrees(nodes, deg []int64) error {
	for i := range deg {
		deg[i] = f.degree
	}
	return nil
}
func (f faultyGraph) NeighborsAt(nodes, off, pos, out []int64) error {
	for i := range out {
		out[i] = f.neighbor
	}
	return f.err
}

func TestSampleErrors(t *testing.T) {
	g, err := FromEdges(5, []int64{1, 2}, []int64{0, 0})
	if err != nil {
		t.Fatal(err)
	}
	ioErr := errors.New("disk on fire")
	for _, c := range []struct {
		g     Graph
		seeds []int64
		opt   SampleOptions
		want  string
	}{
		{g, []int64{0}, SampleOptions{Fanouts: []int{3, -2}}, "topology: Fanouts[1] = -2; want -1 (every neighbor) or a count >= 0"},
		{g, []int64{0}, SampleOptions{Fanouts: []int{3}, Workers: -1}, "topology: Workers = -1 is negative"},
		{g, []int64{0, 4, 5}, SampleOptions{Fanouts: []int{3}}, "topology: seeds[2] = 5 is not a node id in [0, 5)"},
		{g, []int64{-3}, SampleOptions{Fanouts: []int{3}}, "topology: seeds[0] = -3 is not a node id in [0, 5)"},
		{faultyGraph{degree: -1}, []int64{4}, SampleOptions{Fanouts: []int{3}}, "topology: graph gave degree -1 for node 4"},
		{faultyGraph{degree: 2, neighbor: 10}, []int64{4}, SampleOptions{Fanouts: []int{3}}, "topology: graph gave neighbor 10 of node 4, not a node id in [0, 10)"},
		{faultyGraph{degree: 2, err: ioErr}, []int64{4}, SampleOptions{Fanouts: []int{3}}, "disk on fire"},
	} {
		_, err := SampleNeighbors(c.g, c.seeds, c.opt)
		if err == nil || err.Error() != c.want {
			t.Errorf("SampleNeighbors(%v, %+v) error = %v, want %q", c.seeds, c.opt, err, c.want)
		}
	}
}

// BenchmarkSample samples fanouts [25, 10] for 1024 seeds on a uniform graph of 1M nodes and
// 10M edges.
func BenchmarkSample(b *testing.B) {
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
	seeds := make([]int64, numSeeds)
	for i := range seeds {
		seeds[i] = r.Int64N(numNodes)
	}
	opt := SampleOptions{Fanouts: []int{25, 10}}
	runs := 0
	for b.Loop() {
		opt.Seed = uint64(runs)
		if _, err := SampleNeighbors(g, seeds, opt); err != nil {
			b.Fatal(err)
		}
		runs++
	}
	b.ReportMetric(float64(runs*numSeeds)/b.Elapsed().Seconds(), "seeds/s")
}

// TestSampleEdgeIDs: every sampled edge carries its CSC position, which holds the sampled
// neighbor inside the target's list (distinct per target without replacement); a DiskCSC, with
// and without cached lists, reports the same ids as the in-memory CSC.
func TestSampleEdgeIDs(t *testing.T) {
	r := testRand(t)
	for _, e := range randomGraphs(r) {
		g := e.csc(t)
		if g.Indices32 == nil {
			continue
		}
		pf, xf := diskOf(g.Indptr, g.Indices32)
		disk, err := NewDiskCSC(g.NumNodes(), g.NumEdges(), 4, 0, 1, memFiles(pf, xf))
		if err != nil {
			t.Fatal(err)
		}
		for _, fanouts := range fanoutCases {
			for _, replace := range []bool{false, true} {
				seeds := seedsFor(r, e.numNodes, 50)
				opt := SampleOptions{Fanouts: fanouts, Replace: replace, Seed: r.Uint64(), Workers: 1 + r.IntN(4)}
				s, err := SampleNeighbors(g, seeds, opt)
				if err != nil {
					t.Fatal(err)
				}
				if len(s.EdgeIDs) != len(s.Row) {
					t.Fatalf("%s: %d edge ids for %d edges", e.name, len(s.EdgeIDs), len(s.Row))
				}
				seen := map[[2]int64]bool{}
				for i, id := range s.EdgeIDs {
					v, nb := s.Nodes[s.Col[i]], s.Nodes[s.Row[i]]
					if id < g.Indptr[v] || id >= g.Indptr[v+1] || int64(g.Indices32[id]) != nb {
						t.Fatalf("%s %v replace=%v: edge %d (%d -> %d) has id %d, outside %d's list [%d, %d) or not holding %d",
							e.name, fanouts, replace, i, nb, v, id, v, g.Indptr[v], g.Indptr[v+1], nb)
					}
					if !replace {
						if seen[[2]int64{s.Col[i], id}] {
							t.Fatalf("%s: edge id %d sampled twice for target %d without replacement", e.name, id, v)
						}
						seen[[2]int64{s.Col[i], id}] = true
					}
				}
				for _, cached := range []bool{false, true} {
					if cached {
						if err := disk.CacheNeighbors(s.Nodes[:len(s.Nodes)/2]); err != nil {
							t.Fatal(err)
						}
					}
					d, err := SampleNeighbors(disk, seeds, opt)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(d.EdgeIDs, s.EdgeIDs) || !slices.Equal(d.Row, s.Row) {
						t.Fatalf("%s cached=%v: DiskCSC edge ids differ from the CSC's", e.name, cached)
					}
				}
				disk.CacheNeighbors(nil)
			}
		}
	}
}

// TestIDMapRemoveKeepsLookups removes random ids from an idMap full of colliding ids and checks
// that every id left is still found with its local id and every removed one is gone, and that
// removing every id leaves every slot empty.
func TestIDMapRemoveKeepsLookups(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 9))
	var m idMap
	m.reserve(8)
	want := map[int64]int64{}
	var ids []int64
	for len(ids) < 5000 {
		id := r.Int64N(20000) // many ids share home slots
		if _, ok := want[id]; ok {
			continue
		}
		local := int64(len(ids))
		if got, added := m.addIfAbsent(id, local); !added || got != local {
			t.Fatalf("seed %d: adding new id %d gave (%d, %v)", seed, id, got, added)
		}
		want[id] = local
		ids = append(ids, id)
	}
	find := func(id int64) (int, bool) {
		for i := m.home(id + 1); m.slots[i].idPlus1 != 0; i = (i + 1) & (len(m.slots) - 1) {
			if m.slots[i].idPlus1 == id+1 {
				return i, true
			}
		}
		return 0, false
	}
	r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	for _, id := range ids[:len(ids)/2] {
		i, ok := find(id)
		if !ok {
			t.Fatalf("seed %d: id %d lost before its removal", seed, id)
		}
		m.remove(i)
		delete(want, id)
	}
	for _, id := range ids[:len(ids)/2] {
		if _, ok := find(id); ok {
			t.Fatalf("seed %d: removed id %d still found", seed, id)
		}
	}
	for id, local := range want {
		if got, added := m.addIfAbsent(id, -1); added || got != local {
			t.Fatalf("seed %d: id %d gave (%d, %v) after removals, want local %d", seed, id, got, added, local)
		}
	}
	if m.count != len(want) {
		t.Fatalf("seed %d: count %d, want %d", seed, m.count, len(want))
	}
	m.removeAll(ids[len(ids)/2:])
	if m.count != 0 {
		t.Fatalf("seed %d: %d ids left after removing every one", seed, m.count)
	}
	for i, s := range m.slots {
		if s != (idSlot{}) {
			t.Fatalf("seed %d: slot %d not empty after release: %+v", seed, i, s)
		}
	}
}

// TestSampleNodesOnly checks that NodesOnly samples the same nodes and counts as a full sample,
// on in-memory and on-disk graphs, and leaves the edges out.
func TestSampleNodesOnly(t *testing.T) {
	r := testRand(t)
	for _, e := range randomGraphs(r) {
		g := e.csc(t)
		graphs := []Graph{g}
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
					seeds := seedsFor(r, e.numNodes, 200)
					opt := SampleOptions{Fanouts: fanouts, Replace: replace, Seed: r.Uint64(), Workers: 1 + r.IntN(4)}
					want, err := SampleNeighbors(gr, seeds, opt)
					if err != nil {
						t.Fatal(err)
					}
					opt.NodesOnly = true
					got, err := SampleNeighbors(gr, seeds, opt)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got.Nodes, want.Nodes) || !slices.Equal(got.NodesPerHop, want.NodesPerHop) ||
						!slices.Equal(got.EdgesPerHop, want.EdgesPerHop) || len(got.Row) != 0 || len(got.Col) != 0 || len(got.EdgeIDs) != 0 {
						t.Fatalf("%s (%T), fanouts %v, replace %v: NodesOnly sample differs from the full one's nodes or kept edges",
							e.name, gr, fanouts, replace)
					}
				}
			}
		}
	}
}

// TestZeroHops: no fanouts (PyG's num_neighbors=[]) sample the seeds alone, exactly as given,
// with no edges, in both engines.
func TestZeroHops(t *testing.T) {
	g, err := FromEdges(5, []int64{1, 2, 3, 4}, []int64{0, 0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	seeds := []int64{2, 0, 2}
	s, err := SampleNeighbors(g, seeds, SampleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Nodes, seeds) || len(s.Row) != 0 || len(s.Col) != 0 || !slices.Equal(s.NodesPerHop, []int64{3}) || len(s.EdgesPerHop) != 0 {
		t.Errorf("zero hops: %+v; want the seeds alone", s)
	}
	h, err := SampleHetero([]int64{5}, []EdgeGraph{{G: g}}, 0, seeds, HeteroSampleOptions{Fanouts: [][]int{{}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.Nodes[0], seeds) || len(h.Row[0]) != 0 {
		t.Errorf("zero hops, hetero engine: nodes %v, %d edges; want the seeds alone", h.Nodes[0], len(h.Row[0]))
	}
}
