package featurestore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/tiers"
)

// Two stores of one dataset (two processes of a host): one shares its host tier, the other maps
// it; both gather every row as the file holds it, the shared rows come from the host tier (its
// stats say "created" and "mapped"), the budget bounds the rows shared, and the file may be
// removed once mapped.
func TestShareHostTier(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 3000, 8, 1, 6, rng)
	const k = 300
	opt := Options{HostCacheBytes: k * (d.RowBytes + 16)}
	a, err := Open(d.Dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(d.Dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ids := make([]int64, 2*k)
	for i, v := range rng.Perm(int(d.Count))[:2*k] {
		ids[i] = int64(v)
	}
	path := filepath.Join(t.TempDir(), "host-tier")
	if err := a.ShareHostTier(path, ids); err != nil {
		t.Fatal(err)
	}
	if err := b.MapHostTier(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	for i, s := range []*Store{a, b} {
		for j, v := range ids {
			if held := s.Host().Slot(v) >= 0; held != (j < k) {
				t.Fatalf("store %d: ids[%d] = %d held %v, want %v (budget %d rows)", i, j, v, held, j < k, k)
			}
		}
		query := make([]int64, 5000)
		for j := range query {
			query[j] = rng.Int64N(d.Count)
		}
		buf := make([]byte, int64(len(query))*d.RowBytes)
		if err := s.Gather(query, buf); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, d.Want(query)) {
			t.Fatalf("store %d: rows gathered through the shared host tier differ from the file", i)
		}
		st := s.Stats()
		host := st.Tiers[1]
		want := map[int]string{0: "created", 1: "mapped"}[i]
		if host.Shared != want || host.RowsHeld != k || host.Hits == 0 {
			t.Fatalf("store %d: host tier stats %+v, want %d rows held, shared %q, hits", i, host, k, want)
		}
	}
	// PlaceIDs makes the tier private again.
	if err := b.PlaceIDs(ids[:10]); err != nil {
		t.Fatal(err)
	}
	if st := b.Stats(); st.Tiers[1].Shared != "" || st.Tiers[1].RowsHeld != 10 {
		t.Fatalf("after PlaceIDs: host tier %+v, want a private tier of 10 rows", st.Tiers[1])
	}
	if err := a.ShareHostTier(path, []int64{4, 9, 4}); err == nil || !strings.Contains(err.Error(), "ids[2] = 4 appears twice") {
		t.Fatalf("ShareHostTier with a repeated id: %v", err)
	}
	if err := a.ShareHostTier(path, []int64{d.Count}); !errors.Is(err, ErrIDOutOfRange) {
		t.Fatalf("ShareHostTier with an id out of range: %v", err)
	}
	if err := b.MapHostTier(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("MapHostTier of a removed file: %v, want an error naming it", err)
	}
	s, err := Open(d.Dir, Options{HostCacheBytes: opt.HostCacheBytes, HostPolicy: HostSieve})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.ShareHostTier(filepath.Join(t.TempDir(), "x"), ids); err == nil || !strings.Contains(err.Error(), "SIEVE") {
		t.Fatalf("ShareHostTier on a SIEVE host tier: %v", err)
	}
}

// On a GPU: two stores (two ranks of a host) each place their own GPU tier, share one host tier
// (one fills it, the other maps it and pins it for its device), and device gathers of random ids
// match the file, for rows the split kernel reads in place (512 B) and packed ones (64 B).
func TestShareHostTierDevice(t *testing.T) {
	requireGPU(t)
	rng := newRand(t)
	for _, dim := range []int64{16, 128} {
		const count = 3000
		d := writeTypedDataset(t, dataset.Float32, count, dim, 2, 4, rng)
		rb := 4 * dim
		opt := Options{GPUCacheBytes: 200 * rb, HostCacheBytes: 500 * (rb + 16)}
		perm := rng.Perm(count)
		ranked := make([]int64, count)
		for i, v := range perm {
			ranked[i] = int64(v)
		}
		var stores []*Store
		for r := range 2 {
			s, err := Open(d.Dir, opt)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.PlaceIDs(ranked[200*r : 200*(r+1)]); err != nil { // each rank its own GPU rows
				t.Fatal(err)
			}
			stores = append(stores, s)
		}
		path := filepath.Join(shmDir(t), "host-tier")
		if err := stores[0].ShareHostTier(path, ranked[400:]); err != nil {
			t.Fatal(err)
		}
		if err := stores[1].MapHostTier(path); err != nil {
			t.Fatal(err)
		}
		os.Remove(path)
		for r, s := range stores {
			for _, n := range []int{1, 257, 5000} {
				ids := randomIDs(rng, n, count)
				if got, want := deviceGather(t, s, ids), d.Want(ids); !bytes.Equal(got, want) {
					t.Fatalf("dim %d, store %d, %d ids: device gather through the shared host tier differs from the file (byte %d)", dim, r, n, firstDiff(got, want))
				}
			}
			if st := s.Stats(); st.Tier(tiers.Host).Hits == 0 || st.Tier(tiers.GPU).Hits == 0 {
				t.Fatalf("dim %d, store %d: tiers %+v, want hits in the GPU and the shared host tier", dim, r, st.Tiers)
			}
		}
	}
}

// shmDir is a directory in shared memory (/dev/shm, tmpfs) for a shared host tier's file, where
// distributed stores put it and the GPU can pin its pages; without /dev/shm a temporary one.
func shmDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "tierfs-test-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
