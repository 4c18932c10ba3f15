package topology

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// PyG 2.8's test/loader/test_neighbor_loader.py::test_weighted_homo_neighbor_loader: edges 1->2
// and 0->1 weigh 0, 3->2 and 4->3 weigh 1; two hops of one neighbor from node 2 reach 3, then 4.
func TestWeightedPyGCase(t *testing.T) {
	// CSC of edge_index [[1, 3, 0, 4], [2, 2, 1, 3]]: node 1 <- 0, node 2 <- 1, 3, node 3 <- 4.
	g, err := NewCSC([]int64{0, 0, 1, 3, 4, 4}, nil, []int64{0, 1, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	wg := &Weighted{G: g, W: []float32{0, 0, 1, 1}}
	for seed := range uint64(20) {
		s, err := SampleNeighbors(wg, []int64{2}, SampleOptions{Fanouts: []int{1, 1}, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(s.Nodes, []int64{2, 3, 4}) || !slices.Equal(s.Row, []int64{1, 2}) || !slices.Equal(s.Col, []int64{0, 1}) || !slices.Equal(s.EdgeIDs, []int64{2, 3}) {
			t.Fatalf("seed %d: nodes %v row %v col %v edges %v, want nodes [2 3 4], edges 3->2 and 4->3", seed, s.Nodes, s.Row, s.Col, s.EdgeIDs)
		}
	}
}

// refWeightedPositions is the plain reference of a node's weighted draw: the same generator and law,
// written out (argmax by argmax; prefix sums scanned).
func refWeightedPositions(ws []float32, fanout int, replace bool, r splitmix) []int64 {
	d := len(ws)
	if d == 0 || fanout < 0 || (!replace && d <= fanout) {
		out := make([]int64, d)
		for j := range out {
			out[j] = int64(j)
		}
		return out
	}
	var out []int64
	if replace {
		var total float64
		for _, v := range ws {
			total += float64(v)
		}
		if total == 0 {
			return nil // the sampler fails this node
		}
		for range fanout {
			x, acc := unit(&r)*total, 0.0
			pick := -1
			for j, v := range ws {
				acc += float64(v)
				if acc > x {
					pick = j
					break
				}
			}
			for pick < 0 || ws[pick] == 0 { // rounded past the end: the last weighed position
				if pick < 0 {
					pick = d
				}
				pick--
			}
			out = append(out, int64(pick))
		}
	} else {
		keys := make([]float64, d)
		for j, v := range ws {
			keys[j] = math.Log(unit(&r)) / float64(v)
		}
		taken := make([]bool, d)
		for range fanout {
			best := -1
			for j := range keys {
				if !taken[j] && (best < 0 || keys[j] > keys[best]) {
					best = j
				}
			}
			taken[best] = true
			out = append(out, int64(best))
		}
	}
	slices.Sort(out)
	return out
}

// refWeightedSample is SampleNeighbors' layout over refWeightedPositions, written plainly.
func refWeightedSample(indptr, indices []int64, w []float32, seeds []int64, fanouts []int, replace bool, seed uint64) *Sample {
	s := &Sample{Nodes: slices.Clone(seeds), Row: []int64{}, Col: []int64{}, EdgeIDs: []int64{}}
	local := map[int64]int64{}
	var frontier []int64
	for i, v := range seeds {
		if _, ok := local[v]; !ok {
			local[v] = int64(i)
			frontier = append(frontier, int64(i))
		}
	}
	for h, f := range fanouts {
		if len(frontier) == 0 || f == 0 {
			break
		}
		var next []int64
		for _, tl := range frontier {
			v := s.Nodes[tl]
			lo, hi := indptr[v], indptr[v+1]
			for _, p := range refWeightedPositions(w[lo:hi], f, replace, nodeRNG(seed, h, v)) {
				u := indices[lo+p]
				l, ok := local[u]
				if !ok {
					l = int64(len(s.Nodes))
					local[u] = l
					s.Nodes = append(s.Nodes, u)
					next = append(next, l)
				}
				s.Row, s.Col, s.EdgeIDs = append(s.Row, l), append(s.Col, tl), append(s.EdgeIDs, lo+p)
			}
		}
		frontier = next
	}
	return s
}

// Weighted samples of a random graph with random weights (some 0) equal the plain reference,
// with and without replacement, for any Workers; without replacement a node with enough edges
// of weight > 0 never takes one of weight 0.
func TestWeightedSamplesMatchReference(t *testing.T) {
	r := testRand(t)
	const n = 400
	indptr := make([]int64, n+1)
	var indices []int64
	for v := range n {
		d := r.IntN(30)
		if v%50 == 0 {
			d = 300 // hubs, past the parallel chunk
		}
		for range d {
			indices = append(indices, r.Int64N(n))
		}
		indptr[v+1] = int64(len(indices))
	}
	w := make([]float32, len(indices))
	for i := range w {
		if r.IntN(4) > 0 {
			w[i] = float32(r.ExpFloat64())
		}
	}
	g, err := NewCSC(indptr, nil, indices)
	if err != nil {
		t.Fatal(err)
	}
	// With replacement every node needs an edge of weight > 0: its first.
	wr := slices.Clone(w)
	for v := range n {
		if indptr[v+1] > indptr[v] && wr[indptr[v]] == 0 {
			wr[indptr[v]] = 0.5
		}
	}
	for _, replace := range []bool{false, true} {
		w := w
		if replace {
			w = wr
		}
		wg := &Weighted{G: g, W: w}
		for _, fanouts := range [][]int{{3, 2}, {10, -1}, {1, 5, 2}} {
			seeds := seedsFor(r, n, 40)
			seed := r.Uint64()
			want := refWeightedSample(indptr, indices, w, seeds, fanouts, replace, seed)
			var got *Sample
			for _, workers := range []int{1, 3} {
				got, err = SampleNeighbors(wg, seeds, SampleOptions{Fanouts: fanouts, Replace: replace, Seed: seed, Workers: workers})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.Nodes, want.Nodes) || !slices.Equal(got.Row, want.Row) || !slices.Equal(got.Col, want.Col) || !slices.Equal(got.EdgeIDs, want.EdgeIDs) {
					t.Fatalf("replace=%v fanouts %v workers %d: the weighted sample differs from the reference", replace, fanouts, workers)
				}
			}
			f := int64(fanouts[0])
			for k := range got.EdgesPerHop[0] {
				e, v := got.EdgeIDs[k], got.Nodes[got.Col[k]]
				var positive int64
				for _, x := range w[indptr[v]:indptr[v+1]] {
					if x > 0 {
						positive++
					}
				}
				if w[e] == 0 && (replace || positive >= f && indptr[v+1]-indptr[v] > f) {
					t.Fatalf("replace=%v: node %d took edge %d of weight 0 with %d edges of weight > 0 and fanout %d", replace, v, e, positive, f)
				}
			}
		}
	}
}

// The law: one draw from weights 1, 2, 3, 4 takes each in proportion; two draws without
// replacement take the heaviest with the successive-sampling probability
// 4/10 + sum over i of w_i/10 × 4/(10 - w_i); with replacement the draws are independent.
func TestWeightedLaw(t *testing.T) {
	g, err := NewCSC([]int64{0, 0, 0, 0, 0, 4}, nil, []int64{0, 1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	wg := &Weighted{G: g, W: []float32{1, 2, 3, 4}}
	const runs = 20000
	var one [4]int
	var heavy, twiceHeavy int
	for seed := range uint64(runs) {
		s, err := SampleNeighbors(wg, []int64{4}, SampleOptions{Fanouts: []int{1}, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		one[s.EdgeIDs[0]]++
		s, err = SampleNeighbors(wg, []int64{4}, SampleOptions{Fanouts: []int{2}, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(s.EdgeIDs, 3) {
			heavy++
		}
		s, err = SampleNeighbors(wg, []int64{4}, SampleOptions{Fanouts: []int{2}, Replace: true, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if s.EdgeIDs[0] == 3 && s.EdgeIDs[1] == 3 {
			twiceHeavy++
		}
	}
	for j, c := range one {
		if want := float64(j+1) / 10; math.Abs(float64(c)/runs-want) > 0.015 {
			t.Errorf("one draw took edge %d in %.3f of %d runs, want %.2f", j, float64(c)/runs, runs, want)
		}
	}
	want := 0.4
	for _, w := range []float64{1, 2, 3} {
		want += w / 10 * 4 / (10 - w)
	}
	if got := float64(heavy) / runs; math.Abs(got-want) > 0.015 {
		t.Errorf("two draws without replacement took the heaviest in %.3f of runs, want %.3f", got, want)
	}
	if got := float64(twiceHeavy) / runs; math.Abs(got-0.16) > 0.015 {
		t.Errorf("two draws with replacement took the heaviest twice in %.3f of runs, want 0.16", got)
	}
}

// Bad weights are refused naming the edge; a node whose edges all weigh 0 fails a draw with
// replacement naming the node (pyg-lib's multinomial refuses it too), not one without.
func TestWeightedErrors(t *testing.T) {
	for _, w := range [][]float32{{1, -1}, {float32(math.NaN()), 1}, {1, float32(math.Inf(1))}} {
		if err := CheckWeights(w); err == nil || !strings.Contains(err.Error(), "weighs") {
			t.Errorf("CheckWeights(%v): %v, want an error naming the edge", w, err)
		}
	}
	if err := CheckWeights([]float32{0, 2.5}); err != nil {
		t.Fatal(err)
	}
	g, err := NewCSC([]int64{0, 0, 3}, nil, []int64{0, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	wg := &Weighted{G: g, W: []float32{0, 0, 0}}
	if _, err := SampleNeighbors(wg, []int64{1}, SampleOptions{Fanouts: []int{2}, Replace: true}); err == nil || !strings.Contains(err.Error(), "node 1 at hop 0") {
		t.Errorf("all-zero weights with replacement: %v, want an error naming node 1", err)
	}
	s, err := SampleNeighbors(wg, []int64{1}, SampleOptions{Fanouts: []int{2}})
	if err != nil || !slices.Equal(s.EdgeIDs, []int64{0, 1}) {
		t.Errorf("all-zero weights without replacement: %v %v, want the first two positions", s, err)
	}
	if _, err := SampleNeighbors(&Weighted{G: g, W: []float32{1}}, []int64{1}, SampleOptions{Fanouts: []int{2}}); err == nil || !strings.Contains(err.Error(), "1 weights for a graph of 3 edges") {
		t.Errorf("short weights: %v", err)
	}
}
