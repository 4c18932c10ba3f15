package planned

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/internal/wfs"
	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/tiers/host"
	"github.com/tierfs/tierfs/topology"
)

// epochOpts are plan options over d's train split.
func epochOpts(t *testing.T, d *testData, k int) EpochOptions {
	return EpochOptions{Dir: filepath.Join(t.TempDir(), "plan"), Seeds: d.Train, BatchSize: 97,
		Sample: topology.SampleOptions{Fanouts: []int{5, 3}, Seed: 11}, ShuffleSeed: 5, Epochs: k}
}

func TestEpochOrderIsAPermutation(t *testing.T) {
	seeds := []int64{9, 4, 7, 1, 3, 8, 2}
	a, b := EpochOrder(seeds, 1, 0), EpochOrder(seeds, 1, 1)
	if !slices.Equal(a, EpochOrder(seeds, 1, 0)) {
		t.Fatal("EpochOrder is not deterministic")
	}
	if slices.Equal(a, b) {
		t.Fatalf("epochs 0 and 1 have the same order %v", a)
	}
	for _, o := range [][]int64{a, b} {
		s := slices.Sorted(slices.Values(o))
		if !slices.Equal(s, slices.Sorted(slices.Values(seeds))) {
			t.Fatalf("order %v is not a permutation of %v", o, seeds)
		}
	}
	// The order is part of the plan format: pin it.
	if got := fmt.Sprint(EpochOrder([]int64{0, 1, 2, 3, 4, 5, 6, 7}, 42, 3)); got != pinnedOrder {
		t.Fatalf("EpochOrder(0..7, 42, 3) = %s, want %s", got, pinnedOrder)
	}
}

const pinnedOrder = "[1 7 4 3 2 0 6 5]"

// TestPlannedEpochsMatchFresh serves more epochs than were planned and checks every batch's
// seeds, sample and rows against a fresh draw with the derived seeds and a plain Gather, for
// memory tiers holding none, some and all rows.
func TestPlannedEpochsMatchFresh(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 3000, 24, 2, 6, rng)
	rowMem := d.RowBytes + 16
	for _, backend := range backends(t) {
		for _, cache := range []struct {
			name  string
			bytes int64
		}{{"none", 0}, {"some", rowMem * d.Count / 3}, {"all", rowMem * d.Count}} {
			name := fmt.Sprintf("%s/%s", backend, cache.name)
			s, err := featurestore.Open(d.Dir, featurestore.Options{HostCacheBytes: cache.bytes, IOBackend: backend})
			if err != nil {
				t.Fatal(err)
			}
			const k = 2
			o := epochOpts(t, d, k)
			o.DropLast = rng.IntN(2) == 0
			o.Sample.Replace = rng.IntN(2) == 0
			o.Sample.Seed, o.ShuffleSeed = rng.Uint64(), rng.Uint64()
			rep, err := PlanEpochs(s.Session(), o)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			nb := BatchesPerEpoch(len(d.Train), o.BatchSize, o.DropLast)
			if rep.Planned != k || rep.BatchesPerEpoch != nb || len(rep.EpochBytes) != k {
				t.Fatalf("%s: report %+v", name, rep)
			}
			if cache.name == "all" && rep.RowsPacked != 0 || cache.name != "all" && rep.RowsPacked == 0 {
				t.Fatalf("%s: %d rows packed", name, rep.RowsPacked)
			}
			p, _, err := OpenEpochs(s.Session(), o)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var rows int64
			for e := range 2*k + 1 {
				pe := e % k
				order := EpochOrder(d.Train, o.ShuffleSeed, pe)
				for b := range nb {
					got, err := oneLoad(p, e, b)
					if err != nil {
						t.Fatalf("%s: epoch %d batch %d: %v", name, e, b, err)
					}
					seeds := order[b*o.BatchSize : min((b+1)*o.BatchSize, len(order))]
					if !slices.Equal(got.Seeds, seeds) {
						t.Fatalf("%s: epoch %d batch %d: seeds differ", name, e, b)
					}
					opt := o.Sample
					opt.Seed = BatchSampleSeed(o.Sample.Seed, pe, b)
					opt.Workers = 1 + rng.IntN(3)
					want, err := storeSample(s, seeds, opt)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got.Sample.Nodes, want.Nodes) || !slices.Equal(got.Sample.Row, want.Row) ||
						!slices.Equal(got.Sample.Col, want.Col) || !slices.Equal(got.Sample.NodesPerHop, want.NodesPerHop) {
						t.Fatalf("%s: epoch %d batch %d: sample differs from a fresh draw", name, e, b)
					}
					plain := make([]byte, int64(len(want.Nodes))*d.RowBytes)
					if err := s.Gather(want.Nodes, plain); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got.Rows, plain) || !bytes.Equal(got.Rows, d.Want(want.Nodes)) {
						t.Fatalf("%s: epoch %d batch %d: rows differ from Gather", name, e, b)
					}
					var miss int64
					for _, v := range want.Nodes {
						if s.TierOf(v) == tiers.SSD {
							miss++
						}
					}
					if got.IO.Rows != miss || (miss > 0) != (got.IO.Reads > 0) {
						t.Fatalf("%s: epoch %d batch %d: %d packed rows in %d reads, want %d rows", name, e, b, got.IO.Rows, got.IO.Reads, miss)
					}
					rows += got.IO.Rows
				}
			}
			if st := p.Stats(); st.Rows != rows || st.Batches != int64((2*k+1)*nb) {
				t.Fatalf("%s: stats %+v, want %d rows", name, st, rows)
			}
			p.Close()
			s.Close()
		}
	}
}

