package featurestore

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/placement"
	"github.com/tierfs/tierfs/tiers/host"
	"github.com/tierfs/tierfs/topology"
)

// PlanFor on a dataset on disk: it computes and saves, then loads, and a dataset committed again
// makes the saved placement stale. placement's tests cover the rest of PlanStore.
func TestPlanForComputesThenLoads(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 3000, 8, 1, 6, rng)
	opt := PlanOptions{Fanouts: []int{5, 3}, BatchSize: 128, HostBytes: 64 << 10}
	p1, r1, err := PlanFor(d.Dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Source != "computed" || !r1.Saved || r1.ProfileBatches%24 != 0 || r1.ProfileBatches < 48 || len(r1.Convergence) != r1.ProfileBatches/24-1 || r1.SeedSource != "all nodes" ||
		r1.Dataset != d.Dir || r1.Feature != "x" || r1.Nodes != 3000 || r1.RowBytes != d.RowBytes || !r1.TopologyInMemory {
		t.Fatalf("first plan: %+v", r1)
	}
	if _, err := os.Stat(r1.File); err != nil {
		t.Fatal(err)
	}
	// The store's item sizes: its block size and its tiers' overheads.
	if p1.BlockSize != dataset.DefaultBlockSize || p1.IndexBytes != 4 || p1.FeatureOverhead != host.IndexBytesPerRow || p1.TopologyOverhead != TopologyOverheadBytes {
		t.Fatalf("planned with sizes %v", p1)
	}

	p2, r2, err := PlanFor(d.Dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Source != "loaded" || !r2.Loaded || r2.Saved || r2.ProfileBatches != r1.ProfileBatches {
		t.Fatalf("second plan: %+v", r2)
	}
	if !slices.Equal(p1.Nodes(placement.KindFeature, placement.TierHost), p2.Nodes(placement.KindFeature, placement.TierHost)) {
		t.Fatal("loaded placement differs from the computed one")
	}

	// The dataset changed (committed again): stale, profiled again.
	m, err := dataset.Load(d.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range m.Files {
		files = append(files, f.Path)
	}
	if err := dataset.Commit(m, files, "test-recommit", nil); err != nil {
		t.Fatal(err)
	}
	_, r3, err := PlanFor(d.Dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	if r3.Source != "computed" || !strings.Contains(r3.StaleReason, "dataset changed") {
		t.Fatalf("after the dataset changed: %+v", r3)
	}
}

func TestPlanForRefusesBadInput(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 500, 4, 1, 4, rng)
	// Budgets are refused before the dataset is opened.
	if _, _, err := PlanFor(d.Dir+"/missing", PlanOptions{Fanouts: []int{2}, BatchSize: 10, HostBytes: -5}); err == nil || !strings.Contains(err.Error(), "-5") {
		t.Errorf("negative budget: %v", err)
	}
	for _, c := range []struct {
		opt  PlanOptions
		want string
	}{
		{PlanOptions{Fanouts: []int{2}, BatchSize: 10, GPUBytes: -7}, "-7"},
		{PlanOptions{Fanouts: []int{2}}, "batch size 0"},
		{PlanOptions{Fanouts: []int{2}, BatchSize: 10, Feature: "nope"}, "nope"},
	} {
		if _, _, err := PlanFor(d.Dir, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.opt, err, c.want)
		}
	}
	s, err := Open(d.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PlanPlacement(PlanOptions{Fanouts: []int{2}, BatchSize: 10, Feature: "y"}); err == nil || !strings.Contains(err.Error(), `"y"`) {
		t.Errorf("plan for another feature: %v", err)
	}
	s.Close()
	if _, _, err := s.PlanPlacement(PlanOptions{Fanouts: []int{2}, BatchSize: 10}); !errors.Is(err, ErrClosed) {
		t.Errorf("plan on a closed store: %v", err)
	}
	if _, err := os.Stat(d.Dir + "/" + placement.FileName); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("refused plans left a placement file: %v", err)
	}
}

func TestApplyPlacementGathersAndSamples(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 4000, 8, 2, 8, rng)
	hostBytes := int64(96 << 10)
	for _, onDisk := range []bool{false, true} {
		topo := int64(0)
		if onDisk {
			topo = -1
		}
		s, err := Open(d.Dir, Options{HostCacheBytes: hostBytes, TopologyMemoryBytes: topo, QueueDepth: 16})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		p, r, err := s.PlanPlacement(PlanOptions{Fanouts: []int{6, 3}, BatchSize: 200, HostBytes: hostBytes, Recompute: true})
		if err != nil {
			t.Fatal(err)
		}
		if r.TopologyInMemory == onDisk {
			t.Fatalf("report says topology in memory %v on a store with it on disk %v", r.TopologyInMemory, onDisk)
		}
		seeds := []int64{0, 7, 3999, 1234, 7}
		sopt := topology.SampleOptions{Fanouts: []int{5, 5}, Seed: 3}
		before, err := sampleOf(s, seeds, sopt)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ApplyPlacement(p); err != nil {
			t.Fatal(err)
		}
		if s.Placement() != p {
			t.Fatal("Placement() is not the applied placement")
		}
		var held []int64
		s.Host().Ranges(func(first, count int64) bool {
			for v := first; v < first+count; v++ {
				held = append(held, v)
			}
			return true
		})
		if want := p.Nodes(placement.KindFeature, placement.TierHost); !slices.Equal(held, want) {
			t.Fatalf("host tier holds %d rows, the plan %d", len(held), len(want))
		}
		if onDisk {
			n, _ := p.Used(placement.KindTopology, placement.TierHost)
			if c := s.Graph().(*topology.DiskCSC).CachedNodes(); c != n {
				t.Fatalf("disk topology cache does not hold the plan's %d lists", n)
			}
		}
		ids := make([]int64, 3000)
		for i := range ids {
			ids[i] = rng.Int64N(d.Count)
		}
		dst := make([]byte, int64(len(ids))*s.RowBytes())
		if err := s.Gather(ids, dst); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(dst, d.Want(ids)) {
			t.Fatal("gather after ApplyPlacement differs from the reference")
		}
		after, err := sampleOf(s, seeds, sopt)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(before.Nodes, after.Nodes) || !slices.Equal(before.Row, after.Row) || !slices.Equal(before.Col, after.Col) {
			t.Fatal("sample after ApplyPlacement differs")
		}
		// A placement of the whole budget that no longer fits a smaller cache is refused, and
		// the store keeps the one it had.
		big, _, err := s.PlanPlacement(PlanOptions{Fanouts: []int{6, 3}, BatchSize: 200, HostBytes: 4 * hostBytes, Policy: placement.FeaturesFirst})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ApplyPlacement(big); err == nil || !strings.Contains(err.Error(), "feature rows in memory") {
			t.Fatalf("oversized placement: %v", err)
		}
		if s.Placement() != p {
			t.Fatal("a refused placement replaced the applied one")
		}
		if err := s.ApplyPlacement(nil); err == nil {
			t.Fatal("nil placement accepted")
		}
	}
}

