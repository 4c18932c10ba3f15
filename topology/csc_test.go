package topology

import (
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tierfs/tierfs/dataset"
)

// testRand returns a generator seeded from the clock, or from TOPOLOGY_TEST_SEED to replay a
// failure; the seed is logged.
func testRand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("TOPOLOGY_TEST_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("TOPOLOGY_TEST_SEED=%q: %v", s, err)
		}
	}
	t.Logf("random seed %d (replay with TOPOLOGY_TEST_SEED=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x5eed))
}

// edgeList is a test graph given by its edges; lists are the in-neighbor lists it must yield.
type edgeList struct {
	name     string
	numNodes int64
	src, dst []int64
}

// lists returns each node's in-neighbors in edge order, built independently of FromEdges.
func (e edgeList) lists() [][]int64 {
	l := make([][]int64, e.numNodes)
	for i, d := range e.dst {
		l[d] = append(l[d], e.src[i])
	}
	return l
}

func (e edgeList) csc(t testing.TB) *CSC {
	t.Helper()
	g, err := FromEdges(e.numNodes, e.src, e.dst)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// randomGraphs returns a uniform and a power-law-ish graph, each with self loops, duplicate
// edges, isolated nodes (the top tenth of the ids) and a hub of in-degree 5000 (node 7), plus a
// small sparse graph where most nodes have no in-neighbors.
func randomGraphs(r *rand.Rand) []edgeList {
	build := func(name string, numNodes int64, numEdges int, pick func() (int64, int64)) edgeList {
		live := numNodes * 9 / 10 // ids >= live stay isolated
		e := edgeList{name: name, numNodes: numNodes}
		add := func(s, d int64) { e.src = append(e.src, s); e.dst = append(e.dst, d) }
		for range numEdges {
			s, d := pick()
			add(s%live, d%live)
		}
		for range numEdges / 50 { // self loops
			v := r.Int64N(live)
			add(v, v)
		}
		for range numEdges / 20 { // duplicate edges
			i := r.IntN(len(e.src))
			add(e.src[i], e.dst[i])
		}
		for range 5000 { // hub
			add(r.Int64N(live), 7)
		}
		return e
	}
	const n = 2000
	return []edgeList{
		build("uniform", n, 20000, func() (int64, int64) { return r.Int64N(n), r.Int64N(n) }),
		build("powerlaw", n, 20000, func() (int64, int64) {
			u, w := r.Float64(), r.Float64()
			return int64(n * w * w), int64(n * u * u * u) // in-degree concentrated on low ids
		}),
		build("sparse", 60, 20, func() (int64, int64) { return r.Int64N(60), r.Int64N(60) }),
	}
}

func TestFromEdgesMatchesEdgeLists(t *testing.T) {
	r := testRand(t)
	for _, e := range randomGraphs(r) {
		t.Run(e.name, func(t *testing.T) {
			g := e.csc(t)
			if g.Indices32 == nil || g.Indices64 != nil {
				t.Fatal("want Indices32 only for a small graph")
			}
			checkGraphAnswers(t, g, e.lists())

			// The same arrays with 64-bit indices answer the same.
			idx64 := make([]int64, len(g.Indices32))
			for i, v := range g.Indices32 {
				idx64[i] = int64(v)
			}
			g64, err := NewCSC(g.Indptr, nil, idx64)
			if err != nil {
				t.Fatal(err)
			}
			checkGraphAnswers(t, g64, e.lists())
		})
	}
}

// checkGraphAnswers asks g for every degree and every position in one batch each.
func checkGraphAnswers(t *testing.T, g Graph, lists [][]int64) {
	t.Helper()
	if g.NumNodes() != int64(len(lists)) {
		t.Fatalf("NumNodes = %d, want %d", g.NumNodes(), len(lists))
	}
	nodes := make([]int64, len(lists))
	off := []int64{0}
	var pos, want []int64
	for v, l := range lists {
		nodes[v] = int64(v)
		for p := range l {
			pos = append(pos, int64(p))
		}
		want = append(want, l...)
		off = append(off, int64(len(pos)))
	}
	if g.NumEdges() != int64(len(want)) {
		t.Fatalf("NumEdges = %d, want %d", g.NumEdges(), len(want))
	}
	deg := make([]int64, len(nodes))
	if err := g.Degrees(nodes, deg); err != nil {
		t.Fatal(err)
	}
	for v, l := range lists {
		if deg[v] != int64(len(l)) {
			t.Fatalf("degree of %d = %d, want %d", v, deg[v], len(l))
		}
	}
	// Reverse the node order so positions are not resolved in storage order.
	slices.Reverse(nodes)
	off, pos, want = off[:1], pos[:0], want[:0]
	for _, v := range nodes {
		for p := len(lists[v]) - 1; p >= 0; p-- {
			pos = append(pos, int64(p))
			want = append(want, lists[v][p])
		}
		off = append(off, int64(len(pos)))
	}
	out := make([]int64, len(pos))
	if err := g.NeighborsAt(nodes, off, pos, out); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out, want) {
		t.Fatal("NeighborsAt disagrees with the edge lists")
	}
}

