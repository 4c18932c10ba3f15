package placement

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/internal/sysinfo"
	"github.com/tierfs/tierfs/topology"
)

// fakeStore is a Store over an in-memory graph and a dataset directory holding only a manifest
// (all that Save and Load read of it).
type fakeStore struct {
	dir        string
	feature    dataset.FeatureSpec
	g          topology.Graph
	onDisk     bool
	blockSize  int64
	splits     map[string][]int64
	splitReads int
}

func (f *fakeStore) Dir() string                   { return f.dir }
func (f *fakeStore) Feature() *dataset.FeatureSpec { return &f.feature }
func (f *fakeStore) NumNodes() int64               { return f.g.NumNodes() }
func (f *fakeStore) Graph() topology.Graph         { return f.g }
func (f *fakeStore) TopologyOnDisk() bool          { return f.onDisk }
func (f *fakeStore) SplitNames() []string          { return slices.Sorted(maps.Keys(f.splits)) }

func (f *fakeStore) PlacementSizes() (Sizes, error) {
	s, err := SizesOf(f.g, f.feature.RowBytes, 4)
	s.BlockSize, s.FeatureOverhead, s.TopologyOverhead = f.blockSize, 16, 8
	return s, err
}

func (f *fakeStore) Split(name string) ([]int64, error) {
	f.splitReads++
	ids, ok := f.splits[name]
	if !ok {
		return nil, errors.New("no split " + name)
	}
	return slices.Clone(ids), nil
}

// newFakeStore is a store of 2048 nodes of 64-byte rows with its topology on disk, in a fresh
// dataset directory.
func newFakeStore(t *testing.T) *fakeStore {
	t.Helper()
	dir := t.TempDir()
	writeManifest(t, dir, "")
	return &fakeStore{dir: dir, feature: dataset.FeatureSpec{Name: "x", RowBytes: 64}, g: rmatGraph(t, 11, 8, 1),
		onDisk: true, blockSize: 4096}
}

