package featurestore

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/placement"
	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/topology"
)

func TestGatherMatchesReference(t *testing.T) {
	rng := newRand(t)
	for _, shape := range []struct {
		count, dim int64
		nfiles     int
	}{{5000, 32, 1}, {3000, 1100, 3}, {2000, 3, 2}} {
		d := writeDataset(t, shape.count, shape.dim, shape.nfiles, 8, rng)
		rowMem := d.RowBytes + 16
		for _, backend := range backends(t) {
			for _, cache := range []struct {
				name  string
				bytes int64
			}{{"ssd-only", 0}, {"mixed", rowMem * shape.count / 5}, {"host-only", rowMem * shape.count}} {
				name := fmt.Sprintf("%dx%d/%d-files/%s/%s", shape.count, shape.dim, shape.nfiles, backend, cache.name)
				s, err := Open(d.Dir, Options{HostCacheBytes: cache.bytes, IOBackend: backend, QueueDepth: 32})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				fillReads := s.Stats().IO.Reads
				if s.IOBackend() != backend {
					t.Fatalf("%s: backend %s", name, s.IOBackend())
				}
				for _, n := range []int{0, 1, 7, 4096} {
					ids := make([]int64, n)
					for i := range ids {
						ids[i] = rng.Int64N(shape.count)
					}
					if n > 4 { // repeated ids, adjacent and apart
						ids[1], ids[n-1] = ids[0], ids[0]
					}
					got := make([]byte, int64(n)*d.RowBytes)
					if err := s.Gather(ids, got); err != nil {
						t.Fatalf("%s: gather %d ids: %v", name, n, err)
					}
					if !bytes.Equal(got, d.Want(ids)) {
						t.Fatalf("%s: gather of %d ids differs from the reference", name, n)
					}
				}
				st := s.Stats()
				hostHits, ssdHits := st.Tier(tiers.Host).Hits, st.Tier(tiers.SSD).Hits
				switch cache.name {
				case "ssd-only":
					if hostHits != 0 || st.Tier(tiers.Host).RowsHeld != 0 {
						t.Fatalf("%s: host tier served %d rows", name, hostHits)
					}
				case "host-only":
					if ssdHits != 0 || st.IO.Reads != fillReads {
						t.Fatalf("%s: ssd tier served %d rows with %d reads", name, ssdHits, st.IO.Reads)
					}
				case "mixed":
					if hostHits == 0 || ssdHits == 0 {
						t.Fatalf("%s: host %d ssd %d hits; want both", name, hostHits, ssdHits)
					}
				}
				if st.RowsGathered != hostHits+ssdHits || st.RowsGathered != 1+7+4096 {
					t.Fatalf("%s: stats %+v", name, st)
				}
				// The stage times: a split in every gather with ids, disk time only where the SSD
				// tier served rows, and neither more than the gathers took.
				if st.SplitTime <= 0 || (st.DiskTime > 0) != (ssdHits > 0) || st.SplitTime+st.DiskTime > 2*st.GatherTime {
					t.Fatalf("%s: split %gs disk %gs of gathers %gs (ssd hits %d)", name, st.SplitTime, st.DiskTime, st.GatherTime, ssdHits)
				}
				s.Close()
			}
		}
	}
}

