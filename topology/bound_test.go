package topology

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestSampleEdgeBound: a sample whose draws pass MaxEdges fails with ErrSampleTooLarge before
// allocating them — a fanout of 2^31-1 with replacement, or of MaxInt, returns at once — and a
// bound of exactly the edges a sample draws lets it through, one less does not, in one and
// several types.
func TestSampleEdgeBound(t *testing.T) {
	r := testRand(t)
	for _, e := range randomGraphs(r) {
		g := e.csc(t)
		seeds := seedsFor(r, e.numNodes, 1+r.IntN(300))
		for _, fanout := range []int{math.MaxInt32, math.MaxInt} {
			_, err := SampleNeighbors(g, seeds, SampleOptions{Fanouts: []int{fanout}, Replace: true})
			if g.NumEdges() > 0 && (!errors.Is(err, ErrSampleTooLarge) || !strings.Contains(err.Error(), "MaxEdges")) {
				t.Fatalf("%s: fanout %d with replacement: %v, want ErrSampleTooLarge", e.name, fanout, err)
			}
			// The error names the numbers: seeds, fanouts, the hop's edges and the bound.
			for _, want := range []string{fmt.Sprintf("a sample of %d seeds with fanouts [%d]", len(seeds), fanout), fmt.Sprintf("fanout %d, replace true", fanout), fmt.Sprintf("bound of %d edges", DefaultMaxEdges)} {
				if g.NumEdges() > 0 && !strings.Contains(err.Error(), want) {
					t.Fatalf("%s: %v: does not say %q", e.name, err, want)
				}
			}
		}
		opt := SampleOptions{Fanouts: []int{1 + r.IntN(5), -1}, Replace: r.IntN(2) == 0, Seed: r.Uint64()}
		full, err := SampleNeighbors(g, seeds, opt)
		if err != nil {
			t.Fatal(err)
		}
		drawn := int64(len(full.Row))
		if drawn == 0 {
			continue
		}
		opt.MaxEdges = drawn
		if _, err := SampleNeighbors(g, seeds, opt); err != nil {
			t.Fatalf("%s: MaxEdges %d = the edges the sample draws: %v", e.name, drawn, err)
		}
		opt.MaxEdges = drawn - 1
		if _, err := SampleNeighbors(g, seeds, opt); !errors.Is(err, ErrSampleTooLarge) {
			t.Fatalf("%s: MaxEdges %d, one under the %d edges drawn: %v", e.name, drawn-1, drawn, err)
		}
	}
	h := randomHetero(r)
	mem, _ := h.graphs(t, make([]bool, len(h.types)))
	fanouts := make([][]int, len(mem))
	for i := range fanouts {
		fanouts[i] = []int{2, -1}
	}
	seeds := seedsFor(r, h.numNodes[0], 50)
	hopt := HeteroSampleOptions{Fanouts: fanouts, Seed: r.Uint64()}
	full, err := SampleHetero(h.numNodes, mem, 0, seeds, hopt)
	if err != nil {
		t.Fatal(err)
	}
	var drawn int64
	for _, row := range full.Row {
		drawn += int64(len(row))
	}
	if drawn > 0 {
		hopt.MaxEdges = drawn - 1
		if _, err := SampleHetero(h.numNodes, mem, 0, seeds, hopt); !errors.Is(err, ErrSampleTooLarge) {
			t.Fatalf("heterogeneous: MaxEdges %d, one under the %d edges drawn: %v", drawn-1, drawn, err)
		}
	}
}
