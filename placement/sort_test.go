package placement

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// benchInputs are 10M nodes with zipf-like read counts (most nodes read a few times, a few
// thousands of times) and degrees, the shape `tierfs place` plans for 10M-node graphs.
func benchInputs(n int) (*Hotness, Sizes) {
	r := rand.New(rand.NewPCG(7, 8))
	h := &Hotness{Topology: make([]uint32, n), Feature: make([]uint32, n)}
	deg := make([]int64, n)
	z := rand.NewZipf(r, 1.3, 2, 50000)
	for v := range n {
		h.Feature[v] = uint32(z.Uint64())
		h.Topology[v] = uint32(z.Uint64()) / 2
		deg[v] = 1 + int64(r.IntN(30))
	}
	return h, Sizes{RowBytes: 512, Degrees: deg, FeatureOverhead: 16, TopologyOverhead: 16}
}

func BenchmarkPlanUnified10M(b *testing.B) {
	h, sizes := benchInputs(10_000_000)
	budget := Budget{GPUBytes: 512 << 20, HostBytes: 1 << 30}
	b.ResetTimer()
	for range b.N {
		if _, err := Plan(h, sizes, budget, Unified); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSortByDensityMatchesComparisonSort checks the radix sort against slices.SortFunc by
// (density descending, node ascending) on random items with many equal densities, zero
// densities, and sizes on both sides of the radix threshold.
func TestSortByDensityMatchesComparisonSort(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 3))
	for _, n := range []int{0, 1, 100, 4095, 4096, 50_000} {
		items := make([]item, n)
		for i := range items {
			mem := int64(1 + r.IntN(4))
			score := float64(r.IntN(20)) // many ties, and zeros
			if r.IntN(10) == 0 {
				score = r.Float64() * 1e6
			}
			items[i] = item{v: int64(i) * 3, mem: mem, score: score, dens: score / float64(mem)}
		}
		want := slices.Clone(items)
		slices.SortFunc(want, func(a, b item) int { return cmp.Or(cmp.Compare(b.dens, a.dens), cmp.Compare(a.v, b.v)) })
		sortByDensity(items)
		if !slices.Equal(items, want) {
			t.Fatalf("n=%d seed %d: radix order differs from the comparison sort", n, seed)
		}
	}
}