func TestConcurrentGathers(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 20000, 64, 2, 4, rng)
	s, err := Open(d.Dir, Options{HostCacheBytes: 20000 * 80 / 4, MaxConcurrentIO: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		seed := rng.Uint64()
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			for range 20 {
				ids := make([]int64, 1+r.IntN(3000))
				for i := range ids {
					ids[i] = r.Int64N(d.Count)
				}
				got := make([]byte, int64(len(ids))*d.RowBytes)
				if err := s.Gather(ids, got); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, d.Want(ids)) {
					errs <- fmt.Errorf("goroutine %d: rows differ", g)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestGatherErrors(t *testing.T) {
	d := writeDataset(t, 100, 4, 1, 2, newRand(t))
	s, err := Open(d.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ids  []int64
		dst  int
		want string
	}{
		{[]int64{0, 100}, 32, "ids[1] = 100 is out of range [0, 100)"},
		{[]int64{-1}, 16, "ids[0] = -1 is out of range"},
		{[]int64{1, 2}, 31, "needs a 32-byte destination"},
	} {
		err := s.Gather(tc.ids, make([]byte, tc.dst))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Gather(%v): %v, want %q", tc.ids, err, tc.want)
		}
	}
	if err := s.Gather([]int64{5}, make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := s.Gather([]int64{5}, make([]byte, 16)); !errors.Is(err, ErrClosed) {
		t.Fatalf("gather after close: %v", err)
	}
	if _, err := Open(t.TempDir(), Options{}); !errors.Is(err, dataset.ErrNotDataset) {
		t.Fatalf("open of an empty dir: %v", err)
	}
	if _, err := Open(d.Dir, Options{Feature: "y"}); err == nil || !strings.Contains(err.Error(), `no feature "y"`) {
		t.Fatalf("open of a missing feature: %v", err)
	}
	if _, err := Open(d.Dir, Options{Hotness: []uint32{1}}); err == nil || !strings.Contains(err.Error(), "hotness has 1 entries") {
		t.Fatalf("short hotness: %v", err)
	}
}

func TestVerifyReadsCatchesFlippedByte(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 1000, 16, 1, 2, rng)
	path := filepath.Join(d.Dir, "features.x.0.bin")
	raw, _ := os.ReadFile(path)
	row := rng.Int64N(d.Count)
	raw[row*d.RowBytes+rng.Int64N(d.RowBytes)] ^= 0x10 // rows of 64 B: 64 per block, no padding before row 64
	os.WriteFile(path, raw, 0o644)
	for _, verify := range []bool{true, false} {
		s, err := Open(d.Dir, Options{UnverifiedReads: !verify})
		if err != nil {
			t.Fatal(err)
		}
		err = s.Gather([]int64{row}, make([]byte, d.RowBytes))
		if verify && !dataset.IsCorrupt(err) {
			t.Fatalf("verified gather of corrupt row %d: %v", row, err)
		}
		if !verify && err != nil {
			t.Fatalf("unverified gather: %v", err)
		}
		s.Close()
	}
}

func TestPlacementHoldsHottest(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 3000, 8, 1, 6, rng)
	hot := make([]uint32, d.Count)
	for i := range hot {
		hot[i] = rng.Uint32N(1000)
	}
	const k = 300
	s, err := Open(d.Dir, Options{HostCacheBytes: k * (32 + 16), Hotness: hot})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ranked := make([]int64, d.Count)
	for i := range ranked {
		ranked[i] = int64(i)
	}
	slices.SortStableFunc(ranked, func(a, b int64) int { return int(hot[b]) - int(hot[a]) })
	slots := make([]int64, d.Count)
	if hits := s.Host().Lookup(ranked, slots); hits != k {
		t.Fatalf("host tier holds %d rows, want %d", hits, k)
	}
	for i := range k {
		if slots[i] < 0 {
			t.Fatalf("node %d (rank %d, hotness %d) is not in the host tier", ranked[i], i, hot[ranked[i]])
		}
	}
	// Default placement ranks by in-degree.
	if err := s.Place(nil); err != nil {
		t.Fatal(err)
	}
	minHeld, maxOut := int64(1<<62), int64(-1)
	for v := range d.Count {
		deg := d.Indptr[v+1] - d.Indptr[v]
		if s.Host().Slot(v) >= 0 {
			minHeld = min(minHeld, deg)
		} else {
			maxOut = max(maxOut, deg)
		}
	}
	if minHeld < maxOut {
		t.Fatalf("degree placement holds a node of degree %d but not one of degree %d", minHeld, maxOut)
	}
}

// TestPlaceCountsBreaksTiesByDegree: the planner's placement (placeCounts) holds the k rows of
// most counts, rows of equal count ranked by in-degree, then by id (a plain sort as reference).
func TestPlaceCountsBreaksTiesByDegree(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 3000, 8, 1, 6, rng)
	const k = 300
	s, err := Open(d.Dir, Options{HostCacheBytes: k * (32 + 16)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	counts := make([]uint32, d.Count)
	for i := range counts {
		counts[i] = rng.Uint32N(3) // ties everywhere
	}
	if err := s.placeCounts(counts); err != nil {
		t.Fatal(err)
	}
	deg := func(v int64) int64 { return d.Indptr[v+1] - d.Indptr[v] }
	ranked := make([]int64, d.Count)
	for i := range ranked {
		ranked[i] = int64(i)
	}
	slices.SortFunc(ranked, func(a, b int64) int {
		if c := cmp.Compare(counts[b], counts[a]); c != 0 {
			return c
		}
		if c := cmp.Compare(deg(b), deg(a)); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	for i, v := range ranked {
		if held := s.Host().Slot(v) >= 0; held != (i < k) {
			t.Fatalf("node %d (rank %d of count %d, in-degree %d) held %v; want the %d rows of most counts, ties by in-degree", v, i, counts[v], deg(v), held, k)
		}
	}
	if err := s.placeCounts(counts[1:]); err == nil || !strings.Contains(err.Error(), "counts") {
		t.Fatalf("counts one short: %v", err)
	}
}

func TestDiskGraphMatchesMemory(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 4000, 4, 1, 12, rng)
	mem, err := Open(d.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	disk, err := Open(d.Dir, Options{TopologyMemoryBytes: -1, QueueDepth: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer disk.Close()
	if _, ok := mem.Graph().(*topology.CSC); !ok {
		t.Fatalf("small topology not in memory: %T", mem.Graph())
	}
	if _, ok := disk.Graph().(*topology.DiskCSC); !ok {
		t.Fatalf("TopologyMemoryBytes -1 kept topology in memory: %T", disk.Graph())
	}
	seeds := make([]int64, 500)
	for i := range seeds {
		seeds[i] = rng.Int64N(d.Count)
	}
	for _, replace := range []bool{false, true} {
		opt := topology.SampleOptions{Fanouts: []int{10, 5, -1}, Replace: replace, Seed: rng.Uint64()}
		a, err := sampleOf(mem, seeds, opt)
		if err != nil {
			t.Fatal(err)
		}
		b, err := sampleOf(disk, seeds, opt)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.Nodes, b.Nodes) || !slices.Equal(a.Row, b.Row) || !slices.Equal(a.Col, b.Col) {
			t.Fatalf("replace=%v: samples from disk and memory differ (%d vs %d nodes)", replace, len(a.Nodes), len(b.Nodes))
		}
		// Every sampled edge exists in the reference CSC.
		for i := range a.Row {
			u, v := a.Nodes[a.Row[i]], a.Nodes[a.Col[i]]
			if !slices.Contains(d.Indices[d.Indptr[v]:d.Indptr[v+1]], int32(u)) {
				t.Fatalf("sampled edge %d->%d is not in the graph", u, v)
			}
		}
	}
	deg := make([]int64, 2)
	if err := disk.Graph().Degrees([]int64{0, d.Count}, deg); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("degree of a node out of range: %v", err)
	}
}

func TestLabelsInMemoryAndOnDisk(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 3000, 4, 1, 2, rng)
	ids := make([]int64, 500)
	for i := range ids {
		ids[i] = rng.Int64N(d.Count)
	}
	for _, budget := range []int64{0, -1} {
		s, err := Open(d.Dir, Options{TopologyMemoryBytes: budget})
		if err != nil {
			t.Fatal(err)
		}
		if (s.labels != nil) != (budget == 0) {
			t.Fatalf("budget %d: labels in memory = %v", budget, s.labels != nil)
		}
		out := make([]int64, len(ids))
		if err := s.Session().Labels("", ids, out); err != nil {
			t.Fatal(err)
		}
		for i, id := range ids {
			if out[i] != id%7-1 {
				t.Fatalf("budget %d: label of %d is %d, want %d", budget, id, out[i], id%7-1)
			}
		}
		if err := s.Session().Labels("", []int64{d.Count}, make([]int64, 1)); !errors.Is(err, ErrIDOutOfRange) {
			t.Fatalf("label of an id out of range: %v", err)
		}
		s.Close()
	}
}

// TestInjectedFaultsNeverGiveWrongRows drives IO faults (gpuio.Faults through Options.Faults)
// into verified stores: open and gather either fail, naming an IO or corruption error, or
// return the reference rows; never different rows.
func TestInjectedFaultsNeverGiveWrongRows(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 3000, 32, 2, 8, rng)
	for _, spec := range []string{"eio:every=3", "flip:prob=0.3:seed=5", "short:every=2", "eio:prob=0.05:seed=9;flip:prob=0.05:seed=3", "delay:ms=1"} {
		failed := 0
		for trial := range 4 {
			s, err := Open(d.Dir, Options{HostCacheBytes: int64(trial) * 20000, Faults: parseFaults(t, spec)})
			if err != nil {
				failed++
				continue
			}
			ids := make([]int64, 500)
			for i := range ids {
				ids[i] = rng.Int64N(d.Count)
			}
			got := make([]byte, int64(len(ids))*d.RowBytes)
			if err := s.Gather(ids, got); err != nil {
				if !dataset.IsCorrupt(err) && !errors.Is(err, syscall.EIO) && !strings.Contains(err.Error(), "short") {
					t.Errorf("%s: gather failed with an error that is neither IO nor corruption: %v", spec, err)
				}
				failed++
			} else if !bytes.Equal(got, d.Want(ids)) {
				t.Fatalf("%s: a gather under faults returned rows that differ from the reference", spec)
			}
			s.Close()
		}
		if spec == "delay:ms=1" && failed > 0 {
			t.Errorf("delays alone failed %d of 4 trials", failed)
		}
		if spec == "eio:every=3" && failed == 0 {
			t.Errorf("%s: no trial saw the injected errors", spec)
		}
	}
	// The core never reads the environment: TIERFS_FAULTS is the front ends' (capi, cli).
	t.Setenv("TIERFS_FAULTS", "bogus")
	s, err := Open(d.Dir, Options{})
	if err != nil {
		t.Fatalf("featurestore read TIERFS_FAULTS: %v", err)
	}
	s.Close()
}

// HottestIDs ranks as Place does, and PlaceIDs caches exactly the ids given, in order, up to
// the tiers' capacity (how each rank of a multi-GPU job caches the rows it owns).
func TestHottestIDsAndPlaceIDs(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 2000, 8, 1, 6, rng)
	hot := make([]uint32, d.Count)
	for i := range hot {
		hot[i] = rng.Uint32N(50) // many ties: they go to the smaller id
	}
	const k = 200
	s, err := Open(d.Dir, Options{HostCacheBytes: k * (32 + 16)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ranked := make([]int64, d.Count)
	for i := range ranked {
		ranked[i] = int64(i)
	}
	slices.SortStableFunc(ranked, func(a, b int64) int { return int(hot[b]) - int(hot[a]) })
	got, err := s.HottestIDs(hot, 3*k)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, ranked[:3*k]) {
		t.Fatalf("HottestIDs(hot, %d) = %v..., want %v...", 3*k, got[:8], ranked[:8])
	}
	if got, err := s.HottestIDs(nil, d.Count+5); err != nil || int64(len(got)) != d.Count {
		t.Fatalf("HottestIDs(nil, count+5): %d ids, %v; want every id", len(got), err)
	}
	if _, err := s.HottestIDs(hot[:5], 3); err == nil {
		t.Fatal("HottestIDs with 5 counts for 2000 nodes: no error")
	}
	// Every other id of the ranking, as one rank of two owns them.
	var own []int64
	for i := 0; i < len(ranked); i += 2 {
		own = append(own, ranked[i])
	}
	if err := s.PlaceIDs(own); err != nil {
		t.Fatal(err)
	}
	for i, v := range own {
		if held := s.Host().Slot(v) >= 0; held != (i < k) {
			t.Fatalf("own[%d] = %d held %v, want %v (capacity %d rows)", i, v, held, i < k, k)
		}
	}
	for i := 1; i < 2*k; i += 2 {
		if s.Host().Slot(ranked[i]) >= 0 {
			t.Fatalf("node %d, not given to PlaceIDs, is in the host tier", ranked[i])
		}
	}
	ids := []int64{own[0], ranked[1], own[k+3], own[0]}
	buf := make([]byte, int64(len(ids))*d.RowBytes)
	if err := s.Gather(ids, buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf, d.Want(ids)) {
		t.Fatalf("rows of %v after PlaceIDs differ from the file", ids)
	}
	if err := s.PlaceIDs([]int64{4, 9, 4}); err == nil || !strings.Contains(err.Error(), "ids[2] = 4 appears twice") {
		t.Fatalf("PlaceIDs with a repeated id: %v", err)
	}
	if err := s.PlaceIDs([]int64{4, d.Count}); !errors.Is(err, ErrIDOutOfRange) {
		t.Fatalf("PlaceIDs with an id out of range: %v, want ErrIDOutOfRange", err)
	}
}

// Session.ProfileReads of a one-type graph returns the feature counts of placement.Profile on its
// graph (the same batches, the same draws), places nothing, and refuses seeds out of range naming
// the first.
func TestProfileReads(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 2000, 8, 1, 6, rng)
	s, err := Open(d.Dir, Options{HostCacheBytes: 100 * (32 + 16)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seeds := make([]int64, 300)
	for i := range seeds {
		seeds[i] = rng.Int64N(d.Count)
	}
	opt := placement.ProfileOptions{Fanouts: []int{4, 2}, BatchSize: 32, Batches: 20, Epochs: 1, Seed: rng.Uint64()}
	key := s.Session().EdgeTypes()[0].Key
	hopt := SampleOptions{Fanouts: map[string][]int{key: opt.Fanouts}, Seed: opt.Seed}
	counts, err := s.Session().ProfileReads("", seeds, hopt, opt.BatchSize, opt.Batches)
	if err != nil {
		t.Fatal(err)
	}
	got := counts[0]
	h, err := placement.Profile(s.Graph(), seeds, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, h.Feature) {
		t.Fatal("ProfileReads differs from placement.Profile's feature counts")
	}
	before := s.Stats()
	if _, err := s.Session().ProfileReads("", []int64{1, d.Count}, hopt, opt.BatchSize, opt.Batches); !errors.Is(err, ErrIDOutOfRange) || !strings.Contains(err.Error(), fmt.Sprintf("seeds[1] = %d", d.Count)) {
		t.Fatalf("ProfileReads with seed %d: %v; want ErrIDOutOfRange naming seeds[1]", d.Count, err)
	}
	if after := s.Stats(); after.Gathers != before.Gathers {
		t.Fatal("ProfileReads gathered rows")
	}
}