// writeManifest writes a manifest.json that differs for every extra.
func writeManifest(t *testing.T, dir, extra string) {
	t.Helper()
	data := `{"format":"tierfs-dataset","version":1}` + extra
	if err := os.WriteFile(filepath.Join(dir, dataset.ManifestName), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPlanStoreComputesThenLoads(t *testing.T) {
	st := newFakeStore(t)
	opt := PlanOptions{Fanouts: []int{5, 3}, BatchSize: 128, HostBytes: 64 << 10}
	p1, r1, err := PlanStore(st, opt)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Source != "computed" || r1.Loaded || !r1.Saved || r1.SaveError != "" || r1.StaleReason != "no saved placement" ||
		r1.ProfileBatches%16 != 0 || r1.ProfileBatches < 32 || r1.ProfileSeeds != 128*int64(r1.ProfileBatches) || len(r1.Convergence) != r1.ProfileBatches/16-1 || r1.SeedSource != "all nodes" ||
		r1.Dataset != st.dir || r1.File != filepath.Join(st.dir, FileName) || r1.Feature != "x" || r1.Nodes != 2048 ||
		r1.RowBytes != 64 || r1.TopologyInMemory || r1.Policy != "unified" || r1.Budget.HostBytes != 64<<10 {
		t.Fatalf("first plan: %+v", r1)
	}
	if len(r1.Comparison) != len(Policies()) {
		t.Fatalf("comparison has %d policies, want %d", len(r1.Comparison), len(Policies()))
	}
	var chosen int
	for i, c := range r1.Comparison {
		if c.Policy != Policies()[i].String() {
			t.Fatalf("comparison %d is %s, want %s", i, c.Policy, Policies()[i])
		}
		if c.Chosen {
			chosen++
			if c.Policy != "unified" {
				t.Fatalf("chosen policy %s, want unified", c.Policy)
			}
		}
		if c.TopologyBytes+c.FeatureBytes > opt.HostBytes {
			t.Fatalf("%s fills %d+%d bytes of a %d-byte budget", c.Policy, c.TopologyBytes, c.FeatureBytes, opt.HostBytes)
		}
		if c.PerBatch.Total.PCIeBytes != c.PCIeBytesPerBatch || c.PerBatch.Total.SSDBytes != c.SSDBytesPerBatch {
			t.Fatalf("%s: per-batch PCIe %d vs %d", c.Policy, c.PerBatch.Total.PCIeBytes, c.PCIeBytesPerBatch)
		}
	}
	none := r1.Comparison[slices.IndexFunc(r1.Comparison, func(c PolicyCost) bool { return c.Policy == "none" })]
	if chosen != 1 || r1.Comparison[0].PCIeBytesPerBatch > none.PCIeBytesPerBatch || none.TopologyBytes+none.FeatureBytes != 0 {
		t.Fatalf("comparison: %+v", r1.Comparison)
	}
	// Usage: GPU, host, SSD, topology then feature each; it adds up to every node per kind.
	if len(r1.Usage) != 6 {
		t.Fatalf("usage has %d entries", len(r1.Usage))
	}
	for i, u := range r1.Usage {
		k, tier := []Kind{KindTopology, KindFeature}[i%2], []Tier{TierGPU, TierHost, TierSSD}[i/2]
		items, bytes := p1.Used(k, tier)
		if u.Kind != k.String() || u.Tier != tier.String() || u.Items != items || u.Bytes != bytes {
			t.Fatalf("usage %d: %+v, want %s %s %d items %d bytes", i, u, k, tier, items, bytes)
		}
	}
	if _, err := os.Stat(r1.File); err != nil {
		t.Fatal(err)
	}

	p2, r2, err := PlanStore(st, opt)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Source != "loaded" || !r2.Loaded || r2.Saved || r2.StaleReason != "" || r2.SeedSource != "" || r2.ProfileBatches != r1.ProfileBatches {
		t.Fatalf("second plan: %+v", r2)
	}
	for _, k := range []Kind{KindTopology, KindFeature} {
		if !slices.Equal(p1.Nodes(k, TierHost), p2.Nodes(k, TierHost)) {
			t.Fatalf("loaded %s placement differs from the computed one", k)
		}
	}
	if !slices.Equal(r1.Comparison, r2.Comparison) {
		t.Fatal("the loaded placement's comparison differs from the computed one")
	}

	// Another budget: the saved profile is reused and the plan made again.
	opt.HostBytes = 32 << 10
	_, r3, err := PlanStore(st, opt)
	if err != nil {
		t.Fatal(err)
	}
	if r3.Source != "replanned" || !r3.Saved || !strings.Contains(r3.StaleReason, "planned as") || r3.Budget.HostBytes != 32<<10 ||
		r3.ProfileBatches != r1.ProfileBatches || r3.ProfileSeconds != 0 {
		t.Fatalf("after a budget change: %+v", r3)
	}
	// Other item sizes (the store's block size): planned again from the saved profile.
	st.blockSize = 8192
	if _, r, err := PlanStore(st, opt); err != nil || r.Source != "replanned" || !strings.Contains(r.StaleReason, "8192") {
		t.Fatalf("after a block size change: %+v, %v", r, err)
	}
	if _, r, err := PlanStore(st, opt); err != nil || r.Source != "loaded" {
		t.Fatalf("unchanged sizes: %+v, %v", r, err)
	}
	// Other fanouts: profiled again.
	opt.Fanouts = []int{4}
	if _, r, err := PlanStore(st, opt); err != nil || r.Source != "computed" || !strings.Contains(r.StaleReason, "fanouts") {
		t.Fatalf("after a fanout change: %+v, %v", r, err)
	}
	if _, r, err := PlanStore(st, opt); err != nil || r.Source != "loaded" {
		t.Fatalf("unchanged: %+v, %v", r, err)
	}
	// Recompute ignores the saved one.
	opt.Recompute = true
	if _, r, err := PlanStore(st, opt); err != nil || r.Source != "computed" || r.StaleReason != "recompute asked for" {
		t.Fatalf("recompute: %+v, %v", r, err)
	}
	opt.Recompute = false
	// The dataset changed: stale, profiled again.
	writeManifest(t, st.dir, " ")
	if _, r, err := PlanStore(st, opt); err != nil || r.Source != "computed" || !strings.Contains(r.StaleReason, "dataset changed") {
		t.Fatalf("after the dataset changed: %+v, %v", r, err)
	}
	// A damaged file: profiled again, and replaced.
	if err := os.WriteFile(r1.File, []byte("TFSPLACE garbage, not a placement"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, r, err := PlanStore(st, opt); err != nil || r.Source != "computed" || !r.Saved || !strings.Contains(r.StaleReason, "corrupt") {
		t.Fatalf("after damage: %+v, %v", r, err)
	}
	// A placement that cannot be saved is returned regardless, the reason in the report.
	os.Remove(filepath.Join(st.dir, dataset.ManifestName))
	if p, r, err := PlanStore(st, PlanOptions{Fanouts: []int{2}, BatchSize: 64, HostBytes: 1 << 10, Recompute: true}); err != nil ||
		p == nil || r.Saved || !strings.Contains(r.SaveError, "fingerprint") {
		t.Fatalf("unsaveable: %+v, %v", r, err)
	}
}

func TestPlanStoreSeeds(t *testing.T) {
	st := newFakeStore(t)
	train := []int64{5, 9, 77, 1500}
	st.splits = map[string][]int64{"val": {1, 2}, "train": train}
	// Fanout 0 reads no list: the features read are exactly the seeds'.
	opt := PlanOptions{Fanouts: []int{0}, BatchSize: 10, HostBytes: 1 << 20}
	hotSeeds := func(r *Report) []int64 {
		t.Helper()
		h, _, err := Load(st.dir, Inputs{Fanouts: opt.Fanouts, BatchSize: opt.BatchSize, Budget: r.Budget, Policy: opt.Policy})
		if err != nil {
			t.Fatal(err)
		}
		var hot []int64
		for v, c := range h.Feature {
			if c > 0 {
				hot = append(hot, int64(v))
			}
		}
		return hot
	}
	_, r, err := PlanStore(st, opt)
	if err != nil {
		t.Fatal(err)
	}
	if r.SeedSource != "train split" || r.ProfileBatches < 2 || r.ProfileSeeds != 4*int64(r.ProfileBatches) || st.splitReads != 1 || !slices.Equal(hotSeeds(r), train) {
		t.Fatalf("train split: %+v (split read %d times)", r, st.splitReads)
	}

	opt.Recompute, opt.Seeds = true, []int64{3, 4}
	if _, r, err = PlanStore(st, opt); err != nil || r.SeedSource != "given" || !slices.Equal(hotSeeds(r), opt.Seeds) || st.splitReads != 1 {
		t.Fatalf("given seeds: %+v, %v", r, err)
	}

	opt.Seeds = nil
	st.splits = map[string][]int64{"val": {1, 2}}
	opt.BatchSize = 1024
	if _, r, err = PlanStore(st, opt); err != nil || r.SeedSource != "all nodes" || r.ProfileBatches%2 != 0 || r.ProfileSeeds != 1024*int64(r.ProfileBatches) || len(hotSeeds(r)) != 2048 {
		t.Fatalf("all nodes: %+v, %v", r, err)
	}

	st.splits = map[string][]int64{"train": {}}
	if _, _, err := PlanStore(st, opt); err == nil || !strings.Contains(err.Error(), "train split of "+st.dir+" is empty") {
		t.Fatalf("empty train split: %v", err)
	}
	st.splits = nil
	st.g, _ = topology.FromEdges(0, nil, nil)
	if _, _, err := PlanStore(st, opt); err == nil || !strings.Contains(err.Error(), "all nodes of "+st.dir+" is empty") {
		t.Fatalf("no nodes: %v", err)
	}
}

// A store holding its topology in memory gets plans for features alone; the saved profile keeps
// the topology's counts.
func TestPlanStoreTopologyInMemory(t *testing.T) {
	for _, onDisk := range []bool{true, false} {
		st := newFakeStore(t)
		st.onDisk = onDisk
		opt := PlanOptions{Fanouts: []int{5, 3}, BatchSize: 128, HostBytes: 1 << 30, Policy: TopologyFirst}
		p, r, err := PlanStore(st, opt)
		if err != nil {
			t.Fatal(err)
		}
		topo, _ := p.Used(KindTopology, TierHost)
		if r.TopologyInMemory == onDisk || (topo > 0) != onDisk {
			t.Fatalf("topology on disk %v: report says in memory %v, the plan holds %d lists", onDisk, r.TopologyInMemory, topo)
		}
		// The comparison costs the plans under the same profile: no topology reads at all when
		// the store holds the topology.
		for _, c := range r.Comparison {
			if reads := c.PerBatch.Topology.Reads; (reads != [NumTiers]uint64{}) != onDisk {
				t.Fatalf("topology on disk %v: %s reads topology %v", onDisk, c.Policy, reads)
			}
		}
		h, _, err := Load(st.dir, Inputs{Fanouts: opt.Fanouts, BatchSize: opt.BatchSize, Budget: p.Budget, Policy: opt.Policy})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Max(h.Topology) == 0 {
			t.Fatal("the saved profile lost the topology's counts")
		}
	}
}

func TestPlanStoreRefusesBadInput(t *testing.T) {
	avail, err := sysinfo.MemAvailable()
	if err != nil {
		t.Skip(err)
	}
	if avail <= 0 {
		t.Fatalf("MemAvailable %d", avail)
	}
	st := newFakeStore(t)
	for _, c := range []struct {
		opt  PlanOptions
		want string
	}{
		{PlanOptions{Fanouts: []int{2}, BatchSize: 10, HostBytes: -5}, "host budget of -5 bytes"},
		{PlanOptions{Fanouts: []int{2}, BatchSize: 10, GPUBytes: -7}, "GPU budget of -7 bytes"},
		{PlanOptions{Fanouts: []int{2}, BatchSize: 10, HostBytes: 2 * avail}, "available memory"},
		{PlanOptions{BatchSize: 10}, "fanouts"},
		{PlanOptions{Fanouts: []int{2}}, "batch size 0"},
		{PlanOptions{Fanouts: []int{2}, BatchSize: 10, Batches: -1}, "-1 batches"},
		{PlanOptions{Fanouts: []int{2}, BatchSize: 10, TimeBudget: -1}, "time budget -1ns"},
		{PlanOptions{Fanouts: []int{2}, BatchSize: 10, Policy: numPolicies}, "unknown policy 7"},
		{PlanOptions{Fanouts: []int{2}, BatchSize: 10, Seeds: []int64{}}, "seed list is empty"},
		{PlanOptions{Fanouts: []int{2}, BatchSize: 10, Seeds: []int64{1, 5000}}, "5000"},
		{PlanOptions{Fanouts: []int{2}, BatchSize: 10, Feature: "nope"}, `feature "nope" on a store of feature "x"`},
	} {
		if _, _, err := PlanStore(st, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.opt, err, c.want)
		}
	}
	st.g = nil
	if _, _, err := PlanStore(st, PlanOptions{Fanouts: []int{2}, BatchSize: 10}); err == nil || !strings.Contains(err.Error(), "no topology") || !strings.Contains(err.Error(), st.dir) {
		t.Errorf("no topology: %v", err)
	}
	if _, err := os.Stat(filepath.Join(st.dir, FileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("refused plans left a placement file: %v", err)
	}
}

// The report's JSON names are what `tierfs place --json` prints and capi and python parse.
func TestReportJSONNames(t *testing.T) {
	st := newFakeStore(t)
	_, r, err := PlanStore(st, PlanOptions{Fanouts: []int{3}, BatchSize: 256, HostBytes: 16 << 10, GPUBytes: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	keys := func(v any) []string { return slices.Sorted(maps.Keys(v.(map[string]any))) }
	check := func(what string, v any, want ...string) {
		t.Helper()
		slices.Sort(want)
		if k := keys(v); !slices.Equal(k, want) {
			t.Errorf("%s has keys %v, want %v", what, k, want)
		}
	}
	check("report", got, "dataset", "file", "source", "loaded", "stale_reason", "saved", "feature", "nodes", "row_bytes",
		"policy", "budget", "fanouts", "batch_size", "profile_batches", "profile_seeds", "seed_source", "profile_seconds", "convergence",
		"plan_seconds", "topology_in_memory", "usage", "comparison")
	check("budget", got["budget"], "gpu_bytes", "host_bytes", "chunk_bytes")
	check("usage", got["usage"].([]any)[0], "kind", "tier", "items", "bytes")
	c := got["comparison"].([]any)[0]
	check("comparison", c, "policy", "chosen", "pcie_bytes_per_batch", "ssd_bytes_per_batch", "topology_memory_bytes",
		"feature_memory_bytes", "per_batch")
	pb := c.(map[string]any)["per_batch"]
	check("per_batch", pb, "topology", "feature", "total")
	check("per_batch.total", pb.(map[string]any)["total"], "reads", "transactions", "pcie_bytes", "ssd_bytes")

	// save_error appears when saving failed.
	os.Remove(filepath.Join(st.dir, dataset.ManifestName))
	_, r, err = PlanStore(st, PlanOptions{Fanouts: []int{3}, BatchSize: 256, Recompute: true})
	if err != nil {
		t.Fatal(err)
	}
	data, _ = json.Marshal(r)
	if !strings.Contains(string(data), `"save_error":"placement: fingerprint of dataset `) {
		t.Errorf("report of a failed save: %s", data)
	}
}
