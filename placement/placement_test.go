package placement

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/topology"
)

// smallGraph: 0 <- {1, 2}, 1 <- {3}, 2 <- {}, 3 <- {0}.
func smallGraph(t *testing.T) *topology.CSC {
	g, err := topology.FromEdges(4, []int64{1, 2, 3, 0}, []int64{0, 0, 1, 3})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestProfileCounts(t *testing.T) {
	g := smallGraph(t)
	h, err := Profile(g, []int64{0, 0}, ProfileOptions{Fanouts: []int{-1, -1}, BatchSize: 2, Epochs: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Hop 0 reads 0's list once (duplicate seed); it reaches 1 and 2, whose lists hop 1 reads;
	// that reaches 3. Nodes = [0 0 1 2 3].
	if want := []uint32{1, 1, 1, 0}; !slices.Equal(h.Topology, want) {
		t.Errorf("topology hotness %v, want %v", h.Topology, want)
	}
	if want := []uint32{2, 1, 1, 1}; !slices.Equal(h.Feature, want) {
		t.Errorf("feature hotness %v, want %v", h.Feature, want)
	}
	if h.Batches != 1 || h.Seeds != 2 {
		t.Errorf("%d batches of %d seeds, want 1 of 2", h.Batches, h.Seeds)
	}
	// Three batches of 3 seeds over [0 1 2 3]: epoch 0 is [0 1 2] [3], epoch 1 starts with 3 of
	// a permutation.
	h, err = Profile(g, []int64{0, 1, 2, 3}, ProfileOptions{Fanouts: []int{0}, BatchSize: 3, Batches: 3})
	if err != nil {
		t.Fatal(err)
	}
	var sum uint32
	for _, c := range h.Feature {
		sum += c
	}
	if sum != 7 || slices.Min(h.Feature) < 1 || slices.Max(h.Feature) > 2 || slices.Max(h.Topology) != 0 || h.Batches != 3 || h.Seeds != 7 {
		t.Errorf("fanout 0: feature %v (want 7 reads, each node 1 or 2), topology %v (want zeros), %d batches of %d seeds (want 3, 7)",
			h.Feature, h.Topology, h.Batches, h.Seeds)
	}
	// Counts are 32-bit and a node is counted at most once a batch: more batches are refused.
	if _, err := Profile(g, []int64{0, 1, 2, 3}, ProfileOptions{Fanouts: []int{1}, BatchSize: 1, Epochs: math.MaxInt32}); err == nil ||
		!strings.Contains(err.Error(), "too many to count in 32 bits") {
		t.Errorf("a profile of 2^33 batches: error %v, want one saying the counts would overflow", err)
	}
}

func TestBadInputs(t *testing.T) {
	g := smallGraph(t)
	h := &Hotness{Topology: make([]uint32, 4), Feature: make([]uint32, 4)}
	sizes := Sizes{RowBytes: 16, Degrees: []int64{2, 1, 0, 1}}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"zero batch", func() error { _, err := Profile(g, []int64{0}, ProfileOptions{Fanouts: []int{1}}); return err }(), "batch size 0"},
		{"no fanouts", func() error { _, err := Profile(g, []int64{0}, ProfileOptions{BatchSize: 1}); return err }(), "Fanouts is empty"},
		{"bad seed", func() error {
			_, err := Profile(g, []int64{7}, ProfileOptions{Fanouts: []int{1}, BatchSize: 1})
			return err
		}(), "seeds[0] = 7"},
		{"row size", func() error {
			_, err := Plan(h, Sizes{RowBytes: -3, Degrees: sizes.Degrees}, Budget{}, Unified)
			return err
		}(), "row size -3"},
		{"degrees", func() error {
			_, err := Plan(h, Sizes{RowBytes: 16, Degrees: []int64{1}}, Budget{}, Unified)
			return err
		}(), "1 degrees but hotness counts 4"},
		{"hotness", func() error {
			_, err := Plan(&Hotness{Topology: make([]uint32, 3), Feature: make([]uint32, 4)}, sizes, Budget{}, Unified)
			return err
		}(), "3 topology counts but 4 feature"},
		{"budget", func() error { _, err := Plan(h, sizes, Budget{HostBytes: -5}, Unified); return err }(), "-5 host bytes"},
		{"chunk", func() error { _, err := Plan(h, sizes, Budget{ChunkBytes: -1}, Unified); return err }(), "chunk of -1 bytes"},
		{"policy", func() error { _, err := Plan(h, sizes, Budget{}, Policy(99)); return err }(), "unknown policy 99"},
		{"policy name", func() error { _, err := ParsePolicy("hottest"); return err }(), `unknown policy "hottest"`},
		{"cost sizes", func() error {
			p, _ := Plan(h, sizes, Budget{}, None)
			_, err := Cost(p, h, Sizes{RowBytes: 32, Degrees: sizes.Degrees})
			return err
		}(), "row 32"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, c.err, c.want)
		}
	}
	for _, p := range Policies() {
		if got, err := ParsePolicy(p.String()); err != nil || got != p {
			t.Errorf("ParsePolicy(%q) = %v, %v", p, got, err)
		}
	}
}

