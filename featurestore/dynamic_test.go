package featurestore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/tiers/host"
)

func TestSieveGatherMatchesNoCache(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 5000, 24, 2, 4, rng)
	for _, b := range backends(t) {
		plain, err := Open(d.Dir, Options{IOBackend: b})
		if err != nil {
			t.Fatal(err)
		}
		defer plain.Close()
		// A cache of about 10% of the rows, and CopyWorkers 3 so large batches copy in parallel.
		budget := 500 * host.SieveBytesPerRow(d.RowBytes)
		s, err := Open(d.Dir, Options{IOBackend: b, HostPolicy: HostSieve, HostCacheBytes: budget, CopyWorkers: 3})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if s.HostTier().Rows() == 0 {
			t.Fatal("the placement pre-filled nothing")
		}
		var wg sync.WaitGroup
		errs := make(chan string, 4)
		for g := range 3 {
			seed := rng.Uint64()
			wg.Go(func() {
				r := rand.New(rand.NewPCG(seed, 1))
				for k := range 40 {
					n := 1 + r.IntN(12000) // some batches pass the 1 MiB parallel-copy threshold
					ids := make([]int64, n)
					hot := int64(1 + r.IntN(int(d.Count)))
					for i := range ids {
						if r.IntN(4) == 0 {
							ids[i] = r.Int64N(d.Count)
						} else { // skewed part: repeats within and across batches
							ids[i] = (r.Int64N(hot) * 7919) % d.Count
						}
					}
					got := make([]byte, int64(n)*d.RowBytes)
					want := make([]byte, len(got))
					if err := s.Gather(ids, got); err != nil {
						errs <- err.Error()
						return
					}
					if err := plain.Gather(ids, want); err != nil {
						errs <- err.Error()
						return
					}
					if !bytes.Equal(got, want) || !bytes.Equal(got, d.Want(ids)) {
						errs <- fmt.Sprintf("goroutine %d: batch %d of %d ids: sieve gather differs from the uncached gather", g, k, n)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Fatalf("%s: %s", b, e)
		}
		st := s.Stats()
		h := st.Tier(tiers.Host)
		if h.Hits == 0 || h.Hits+st.Tier(tiers.SSD).Hits != st.RowsGathered {
			t.Fatalf("%s: host hits %d + ssd hits %d != rows %d", b, h.Hits, st.Tier(tiers.SSD).Hits, st.RowsGathered)
		}
		if h.BytesHeld > budget || h.RowsHeld != s.HostTier().Rows() {
			t.Fatalf("%s: host tier holds %d rows in %d bytes, budget %d", b, h.RowsHeld, h.BytesHeld, budget)
		}
		t.Logf("%s: host hit ratio %.3f", b, float64(h.Hits)/float64(st.RowsGathered))
	}
}

// On a stream whose hot set the placement did not foresee, the sieve learns it: the second pass
// over the same stream hits the host tier far more than the first, and more than static placement.
func TestSieveHitsRiseOnRepeatedStream(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 4000, 8, 1, 6, rng)
	budget := 400 * host.SieveBytesPerRow(d.RowBytes)
	// Hot set: 300 ids among the high (low in-degree, so not placed) ids, hit 90% of the time.
	hotSet := make([]int64, 300)
	for i := range hotSet {
		hotSet[i] = d.Count - 1 - int64(i)*3
	}
	var stream [][]int64
	for range 20 {
		ids := make([]int64, 500)
		for i := range ids {
			if rng.IntN(10) < 9 {
				ids[i] = hotSet[rng.IntN(len(hotSet))]
			} else {
				ids[i] = rng.Int64N(d.Count)
			}
		}
		stream = append(stream, ids)
	}
	pass := func(s *Store) float64 {
		before := s.Stats().Tier(tiers.Host).Hits
		rows := 0
		for _, ids := range stream {
			dst := make([]byte, int64(len(ids))*d.RowBytes)
			if err := s.Gather(ids, dst); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(dst, d.Want(ids)) {
				t.Fatal("wrong rows")
			}
			rows += len(ids)
		}
		return float64(s.Stats().Tier(tiers.Host).Hits-before) / float64(rows)
	}
	static, err := Open(d.Dir, Options{HostCacheBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	defer static.Close()
	s, err := Open(d.Dir, Options{HostCacheBytes: budget, HostPolicy: "sieve"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st1, st2 := pass(static), pass(static)
	first, second := pass(s), pass(s)
	t.Logf("host hit ratio: static %.3f, %.3f; sieve %.3f, %.3f", st1, st2, first, second)
	if second <= first || second < 0.8 || second <= st2 {
		t.Fatalf("sieve host hit ratio %.3f then %.3f (static %.3f): want a rise to >= 0.8, above static", first, second, st2)
	}
	if r := s.HostTier().Rows(); r > 400 || s.Stats().Tier(tiers.Host).BytesHeld > budget {
		t.Fatalf("sieve holds %d rows, %d bytes; budget %d bytes", r, s.Stats().Tier(tiers.Host).BytesHeld, budget)
	}
	// Place again pre-fills again, and gathers stay right.
	if err := s.Place(nil); err != nil {
		t.Fatal(err)
	}
	if pass(s) <= 0 {
		t.Fatal("no host hits after Place")
	}
}

func TestHostPolicyErrors(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 100, 4, 1, 2, rng)
	_, err := Open(d.Dir, Options{HostPolicy: "lru", HostCacheBytes: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), `"lru"`) {
		t.Fatalf("unknown policy: %v", err)
	}
	for _, p := range []string{"", "static"} {
		s, err := Open(d.Dir, Options{HostPolicy: p, HostCacheBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.HostTier().(*host.Cache); !ok || s.HostTier().Rows() != d.Count {
			t.Fatalf("policy %q: host tier %T holds %d rows", p, s.HostTier(), s.HostTier().Rows())
		}
		s.Close()
	}
	// A sieve with no budget serves everything from disk.
	s, err := Open(d.Dir, Options{HostPolicy: "sieve"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ids := []int64{5, 5, 99, 0}
	dst := make([]byte, 4*d.RowBytes)
	if err := s.Gather(ids, dst); err != nil || !bytes.Equal(dst, d.Want(ids)) {
		t.Fatalf("gather with an empty sieve: %v", err)
	}
}
