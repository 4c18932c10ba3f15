package planned

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/internal/wfs"
)

// samePlans fails unless the plans in dirs a and b have the same packed files, byte for byte,
// and the same extents (offsets, rows, checksums, node hashes).
func samePlans(t *testing.T, what, a, b string) {
	t.Helper()
	index := func(dir string) epochIndex {
		data, err := os.ReadFile(filepath.Join(dir, EpochIndexFile))
		if err != nil {
			t.Fatal(err)
		}
		var idx epochIndex
		if err := json.Unmarshal(data, &idx); err != nil {
			t.Fatal(err)
		}
		return idx
	}
	ia, ib := index(a), index(b)
	if len(ia.Epochs) != len(ib.Epochs) || len(ia.Epochs) == 0 {
		t.Fatalf("%s: %d and %d epochs planned", what, len(ia.Epochs), len(ib.Epochs))
	}
	for e := range ia.Epochs {
		if ia.Epochs[e].Bytes != ib.Epochs[e].Bytes || !slices.Equal(ia.Epochs[e].Batches, ib.Epochs[e].Batches) {
			t.Fatalf("%s: planned epoch %d: the extents differ", what, e)
		}
		fa, err := os.ReadFile(filepath.Join(a, ia.Epochs[e].File))
		if err != nil {
			t.Fatal(err)
		}
		fb, err := os.ReadFile(filepath.Join(b, ib.Epochs[e].File))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fa, fb) {
			t.Fatalf("%s: planned epoch %d: the packed files differ (%d and %d bytes)", what, e, len(fa), len(fb))
		}
	}
}

// planEachWay plans o with every pack method into directories of its own and checks the
// reports: the method asked for is the method taken, and a small window makes several.
func planEachWay(t *testing.T, what string, plan func(EpochOptions) (*EpochPlanReport, error), o EpochOptions) map[string]string {
	t.Helper()
	dirs := map[string]string{}
	for _, m := range []string{PackScan, PackRandom, ""} {
		o2 := o
		o2.PackMethod, o2.Dir = m, filepath.Join(t.TempDir(), "plan-"+m)
		rep, err := plan(o2)
		if err != nil {
			t.Fatalf("%s, pack method %q: %v", what, m, err)
		}
		switch {
		case m != "" && rep.RowsPacked > 0 && rep.PackMethod != m:
			t.Fatalf("%s: pack method %q asked, the report says %q", what, m, rep.PackMethod)
		case m == "" && rep.RowsPacked > 0 && !slices.Contains([]string{PackScan, PackRandom, PackScan + "+" + PackRandom}, rep.PackMethod):
			t.Fatalf("%s: chosen pack method %q", what, rep.PackMethod)
		case rep.PackReads <= 0 && rep.RowsPacked > 0, rep.PackWindows < 1:
			t.Fatalf("%s, pack method %q: %d reads, %d windows for %d rows", what, m, rep.PackReads, rep.PackWindows, rep.RowsPacked)
		}
		t.Logf("%s, pack method %q: took %s, %d windows, %d reads, %d bytes; estimates: scan %.4f s, random %.4f s",
			what, m, rep.PackMethod, rep.PackWindows, rep.PackReads, rep.PackReadBytes, rep.ScanEstimate, rep.RandomEstimate)
		dirs[m] = o2.Dir
	}
	samePlans(t, what+": scan and random", dirs[PackScan], dirs[PackRandom])
	samePlans(t, what+": scan and chosen", dirs[PackScan], dirs[""])
	return dirs
}

