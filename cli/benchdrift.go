package cli

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/tierfs/tierfs/featurestore"
)

// Parameters of the zipf and drift id streams of `tierfs bench gather` (set by its flags).
var (
	zipfS      = 1.1 // Zipf exponent (> 1)
	driftEvery = 20  // batches per hot set of the drift stream
)

// zipfStreams makes each thread's batches of Zipf-distributed ids over a random permutation of
// the nodes (the hot set is scattered, not the low ids). With drift, the ranks are rotated by a
// new random offset every driftEvery batches, all threads together, so the hot set moves. The
// hotness returned is what a pre-sampling pass sees: counts of as many draws as one phase holds,
// from the first hot set only (the placement cannot know where it will move).
func zipfStreams(n int64, drift bool, threads, batches, batch int, rng *rand.Rand) ([][][]int64, []uint32, error) {
	if zipfS <= 1 {
		return nil, nil, fmt.Errorf("--zipf-s %g: must be above 1", zipfS)
	}
	if drift && driftEvery < 1 {
		return nil, nil, fmt.Errorf("--drift-every %d: must be at least 1", driftEvery)
	}
	perm := make([]int64, n)
	for i := range perm {
		perm[i] = int64(i)
	}
	rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	z := rand.NewZipf(rng, zipfS, 1, uint64(n-1))
	phases := 1
	if drift {
		phases = (batches + driftEvery - 1) / driftEvery
	}
	offsets := make([]int64, phases)
	for p := 1; p < phases; p++ {
		offsets[p] = rng.Int64N(n)
	}
	draw := func(off int64) int64 { return perm[(int64(z.Uint64())+off)%n] }
	hot := make([]uint32, n)
	pre := threads * batches
	if drift {
		pre = threads * min(batches, driftEvery)
	}
	for range pre * batch {
		hot[draw(0)]++
	}
	streams := make([][][]int64, threads)
	for t := range streams {
		for b := range batches {
			off := offsets[0]
			if drift {
				off = offsets[b/driftEvery]
			}
			ids := make([]int64, batch)
			for i := range ids {
				ids[i] = draw(off)
			}
			streams[t] = append(streams[t], ids)
		}
	}
	return streams, hot, nil
}

// hostPolicies parses --host-policy: one policy, or several separated by commas.
func hostPolicies(v string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(v, ",") {
		switch p = strings.TrimSpace(p); p {
		case featurestore.HostStatic, featurestore.HostSieve:
			out = append(out, p)
		default:
			return nil, fmt.Errorf("--host-policy %q: want %s, %s, or both separated by a comma", p, featurestore.HostStatic, featurestore.HostSieve)
		}
	}
	return out, nil
}
