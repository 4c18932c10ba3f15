package featurestore

import (
	"cmp"
	"slices"
	"testing"
)

// TestRankedSharesMatchRowGreedy: on random profiles, the budget the ranking gives reached rows
// is what a plain greedy over every reached row (highest reads saved per byte first, the GPU
// budget then the host's) gives each type; the rest goes to unreached rows without passing the
// budgets or any type's bytes.
func TestRankedSharesMatchRowGreedy(t *testing.T) {
	rng := newRand(t)
	for trial := range 300 {
		types := make([]typeCounts, 1+rng.IntN(4))
		for i := range types {
			if rng.IntN(5) == 0 {
				continue // no stack
			}
			types[i].rowBytes = []int64{40, 512, 4096, 6000, 8192}[rng.IntN(5)]
			types[i].counts = make([]uint32, 1+rng.IntN(300))
			for v := range types[i].counts {
				if rng.IntN(3) > 0 {
					types[i].counts[v] = uint32(rng.IntN(20))
				}
			}
		}
		gpuOn := rng.IntN(2) == 0
		gpu, host := rng.Int64N(400_000), rng.Int64N(800_000)
		got := rankedShares(types, gpu, host, gpuOn)

		// The reference: every reached row, best first, each taken while its bytes fit.
		type row struct {
			t     int
			count uint32
		}
		var rows []row
		for i, tc := range types {
			for _, c := range tc.counts {
				if c > 0 {
					rows = append(rows, row{i, c})
				}
			}
		}
		score := func(r row) float64 {
			rb := types[r.t].rowBytes
			return float64(r.count) * float64((rb+4095)/4096) / float64(rb)
		}
		slices.SortStableFunc(rows, func(a, b row) int { return cmp.Compare(score(b), score(a)) })
		want := make([]budgetShare, len(types))
		left := []int64{0, host}
		if gpuOn {
			left[0] = gpu
		}
		taken := make([]bool, len(rows))
		for tier := range left {
			for i, r := range rows {
				rb := types[r.t].rowBytes
				if taken[i] || rb > left[tier] {
					continue
				}
				taken[i] = true
				left[tier] -= rb
				if tier == 0 {
					want[r.t].gpu += rb
				} else {
					want[r.t].host += rb
				}
			}
		}
		var sumGPU, sumHost int64
		for i, tc := range types {
			g, w := got[i], want[i]
			if tc.counts == nil && g != (budgetShare{}) {
				t.Fatalf("trial %d: type %d has no stack but a share %+v", trial, i, g)
			}
			if g.gpu < w.gpu || g.host < w.host {
				t.Fatalf("trial %d: type %d (row bytes %d): share %+v, the greedy over reached rows gives %+v", trial, i, tc.rowBytes, g, w)
			}
			if g.gpu+g.host > int64(len(tc.counts))*tc.rowBytes || g.gpu%max(tc.rowBytes, 1) != 0 || g.host%max(tc.rowBytes, 1) != 0 {
				t.Fatalf("trial %d: type %d: share %+v is not whole rows of %d within its %d rows", trial, i, g, tc.rowBytes, len(tc.counts))
			}
			sumGPU += g.gpu
			sumHost += g.host
		}
		if sumHost > host || (gpuOn && sumGPU > gpu) || (!gpuOn && sumGPU != 0) {
			t.Fatalf("trial %d: shares sum to gpu %d host %d over budgets gpu %d (on %v) host %d", trial, sumGPU, sumHost, gpu, gpuOn, host)
		}
	}
}
