package featurestore

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTopKMatchesSort: topK's ids are the first k of every id sorted by score (descending) and
// id, on random scores of few and many distinct values, ascending and descending runs, and k from
// 1 to past the count; the candidates' buffer is cut many times on the way.
func TestTopKMatchesSort(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for round := range 200 {
		n := 1 + rng.IntN(5000)
		scores := make([]uint64, n)
		spread := []uint64{1, 3, 1000, 1 << 62}[rng.IntN(4)]
		for i := range scores {
			switch round % 3 {
			case 0:
				scores[i] = rng.Uint64N(spread)
			case 1:
				scores[i] = uint64(i) / (1 + uint64(rng.IntN(4)))
			default:
				scores[i] = uint64(n - i)
			}
		}
		want := make([]int64, n)
		for i := range want {
			want[i] = int64(i)
		}
		slices.SortFunc(want, func(a, b int64) int { return cmp.Or(cmp.Compare(scores[b], scores[a]), cmp.Compare(a, b)) })
		k := 1 + rng.Int64N(int64(n)+10)
		got := topK(k, func(yield func(int64, uint64) bool) {
			for v, s := range scores {
				if !yield(int64(v), s) {
					return
				}
			}
		})
		if w := want[:min(k, int64(n))]; !slices.Equal(got, w) {
			t.Fatalf("round %d: n %d, k %d, spread %d: topK differs from the sort (first ids %v, want %v)", round, n, k, spread, got[:min(8, len(got))], w[:min(8, len(w))])
		}
	}
}