func TestCSCEmptyGraphs(t *testing.T) {
	g, err := NewCSC([]int64{0}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g.NumNodes() != 0 || g.NumEdges() != 0 {
		t.Fatalf("got %d nodes, %d edges, want 0, 0", g.NumNodes(), g.NumEdges())
	}
	g, err = FromEdges(3, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkGraphAnswers(t, g, make([][]int64, 3))
}

func TestNewCSCErrors(t *testing.T) {
	for _, c := range []struct {
		indptr []int64
		idx32  []int32
		idx64  []int64
		want   string
	}{
		{nil, nil, nil, "topology: indptr is empty; it needs numNodes+1 entries"},
		{[]int64{0, 1}, []int32{0}, []int64{0}, "topology: both indices32 and indices64 are set; pass one"},
		{[]int64{1, 1}, []int32{0}, nil, "topology: indptr[0] is 1, want 0"},
		{[]int64{0, 2, 1, 3}, []int32{0, 0, 0}, nil, "topology: indptr decreases at position 2: 1 after 2"},
		{[]int64{0, 1, 3}, []int32{0, 1}, nil, "topology: indptr ends at 3 but there are 2 indices"},
		{[]int64{0, 1, 2}, []int32{1, 2}, nil, "topology: indices32[1] = 2 is not a node id in [0, 2)"},
		{[]int64{0, 1, 2}, nil, []int64{-1, 0}, "topology: indices64[0] = -1 is not a node id in [0, 2)"},
	} {
		_, err := NewCSC(c.indptr, c.idx32, c.idx64)
		if err == nil || err.Error() != c.want {
			t.Errorf("NewCSC(%v, %v, %v) error = %v, want %q", c.indptr, c.idx32, c.idx64, err, c.want)
		}
	}
}

func TestFromEdgesErrors(t *testing.T) {
	for _, c := range []struct {
		n        int64
		src, dst []int64
		want     string
	}{
		{-1, nil, nil, "topology: numNodes -1 is negative"},
		{3, []int64{0, 1}, []int64{1}, "topology: 2 sources but 1 destinations"},
		{3, []int64{0, 1, 2, 3}, []int64{1, 2, 0, 0}, "topology: edge 3 (3 -> 0) has a node id outside [0, 3)"},
		{3, []int64{0, 1}, []int64{1, -2}, "topology: edge 1 (1 -> -2) has a node id outside [0, 3)"},
	} {
		_, err := FromEdges(c.n, c.src, c.dst)
		if err == nil || err.Error() != c.want {
			t.Errorf("FromEdges(%d, %v, %v) error = %v, want %q", c.n, c.src, c.dst, err, c.want)
		}
	}
}

func TestCSCQueryErrors(t *testing.T) {
	// Node 0 has in-neighbors [1, 2]; node 1 has [0]; node 2 has none.
	g, err := FromEdges(3, []int64{1, 2, 0}, []int64{0, 0, 1})
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error, want string) {
		t.Helper()
		if err == nil || err.Error() != want {
			t.Errorf("%s: error = %v, want %q", what, err, want)
		}
	}
	check("degree slots", g.Degrees([]int64{0, 1}, make([]int64, 1)),
		"topology: Degrees got 2 nodes but 1 degree slots")
	check("node too large", g.Degrees([]int64{0, 3}, make([]int64, 2)),
		"topology: nodes[1] = 3 is not a node id in [0, 3)")
	check("negative node", g.Degrees([]int64{-1}, make([]int64, 1)),
		"topology: nodes[0] = -1 is not a node id in [0, 3)")

	out := make([]int64, 3)
	check("offsets length", g.NeighborsAt([]int64{0}, []int64{0, 1, 2}, []int64{0, 0}, out[:2]),
		"topology: NeighborsAt got 1 nodes but 3 offsets, want nodes+1")
	check("first offset", g.NeighborsAt([]int64{0}, []int64{1, 2}, []int64{0, 0}, out[:2]),
		"topology: off[0] is 1, want 0")
	check("positions length", g.NeighborsAt([]int64{0}, []int64{0, 2}, []int64{0}, out[:2]),
		"topology: offsets end at 2 but there are 1 positions and 2 outputs")
	check("node", g.NeighborsAt([]int64{0, 5}, []int64{0, 1, 2}, []int64{0, 0}, out[:2]),
		"topology: nodes[1] = 5 is not a node id in [0, 3)")
	check("decreasing offsets", g.NeighborsAt([]int64{0, 1, 2}, []int64{0, 2, 1, 2}, []int64{0, 1}, out[:2]),
		"topology: off decreases at position 2: 1 after 2")
	check("position past degree", g.NeighborsAt([]int64{0, 1}, []int64{0, 2, 3}, []int64{1, 0, 1}, out),
		"topology: pos[2] = 1 is not a position in [0, 1) of node 1")
	check("negative position", g.NeighborsAt([]int64{0}, []int64{0, 1}, []int64{-1}, out[:1]),
		"topology: pos[0] = -1 is not a position in [0, 2) of node 0")
	check("isolated node", g.NeighborsAt([]int64{2}, []int64{0, 1}, []int64{0}, out[:1]),
		"topology: pos[0] = 0 is not a position in [0, 0) of node 2")
}

// TestBipartiteCSC: an edge type between two node types holds neighbor ids of the source type,
// in memory and on disk: ids past the destination count are fine, ids past the source count are
// refused (on disk, as corruption).
func TestBipartiteCSC(t *testing.T) {
	// 2 destination nodes, 5 source nodes: 0 <- [4, 1]; 1 <- [3].
	g, err := FromBipartiteEdges(5, 2, []int64{4, 3, 1}, []int64{0, 1, 0})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.Indptr, []int64{0, 2, 3}) || !slices.Equal(g.Indices32, []int32{4, 1, 3}) {
		t.Fatalf("got indptr %v, indices %v", g.Indptr, g.Indices32)
	}
	if _, err := NewBipartiteCSC(5, g.Indptr, g.Indices32, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := NewCSC(g.Indptr, g.Indices32, nil); err == nil {
		t.Fatal("NewCSC took neighbor ids past its node count")
	}
	for _, c := range []struct {
		numSrc, numDst int64
		src, dst       []int64
		want           string
	}{
		{-1, 2, nil, nil, "topology: numSrc -1 or numDst 2 is negative"},
		{5, 2, []int64{5}, []int64{0}, "topology: edge 0 (5 -> 0) has a source outside [0, 5) or a destination outside [0, 2)"},
		{5, 2, []int64{0}, []int64{2}, "topology: edge 0 (0 -> 2) has a source outside [0, 5) or a destination outside [0, 2)"},
	} {
		if _, err := FromBipartiteEdges(c.numSrc, c.numDst, c.src, c.dst); err == nil || err.Error() != c.want {
			t.Errorf("FromBipartiteEdges(%d, %d, %v, %v) error = %v, want %q", c.numSrc, c.numDst, c.src, c.dst, err, c.want)
		}
	}
	if _, err := NewBipartiteCSC(4, g.Indptr, g.Indices32, nil); err == nil || err.Error() != "topology: indices32[0] = 4 is not a node id in [0, 4)" {
		t.Errorf("NewBipartiteCSC with a neighbor past the source count: %v", err)
	}

	pf, xf := diskOf(g.Indptr, g.Indices32)
	d, err := NewBipartiteDiskCSC(5, 2, 3, 4, 0, 1, memFiles(pf, xf))
	if err != nil {
		t.Fatal(err)
	}
	checkGraphAnswers(t, d, [][]int64{{4, 1}, {3}})
	if err := d.CacheNeighbors([]int64{0, 1}); err != nil {
		t.Fatal(err)
	}
	checkGraphAnswers(t, d, [][]int64{{4, 1}, {3}})
	small, err := NewBipartiteDiskCSC(4, 2, 3, 4, 0, 1, memFiles(pf, xf))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := SampleNeighbors(small, []int64{0}, SampleOptions{Fanouts: []int{-1}}); err == nil {
		t.Error("a disk CSC gave neighbor 4 of 4 source nodes")
	}
	if err := small.CacheNeighbors([]int64{0}); !dataset.IsCorrupt(err) {
		t.Errorf("caching neighbor 4 of 4 source nodes: %v; want corruption", err)
	}
}