func TestSavedPlacement(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 2000, 8, 1, 6, rng)
	if _, err := SavedPlacement(d.Dir, Options{HostCacheBytes: 1 << 16}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("no saved placement: %v", err)
	}
	p, _, err := PlanFor(d.Dir, PlanOptions{Fanouts: []int{4, 2}, BatchSize: 100, HostBytes: 1 << 16, Policy: placement.TopologyFirst})
	if err != nil {
		t.Fatal(err)
	}
	got, err := SavedPlacement(d.Dir, Options{HostCacheBytes: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	if got.Policy != p.Policy || !slices.Equal(got.Nodes(placement.KindFeature, placement.TierHost), p.Nodes(placement.KindFeature, placement.TierHost)) {
		t.Fatal("saved placement differs from the planned one")
	}
	if _, err := SavedPlacement(d.Dir, Options{HostCacheBytes: 1 << 17}); !errors.Is(err, placement.ErrStale) {
		t.Fatalf("other budget: %v", err)
	}
	s, err := Open(d.Dir, Options{HostCacheBytes: 1 << 16, Placement: got})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ids := []int64{0, 1, 1999, 42}
	dst := make([]byte, int64(len(ids))*s.RowBytes())
	if err := s.Gather(ids, dst); err != nil || !slices.Equal(dst, d.Want(ids)) {
		t.Fatalf("gather with the saved placement: %v", err)
	}
}

// TestApplyPlacementWhileSampling swaps placements (and the disk topology cache) while samplers
// and gathers run: every sample equals the in-memory one, every gather the reference.
func TestApplyPlacementWhileSampling(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 3000, 8, 1, 8, rng)
	mem, err := Open(d.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	s, err := Open(d.Dir, Options{HostCacheBytes: 64 << 10, TopologyMemoryBytes: -1, QueueDepth: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var plans []*placement.Placement
	for _, pol := range []placement.Policy{placement.TopologyFirst, placement.Unified, placement.Random, placement.None} {
		p, _, err := s.PlanPlacement(PlanOptions{Fanouts: []int{5, 3}, BatchSize: 100, HostBytes: 64 << 10, Policy: pol, Recompute: true})
		if err != nil {
			t.Fatal(err)
		}
		plans = append(plans, p)
	}
	done := make(chan struct{})
	errs := make(chan error, 3)
	for w := range 2 {
		go func() {
			r := newRand(t)
			for i := 0; ; i++ {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				seeds := []int64{r.Int64N(d.Count), r.Int64N(d.Count), int64(w)}
				opt := topology.SampleOptions{Fanouts: []int{4, 3}, Seed: uint64(i)}
				a, err := sampleOf(mem, seeds, opt)
				if err != nil {
					errs <- err
					return
				}
				b, err := sampleOf(s, seeds, opt)
				if err != nil {
					errs <- err
					return
				}
				if !slices.Equal(a.Nodes, b.Nodes) || !slices.Equal(a.Col, b.Col) {
					errs <- errors.New("sample during ApplyPlacement differs from the in-memory one")
					return
				}
				dst := make([]byte, int64(len(b.Nodes))*s.RowBytes())
				if err := s.Gather(b.Nodes, dst); err != nil {
					errs <- err
					return
				}
				if !slices.Equal(dst, d.Want(b.Nodes)) {
					errs <- errors.New("gather during ApplyPlacement differs from the reference")
					return
				}
			}
		}()
	}
	for i := range 12 {
		if err := s.ApplyPlacement(plans[i%len(plans)]); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