// TestStalePlans opens a plan with each input changed.
func TestStalePlans(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 2000, 8, 1, 5, rng)
	other := writeSplitDataset(t, 2000, 8, 1, 5, rng)
	rowMem := d.RowBytes + 16
	s, err := featurestore.Open(d.Dir, featurestore.Options{HostCacheBytes: rowMem * 500})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o := epochOpts(t, d, 2)
	if _, err := PlanEpochs(s.Session(), o); err != nil {
		t.Fatal(err)
	}
	p, _, err := OpenEpochs(s.Session(), o)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	for _, c := range []struct {
		input string
		store *featurestore.Store
		edit  func(o *EpochOptions)
	}{
		{"fanouts", s, func(o *EpochOptions) { o.Sample.Fanouts = []int{5, 4} }},
		{"replace", s, func(o *EpochOptions) { o.Sample.Replace = true }},
		{"batch size", s, func(o *EpochOptions) { o.BatchSize++ }},
		{"drop_last", s, func(o *EpochOptions) { o.DropLast = true }},
		{"seeds", s, func(o *EpochOptions) { o.Seeds = o.Seeds[1:] }},
		{"sampler seed", s, func(o *EpochOptions) { o.Sample.Seed++ }},
		{"shuffle seed", s, func(o *EpochOptions) { o.ShuffleSeed++ }},
		{"epochs", s, func(o *EpochOptions) { o.Epochs = 3 }},
		{"first epoch", s, func(o *EpochOptions) { o.FirstEpoch = 2 }},
		{"dataset", mustOpen(t, other.Dir, featurestore.Options{HostCacheBytes: rowMem * 500}), func(o *EpochOptions) { o.Seeds = d.Train }},
		{"memory tiers", mustOpen(t, d.Dir, featurestore.Options{HostCacheBytes: rowMem * 400}), func(*EpochOptions) {}},
	} {
		o2 := o
		o2.Sample.Fanouts = slices.Clone(o.Sample.Fanouts)
		c.edit(&o2)
		_, _, err := OpenEpochs(c.store.Session(), o2)
		var se *StalePlanError
		if !errors.Is(err, ErrStalePlan) || !errors.As(err, &se) || !strings.HasPrefix(se.Input, c.input) || !strings.Contains(err.Error(), o.Dir) {
			t.Fatalf("%s changed: got %v", c.input, err)
		}
	}
	// A sample that does not hash to the plan's (a topology changed under the same manifest) is
	// caught when served; here, nodes of another batch.
	p, _, err = OpenEpochs(s.Session(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, sample, err := oneSample(p, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Gather(0, 0, "", sample.Nodes, make([]byte, int64(len(sample.Nodes))*d.RowBytes))
	if !errors.Is(err, ErrStalePlan) || !strings.Contains(err.Error(), "epoch 0 batch 0") || !strings.Contains(err.Error(), o.Dir) {
		t.Fatalf("gather with another batch's nodes: %v", err)
	}
	// Replan remakes a stale plan.
	o3 := o
	o3.Sample.Seed, o3.Replan = 99, true
	p3, rep, err := OpenEpochs(s.Session(), o3)
	if err != nil || rep == nil || rep.Planned != 2 {
		t.Fatalf("replan: %v %+v", err, rep)
	}
	p3.Close()
}

// TestPlanFromFirstEpoch plans epochs [F, F+K) and checks that every epoch of the range is
// exactly what a plan from epoch 0 of F+K epochs serves for it (order, sample, rows) and what
// EpochOrder and a fresh draw with BatchSampleSeed(seed, e, b) give; that consecutive ranges
// differ; and that an epoch outside the range replays F + (e-F) mod K.
func TestPlanFromFirstEpoch(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 2000, 16, 2, 5, rng)
	s, err := featurestore.Open(d.Dir, featurestore.Options{HostCacheBytes: (d.RowBytes + 16) * d.Count / 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const k = 2
	first := 1 + rng.IntN(5)
	all := epochOpts(t, d, first+k)
	all.Sample.Seed, all.ShuffleSeed = rng.Uint64(), rng.Uint64()
	from := all
	from.Dir, from.Epochs, from.FirstEpoch = filepath.Join(t.TempDir(), "from"), k, first
	next := from
	next.Dir, next.FirstEpoch = filepath.Join(t.TempDir(), "next"), first+k
	var plans []*Epochs
	for _, o := range []EpochOptions{all, from, next} {
		p, rep, err := OpenEpochs(s.Session(), withReplan(o))
		if err != nil || rep == nil {
			t.Fatalf("first epoch %d: %v", o.FirstEpoch, err)
		}
		defer p.Close()
		plans = append(plans, p)
	}
	pAll, pFrom, pNext := plans[0], plans[1], plans[2]
	if pFrom.FirstEpoch() != first || pFrom.Stats().FirstEpoch != first || pFrom.Planned() != k {
		t.Fatalf("plan from %d: first epoch %d, stats %+v", first, pFrom.FirstEpoch(), pFrom.Stats())
	}
	nb := pFrom.BatchesPerEpoch()
	for e := range first + 2*k + 1 {
		served := first + ((e-first)%k+k)%k // the planned epoch serving e
		for b := range nb {
			got, err := oneLoad(pFrom, e, b)
			if err != nil {
				t.Fatalf("epoch %d batch %d: %v", e, b, err)
			}
			ref, err := oneLoad(pAll, served, b)
			if err != nil {
				t.Fatal(err)
			}
			order := EpochOrder(d.Train, all.ShuffleSeed, served)
			seeds := order[b*all.BatchSize : min((b+1)*all.BatchSize, len(order))]
			opt := all.Sample
			opt.Seed = BatchSampleSeed(all.Sample.Seed, served, b)
			fresh, err := storeSample(s, seeds, opt)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Seeds, seeds) || !slices.Equal(got.Seeds, ref.Seeds) || !slices.Equal(got.Sample.Nodes, fresh.Nodes) ||
				!slices.Equal(got.Sample.Nodes, ref.Sample.Nodes) || !slices.Equal(got.Sample.Row, fresh.Row) {
				t.Fatalf("epoch %d batch %d (planned epoch %d of the plan from %d): differs from the plan from 0 or a fresh draw", e, b, served, first)
			}
			if !bytes.Equal(got.Rows, d.Want(fresh.Nodes)) || !bytes.Equal(got.Rows, ref.Rows) {
				t.Fatalf("epoch %d batch %d: rows differ from the dataset", e, b)
			}
		}
	}
	// The next range draws other orders and samples.
	for j := range k {
		a, _ := pFrom.Seeds(first+j, 0)
		b, _ := pNext.Seeds(first+k+j, 0)
		if slices.Equal(a, b) {
			t.Fatalf("epochs %d and %d have the same first batch", first+j, first+k+j)
		}
	}
	bad := from
	bad.FirstEpoch = -1
	if _, err := PlanEpochs(s.Session(), bad); !errors.Is(err, featurestore.ErrInvalidOption) || !strings.Contains(err.Error(), "first_epoch") {
		t.Fatalf("first epoch -1: %v", err)
	}
}

func mustOpen(t *testing.T, dir string, opt featurestore.Options) *featurestore.Store {
	s, err := featurestore.Open(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestCorruptPackedFileIsCaught(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 2000, 8, 1, 5, rng)
	s := mustOpen(t, d.Dir, featurestore.Options{})
	o := epochOpts(t, d, 1)
	if _, err := PlanEpochs(s.Session(), o); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(o.Dir, packedFile(0))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[rng.IntN(64)] ^= 0x40 // in batch 0's extent
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	p, _, err := OpenEpochs(s.Session(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := oneLoad(p, 1, 1); err != nil {
		t.Fatalf("an intact batch: %v", err)
	}
	_, err = oneLoad(p, 2, 0)
	if !errors.Is(err, dataset.ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "epoch 2 batch 0") {
		t.Fatalf("corrupt extent: %v", err)
	}
}

// TestCancelEpochPlan cancels a planner at a random write: it fails with context.Canceled,
// leaves nothing in its directory and is no longer registered; a later plan there succeeds.
func TestCancelEpochPlan(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 2000, 8, 1, 5, rng)
	s := mustOpen(t, d.Dir, featurestore.Options{})
	defer s.Close()
	o := epochOpts(t, d, 3)
	o.Dir = filepath.Join(t.TempDir(), "a", "..", "plan") // a path that is not clean: the key is
	if CancelEpochPlan(o.Dir) {
		t.Fatal("CancelEpochPlan found a planner before any ran")
	}
	// Small windows, so that writes go on to the end; cancel within the first two thirds of
	// the writes an uncanceled plan makes.
	o.PackMemory = 4 * packAlign
	var writes atomic.Int64
	counted := o
	counted.fs = hooked(func(f wfs.File, p []byte, off int64) (int, error) {
		writes.Add(1)
		return f.WriteAt(p, off)
	})
	if _, err := PlanEpochs(s.Session(), counted); err != nil {
		t.Fatal(err)
	}
	cancelAt := 1 + rng.Int64N(max(1, 2*writes.Load()/3))
	writes.Store(0)
	var found atomic.Bool
	canceling := o
	canceling.fs = hooked(func(f wfs.File, p []byte, off int64) (int, error) {
		if writes.Add(1) == cancelAt {
			found.Store(CancelEpochPlan(filepath.Clean(o.Dir)))
		}
		return f.WriteAt(p, off)
	})
	_, err := PlanEpochs(s.Session(), canceling)
	if !errors.Is(err, context.Canceled) || !found.Load() || !strings.Contains(err.Error(), o.Dir) {
		t.Fatalf("canceled at write %d (planner found: %v): %v", cancelAt, found.Load(), err)
	}
	if left, _ := os.ReadDir(o.Dir); len(left) != 0 {
		t.Fatalf("a canceled plan left %v", left)
	}
	if CancelEpochPlan(o.Dir) {
		t.Fatal("the canceled planner is still registered")
	}
	if rep, err := PlanEpochs(s.Session(), o); err != nil || rep.Planned != 3 {
		t.Fatalf("plan after a cancel: %v %+v", err, rep)
	}
}

// TestPlanRefusesEpochsBeyondTheDisk: without a disk budget, K epochs the size of the first
// that would not fit the free space are refused once the first is planned, naming the option
// and the bytes, and nothing is left; with a budget the same plan makes what fits.
func TestPlanRefusesEpochsBeyondTheDisk(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 2000, 8, 1, 5, rng)
	s := mustOpen(t, d.Dir, featurestore.Options{})
	o := epochOpts(t, d, 1)
	rep, err := PlanEpochs(s.Session(), o)
	if err != nil {
		t.Fatal(err)
	}
	one := rep.EpochBytes[0]
	saved := planFreeBytes
	defer func() { planFreeBytes = saved }()
	planFreeBytes = func(string) (int64, error) { return 3*one + one/2, nil } // room for 3 more
	o.Epochs = 5
	if _, err := PlanEpochs(s.Session(), o); !errors.Is(err, featurestore.ErrInvalidOption) || !strings.Contains(err.Error(), "planned_epochs = 5") ||
		!strings.Contains(err.Error(), fmt.Sprintf("planned epoch 0 took %d bytes", one)) {
		t.Fatalf("5 epochs with room for 4: %v", err)
	}
	if left, _ := os.ReadDir(o.Dir); len(left) != 0 {
		t.Fatalf("a refused plan left %v", left)
	}
	o.Epochs = 4
	if rep, err := PlanEpochs(s.Session(), o); err != nil || rep.Planned != 4 {
		t.Fatalf("4 epochs with room for 4: %v", err)
	}
	o.Epochs, o.DiskBudget = 5, 2*one+one/2
	if rep, err := PlanEpochs(s.Session(), o); err != nil || rep.Planned != 2 {
		t.Fatalf("5 epochs with a budget of 2: %+v, %v", rep, err)
	}
}

func TestPlanDiskBudget(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 2000, 8, 1, 5, rng)
	s := mustOpen(t, d.Dir, featurestore.Options{})
	o := epochOpts(t, d, 3)
	full, err := PlanEpochs(s.Session(), o)
	if err != nil {
		t.Fatal(err)
	}
	o.DiskBudget = full.EpochBytes[0] + full.EpochBytes[1]/2
	rep, err := PlanEpochs(s.Session(), o)
	if err != nil || rep.Planned != 1 || rep.Epochs != 3 || rep.BytesWritten != full.EpochBytes[0] {
		t.Fatalf("budget for 1.5 epochs: %v %+v", err, rep)
	}
	if _, err := os.Stat(filepath.Join(o.Dir, packedFile(1))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("epoch 1 over budget left its file: %v", err)
	}
	p, _, err := OpenEpochs(s.Session(), o)
	if err != nil {
		t.Fatal(err)
	}
	a, err := oneLoad(p, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	b, err := oneLoad(p, 4, 2) // planned epoch 0 again
	if err != nil || !slices.Equal(a.Sample.Nodes, b.Sample.Nodes) || !bytes.Equal(a.Rows, b.Rows) {
		t.Fatalf("epoch 4 is not planned epoch 0: %v", err)
	}
	p.Close()
	o.DiskBudget = 4096
	_, err = PlanEpochs(s.Session(), o)
	if !errors.Is(err, featurestore.ErrInvalidOption) || !strings.Contains(err.Error(), "4096") || !strings.Contains(err.Error(), fmt.Sprint(full.EpochBytes[0])) {
		t.Fatalf("budget for no epoch: %v", err)
	}
	if left, _ := os.ReadDir(o.Dir); len(left) != 0 {
		t.Fatalf("a failed plan left %v", left)
	}
}

func TestPlanOptionErrors(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 500, 8, 1, 5, rng)
	s := mustOpen(t, d.Dir, featurestore.Options{})
	for _, c := range []struct {
		want string
		edit func(o *EpochOptions)
	}{
		{"planned_epochs", func(o *EpochOptions) { o.Epochs = 0 }},
		{"planned_epochs = 1000000000: want epochs to plan from 1 to 1024", func(o *EpochOptions) { o.Epochs = 1e9 }},
		{"plan_disk_budget", func(o *EpochOptions) { o.DiskBudget = -1 }},
		{"batch_size", func(o *EpochOptions) { o.BatchSize = 0 }},
		{"plan_dir", func(o *EpochOptions) { o.Dir = "" }},
		{"seeds", func(o *EpochOptions) { o.BatchSize, o.DropLast = len(d.Train)+1, true }},
		{"fanouts", func(o *EpochOptions) { o.Sample.Fanouts = nil }},
		{"out of range", func(o *EpochOptions) { o.Seeds = []int64{0, 500} }},
	} {
		o := epochOpts(t, d, 1)
		c.edit(&o)
		_, err := PlanEpochs(s.Session(), o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: %v", c.want, err)
		}
		if _, _, err2 := OpenEpochs(s.Session(), o); err2 == nil || err2.Error() != err.Error() {
			t.Fatalf("%s: OpenEpochs says %v, PlanEpochs %v", c.want, err2, err)
		}
	}
	sieve := mustOpen(t, d.Dir, featurestore.Options{HostPolicy: featurestore.HostSieve, HostCacheBytes: 1 << 16})
	if _, err := PlanEpochs(sieve.Session(), epochOpts(t, d, 1)); !errors.Is(err, featurestore.ErrInvalidOption) || !strings.Contains(err.Error(), "host_policy") {
		t.Fatalf("sieve: %v", err)
	}
	p, _, err := OpenEpochs(s.Session(), EpochOptions{Dir: t.TempDir(), Seeds: d.Train, BatchSize: 10, Epochs: 1, Sample: topology.SampleOptions{Fanouts: []int{2}}, Replan: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := oneLoad(p, -1, 0); !errors.Is(err, featurestore.ErrInvalidOption) {
		t.Fatalf("epoch -1: %v", err)
	}
	if _, err := oneLoad(p, 0, p.BatchesPerEpoch()); !errors.Is(err, featurestore.ErrInvalidOption) {
		t.Fatalf("batch past the end: %v", err)
	}
}

// TestPlaceTiersForEpochs: PlaceTiers caches the rows the planned epochs read most, so the plan
// packs exactly what the hindsight placement leaves on SSD, and a store opened afresh places the
// same rows and serves the plan.
func TestPlaceTiersForEpochs(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 3000, 24, 1, 6, rng)
	opt := featurestore.Options{HostCacheBytes: (d.RowBytes + 16) * d.Count / 4}
	s, err := featurestore.Open(d.Dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o := epochOpts(t, d, 2)
	o.Sample.Seed, o.ShuffleSeed = rng.Uint64(), rng.Uint64()
	byDegree, err := PlanEpochs(s.Session(), o)
	if err != nil {
		t.Fatal(err)
	}
	// The hindsight bar: every read of the planned batches minus the reads of the rows the
	// memory tiers can hold, the most read ones.
	counts := make([]int64, d.Count)
	nb := BatchesPerEpoch(len(d.Train), o.BatchSize, o.DropLast)
	for e := range o.Epochs {
		order := EpochOrder(d.Train, o.ShuffleSeed, e)
		for b := range nb {
			so := o.Sample
			so.Seed = BatchSampleSeed(o.Sample.Seed, e, b)
			smp, err := storeSample(s, order[b*o.BatchSize:min((b+1)*o.BatchSize, len(order))], so)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range smp.Nodes {
				counts[v]++
			}
		}
	}
	sorted := slices.Clone(counts)
	slices.Sort(sorted)
	slices.Reverse(sorted)
	var bar int64
	for _, c := range sorted[host.CapacityRows(s.Internals().Options().HostCacheBytes, s.RowBytes()):] {
		bar += c
	}
	o.PlaceTiers = true
	placed, err := PlanEpochs(s.Session(), o)
	if err != nil {
		t.Fatal(err)
	}
	if placed.RowsPacked != bar || placed.RowsPacked > byDegree.RowsPacked {
		t.Fatalf("placed for the epochs: %d rows packed, want the hindsight bar %d (by degree: %d)", placed.RowsPacked, bar, byDegree.RowsPacked)
	}
	t.Logf("rows packed: by degree %d, placed for the planned epochs %d (= hindsight)", byDegree.RowsPacked, placed.RowsPacked)
	// The placement pass's seconds: none without PlaceTiers; with it, within the plan's.
	if r := byDegree; r.PlaceSeconds != 0 || r.PlaceSampleSeconds != 0 || r.FillSeconds != 0 {
		t.Fatalf("a plan without PlaceTiers reports a placement pass: %+v", r)
	}
	if r := placed; !(r.PlaceSeconds > 0 && r.PlaceSampleSeconds > 0 && r.FillSeconds > 0 && r.FillSeconds <= r.PlaceSeconds && r.PlaceSeconds <= r.Seconds) {
		t.Fatalf("placement pass: %.6fs (sampling %.6fs, refill %.6fs) of %.6fs: want 0 < refill <= pass <= plan, sampling > 0",
			r.PlaceSeconds, r.PlaceSampleSeconds, r.FillSeconds, r.Seconds)
	}

	fresh, err := featurestore.Open(d.Dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if _, _, err := OpenEpochs(fresh.Session(), EpochOptions{Dir: o.Dir, Seeds: o.Seeds, BatchSize: o.BatchSize, Sample: o.Sample,
		ShuffleSeed: o.ShuffleSeed, Epochs: o.Epochs}); !errors.Is(err, ErrStalePlan) {
		t.Fatalf("a store placed by degree opened the plan made for placed tiers: %v", err)
	}
	p, rep, err := OpenEpochs(fresh.Session(), o)
	if err != nil || rep != nil {
		t.Fatalf("open with PlaceTiers: %v (replanned: %v)", err, rep != nil)
	}
	defer p.Close()
	got, err := oneLoad(p, 3, nb-1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Rows, d.Want(got.Sample.Nodes)) {
		t.Fatal("rows served from the reopened plan differ from the dataset")
	}
}

// TestEpochsAfterPlaceAndClose: a Place after the plan was opened makes its gathers stale (rows
// would land in the wrong places otherwise), and a closed plan refuses calls instead of hanging.
func TestEpochsAfterPlaceAndClose(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 2000, 16, 1, 5, rng)
	s, err := featurestore.Open(d.Dir, featurestore.Options{HostCacheBytes: (d.RowBytes + 16) * d.Count / 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o := epochOpts(t, d, 1)
	o.Replan = true
	p, _, err := OpenEpochs(s.Session(), o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oneLoad(p, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Place(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := oneLoad(p, 0, 1); !errors.Is(err, ErrStalePlan) {
		t.Fatalf("gather after a Place: %v, want ErrStalePlan", err)
	}
	q, _, err := OpenEpochs(s.Session(), o) // reopened: the plan still matches the tiers' contents
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oneLoad(q, 0, 1); err != nil {
		t.Fatalf("reopened after the Place: %v", err)
	}
	q.Close()
	if _, err := oneLoad(q, 0, 1); !errors.Is(err, featurestore.ErrClosed) {
		t.Fatalf("gather after Close: %v, want ErrClosed", err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	p.Close()
}

// TestPackedFileFaults drives injected faults (Options.Faults, rules by path) into the reads of
// planned epochs' packed files: a flipped bit is a corruption error naming the packed file and
// the batch, EIO an IO error naming the file, and no batch ever comes back with other rows.
func TestPackedFileFaults(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 2000, 8, 1, 5, rng)
	rowMem := d.RowBytes + 16
	for _, cache := range []int64{0, rowMem * d.Count / 3} {
		o := epochOpts(t, d, 2)
		if _, err := PlanEpochs(mustOpen(t, d.Dir, featurestore.Options{HostCacheBytes: cache}).Session(), o); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			spec string
			want func(error) bool // what a failed batch's error must be
			must bool             // some batch must fail
		}{
			{"flip:path=epoch-", func(err error) bool { return errors.Is(err, dataset.ErrCorrupt) }, true},
			{"eio:path=epoch-0001", func(err error) bool { return errors.Is(err, unix.EIO) }, true},
			{"short:path=.packed:every=2", func(err error) bool { return strings.Contains(err.Error(), "short") }, false},
			{"flip:path=epoch-:prob=0.5:seed=3;eio:path=epoch-:prob=0.2:seed=4", func(err error) bool {
				return errors.Is(err, dataset.ErrCorrupt) || errors.Is(err, unix.EIO)
			}, true},
			{"delay:path=epoch-:ms=1", func(error) bool { return false }, false},
		} {
			s := mustOpen(t, d.Dir, featurestore.Options{HostCacheBytes: cache, Faults: parseFaults(t, c.spec)})
			p, _, err := OpenEpochs(s.Session(), o)
			if err != nil {
				t.Fatalf("%s: open the plan: %v", c.spec, err)
			}
			failed := 0
			for e := range 2 {
				path := filepath.Join(o.Dir, packedFile(e))
				for b := range p.BatchesPerEpoch() {
					got, err := oneLoad(p, e, b)
					if err != nil {
						name := fmt.Sprintf("epoch %d batch %d", e, b)
						if !c.want(err) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), name) {
							t.Fatalf("%s (cache %d): %s failed with %v; want its kind of error naming %s and %s", c.spec, cache, name, err, path, name)
						}
						if strings.HasPrefix(c.spec, "eio:path=epoch-0001") && e != 1 {
							t.Fatalf("%s: a fault on epoch 1's file failed epoch %d: %v", c.spec, e, err)
						}
						failed++
						continue
					}
					if !bytes.Equal(got.Rows, d.Want(got.Sample.Nodes)) {
						t.Fatalf("%s (cache %d): epoch %d batch %d came back with other rows", c.spec, cache, e, b)
					}
				}
			}
			if c.must && failed == 0 {
				t.Errorf("%s (cache %d): no batch saw the injected faults", c.spec, cache)
			}
			if c.spec == "delay:path=epoch-:ms=1" && failed > 0 {
				t.Errorf("delays alone failed %d batches", failed)
			}
			p.Close()
		}
	}
}