// TestPackMethodsWriteTheSameFiles plans random datasets with the scan, with random reads and
// with the method the disk model picks, through windows of random size (several an epoch), memory
// tiers holding none or some rows, rows served elsewhere and a first epoch: every plan's packed
// files and extents are the same, and the scan-packed plan serves every batch's rows as the
// dataset has them.
func TestPackMethodsWriteTheSameFiles(t *testing.T) {
	rng := newRand(t)
	for trial := range 3 {
		d := writeSplitDataset(t, 1500+rng.Int64N(3000), 1+rng.Int64N(40), 1+rng.IntN(3), 2+rng.IntN(6), rng)
		host := []int64{0, (d.RowBytes + 16) * d.Count / 4}[rng.IntN(2)]
		s := mustOpen(t, d.Dir, featurestore.Options{HostCacheBytes: host})
		o := epochOpts(t, d, 1+rng.IntN(2))
		o.FirstEpoch = rng.IntN(5)
		o.Sample.Seed = rng.Uint64()
		o.PackMemory = 4<<10 + rng.Int64N(64<<10)
		if rng.IntN(2) == 0 {
			var elsewhere []int64
			for v := range d.Count {
				if rng.IntN(4) == 0 {
					elsewhere = append(elsewhere, v)
				}
			}
			o.Elsewhere = map[string][]int64{"": elsewhere}
		}
		what := strings.Join([]string{"trial", string(rune('0' + trial))}, " ")
		t.Logf("%s: %d nodes of %d bytes, host tier %d bytes, %d epochs from %d, window %d bytes, elsewhere %v",
			what, d.Count, d.RowBytes, host, o.Epochs, o.FirstEpoch, o.PackMemory, o.Elsewhere != nil)
		dirs := planEachWay(t, what, planOf(s), o)

		o.PackMethod, o.Dir = PackScan, dirs[PackScan]
		p, _, err := OpenEpochs(s.Session(), o)
		if err != nil {
			t.Fatal(err)
		}
		for e := o.FirstEpoch; e < o.FirstEpoch+o.Epochs; e++ {
			for b := range p.BatchesPerEpoch() {
				_, sample, err := oneSample(p, e, b)
				if err != nil {
					t.Fatal(err)
				}
				dst := make([]byte, int64(len(sample.Nodes))*d.RowBytes)
				if _, err := p.Gather(e, b, "", sample.Nodes, dst); err != nil {
					t.Fatalf("%s: epoch %d batch %d: %v", what, e, b, err)
				}
				for i, v := range sample.Nodes {
					if o.Elsewhere != nil {
						if _, ok := slices.BinarySearch(o.Elsewhere[""], v); ok {
							continue
						}
					}
					if !bytes.Equal(dst[int64(i)*d.RowBytes:int64(i+1)*d.RowBytes], d.Want([]int64{v})) {
						t.Fatalf("%s: epoch %d batch %d: node %d's row differs from the dataset's", what, e, b, v)
					}
				}
			}
		}
		p.Close()
	}
}