func TestPlanExtremes(t *testing.T) {
	g := rmatGraph(t, 10, 8, 5)
	seeds := make([]int64, 200)
	for i := range seeds {
		seeds[i] = int64(i * 5)
	}
	h, err := Profile(g, seeds, ProfileOptions{Fanouts: []int{5, 5}, BatchSize: 50, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	sizes, err := SizesOf(g, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	cost := func(b Budget, pol Policy) Traffic {
		p, err := Plan(h, sizes, b, pol)
		if err != nil {
			t.Fatal(err)
		}
		checkBudget(t, p, b.withDefaults())
		tr, err := Cost(p, h, sizes)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	none := cost(Budget{}, Unified)
	if none.Total.Reads[TierGPU]+none.Total.Reads[TierHost] != 0 || none.Total.SSDBytes == 0 || none.Total.SSDBytes != none.Total.PCIeBytes {
		t.Errorf("no budget: %+v", none.Total)
	}
	if none != cost(Budget{GPUBytes: 1 << 30}, None) {
		t.Errorf("Unified with no budget differs from None")
	}
	gpu := cost(Budget{GPUBytes: 1 << 30}, Unified)
	if gpu.Total.PCIeBytes != 0 || gpu.Total.SSDBytes != 0 {
		t.Errorf("everything in the GPU still moves %d PCIe and %d SSD bytes", gpu.Total.PCIeBytes, gpu.Total.SSDBytes)
	}
	hostOnly := cost(Budget{HostBytes: 1 << 30}, Unified)
	if hostOnly.Total.SSDBytes != 0 || hostOnly.Total.PCIeBytes == 0 {
		t.Errorf("everything in host memory: %d SSD bytes, %d PCIe bytes", hostOnly.Total.SSDBytes, hostOnly.Total.PCIeBytes)
	}
	if pb := none.PerBatch(); pb.Total.SSDBytes != none.Total.SSDBytes/uint64(h.Batches) {
		t.Errorf("per batch %d, total %d over %d batches", pb.Total.SSDBytes, none.Total.SSDBytes, h.Batches)
	}
}

func TestSaveLoad(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "manifest.json")
	if err := os.WriteFile(manifest, []byte(`{"format":"tierfs-dataset","version":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	g := smallGraph(t)
	h, err := Profile(g, []int64{0, 1, 2, 3}, ProfileOptions{Fanouts: []int{2, 2}, BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	sizes, _ := SizesOf(g, 64, 4)
	p, err := Plan(h, sizes, Budget{HostBytes: 100}, Unified)
	if err != nil {
		t.Fatal(err)
	}
	want := InputsOf(h, p)
	if _, _, err := Load(dir, want); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("load before save: %v", err)
	}
	if err := Save(dir, h, p); err != nil {
		t.Fatal(err)
	}
	h2, p2, err := Load(dir, Inputs{Fanouts: []int{2, 2}, BatchSize: 2, Budget: Budget{HostBytes: 100}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h2.Topology, h.Topology) || !slices.Equal(h2.Feature, h.Feature) || h2.Batches != h.Batches || p2.String() != p.String() || !slices.Equal(p2.tiers, p.tiers) {
		t.Fatalf("round trip changed the placement:\n%v\n%v", p, p2)
	}
	// Other plan inputs: stale, hotness kept.
	other := want
	other.Policy = FeaturesFirst
	if h3, p3, err := Load(dir, other); !errors.Is(err, ErrStale) || h3 == nil || p3 != nil || !strings.Contains(err.Error(), "features-first") {
		t.Fatalf("load with another policy: %v, %v, %v", h3, p3, err)
	}
	other = want
	other.Fanouts = []int{3, 2}
	if h3, _, err := Load(dir, other); !errors.Is(err, ErrStale) || h3 != nil {
		t.Fatalf("load with other fanouts: %v", err)
	}
	// Corrupt: one flipped byte.
	path := filepath.Join(dir, FileName)
	data, _ := os.ReadFile(path)
	bad := slices.Clone(data)
	bad[len(bad)-20] ^= 1
	os.WriteFile(path, bad, 0o644)
	if _, _, err := Load(dir, want); !errors.Is(err, dataset.ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("corrupt file: %v", err)
	}
	os.WriteFile(path, data[:10], 0o644)
	if _, _, err := Load(dir, want); !errors.Is(err, dataset.ErrCorrupt) {
		t.Fatalf("truncated file: %v", err)
	}
	// Changed dataset: stale.
	os.WriteFile(path, data, 0o644)
	if err := os.WriteFile(manifest, []byte(`{"format":"tierfs-dataset","version":1} `), 0o644); err != nil {
		t.Fatal(err)
	}
	var stale *StaleError
	if _, _, err := Load(dir, want); !errors.As(err, &stale) || !strings.Contains(err.Error(), "dataset changed") {
		t.Fatalf("changed manifest: %v", err)
	}
}
