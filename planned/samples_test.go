package planned

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/topology"
)

// sameSample says how a and b differ, field by field ("" when they are equal); EdgeIDs must be
// nil in both or in neither.
func sameSample(a, b *topology.Sample) string {
	for _, f := range []struct {
		name string
		x, y []int64
	}{{"Nodes", a.Nodes, b.Nodes}, {"Row", a.Row, b.Row}, {"Col", a.Col, b.Col}, {"NodesPerHop", a.NodesPerHop, b.NodesPerHop},
		{"EdgesPerHop", a.EdgesPerHop, b.EdgesPerHop}, {"EdgeIDs", a.EdgeIDs, b.EdgeIDs}} {
		if !slices.Equal(f.x, f.y) {
			return fmt.Sprintf("%s differ (%d and %d values)", f.name, len(f.x), len(f.y))
		}
	}
	if (a.EdgeIDs == nil) != (b.EdgeIDs == nil) {
		return fmt.Sprintf("EdgeIDs nil %v and %v", a.EdgeIDs == nil, b.EdgeIDs == nil)
	}
	return ""
}

// TestStoredSamplesEqualRedrawn plans epochs of a random graph with random options and checks,
// for every batch of every planned epoch (and a replayed one), that the sample Sample reads from
// the samples file equals field by field the sampler's draw with the batch's BatchSampleSeed
// and the plan's own re-draw; batches are served from several goroutines at once. The report's
// SampleBytes are the samples files' bytes, counted in BytesWritten.
func TestStoredSamplesEqualRedrawn(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 1500+rng.Int64N(2000), 8, 1+rng.IntN(2), 2+rng.IntN(8), rng)
	s := mustOpen(t, d.Dir, featurestore.Options{HostCacheBytes: (d.RowBytes + 16) * d.Count * rng.Int64N(3) / 4})
	const k = 2
	o := epochOpts(t, d, k)
	o.BatchSize = 20 + rng.IntN(200)
	o.DropLast, o.Sample.Replace = rng.IntN(2) == 0, rng.IntN(2) == 0
	o.Sample.Fanouts = []int{1 + rng.IntN(10), rng.IntN(6) - 1}
	if rng.IntN(2) == 0 {
		o.Sample.Fanouts = append(o.Sample.Fanouts, 1+rng.IntN(3))
	}
	o.Sample.Seed, o.ShuffleSeed = rng.Uint64(), rng.Uint64()
	t.Logf("%d nodes, batch %d, fanouts %v, replace %v, drop_last %v", d.Count, o.BatchSize, o.Sample.Fanouts, o.Sample.Replace, o.DropLast)
	rep, err := PlanEpochs(s.Session(), o)
	if err != nil {
		t.Fatal(err)
	}
	var files, packed int64
	for e := range k {
		for name, n := range map[string]*int64{samplesFile(e): &files, packedFile(e): &packed} {
			st, err := os.Stat(filepath.Join(o.Dir, name))
			if err != nil {
				t.Fatal(err)
			}
			*n += st.Size()
		}
	}
	if rep.SampleBytes == 0 || rep.SampleBytes != files || rep.BytesWritten != files+packed {
		t.Fatalf("report: %d sample bytes, %d written; the samples files hold %d bytes, the packed %d", rep.SampleBytes, rep.BytesWritten, files, packed)
	}
	p, _, err := OpenEpochs(s.Session(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	nb := p.BatchesPerEpoch()
	var edgeIDs bool
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for e := range k + 1 {
				for b := w; b < nb; b += 4 {
					seeds, got, err := oneSample(p, e, b)
					if err != nil {
						errs <- fmt.Errorf("epoch %d batch %d: %w", e, b, err)
						return
					}
					order := EpochOrder(d.Train, o.ShuffleSeed, e%k)
					if want := order[b*o.BatchSize : min((b+1)*o.BatchSize, len(order))]; !slices.Equal(seeds, want) {
						errs <- fmt.Errorf("epoch %d batch %d: seeds differ", e, b)
						return
					}
					opt := o.Sample
					opt.Seed = BatchSampleSeed(o.Sample.Seed, e%k, b)
					want, err := storeSample(s, seeds, opt)
					if err != nil {
						errs <- err
						return
					}
					_, drawn, err := p.draw(e, b)
					if err != nil {
						errs <- err
						return
					}
					if diff := sameSample(got, want); diff != "" {
						errs <- fmt.Errorf("epoch %d batch %d: the stored sample and a fresh draw: %s", e, b, diff)
						return
					}
					if diff := sameSample(got, drawn.sample); diff != "" {
						errs <- fmt.Errorf("epoch %d batch %d: the stored sample and the plan's re-draw: %s", e, b, diff)
						return
					}
					if w == 0 && b == 0 {
						edgeIDs = got.EdgeIDs != nil
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d batches an epoch, %d sample bytes, edge ids stored: %v", nb, rep.SampleBytes, edgeIDs)
	first, err := os.Stat(filepath.Join(o.Dir, samplesFile(0)))
	if err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.SampleBytesRead != rep.SampleBytes+first.Size() { // epoch k replays planned epoch 0
		t.Fatalf("stats: %d sample bytes read, want %d", st.SampleBytesRead, rep.SampleBytes+first.Size())
	}
	// Load serves the stored sample and its rows.
	got, err := oneLoad(p, k, nb-1)
	if err != nil {
		t.Fatal(err)
	}
	_, smp, _ := oneSample(p, 0, nb-1)
	if diff := sameSample(got.Sample, smp); diff != "" || !slices.Equal(got.Rows, d.Want(smp.Nodes)) {
		t.Fatalf("Load of a replayed epoch: %s", diff)
	}
}

// TestSampleRecordRoundTrip encodes random samples, with and without edge ids, and decodes them;
// a local id out of range is refused when encoding, a malformed record when decoding.
func TestSampleRecordRoundTrip(t *testing.T) {
	rng := newRand(t)
	for range 50 {
		n, m := 1+rng.IntN(300), rng.IntN(500)
		smp := &topology.Sample{Nodes: make([]int64, n), Row: make([]int64, m), Col: make([]int64, m),
			NodesPerHop: []int64{int64(n)}, EdgesPerHop: []int64{}}
		for i := range smp.Nodes {
			smp.Nodes[i] = rng.Int64()
		}
		for i := range m {
			smp.Row[i], smp.Col[i] = rng.Int64N(int64(n)), rng.Int64N(int64(n))
		}
		for range rng.IntN(3) {
			smp.EdgesPerHop = append(smp.EdgesPerHop, rng.Int64N(100))
		}
		if rng.IntN(2) == 0 {
			smp.EdgeIDs = make([]int64, m)
			wide := rng.IntN(2) == 0 // else every one below 2^32: 4 bytes each
			for i := range smp.EdgeIDs {
				smp.EdgeIDs[i] = rng.Int64N(1 << 32)
				if wide {
					smp.EdgeIDs[i] = rng.Int64()
				}
			}
		}
		rec, err := encodeSample(smp)
		if err != nil {
			t.Fatal(err)
		}
		if l, _ := sampleRecordLen(smp); l != int64(len(rec)) {
			t.Fatalf("sampleRecordLen %d, the record has %d bytes", l, len(rec))
		}
		words := make([]int64, (len(rec)+7)/8)
		buf := dataset.BytesOf(words)[:len(rec)]
		copy(buf, rec)
		got, err := decodeSample(buf)
		if err != nil {
			t.Fatal(err)
		}
		if diff := sameSample(got, smp); diff != "" {
			t.Fatalf("%d nodes, %d edges: %s", n, m, diff)
		}
		if _, err := decodeSample(buf[:len(buf)-1]); err == nil {
			t.Fatal("a record a byte short decoded")
		}
		if m > 0 {
			smp.Col[rng.IntN(m)] = int64(n)
			if _, err := encodeSample(smp); err == nil || !strings.Contains(err.Error(), "Col[") {
				t.Fatalf("a Col out of range: %v", err)
			}
		}
	}
}

// TestCorruptSamplesFileIsCaught flips a byte of one batch's record: serving that batch fails
// with dataset.ErrCorrupt naming the samples file, the epoch and the batch; the other batches
// are served. A samples file shorter than the index says fails the open.
func TestCorruptSamplesFileIsCaught(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 2000, 8, 1, 5, rng)
	s := mustOpen(t, d.Dir, featurestore.Options{})
	o := epochOpts(t, d, 2)
	if _, err := PlanEpochs(s.Session(), o); err != nil {
		t.Fatal(err)
	}
	var idx epochIndex
	data, err := os.ReadFile(filepath.Join(o.Dir, EpochIndexFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &idx); err != nil {
		t.Fatal(err)
	}
	pe := rng.IntN(2)
	nb := idx.Batches
	bad := rng.IntN(nb)
	r := idx.Epochs[pe].SampleRecords[bad]
	path := filepath.Join(o.Dir, samplesFile(pe))
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	flipped := slices.Clone(orig)
	at := r.Offset + rng.Int64N(r.Length)
	flipped[at] ^= 1 << rng.IntN(8)
	if err := os.WriteFile(path, flipped, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("flipped byte %d of %s (batch %d's record at %d, %d bytes)", at, path, bad, r.Offset, r.Length)
	p, _, err := OpenEpochs(s.Session(), o)
	if err != nil {
		t.Fatal(err)
	}
	for b := range nb {
		_, _, err := oneSample(p, pe+2, b) // epoch pe+2 replays planned epoch pe
		if b != bad {
			if err != nil {
				t.Fatalf("intact batch %d: %v", b, err)
			}
			continue
		}
		name := fmt.Sprintf("epoch %d batch %d", pe+2, b)
		if !errors.Is(err, dataset.ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), name) {
			t.Fatalf("corrupt record: %v; want ErrCorrupt naming %s and %s", err, path, name)
		}
		if _, err := oneLoad(p, pe, b); !errors.Is(err, dataset.ErrCorrupt) {
			t.Fatalf("Load of the corrupt batch: %v", err)
		}
	}
	p.Close()
	if err := os.WriteFile(path, orig[:len(orig)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenEpochs(s.Session(), o); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("a samples file a byte short: %v", err)
	}
}

// TestPlanDiskBudgetCountsSamples: a budget that holds an epoch's packed rows but not its
// samples is refused, naming the budget and the bytes the samples need; one that holds both
// plans the epoch.
func TestPlanDiskBudgetCountsSamples(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 2000, 8, 1, 5, rng)
	s := mustOpen(t, d.Dir, featurestore.Options{HostCacheBytes: (d.RowBytes + 16) * d.Count / 2})
	checkBudgetCountsSamples(t, epochOpts(t, d, 1), planOf(s), func(o EpochOptions) {
		if left, _ := os.ReadDir(o.Dir); len(left) != 0 {
			t.Fatalf("a refused plan left %v", left)
		}
	})
}

// TestOldPlanIndexIsStale: an index of version 2 (no samples files) is a stale plan naming the
// index version; Replan plans anew.
func TestOldPlanIndexIsStale(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 1000, 8, 1, 5, rng)
	s := mustOpen(t, d.Dir, featurestore.Options{})
	o := epochOpts(t, d, 1)
	if _, err := PlanEpochs(s.Session(), o); err != nil {
		t.Fatal(err)
	}
	setIndexVersion(t, o.Dir, 2)
	_, _, err := OpenEpochs(s.Session(), o)
	var se *StalePlanError
	if !errors.As(err, &se) || se.Input != "index version" || se.Plan != "2" || se.Store != fmt.Sprintf("%d to %d", oldestEpochIndexVersion, epochIndexVersion) ||
		!strings.Contains(err.Error(), o.Dir) {
		t.Fatalf("a version 2 index: %v", err)
	}
	p, rep, err := OpenEpochs(s.Session(), withReplan(o))
	if err != nil || rep == nil {
		t.Fatalf("replan over a version 2 index: %v", err)
	}
	p.Close()
}

// BenchmarkEpochSample serves batches' samples of one planned epoch of the dataset
// TIERFS_BENCH_DATASET (skipped without it; its train split, fanouts 25,10, batch 1,024, a host
// tier holding every row so the plan packs little): "stored" reads them from the samples file
// (Epochs.Sample), "redraw" draws them again and checks them against the plan, as Sample did
// before samples were stored. It runs the two alternately, 3 rounds (round-R/stored,
// round-R/redraw), in one process over one plan.
func BenchmarkEpochSample(b *testing.B) {
	dir := os.Getenv("TIERFS_BENCH_DATASET")
	if dir == "" {
		b.Skip("TIERFS_BENCH_DATASET names no dataset")
	}
	benchPlanOnce.Do(func() { benchPlan, benchPlanErr = openBenchPlan(dir) })
	if benchPlanErr != nil {
		b.Fatal(benchPlanErr)
	}
	p := benchPlan
	nb := p.BatchesPerEpoch()
	benchStoredAndRedrawn(b, nb, func(b int) (*topology.Sample, error) {
		_, smp, err := oneSample(p, 0, b)
		return smp, err
	}, func(b int) (*topology.Sample, error) {
		_, d, err := p.draw(0, b)
		if err != nil {
			return nil, err
		}
		return d.sample, nil
	}, func(smp *topology.Sample) (int, int) { return len(smp.Nodes), len(smp.Row) })
}

var (
	benchPlanOnce sync.Once
	benchPlan     *Epochs
	benchPlanErr  error
)

// openBenchPlan plans one epoch of dataset dir in a temporary directory (left to the OS's
// cleanup of its temporary files) and opens it.
func openBenchPlan(dir string) (*Epochs, error) {
	s, err := featurestore.Open(dir, featurestore.Options{HostCacheBytes: 2 << 30})
	if err != nil {
		return nil, err
	}
	seeds, err := s.Session().Split("", "train")
	if err != nil {
		return nil, err
	}
	planDir, err := os.MkdirTemp("", "bench-epoch-sample-")
	if err != nil {
		return nil, err
	}
	o := EpochOptions{Dir: planDir, Seeds: seeds, BatchSize: 1024, Sample: topology.SampleOptions{Fanouts: []int{25, 10}, Seed: 1},
		ShuffleSeed: 2, Epochs: 1}
	rep, err := PlanEpochs(s.Session(), o)
	if err != nil {
		return nil, err
	}
	p, _, err := OpenEpochs(s.Session(), o)
	if err != nil {
		return nil, err
	}
	_, smp, err := oneSample(p, 0, 0)
	if err != nil {
		return nil, err
	}
	fmt.Printf("plan %s: %d batches, %.1f MiB written, %.1f MiB of them samples (%.0f KiB a batch), %.0f nodes a batch, edge ids stored %v, planned in %.1fs\n",
		planDir, rep.BatchesPerEpoch, float64(rep.BytesWritten)/(1<<20), float64(rep.SampleBytes)/(1<<20),
		float64(rep.SampleBytes)/1024/float64(rep.BatchesPerEpoch), rep.NodesPerBatch.Mean, smp.EdgeIDs != nil, rep.Seconds)
	return p, nil
}

// benchStoredAndRedrawn times serving a plan's batches both ways, in three alternated rounds:
// stored reads each batch's stored sample, redraw draws it again; count is a sample's nodes and
// edges, reported a batch.
func benchStoredAndRedrawn[S any](b *testing.B, nb int, stored, redraw func(int) (S, error), count func(S) (int, int)) {
	serve := map[string]func(int) (S, error){"stored": stored, "redraw": redraw}
	for r := range 3 {
		for _, how := range []string{"stored", "redraw"} {
			b.Run(fmt.Sprintf("round-%d/%s", r+1, how), func(b *testing.B) {
				var nodes, edges int
				for i := range b.N {
					smp, err := serve[how](i % nb)
					if err != nil {
						b.Fatal(err)
					}
					n, e := count(smp)
					nodes, edges = nodes+n, edges+e
				}
				b.ReportMetric(float64(nodes)/float64(b.N), "nodes/batch")
				b.ReportMetric(float64(edges)/float64(b.N), "edges/batch")
			})
		}
	}
}

// setIndexVersion rewrites the version of the plan index in dir (an older plan's, as tests make
// one): below version 6 with its checksums unbound, as those versions wrote them.
func setIndexVersion(t *testing.T, dir string, v int) {
	t.Helper()
	path := filepath.Join(dir, EpochIndexFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var idx map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // 64-bit seeds stay exact
	if err := dec.Decode(&idx); err != nil {
		t.Fatal(err)
	}
	idx["version"] = v
	if data, err = json.Marshal(idx); err != nil {
		t.Fatal(err)
	}
	if v < boundEpochIndexVersion {
		// What that version wrote: its checksums unbound.
		var plain epochIndex
		if err := json.Unmarshal(data, &plain); err != nil {
			t.Fatal(err)
		}
		if err := plain.bind(); err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatal(err)
		}
		epochs, err := json.Marshal(plain.Epochs)
		if err != nil {
			t.Fatal(err)
		}
		m["epochs"] = json.RawMessage(epochs)
		idx = m
	}
	if data, err = json.Marshal(idx); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkBudgetCountsSamples plans o with plan three times: without a budget; with one that holds
// the packed rows and half the samples, which must be refused naming the budget and the bytes
// the samples need (then refused runs, given, checks what is left); with one of exactly the
// epoch's bytes, which must plan it.
func checkBudgetCountsSamples(t *testing.T, o EpochOptions, plan func(EpochOptions) (*EpochPlanReport, error), refused func(EpochOptions)) {
	t.Helper()
	full, err := plan(o)
	if err != nil {
		t.Fatal(err)
	}
	packed := full.BytesWritten - full.SampleBytes
	if full.SampleBytes == 0 || packed <= 0 {
		t.Fatalf("report: %+v", full)
	}
	o.DiskBudget = packed + full.SampleBytes/2
	_, err = plan(o)
	if !errors.Is(err, featurestore.ErrInvalidOption) || !strings.Contains(err.Error(), fmt.Sprintf("plan_disk_budget = %d", o.DiskBudget)) ||
		!strings.Contains(err.Error(), fmt.Sprintf("%d bytes one planned epoch needs (%d of them its stored samples)", full.BytesWritten, full.SampleBytes)) {
		t.Fatalf("a budget for the packed rows and half the samples (%d packed, %d samples): %v", packed, full.SampleBytes, err)
	}
	if refused != nil {
		refused(o)
	}
	o.DiskBudget = full.BytesWritten
	if rep, err := plan(o); err != nil || rep.Planned != 1 || rep.BytesWritten != full.BytesWritten {
		t.Fatalf("a budget of exactly one epoch: %+v, %v", rep, err)
	}
}

// TestPlanEntriesAreBoundToTheirEpoch (issue 43, item 1): an index whose epoch entries were
// reversed, or whose entry 0 was copied over entry 1, is refused at open as corrupt, replan or
// not; epoch files swapped on disk along with their entries' contents (names kept) are refused
// when a batch is served, its record's checksum bound to the other epoch.
func TestPlanEntriesAreBoundToTheirEpoch(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 2000, 8, 1, 5, rng)
	s := mustOpen(t, d.Dir, featurestore.Options{})
	o := epochOpts(t, d, 2)
	if _, err := PlanEpochs(s.Session(), o); err != nil {
		t.Fatal(err)
	}
	indexPath := filepath.Join(o.Dir, EpochIndexFile)
	orig, err := os.ReadFile(indexPath)
	if err != nil {
		t.Fatal(err)
	}
	var idx epochIndex
	if err := json.Unmarshal(orig, &idx); err != nil {
		t.Fatal(err)
	}
	write := func(idx epochIndex) {
		data, err := json.Marshal(idx)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(indexPath, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reversed := idx
	reversed.Epochs = []epochFile{idx.Epochs[1], idx.Epochs[0]}
	copied := idx
	copied.Epochs = []epochFile{idx.Epochs[0], idx.Epochs[0]}
	for name, tampered := range map[string]epochIndex{"reversed": reversed, "copied": copied} {
		write(tampered)
		for _, replan := range []bool{false, true} {
			oo := o
			oo.Replan = replan
			if _, _, err := OpenEpochs(s.Session(), oo); !errors.Is(err, dataset.ErrCorrupt) || !strings.Contains(err.Error(), "reordered or copied") {
				t.Errorf("%s entries (replan %v): %v; want ErrCorrupt", name, replan, err)
			}
		}
	}
	// A key given twice in the index.
	if err := os.WriteFile(indexPath, []byte(strings.Replace(string(orig), `"version":`, `"version": 1, "version":`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenEpochs(s.Session(), o); !errors.Is(err, dataset.ErrCorrupt) || !strings.Contains(err.Error(), "appears twice") {
		t.Errorf("an index with a key twice: %v; want ErrCorrupt", err)
	}
	// The files swapped on disk and the entries' contents with them, each entry keeping the
	// name of its position.
	swapped := idx
	swapped.Epochs = []epochFile{idx.Epochs[1], idx.Epochs[0]}
	for e := range swapped.Epochs {
		swapped.Epochs[e].File, swapped.Epochs[e].Samples = packedFile(e), samplesFile(e)
	}
	for _, f := range []func(int) string{packedFile, samplesFile} {
		a, b := filepath.Join(o.Dir, f(0)), filepath.Join(o.Dir, f(1))
		if err := os.Rename(a, a+".x"); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(b, a); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(a+".x", b); err != nil {
			t.Fatal(err)
		}
	}
	write(swapped)
	p, _, err := OpenEpochs(s.Session(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, _, err = oneSample(p, 0, 0)
	if !errors.Is(err, dataset.ErrCorrupt) || !strings.Contains(err.Error(), "has checksum") || !strings.Contains(err.Error(), "epoch 0 batch 0") {
		t.Fatalf("epoch files swapped with their entries: %v; want ErrCorrupt naming the batch", err)
	}
}