// TestWindowsSpanEpochs: a window runs on from one epoch's packed file into the next and holds
// each row once, so K epochs that fit one window are packed by one pass (one window, fewer bytes
// than the plan packs); the plan is the same, byte for byte, as with a window a batch and with
// windows that end inside an epoch (at least half full on average, extents written a few blocks
// a write), by either method, and every batch gathers the dataset's rows.
func TestWindowsSpanEpochs(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 2000+rng.Int64N(2000), 1+rng.Int64N(40), 1+rng.IntN(3), 2+rng.IntN(5), rng)
	host := []int64{0, (d.RowBytes + 16) * d.Count / 4}[rng.IntN(2)]
	s := mustOpen(t, d.Dir, featurestore.Options{HostCacheBytes: host})
	defer s.Close()
	o := epochOpts(t, d, 2+rng.IntN(3))
	o.Sample.Seed = rng.Uint64()
	o.BatchSize = 5 + rng.IntN(20) // many batches a window: its end falls near its target
	nb := BatchesPerEpoch(o.count(), o.BatchSize, o.DropLast)
	dirs := map[string]string{}
	plan := func(name, method string, memory int64) *EpochPlanReport {
		o2 := o
		o2.Dir, o2.PackMethod, o2.PackMemory = filepath.Join(t.TempDir(), name), method, memory
		rep, err := PlanEpochs(s.Session(), o2)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("%s: %d windows, %d rows packed, %d reads, %d bytes", name, rep.PackWindows, rep.RowsPacked, rep.PackReads, rep.PackReadBytes)
		dirs[name] = o2.Dir
		return rep
	}
	one := plan("one window", "", 0)
	if one.Planned != o.Epochs || one.PackWindows != 1 {
		t.Fatalf("%d epochs (%d batches each) in the default window: %d planned, %d windows, want %d and 1", o.Epochs, nb, one.Planned, one.PackWindows, o.Epochs)
	}
	perBatch := plan("a window a batch", PackScan, 1)
	if perBatch.PackWindows != o.Epochs*nb {
		t.Fatalf("a window a batch: %d windows for %d batches", perBatch.PackWindows, o.Epochs*nb)
	}
	// A window holds each row once: the one window's bytes are the plan's distinct rows, fewer
	// than its packed bytes where batches share rows.
	packed, distinct := one.BytesWritten-one.SampleBytes, one.PackWindowBytes.Max
	if distinct >= packed || distinct < packed/int64(o.Epochs*nb) {
		t.Fatalf("one window of %d bytes for %d packed bytes", distinct, packed)
	}
	// Windows of at most 1/(w + 0.2) of the plan's distinct rows: each holds the rows its batches
	// share with other windows too, so there are more than w + 1, but they are at least half full
	// on average (a window's bytes are whole packAlign blocks of each type; how windows end is
	// TestWindowTargetsSplitEvenly's).
	limit := max(packAlign, distinct*5/int64(5*(2+rng.IntN(3))+1))
	defer func(n int) { packWriteBytes = n }(packWriteBytes)
	packWriteBytes = packAlign * (1 + rng.IntN(3)) // extents written a few blocks a write
	inside := plan("windows ending inside epochs", PackRandom, limit)
	ws := inside.PackWindowBytes
	held := int64(ws.Mean*float64(inside.PackWindows) + 0.5)
	usable := limit / packAlign * packAlign
	if least := (held + usable - 1) / usable; inside.PackWindows < 2 || int64(inside.PackWindows) > 2*least+1 || ws.Max > limit {
		t.Fatalf("windows of at most %d bytes for %d distinct bytes (%d epochs of %d batches): %d windows of %+v bytes",
			limit, distinct, o.Epochs, nb, inside.PackWindows, ws)
	}
	samePlans(t, "one window and a window a batch", dirs["one window"], dirs["a window a batch"])
	samePlans(t, "one window and windows ending inside epochs", dirs["one window"], dirs["windows ending inside epochs"])

	o.Dir = dirs["one window"]
	p, _, err := OpenEpochs(s.Session(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for e := range o.Epochs {
		for b := range nb {
			_, sample, err := oneSample(p, e, b)
			if err != nil {
				t.Fatal(err)
			}
			dst := make([]byte, int64(len(sample.Nodes))*d.RowBytes)
			if _, err := p.Gather(e, b, "", sample.Nodes, dst); err != nil {
				t.Fatalf("epoch %d batch %d: %v", e, b, err)
			}
			if !bytes.Equal(dst, d.Want(sample.Nodes)) {
				t.Fatalf("epoch %d batch %d: the rows differ from the dataset's", e, b)
			}
		}
	}
}

// TestWindowTargetsSplitEvenly: with windows that fill at a fixed number of batches, the first
// fills, and the rest split the batches left evenly: as few windows as hold the plan, no two
// (but the first) more than a batch apart, so no pass packs a small remainder.
func TestWindowTargetsSplitEvenly(t *testing.T) {
	rng := newRand(t)
	for range 200 {
		total, capacity := 1+rng.IntN(5000), 1+rng.IntN(400)
		pk := &packer{batches: total}
		var sizes []int
		for laid := 0; laid < total; {
			n := 0
			for laid < total && n < capacity {
				if target := pk.targetBatches(); target > 0 && n >= target {
					break
				}
				n, laid = n+1, laid+1
			}
			if n == capacity && laid < total && pk.targetBatches() == 0 {
				pk.fullBatches = n // the window filled: the next batch did not fit
			}
			pk.handedBatches += n
			sizes = append(sizes, n)
		}
		if want := (total + capacity - 1) / capacity; len(sizes) != want {
			t.Fatalf("%d batches, %d a full window: %d windows %v, want %d", total, capacity, len(sizes), sizes, want)
		}
		if rest := sizes[1:]; len(rest) > 0 && slices.Max(rest)-slices.Min(rest) > 1 {
			t.Fatalf("%d batches, %d a full window: windows %v, not even", total, capacity, sizes)
		}
	}
}

// TestAscendingMatchesSort: ascending sorts distinct ids as slices.Sort does and places each
// where the sort puts it, for random sets (none, and every node, included); an id out of range
// is an error naming it.
func TestAscendingMatchesSort(t *testing.T) {
	rng := newRand(t)
	for range 100 {
		nodes := 1 + rng.Int64N(5000)
		ids := rng.Perm(int(nodes))[:rng.IntN(int(nodes)+1)]
		in := make([]int64, len(ids))
		for i, id := range ids {
			in[i] = int64(id)
		}
		sorted, place, err := ascending(in, nodes)
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Sorted(slices.Values(in))
		if !slices.Equal(sorted, want) && !(len(sorted) == 0 && len(want) == 0) {
			t.Fatalf("%d of %d nodes: sorted %v, want %v", len(in), nodes, sorted, want)
		}
		for j, id := range in {
			if sorted[place[j]] != id {
				t.Fatalf("%d of %d nodes: id %d placed at %d, which holds %d", len(in), nodes, id, place[j], sorted[place[j]])
			}
		}
	}
	if _, _, err := ascending([]int64{3, 7}, 7); err == nil || !strings.Contains(err.Error(), "row 7") {
		t.Fatalf("an id past the nodes: %v", err)
	}
}

// TestWindowReadsWhileTheOneBeforeWrites: a window's rows are read while the window before it
// is written, so the disk's reads and writes overlap: the plan's first write (the first window's)
// waits until the store's IO counters show the next window's reads; it waits in vain (10 s), and
// the test fails, where a window is read only after the one before is written.
func TestWindowReadsWhileTheOneBeforeWrites(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 2000, 8, 1, 5, rng)
	s := mustOpen(t, d.Dir, featurestore.Options{})
	defer s.Close()
	o := epochOpts(t, d, 2)
	o.PackMemory = 4 * packAlign // many windows
	o.PackMethod = []string{PackScan, PackRandom}[rng.IntN(2)]
	var first sync.Once
	var overlapped atomic.Bool
	o.fs = hooked(func(f wfs.File, p []byte, off int64) (int, error) {
		if !strings.HasSuffix(f.Name(), ".packed") { // the samples files and the index are written apart from the windows
			return f.WriteAt(p, off)
		}
		first.Do(func() {
			before := s.Stats().IO.Reads
			// The next window is laid out (its batches sampled) before it reads: under -race on a
			// loaded machine that took more than 10 s once, so the hold waits up to a minute; it
			// ends at the first read, so a passing run waits no longer.
			for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if s.Stats().IO.Reads > before {
					overlapped.Store(true)
					return
				}
			}
		})
		return f.WriteAt(p, off)
	})
	rep, err := PlanEpochs(s.Session(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.PackWindows < 3 {
		t.Fatalf("%d windows of %d bytes: too few to overlap", rep.PackWindows, o.PackMemory)
	}
	if !overlapped.Load() {
		t.Fatalf("%s packing, %d windows: no window read while the first was written", o.PackMethod, rep.PackWindows)
	}
}

// TestHeteroPackMethodsWriteTheSameFiles: a session plan (several packed node types, rows of one
// served elsewhere, a first epoch, small windows) packs the same files with either method.
func TestHeteroPackMethodsWriteTheSameFiles(t *testing.T) {
	rng := newRand(t)
	d := writeHetero(t, rng)
	var all int64
	for _, nt := range d.Manifest.NodeTypes {
		all += nt.Count * (d.RowBytes[nt.Name] + 16)
	}
	ss, err := featurestore.OpenSession(d.Dir, featurestore.Options{HostCacheBytes: []int64{0, all / 4}[rng.IntN(2)]})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	o := heteroEpochOpts(t, ss, d, 2, rng)
	o.FirstEpoch = rng.IntN(5)
	o.PackMemory = 4<<10 + rng.Int64N(32<<10)
	st, err := ss.Stack("paper")
	if err != nil {
		t.Fatal(err)
	}
	var elsewhere []int64
	for v := range st.NumNodes() {
		if rng.IntN(3) == 0 {
			elsewhere = append(elsewhere, v)
		}
	}
	o.Elsewhere = map[string][]int64{"paper": elsewhere}
	planEachWay(t, "session plan", planSessionOf(ss), o)
}

// TestScanPackFindsCorruptBlocks flips a byte of a row every epoch packs (a seed's): a scan pack
// fails as corruption naming the feature file, and leaves nothing.
func TestScanPackFindsCorruptBlocks(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 3000, 16, 1+rng.IntN(2), 5, rng)
	s, err := featurestore.Open(d.Dir, featurestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := d.Train[rng.IntN(len(d.Train))]
	file, off := s.Feature().Locate(v)
	path := filepath.Join(d.Dir, s.Feature().Files[file])
	s.Close()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	at := off + rng.Int64N(d.RowBytes)
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s = mustOpen(t, d.Dir, featurestore.Options{})
	o := epochOpts(t, d, 1)
	o.PackMethod, o.PackMemory = PackScan, 8<<10+rng.Int64N(64<<10)
	_, err = PlanEpochs(s.Session(), o)
	if !errors.Is(err, dataset.ErrCorrupt) || !strings.Contains(err.Error(), s.Feature().Files[file]) {
		t.Fatalf("scan pack over a flipped byte of node %d's row in %s: %v", v, path, err)
	}
	if left, _ := os.ReadDir(o.Dir); len(left) != 0 {
		t.Fatalf("a failed plan left %v", left)
	}
}

// cancelAtRead cancels the planner of dir at the at-th read of a feature file and counts the
// feature file's reads after.
type cancelAtRead struct {
	dir          string
	at           int64
	reads, after atomic.Int64
	found        atomic.Bool
}

func (c *cancelAtRead) Inject(r gpuio.CompletedRead) []gpuio.Fault {
	if !strings.Contains(r.Path, "features.") {
		return nil
	}
	n := c.reads.Add(1)
	switch {
	case n == c.at:
		c.found.Store(CancelEpochPlan(c.dir))
	case n > c.at:
		c.after.Add(1)
	}
	return nil
}

// TestCancelScanPack cancels a planner in the middle of a scan: it stops within one buffer of
// reads, fails with context.Canceled and leaves nothing.
func TestCancelScanPack(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 20000, 16, 1, 5, rng)
	o := epochOpts(t, d, 2)
	o.PackMethod, o.PackMemory = PackScan, 256<<10 // a 16 KiB scan buffer
	whole := &cancelAtRead{dir: o.Dir, at: -1}
	if _, err := PlanEpochs(mustOpen(t, d.Dir, featurestore.Options{Faults: whole}).Session(), o); err != nil {
		t.Fatal(err)
	}
	c := &cancelAtRead{dir: o.Dir, at: 1 + rng.Int64N(40)}
	s := mustOpen(t, d.Dir, featurestore.Options{Faults: c})
	_, err := PlanEpochs(s.Session(), o)
	if !errors.Is(err, context.Canceled) || !c.found.Load() {
		t.Fatalf("canceled at read %d (planner found: %v): %v", c.at, c.found.Load(), err)
	}
	// The Files.Read under way (16 KiB of ranges) finishes, no more.
	t.Logf("the whole plan reads the feature file %d times; canceled at read %d, %d more", whole.reads.Load(), c.at, c.after.Load())
	if after := c.after.Load(); after*10 > whole.reads.Load() {
		t.Fatalf("%d reads of the feature file after the cancel at read %d, of %d for the whole plan", after, c.at, whole.reads.Load())
	}
	if left, _ := os.ReadDir(o.Dir); len(left) != 0 {
		t.Fatalf("a canceled plan left %v", left)
	}
}
