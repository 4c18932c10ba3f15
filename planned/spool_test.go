package planned

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/internal/wfs"
)

// planFiles is every file of plan directory dir, by name, the index with its planning time
// zeroed (the one thing two runs write differently); it fails on anything else in dir (a spool
// left behind).
func planFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			t.Fatalf("%s holds %s, not a file of the plan", dir, e.Name())
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == EpochIndexFile {
			var idx epochIndex
			if err := json.Unmarshal(data, &idx); err != nil {
				t.Fatal(err)
			}
			idx.PlanSecs = 0
			if data, err = json.Marshal(&idx); err != nil {
				t.Fatal(err)
			}
		}
		out[e.Name()] = data
	}
	return out
}

// TestSpooledPlanEqualsRedrawn: with PlaceTiers, a plan whose packing pass takes its samples from
// the placement pass's spool writes byte for byte the plan made by drawing every batch twice
// (packed files, samples files and index), through PlanEpochs and OpenEpochs, with and without a
// disk budget (one that stops the spool partway, too), and leaves no spool behind.
func TestSpooledPlanEqualsRedrawn(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 1500+rng.Int64N(2000), 8, 1+rng.IntN(2), 2+rng.IntN(8), rng)
	k := 2 + rng.IntN(2)
	base := epochOpts(t, d, k)
	base.BatchSize = 20 + rng.IntN(200)
	base.DropLast, base.Sample.Replace = rng.IntN(2) == 0, rng.IntN(2) == 0
	base.Sample.Fanouts = []int{1 + rng.IntN(10), 1 + rng.IntN(5)}
	base.Sample.Seed, base.ShuffleSeed = rng.Uint64(), rng.Uint64()
	base.PlaceTiers = true
	t.Logf("%d nodes, K %d, batch %d, fanouts %v, replace %v, drop_last %v", d.Count, k, base.BatchSize, base.Sample.Fanouts, base.Sample.Replace, base.DropLast)

	// plan makes a plan of o on a store opened afresh (placed by degree, then by the plan's
	// batches), spooling or drawing twice.
	plan := func(o EpochOptions, cache int64, spool, open bool) (*EpochPlanReport, error) {
		spoolSamples = spool
		defer func() { spoolSamples = true }()
		s := mustOpen(t, d.Dir, featurestore.Options{HostCacheBytes: cache})
		defer s.Close()
		if !open {
			return PlanEpochs(s.Session(), o)
		}
		o.Replan = true
		p, rep, err := OpenEpochs(s.Session(), o)
		if err != nil {
			return nil, err
		}
		defer p.Close()
		// Served from the spooled plan: the dataset's rows.
		b := rng.IntN(p.BatchesPerEpoch())
		got, err := oneLoad(p, k-1, b)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(got.Rows, d.Want(got.Sample.Nodes)) {
			return nil, fmt.Errorf("epoch %d batch %d: rows served differ from the dataset", k-1, b)
		}
		return rep, nil
	}
	row := d.RowBytes + 16
	for _, c := range []struct {
		name  string
		cache int64
		open  bool
		// budget is the disk budget as a function of the unbounded plan's report (nil: none).
		budget func(r *EpochPlanReport) int64
	}{
		{name: "unbounded", cache: row * d.Count * (1 + rng.Int64N(3)) / 5},
		{name: "OpenEpochs", cache: row * d.Count * (1 + rng.Int64N(3)) / 5, open: true},
		{name: "budget of K-1 epochs and a half", cache: row * d.Count / 4, budget: func(r *EpochPlanReport) int64 {
			return r.BytesWritten - r.EpochBytes[k-1]/2
		}},
		// Every row cached: the plan is its samples, so the spool passes the budget partway
		// through epoch K-1, the epoch the plan cannot hold either.
		{name: "all cached, budget stops the spool", cache: row * d.Count * 2, budget: func(r *EpochPlanReport) int64 {
			return r.BytesWritten - r.EpochBytes[k-1]/2
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := base
			o.Dir = filepath.Join(t.TempDir(), "twice")
			if c.budget != nil {
				full, err := plan(o, c.cache, false, false)
				if err != nil {
					t.Fatal(err)
				}
				o.DiskBudget = c.budget(full)
			}
			twice, err := plan(o, c.cache, false, c.open)
			if err != nil {
				t.Fatal(err)
			}
			o.Dir = filepath.Join(t.TempDir(), "spooled")
			once, err := plan(o, c.cache, true, c.open)
			if err != nil {
				t.Fatal(err)
			}
			if c.budget != nil && (once.Planned != k-1 || twice.Planned != k-1) {
				t.Fatalf("planned %d epochs spooled, %d drawn twice; want K-1 = %d within the budget", once.Planned, twice.Planned, k-1)
			}
			if once.RowsPacked != twice.RowsPacked || once.BytesWritten != twice.BytesWritten || once.SampleBytes != twice.SampleBytes || once.SampleBytes == 0 {
				t.Fatalf("spooled: %d rows, %d bytes (%d samples); drawn twice: %d rows, %d bytes (%d samples)",
					once.RowsPacked, once.BytesWritten, once.SampleBytes, twice.RowsPacked, twice.BytesWritten, twice.SampleBytes)
			}
			// The packing pass of the spooled plan drew no batch of the epochs it holds.
			if once.PlaceSampleSeconds <= 0 || twice.SampleSeconds <= 0 || once.SampleSeconds != 0 {
				t.Fatalf("sampling: spooled placement pass %.6fs, packing pass %.6fs (want 0); drawn twice packing pass %.6fs",
					once.PlaceSampleSeconds, once.SampleSeconds, twice.SampleSeconds)
			}
			a, b := planFiles(t, once.Dir), planFiles(t, twice.Dir)
			names := slices.Sorted(func(yield func(string) bool) {
				for n := range a {
					if !yield(n) {
						return
					}
				}
			})
			if len(a) != len(b) || len(a) != 2*once.Planned+1 {
				t.Fatalf("spooled plan files %v; drawn twice %d files; want %d", names, len(b), 2*once.Planned+1)
			}
			for _, n := range names {
				if !bytes.Equal(a[n], b[n]) {
					t.Fatalf("%s differs: %d bytes spooled, %d drawn twice", n, len(a[n]), len(b[n]))
				}
			}
			t.Logf("%s: %d epochs, %d rows packed, %d sample bytes: identical", c.name, once.Planned, once.RowsPacked, once.SampleBytes)
		})
	}
}

// TestCleanEpochPlanRemovesDeadSpools: a spool no planner holds (its planner was killed) goes
// with CleanEpochPlan; a live one stays.
func TestCleanEpochPlanRemovesDeadSpools(t *testing.T) {
	dir := t.TempDir()
	live, err := newSampleSpool(wfs.OS, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer live.close()
	dead := filepath.Join(dir, spoolPrefix+"killed")
	if err := os.Mkdir(dead, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dead, samplesFile(0)), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	did, err := CleanEpochPlan(dir)
	if err != nil || len(did) != 1 || !strings.Contains(did[0], dead) {
		t.Fatalf("clean: %v, %v", did, err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatalf("the dead spool is still there: %v", err)
	}
	if _, err := os.Stat(live.dir); err != nil {
		t.Fatalf("the live spool went: %v", err)
	}
	live.close()
	if _, err := os.Stat(live.dir); !os.IsNotExist(err) {
		t.Fatalf("a closed spool is still there: %v", err)
	}
}
