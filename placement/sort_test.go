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

// BenchmarkPlanFeatures10M plans as PlanStore does for a store holding its topology in memory:
// topology counts zero, features alone compete for the budgets.
func BenchmarkPlanFeatures10M(b *testing.B) {
	h, sizes := benchInputs(10_000_000)
	clear(h.Topology)
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

// TestRadixOrderMatchesStableSort checks radixOrder against slices.SortStableFunc on random
// keys with many ties, on both sides of the radix threshold.
func TestRadixOrderMatchesStableSort(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 4))
	for _, n := range []int{0, 1, 7, 4095, 4096, 100_000} {
		keys := make([]uint64, n)
		for i := range keys {
			switch r.IntN(3) {
			case 0:
				keys[i] = uint64(r.IntN(5))
			case 1:
				keys[i] = ^uint64(r.IntN(1000))
			default:
				keys[i] = r.Uint64()
			}
		}
		want := make([]uint32, n)
		for i := range want {
			want[i] = uint32(i)
		}
		slices.SortStableFunc(want, func(a, b uint32) int { return cmp.Compare(keys[a], keys[b]) })
		if got := radixOrder(keys); !slices.Equal(got, want) {
			t.Fatalf("n=%d seed %d: radix order differs from the stable sort", n, seed)
		}
	}
}

// TestRankedPoliciesMatchComparisonSort checks the orders the hotness- and degree-ranked
// policies fill in (hottest first, ties by node) against comparison sorts on random inputs.
func TestRankedPoliciesMatchComparisonSort(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 5))
	const n = 20_000
	h := &Hotness{Topology: make([]uint32, n), Feature: make([]uint32, n)}
	deg := make([]int64, n)
	for v := range n {
		h.Feature[v] = uint32(r.IntN(6)) * uint32(1+r.IntN(3)*1000)
		h.Topology[v] = uint32(r.IntN(4))
		deg[v] = int64(r.IntN(40))
	}
	sizes := Sizes{RowBytes: 512, Degrees: deg}.withDefaults()
	pl := planner{h: h, s: &sizes}
	for _, k := range []Kind{KindTopology, KindFeature} {
		var want []item
		for v := range int64(n) {
			if pl.hot(v, k) > 0 {
				want = append(want, item{v: v, k: k})
			}
		}
		slices.SortFunc(want, func(a, b item) int {
			return cmp.Or(cmp.Compare(pl.hot(b.v, k), pl.hot(a.v, k)), cmp.Compare(a.v, b.v))
		})
		if got := pl.hottest(k); !slices.Equal(got, want) {
			t.Fatalf("seed %d: hottest(%v) differs from the comparison sort", seed, k)
		}
	}
	budget := Budget{HostBytes: 3 << 20}
	got, err := Plan(h, sizes, budget, DegreeRanked)
	if err != nil {
		t.Fatal(err)
	}
	order := make([]int64, n)
	for v := range order {
		order[v] = int64(v)
	}
	slices.SortFunc(order, func(a, b int64) int { return cmp.Or(cmp.Compare(deg[b], deg[a]), cmp.Compare(a, b)) })
	want := newPlacement(n, DegreeRanked, budget.withDefaults(), sizes)
	ref := planner{h: h, s: &sizes, p: want, left: [NumTiers]int64{TierHost: budget.HostBytes}}
	for _, v := range order {
		ref.fillInOrder([]item{{v: v, k: KindFeature}})
	}
	if !slices.Equal(got.tiers, want.tiers) {
		t.Fatalf("seed %d: degree-ranked placement differs from the comparison-sorted one", seed)
	}
}

// TestFeatureHotnessOrderIsDensityOrder checks that ranking feature rows by hotness (the
// counting sort fillTier uses) gives the order the density sort gives, for both tiers' scores,
// both scoring modes and row sizes from 4 bytes to 16 KiB.
func TestFeatureHotnessOrderIsDensityOrder(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 6))
	const n = 30_000
	for _, rowBytes := range []int64{4, 100, 512, 4032, 4096, 4100, 16384} {
		h := &Hotness{Topology: make([]uint32, n), Feature: make([]uint32, n)}
		for v := range n {
			h.Feature[v] = uint32(r.IntN(50)) * uint32(1+r.IntN(2)*100)
		}
		sizes := Sizes{RowBytes: rowBytes, Degrees: make([]int64, n), FeatureOverhead: 16}.withDefaults()
		pl := planner{h: h, s: &sizes}
		for _, tier := range []Tier{TierGPU, TierHost} {
			for _, pcieOnly := range []bool{false, true} {
				var items []item
				for v := range int64(n) {
					hot, b := h.Feature[v], sizes.bytes(v, KindFeature)
					ssd := ssdTx(hot, b, sizes.BlockSize)
					pcie := ssd
					if tier == TierHost {
						pcie = ssd - memTx(hot, b)
					}
					score := pcie
					if !pcieOnly {
						score += ssd
					}
					if score > 0 {
						mem := sizes.memory(v, KindFeature)
						items = append(items, item{v: v, k: KindFeature, mem: mem, score: score, dens: score / float64(mem)})
					}
				}
				want := slices.Clone(items)
				sortByDensity(want)
				pl.sortByHotness(items)
				if !slices.Equal(items, want) {
					t.Fatalf("seed %d: rows of %d B, tier %v, pcie only %v: hotness order differs from density order", seed, rowBytes, tier, pcieOnly)
				}
			}
		}
	}
}

// TestUnifiedFeaturesOnlyMatchesByDensity checks unified's shortcut for features alone (no
// topology counts) against the general density ranking, over budgets that fill the GPU, host
// memory or neither, and row sizes from 4 bytes to 16 KiB.
func TestUnifiedFeaturesOnlyMatchesByDensity(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 7))
	const n = 30_000
	for _, rowBytes := range []int64{4, 100, 512, 4096, 16384} {
		h := &Hotness{Topology: make([]uint32, n), Feature: make([]uint32, n)}
		for v := range n {
			h.Feature[v] = uint32(r.IntN(40)) * uint32(1+r.IntN(2)*50)
		}
		sizes := Sizes{RowBytes: rowBytes, Degrees: make([]int64, n), FeatureOverhead: 16}.withDefaults()
		for _, b := range []Budget{{GPUBytes: 100 * rowBytes, HostBytes: 2000 * rowBytes}, {GPUBytes: 1 << 30, HostBytes: 1 << 30}, {HostBytes: 5000*rowBytes + 7}, {}} {
			b = b.withDefaults()
			plan := func(general bool) *Placement {
				p := newPlacement(n, Unified, b, sizes)
				pl := planner{h: h, s: &sizes, p: p, left: [NumTiers]int64{TierGPU: b.GPUBytes, TierHost: b.HostBytes}}
				if general {
					pl.unifiedByDensity(b.ChunkBytes, false)
				} else {
					pl.unified(b.ChunkBytes, false)
				}
				return p
			}
			if got, want := plan(false), plan(true); !slices.Equal(got.tiers, want.tiers) {
				t.Fatalf("seed %d: rows of %d B, budget %+v: the features-only shortcut places differently from the density ranking", seed, rowBytes, b)
			}
		}
	}
}
