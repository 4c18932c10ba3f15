package featurestore

import (
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/placement"
	"github.com/tierfs/tierfs/tiers/host"
	"github.com/tierfs/tierfs/topology"
)

// planFor profiles the in-memory store's graph and plans with budget (host only).
func planFor(t *testing.T, mem *Store, hostBytes int64, policy placement.Policy) (*placement.Hotness, *placement.Placement) {
	t.Helper()
	seeds := make([]int64, mem.NumNodes()/4)
	for i := range seeds {
		seeds[i] = int64(i * 4)
	}
	h, err := placement.Profile(mem.Graph(), seeds, placement.ProfileOptions{Fanouts: []int{8, 4}, BatchSize: 100, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	sizes, err := placement.SizesOf(mem.Graph(), mem.RowBytes(), 4)
	if err != nil {
		t.Fatal(err)
	}
	sizes.FeatureOverhead = host.IndexBytesPerRow
	p, err := placement.Plan(h, sizes, placement.Budget{HostBytes: hostBytes, ChunkBytes: 1 << 10}, policy)
	if err != nil {
		t.Fatal(err)
	}
	return h, p
}

// sampleRequests is the number of disk requests one Sample makes on s.
func sampleRequests(t *testing.T, s *Store, seeds []int64, opt topology.SampleOptions) (*topology.Sample, uint64) {
	t.Helper()
	before := s.Stats().IO.Requests
	out, err := sampleOf(s, seeds, opt)
	if err != nil {
		t.Fatal(err)
	}
	return out, s.Stats().IO.Requests - before
}

func TestPartialTopologyCacheMatchesMemory(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 4000, 4, 1, 12, rng)
	mem, err := Open(d.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	// A budget of about a third of the topology: part of it cached, part on disk.
	topoBytes := 8*mem.Graph().NumEdges() + 8*mem.NumNodes()
	_, p := planFor(t, mem, topoBytes/3, placement.TopologyFirst)
	cachedNodes, _ := p.Used(placement.KindTopology, placement.TierHost)
	if cachedNodes == 0 || cachedNodes == mem.NumNodes() {
		t.Fatalf("plan caches the topology of %d of %d nodes; want a part", cachedNodes, mem.NumNodes())
	}
	disk, err := Open(d.Dir, Options{TopologyMemoryBytes: -1, QueueDepth: 16, Placement: p})
	if err != nil {
		t.Fatal(err)
	}
	defer disk.Close()
	dg, ok := disk.Graph().(*topology.DiskCSC)
	if !ok || dg.CachedNodes() != cachedNodes {
		t.Fatalf("disk graph %T does not cache the plan's %d nodes", disk.Graph(), cachedNodes)
	}
	for round := range 4 {
		seeds := make([]int64, 300)
		for i := range seeds {
			seeds[i] = rng.Int64N(d.Count)
		}
		opt := topology.SampleOptions{Fanouts: []int{10, 5, -1}, Replace: round%2 == 1, Seed: rng.Uint64()}
		a, err := sampleOf(mem, seeds, opt)
		if err != nil {
			t.Fatal(err)
		}
		b, err := sampleOf(disk, seeds, opt)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.Nodes, b.Nodes) || !slices.Equal(a.Row, b.Row) || !slices.Equal(a.Col, b.Col) {
			t.Fatalf("round %d (replace=%v): samples with a partial topology cache and in memory differ (%d vs %d nodes)", round, opt.Replace, len(a.Nodes), len(b.Nodes))
		}
	}
}

// TestDiskGraphReadsPointersOnce checks the request count of one Sample: each hop reads the index
// pointers of its uncached targets once and one entry per sampled position; a fully cached
// topology reads nothing.
func TestDiskGraphReadsPointersOnce(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 2000, 4, 1, 8, rng)
	mem, err := Open(d.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	disk, err := Open(d.Dir, Options{TopologyMemoryBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer disk.Close()
	seeds := []int64{1, 5, 9, 5, 1000, 1999}
	opt := topology.SampleOptions{Fanouts: []int{4, 3}, Seed: rng.Uint64()}
	out, reqs := sampleRequests(t, disk, seeds, opt)
	var want uint64
	for h := range opt.Fanouts {
		targets := out.NodesPerHop[h]
		if h == 0 {
			targets = 5 // distinct seeds
		}
		want += uint64(targets) + uint64(out.EdgesPerHop[h])
	}
	if reqs != want {
		t.Fatalf("one sample made %d disk requests, want %d (pointers once per target plus one per sampled edge)", reqs, want)
	}
	// Every list cached: no disk reads, same sample.
	_, p := planFor(t, mem, 1<<30, placement.Random) // places every item, read or not
	full, err := Open(d.Dir, Options{TopologyMemoryBytes: -1, HostCacheBytes: 1 << 30, Placement: p})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	if cached, _ := p.Used(placement.KindTopology, placement.TierHost); cached != full.NumNodes() {
		t.Fatalf("plan caches %d of %d lists, want all", cached, full.NumNodes())
	}
	got, reqs := sampleRequests(t, full, seeds, opt)
	if !slices.Equal(got.Nodes, out.Nodes) || !slices.Equal(got.Row, out.Row) {
		t.Fatalf("sample with the topology cached differs from the disk one")
	}
	if reqs != 0 {
		t.Fatalf("with every list cached, a sample made %d disk requests", reqs)
	}
}

func TestPlacementFillsHostTier(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 3000, 8, 1, 6, rng)
	mem, err := Open(d.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	hostBytes := int64(200 * (32 + 16))
	_, p := planFor(t, mem, hostBytes, placement.FeaturesFirst)
	want := p.Nodes(placement.KindFeature, placement.TierHost)
	if len(want) == 0 {
		t.Fatal("plan places no features in host memory")
	}
	s, err := Open(d.Dir, Options{HostCacheBytes: hostBytes, Placement: p})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var held []int64
	s.Host().Ranges(func(first, count int64) bool {
		for v := first; v < first+count; v++ {
			held = append(held, v)
		}
		return true
	})
	if !slices.Equal(held, want) {
		t.Fatalf("host tier holds %d rows, the plan %d (first %v vs %v)", len(held), len(want), held[:min(5, len(held))], want[:min(5, len(want))])
	}
	if f := s.Stats().Fill; f.ScanRows+f.RandomRows != int64(len(want)) || f.ScanChunks+f.RandomChunks != 1 {
		t.Fatalf("the fill of %d rows is counted as %+v", len(want), f)
	}
	ids := []int64{want[0], 0, 2999, want[len(want)-1]}
	dst := make([]byte, int64(len(ids))*s.RowBytes())
	if err := s.Gather(ids, dst); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dst, d.Want(ids)) {
		t.Fatal("gather with a planned host tier returns wrong rows")
	}
	// A plan larger than the cache is an error naming both.
	if _, err := Open(d.Dir, Options{HostCacheBytes: hostBytes / 2, Placement: p}); err == nil || !strings.Contains(err.Error(), "feature rows in memory") {
		t.Fatalf("plan larger than the host cache: %v", err)
	}
	// A plan of another dataset shape is an error.
	other, err := placement.Plan(&placement.Hotness{Topology: make([]uint32, 10), Feature: make([]uint32, 10)},
		placement.Sizes{RowBytes: 32, Degrees: make([]int64, 10)}, placement.Budget{}, placement.None)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(d.Dir, Options{Placement: other}); err == nil || !strings.Contains(err.Error(), "placement of 10 nodes") {
		t.Fatalf("placement of another node count: %v", err)
	}
}
