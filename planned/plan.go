package planned

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/internal/sysinfo"
	"github.com/tierfs/tierfs/internal/wfs"
	"github.com/tierfs/tierfs/placement"
	"github.com/tierfs/tierfs/tiers/ssd"
)

// EpochPlanReport says what PlanEpochs did.
type EpochPlanReport struct {
	Dir             string `json:"dir"`
	Epochs          int    `json:"epochs"`  // K asked for
	Planned         int    `json:"planned"` // epochs planned (fewer than K when the budget is reached)
	BatchesPerEpoch int    `json:"batches_per_epoch"`
	DiskBudget      int64  `json:"disk_budget"`
	// BytesWritten is the plan's files' bytes, what DiskBudget bounds: the packed files
	// (padding included) and the samples files; EpochBytes the same per epoch; SampleBytes the
	// samples files' part of BytesWritten.
	BytesWritten int64   `json:"bytes_written"`
	EpochBytes   []int64 `json:"epoch_bytes"`
	SampleBytes  int64   `json:"sample_bytes"`
	RowsPacked   int64   `json:"rows_packed"`
	// Per batch: sampled nodes, and packed rows (the nodes no memory tier holds).
	NodesPerBatch Spread  `json:"nodes_per_batch"`
	RowsPerBatch  Spread  `json:"rows_per_batch"`
	Seconds       float64 `json:"seconds"`
	// How the packed rows were read (EpochOptions.PackMethod): "scan", "random", or
	// "scan+random" where windows (of one node type) differed. PackWindows counts the windows,
	// PackReads and PackReadBytes the reads and bytes of the methods taken as the disk model
	// counts them; ScanEstimate and RandomEstimate are the model's seconds of each method over
	// every window (the one a forced method leaves out stays 0).
	PackMethod  string `json:"pack_method"`
	PackWindows int    `json:"pack_windows"`
	// PackWindowBytes is the distinct rows' bytes of the windows: they are about even, each up
	// to EpochOptions.PackMemory (a batch larger gets a window of its own).
	PackWindowBytes Spread        `json:"pack_window_bytes"`
	PackReads       int64         `json:"pack_reads"`
	PackReadBytes   int64         `json:"pack_read_bytes"`
	ScanEstimate    float64       `json:"scan_estimate_seconds"`
	RandomEstimate  float64       `json:"random_estimate_seconds"`
	DiskModel       ssd.DiskModel `json:"disk_model"`
	// Time summed over the planner's goroutines: sampling of the packing pass (0 for the epochs
	// it took from the placement pass's spool: their sampling is PlaceSampleSeconds); reading
	// rows from the dataset and writing the packed files (wall time of the packer).
	SampleSeconds float64 `json:"sample_seconds"`
	ReadSeconds   float64 `json:"read_seconds"`
	WriteSeconds  float64 `json:"write_seconds"`
	// The placement pass of PlaceTiers (all 0 without it), part of Seconds: PlaceSeconds its
	// wall time, PlaceSampleSeconds its sampling (and spooling, spool.go) summed over the
	// planner's goroutines, and FillSeconds the refill of the memory tiers (Place of every
	// packed stack: ranking the rows and reading them into the tiers).
	PlaceSeconds       float64 `json:"place_seconds"`
	PlaceSampleSeconds float64 `json:"place_sample_seconds"`
	FillSeconds        float64 `json:"fill_seconds"`
}

// Spread is the least, mean and largest of a per-batch count.
type Spread struct {
	Min  int64   `json:"min"`
	Mean float64 `json:"mean"`
	Max  int64   `json:"max"`
	n    int64
}

func (s *Spread) add(v int64) {
	if s.n == 0 || v < s.Min {
		s.Min = v
	}
	s.Max = max(s.Max, v)
	s.Mean += (float64(v) - s.Mean) / float64(s.n+1)
	s.n++
}

// packedBatch is one batch as the planner made it.
type packedBatch struct {
	nodes   int64        // sampled nodes of the packed types
	types   []packedRows // per packed stack
	nodeIDs [][]int64    // per packed stack, the sampled nodes, for placeForEpochs (packBatch drops them)
	draw    *batchDraw   // the batch's sample (packBatch drops it)
	sample  time.Duration
	err     error
	// The batch's sample record: its bytes (nil when only counted), length and xxhash64.
	record    []byte
	recordLen int64
	recordSum uint64
}

// packedRows are one node type's rows of a batch.
type packedRows struct {
	rows         int64
	sum, nodesID uint64
	ids          []int64 // the rows, in packed order; nil when only counted
}

// rows is the packed rows of every type.
func (p *packedBatch) rows() int64 {
	var n int64
	for _, t := range p.types {
		n += t.rows
	}
	return n
}

// errEpochOverBudget stops an epoch that does not fit the disk budget.
var errEpochOverBudget = errors.New("epoch over the disk budget")

// planFreeBytes is the free space of a plan's file system; tests replace it.
var planFreeBytes = sysinfo.FreeBytes

// planWorkers is the batches the planner samples and reads at once: half the CPUs Go may use
// (training shares them while a Loader plans its next round), from 2 to 8.
func planWorkers() int { return min(max(runtime.GOMAXPROCS(0)/2, 2), 8) }

// PlanEpochs writes a plan of o.Epochs epochs for the session as placed now into o.Dir, replacing
// any plan there (the old index goes first, so a failed run leaves no plan that looks valid), and
// writes the index last (temporary file, fsync, rename). With a disk budget it plans as many
// epochs as fit, at least one, else fails naming the budget and the bytes one epoch needs. Any
// error (a full disk included) removes the files it wrote. Place waits for no plan, but a plan
// made while a Place changes the memory tiers fails.
//
// What a plan packs follows o's fanouts (sourceOf): one fanout list (Sample.Fanouts) plans the
// tier stack of node type o.NodeType ("" for the only one), its batches drawn as its Sampler
// draws them; fanouts per edge type (EdgeFanouts, as NewSampler takes them) plan every node
// type with features, the batches seeds of o.NodeType sampled by the heterogeneous sampler —
// batch b of planned epoch e draws with seed BatchSampleSeed(Sample.Seed, e, b), the first draw
// of a Sampler of that seed — and each batch packs, per node type with features, the rows
// of its sampled nodes of that type that the type's memory tiers miss.
func PlanEpochs(ss *featurestore.Session, o EpochOptions) (*EpochPlanReport, error) {
	src, err := sourceOf(ss, &o, "PlanEpochs")
	if err != nil {
		return nil, err
	}
	return src.plan(o)
}

// plan is PlanEpochs of src.
func (src *epochSource) plan(o EpochOptions) (*EpochPlanReport, error) {
	leave, err := src.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	if err := o.check(src); err != nil {
		return nil, err
	}
	start := time.Now()
	var pl *placed
	if o.PlaceTiers {
		if pl, err = src.placeForEpochs(&o, true); err != nil {
			return nil, err
		}
		defer pl.close()
	}
	return src.planPlaced(o, pl, start)
}

// planPlaced is plan after the placement pass (pl, nil without PlaceTiers), which began at
// start; the caller has entered src and checked o. It takes the samples files pl spooled into
// the plan (spool.go); the caller closes pl.
func (src *epochSource) planPlaced(o EpochOptions, pl *placed, start time.Time) (_ *EpochPlanReport, err error) {
	fp, err := placement.Fingerprint(src.ss.Manifest().Dir())
	if err != nil {
		return nil, err
	}
	snaps, unlock := src.snapshots()
	inputs := src.planInputs(&o, fp, snaps)
	// Which rows the memory tiers hold, taken with the inputs: a batch's packed rows are the
	// others, found without the tiers' indexes (a plan whose tiers change fails, below).
	o.inMemory = make([]nodeSet, len(src.stacks))
	for k, s := range src.stacks {
		o.inMemory[k] = memoryRows(snaps[k], s.NumNodes())
	}
	unlock()

	o.fs = wfs.Or(o.fs)
	if err := o.fs.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("planned: plan directory: %w", err)
	}
	// One planner at a time writes a directory; its lock, held until the index is written,
	// also tells CleanEpochPlan that the packed files are a live planner's.
	lock, err := lockPlan(o.Dir, true)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	canceled := registerPlanner(o.Dir)
	defer unregisterPlanner(o.Dir, canceled)
	if err := removePlan(o.fs, o.Dir); err != nil {
		return nil, err
	}
	nb := BatchesPerEpoch(o.count(), o.BatchSize, o.DropLast)
	r := &epochPlanner{src: src, o: &o, pl: pl, nb: nb,
		rep: &EpochPlanReport{Dir: o.Dir, Epochs: o.Epochs, BatchesPerEpoch: nb, DiskBudget: o.DiskBudget}}
	defer func() {
		if err != nil && !errors.Is(err, errIndexKept) {
			for _, p := range r.written {
				o.fs.Remove(p)
			}
			o.fs.Remove(filepath.Join(o.Dir, EpochIndexFile+".tmp"))
		}
	}()
	if pl != nil {
		r.rep.PlaceSeconds, r.rep.PlaceSampleSeconds, r.rep.FillSeconds = pl.seconds, pl.sampleSeconds, pl.fillSeconds
	}
	r.stop = func() error {
		if canceled.Load() {
			return fmt.Errorf("planned: planning epochs into %s: %w (CancelEpochPlan)", o.Dir, context.Canceled)
		}
		return nil
	}
	r.pk = newPacker(src, &o, r.rep, o.Epochs*nb, r.stop)
	defer r.pk.close() // before the files are removed (deferred first)
	idx := epochIndex{Version: epochIndexVersion, Inputs: inputs, Batches: nb}
	if idx.Epochs, err = r.planFiles(); err != nil {
		return nil, err
	}
	rep := r.rep
	rep.Planned = len(idx.Epochs)
	idx.Planned = rep.Planned
	r.pk.report()

	snaps, unlock = src.snapshots()
	now := src.planInputs(&o, fp, snaps).MemoryTiers
	unlock()
	if !slices.Equal(now, inputs.MemoryTiers) {
		return nil, fmt.Errorf("planned: the memory tiers changed while planning epochs into %s (a Place ran); plan again", o.Dir)
	}
	rep.Seconds = time.Since(start).Seconds()
	idx.PlanSecs = rep.Seconds
	if err := writeIndex(o.fs, o.Dir, &idx); err != nil {
		return nil, err
	}
	return rep, nil
}

// epochPlanner is one run of planPlaced: what the epochs it packs share.
type epochPlanner struct {
	src     *epochSource
	o       *EpochOptions
	pl      *placed
	nb      int // batches per epoch
	rep     *EpochPlanReport
	pk      *packer
	stop    func() error // the run's cancel check
	written []string     // the files written, removed when the run fails
}

// epochPack is one epoch being packed by an epochPlanner.
type epochPack struct {
	e           int
	path, spath string // the packed and the samples file
	f           wfs.File
	ef          *epochFile
	// The epoch's samples file: the placement pass's (spooled), its records listed as their
	// batches are packed, or else written here (sw).
	sw      *samplesWriter
	spooled *spooledEpoch
	sampled int64 // the samples file's bytes so far
	off     int64 // the packed file's bytes so far
	// Past the disk budget (over), batches are only counted: need and needSamples are the
	// bytes the epoch needs, and its stored samples' part of them.
	over              bool
	need, needSamples int64
	countOnly         atomic.Bool
}

// planFiles packs o.Epochs epochs, or as many as fit the disk budget, and returns their
// index entries; every packed file is written, synced and closed when it returns.
func (r *epochPlanner) planFiles() ([]epochFile, error) {
	var planned []*epochFile
	for e := range r.o.Epochs {
		ef, err := r.planFile(e)
		if errors.Is(err, errEpochOverBudget) {
			break
		}
		if err != nil {
			return nil, err
		}
		planned = append(planned, ef)
	}
	// The last window: every packed file is written, synced and closed past here.
	if err := r.pk.flush(); err != nil {
		return nil, err
	}
	if err := r.pk.wait(); err != nil {
		return nil, err
	}
	// The packer fills an epoch's extents until its last window is written: copied now.
	var idx []epochFile
	for _, ef := range planned {
		idx = append(idx, *ef)
	}
	return idx, nil
}

// planFile packs epoch e and returns its index entry, or errEpochOverBudget (its files
// removed, the report as before it) when a later epoch does not fit the disk budget.
func (r *epochPlanner) planFile(e int) (*epochFile, error) {
	o, rep := r.o, r.rep
	// The report's per-batch figures, restored when the epoch does not fit the budget.
	rowsPacked, nodesPerBatch, rowsPerBatch, sampleSecs := rep.RowsPacked, rep.NodesPerBatch, rep.RowsPerBatch, rep.SampleSeconds
	ep, err := r.openEpoch(e)
	if err != nil {
		return nil, err
	}
	batch := func(b int, seeds []int64) *packedBatch {
		return r.src.packBatch(o, e, b, seeds, ep.countOnly.Load(), ep.spooled)
	}
	err = r.src.planEpoch(o, e, batch, func(p *packedBatch) error { return r.emit(ep, p) })
	err = r.closeEpoch(ep, err)
	if errors.Is(err, errEpochOverBudget) {
		rep.RowsPacked, rep.NodesPerBatch, rep.RowsPerBatch, rep.SampleSeconds = rowsPacked, nodesPerBatch, rowsPerBatch, sampleSecs
		r.o.fs.Remove(ep.path)
		r.o.fs.Remove(ep.spath)
		r.written = r.written[:len(r.written)-2]
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	if ep.over {
		want := fmt.Sprintf("at least the %d bytes one planned epoch needs (%d of them its stored samples)", ep.need, ep.needSamples)
		return nil, &featurestore.OptionError{Option: "plan_disk_budget", Value: o.DiskBudget, Want: want}
	}
	total := ep.off + ep.sampled
	if e == 0 && o.DiskBudget == 0 && o.Epochs > 1 {
		// K-1 more epochs about this size must fit the disk; find out now, not when it is full.
		if free, ferr := planFreeBytes(o.Dir); ferr == nil && total > 0 && int64(o.Epochs-1) > free/total {
			return nil, &featurestore.OptionError{Option: "planned_epochs", Value: o.Epochs,
				Want: fmt.Sprintf("epochs that fit the %d bytes free in %s (planned epoch 0 took %d bytes), or a plan_disk_budget to plan as many as fit", free, o.Dir, total)}
		}
	}
	ep.ef.Bytes, ep.ef.SampleBytes = ep.off, ep.sampled
	rep.BytesWritten += total
	rep.SampleBytes += ep.sampled
	rep.EpochBytes = append(rep.EpochBytes, total)
	return ep.ef, nil
}

// openEpoch creates epoch e's packed file and its samples file (or takes the spooled one)
// and opens the packer on them.
func (r *epochPlanner) openEpoch(e int) (*epochPack, error) {
	ep := &epochPack{e: e, path: filepath.Join(r.o.Dir, packedFile(e))}
	f, err := createPacked(r.o.fs, ep.path)
	if err != nil {
		return nil, err
	}
	r.written = append(r.written, ep.path)
	ep.f = f
	ep.ef = &epochFile{File: packedFile(e), Batches: make([]batchExtent, 0, r.nb*len(r.src.stacks))}
	ep.spooled = r.pl.spooled(e)
	ep.ef.Samples, ep.ef.SampleRecords = samplesFile(e), make([]sampleRecord, 0, r.nb)
	ep.spath = filepath.Join(r.o.Dir, ep.ef.Samples)
	if ep.spooled != nil {
		err = ep.spooled.take(r.o.fs, ep.spath)
	} else {
		ep.sw, err = createSamples(r.o.fs, ep.spath, &ep.ef.SampleRecords)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	r.written = append(r.written, ep.spath)
	r.pk.open(f, ep.path, ep.ef)
	return ep, nil
}

// emit takes batch p of epoch ep, in order: it packs it, or past the disk budget only counts
// its bytes (errEpochOverBudget past epoch 0).
func (r *epochPlanner) emit(ep *epochPack, p *packedBatch) error {
	if err := r.stop(); err != nil {
		return err
	}
	pad := p.recordLen // the batch's bytes: its extents and its sample record
	for t, pt := range p.types {
		pad += alignUp64(pt.rows * r.src.stacks[t].RowBytes())
	}
	ep.off = r.pk.end()
	if !ep.over && r.o.DiskBudget > 0 && r.rep.BytesWritten+ep.off+ep.sampled+pad > r.o.DiskBudget {
		if ep.e > 0 {
			return errEpochOverBudget
		}
		ep.over = true
		ep.countOnly.Store(true)
		ep.need, ep.needSamples = ep.off+ep.sampled, ep.sampled
	}
	if ep.over {
		ep.need += pad
		ep.needSamples += p.recordLen
		return nil
	}
	if err := r.pk.add(p); err != nil {
		return err
	}
	if ep.sw != nil {
		if err := ep.sw.add(p.record, p.recordSum); err != nil {
			return err
		}
	} else if ep.spooled != nil {
		ep.ef.SampleRecords = append(ep.ef.SampleRecords, ep.spooled.records[len(ep.ef.SampleRecords)])
	}
	ep.sampled += p.recordLen
	r.rep.NodesPerBatch.add(p.nodes)
	r.rep.RowsPerBatch.add(p.rows())
	r.rep.SampleSeconds += p.sample.Seconds()
	return nil
}

// closeEpoch ends epoch ep after its batches (err their first error): it closes out its
// packed file, or drops it when it is not kept, and finishes its samples file.
func (r *epochPlanner) closeEpoch(ep *epochPack, err error) error {
	ep.off = r.pk.end()
	// The packed file stays open until the window with its last extent is written (a window
	// runs on into the next epoch's file); a file that will not be kept is dropped now.
	if err == nil && !ep.over {
		err = r.pk.closeOut()
	} else if derr := r.pk.dropOut(); err == nil {
		err = derr
	}
	if ep.sw != nil {
		if serr := ep.sw.finish(err == nil && !ep.over); err == nil {
			err = serr
		}
	}
	ep.spooled.release() // synced when spooled
	return err
}

// planners holds, per plan directory (planKey) being written, its planner's cancel flag.
var planners sync.Map

// planKey is the key of plan directory dir in planners: its absolute, clean path.
func planKey(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return filepath.Clean(dir)
}

// registerPlanner records the planner writing dir (it holds dir's lock) and returns its cancel flag.
func registerPlanner(dir string) *atomic.Bool {
	f := new(atomic.Bool)
	planners.Store(planKey(dir), f)
	return f
}

func unregisterPlanner(dir string, f *atomic.Bool) { planners.CompareAndDelete(planKey(dir), f) }

// CancelEpochPlan stops the planner writing into dir (PlanEpochs, or OpenEpochs planning anew),
// if one is writing its packed files now, and says whether one was: it stops within a few
// batches, removes what it wrote and fails with an error wrapping context.Canceled. The tier
// placement pass of PlaceTiers, before the packed files, is not stopped. A planner that starts
// after the call is not stopped either: call it again until the planner's call returns.
func CancelEpochPlan(dir string) bool {
	f, ok := planners.Load(planKey(dir))
	if ok {
		f.(*atomic.Bool).Store(true)
	}
	return ok
}

// placed is what the placement pass of PlaceTiers did: its seconds, and the samples it spooled
// for the packing pass (nil: none).
type placed struct {
	seconds, sampleSeconds, fillSeconds float64
	spool                               *sampleSpool
}

// spooled is planned epoch e's spooled samples file, nil when it was not spooled.
func (pl *placed) spooled(e int) *spooledEpoch {
	if pl == nil {
		return nil
	}
	return pl.spool.epoch(e)
}

// close removes the spool, with what the plan did not take.
func (pl *placed) close() {
	if pl != nil {
		pl.spool.close()
	}
}

// placeForEpochs refills every packed stack's memory tiers by how often the K planned epochs
// read each of its rows (rows read equally often ranked as Place(nil) ranks them: placeCounts):
// it samples them (nothing is read) and counts every batch's nodes. With spool, it also spools
// each epoch's samples file for the packing pass (spool.go); the caller closes the result.
// Memory: 4 bytes a node of every packed type while it runs, 8 while it ranks.
func (src *epochSource) placeForEpochs(o *EpochOptions, spool bool) (_ *placed, err error) {
	start := time.Now()
	pl := &placed{}
	if spool && spoolSamples {
		if pl.spool, err = newSampleSpool(wfs.Or(o.fs), o.Dir, o.DiskBudget); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				pl.close()
			}
		}()
	}
	hot := make([][]uint32, len(src.stacks))
	for t, s := range src.stacks {
		hot[t] = make([]uint32, s.NumNodes())
	}
	for e := range o.Epochs {
		sp, err := pl.spool.begin(e)
		if err != nil {
			return nil, err
		}
		batch := func(b int, seeds []int64) *packedBatch {
			p := src.sampleBatch(o, e, b, seeds)
			if p.err == nil && sp != nil {
				src.setRecord(p, o, e, b, false)
			}
			return p
		}
		err = src.planEpoch(o, e, batch, func(p *packedBatch) error {
			pl.sampleSeconds += p.sample.Seconds()
			if err := sp.add(p); err != nil {
				return err
			}
			for t, ids := range p.nodeIDs {
				h := hot[t]
				ids, _ = o.keep(t, ids) // rows served elsewhere are not this store's to place
				for _, v := range ids {
					if h[v] < math.MaxUint32 {
						h[v]++
					}
				}
			}
			return nil
		})
		if ferr := sp.finish(err == nil); err == nil {
			err = ferr
		}
		if err != nil {
			return nil, err
		}
	}
	fill := time.Now()
	for t, s := range src.stacks {
		if err := s.Internals().PlaceCounts(hot[t]); err != nil {
			return nil, err
		}
	}
	pl.fillSeconds = time.Since(fill).Seconds()
	pl.seconds = time.Since(start).Seconds()
	return pl, nil
}

// planEpoch makes the batches of planned epoch e with batch (sampling or packing them),
// planWorkers at a time, and hands them to emit in order; emit's error stops the epoch.
func (src *epochSource) planEpoch(o *EpochOptions, e int, batch func(b int, seeds []int64) *packedBatch, emit func(*packedBatch) error) error {
	order := o.order(e)
	nb := BatchesPerEpoch(o.count(), o.BatchSize, o.DropLast)
	var stop atomic.Bool
	futures := make(chan chan *packedBatch, planWorkers())
	go func() {
		defer close(futures)
		for b := range nb {
			if stop.Load() {
				return
			}
			ch := make(chan *packedBatch, 1)
			futures <- ch
			go func() {
				ch <- batch(b, batchSeeds(order, o.BatchSize, b))
			}()
		}
	}()
	var err error
	for ch := range futures {
		p := <-ch
		if err != nil {
			continue // drain the batches in flight
		}
		if err = p.err; err == nil {
			err = emit(p)
		}
		if err != nil {
			stop.Store(true)
		}
	}
	return err
}

// sampleBatch draws batch b of planned epoch e (training epoch o.epoch(e)): its nodes per packed
// type, their count and hashes.
func (src *epochSource) sampleBatch(o *EpochOptions, e, b int, seeds []int64) *packedBatch {
	p := &packedBatch{}
	t := time.Now()
	d, err := src.draw(o, o.sampleSeed(e, b), seeds)
	if err != nil {
		p.err = fmt.Errorf("planned: planning epoch %d batch %d: %w", o.epoch(e), b, err)
		return p
	}
	p.sample = time.Since(t)
	p.nodeIDs, p.draw = d.nodes, d
	p.types = make([]packedRows, len(d.nodes))
	for k, ids := range d.nodes {
		p.nodes += int64(len(ids))
		p.types[k].nodesID = hashIDs(ids)
	}
	return p
}

// setRecord sets batch p's sample record from its sample: only its length when countOnly.
func (src *epochSource) setRecord(p *packedBatch, o *EpochOptions, e, b int, countOnly bool) {
	shape := src.recordShape(o)
	a, err := shape.arraysOf(p.draw)
	if err == nil && countOnly {
		p.recordLen, _, err = shape.recordLen(a)
	} else if err == nil {
		if p.record, err = shape.encode(a); err == nil {
			p.recordLen, p.recordSum = int64(len(p.record)), xxhash.Sum64(p.record)
		}
	}
	if err != nil {
		p.err = fmt.Errorf("planned: planning epoch %d batch %d: %w", o.epoch(e), b, err)
	}
}

// packBatch samples batch b of planned epoch e (or, when spooled holds the epoch, reads its
// nodes back) and, unless countOnly, lists the rows of its nodes that no memory tier holds and
// that are not served elsewhere (EpochOptions.Elsewhere), per packed type in its nodes' order:
// the rows its extents pack (the packer reads them).
func (src *epochSource) packBatch(o *EpochOptions, e, b int, seeds []int64, countOnly bool, spooled *spooledEpoch) *packedBatch {
	var p *packedBatch
	if spooled != nil {
		if p = spooled.batch(src, o, b); p.err != nil {
			p.err = fmt.Errorf("planned: planning epoch %d batch %d: %w", o.epoch(e), b, p.err)
			return p
		}
	} else {
		if p = src.sampleBatch(o, e, b, seeds); p.err != nil {
			return p
		}
		if src.setRecord(p, o, e, b, countOnly); p.err != nil {
			return p
		}
	}
	nodes := p.nodeIDs
	p.nodeIDs, p.draw = nil, nil
	for k := range src.stacks {
		mine, _ := o.keep(k, nodes[k])
		held, pt := o.inMemory[k], &p.types[k]
		for _, id := range mine {
			if !held.has(id) {
				pt.rows++
			}
		}
		if countOnly || pt.rows == 0 {
			continue
		}
		pt.ids = make([]int64, 0, pt.rows)
		for _, id := range mine {
			if !held.has(id) {
				pt.ids = append(pt.ids, id)
			}
		}
	}
	return p
}

// createPacked creates a packed file for O_DIRECT writes (plain writes where the file system has
// no O_DIRECT).
func createPacked(fsys wfs.FS, path string) (wfs.File, error) {
	f, err := fsys.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|unix.O_DIRECT, 0o644)
	if errors.Is(err, unix.EINVAL) {
		f, err = fsys.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("planned: epoch plan: %w", err)
	}
	return f, nil
}

// removePlan removes the plan in dir, index first.
func removePlan(fsys wfs.FS, dir string) error {
	for _, name := range []string{EpochIndexFile, EpochIndexFile + ".tmp"} {
		if err := fsys.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("planned: removing the old epoch plan: %w", err)
		}
	}
	old, _ := filepath.Glob(filepath.Join(dir, "epoch-*.packed"))
	samples, _ := filepath.Glob(filepath.Join(dir, "epoch-*.samples"))
	for _, p := range append(old, samples...) {
		if err := fsys.Remove(p); err != nil {
			return fmt.Errorf("planned: removing the old epoch plan: %w", err)
		}
	}
	return nil
}

// writeIndex writes idx as dir's index, its checksums bound (epochIndex.bind): a temporary
// file, fsync, rename, fsync of dir. When the fsync of dir fails, the index is removed again: the
// caller removes the files it names; when that removal fails too, the error wraps errIndexKept
// and the caller keeps them.
func writeIndex(fsys wfs.FS, dir string, idx *epochIndex) error {
	bound := *idx
	bound.Epochs = slices.Clone(idx.Epochs)
	for e := range bound.Epochs {
		bound.Epochs[e].Batches = slices.Clone(idx.Epochs[e].Batches)
		bound.Epochs[e].SampleRecords = slices.Clone(idx.Epochs[e].SampleRecords)
	}
	if err := bound.bind(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(&bound, "", " ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, EpochIndexFile+".tmp")
	f, err := wfs.Create(fsys, tmp)
	if err != nil {
		return fmt.Errorf("planned: epoch plan index: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	err = cmp.Or(err, f.Close())
	if err == nil {
		err = fsys.Rename(tmp, filepath.Join(dir, EpochIndexFile))
	}
	if err != nil {
		fsys.Remove(tmp)
		return fmt.Errorf("planned: epoch plan index: %w", err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		if rerr := fsys.Remove(filepath.Join(dir, EpochIndexFile)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			// The index stays in place: so must the files it names, a whole plan.
			return fmt.Errorf("planned: epoch plan index: %w; the plan stays in place, its index not removed: %v (%w)", err, rerr, errIndexKept)
		}
		return fmt.Errorf("planned: epoch plan index: %w", err)
	}
	return nil
}

// errIndexKept marks writeIndex's error when the index it wrote could not be removed again: the
// plan is whole and in place, so the planner keeps the files it names.
var errIndexKept = errors.New("index kept")

// lockPlan opens the plan directory dir and flocks it (a directory takes a flock like a file,
// and leaves nothing behind): waiting for another planner when wait, else returning a nil file
// when it is held.
func lockPlan(dir string, wait bool) (*os.File, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("planned: epoch plan directory: %w", err)
	}
	how := unix.LOCK_EX
	if !wait {
		how |= unix.LOCK_NB
	}
	if err := unix.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, fmt.Errorf("planned: lock %s: %w", dir, err)
	}
	return f, nil
}

// maxIndexBytes caps the index of a plan of k epochs of nb batches: what MarshalIndent writes
// for them, with room to spare.
func maxIndexBytes(k, nb int) int64 {
	return 64<<10 + int64(max(k, 1))*(4<<10+256*int64(nb))
}

// CleanEpochPlan removes from the plan directory dir what a killed PlanEpochs left there: its
// packed files when no index lists them (all of them when there is no index), its temporary
// index and its sample spool, and says what it removed, one line each. A live planner's files
// (its lock is held; a spool's own lock) and
// a damaged index's files are left alone. OpenEpochs calls it when it finds no plan; so does
// `tierfs verify` for the dataset's default plan directory.
func CleanEpochPlan(dir string) ([]string, error) {
	did := cleanSpools(dir)
	packed, _ := filepath.Glob(filepath.Join(dir, "epoch-*.packed"))
	samples, _ := filepath.Glob(filepath.Join(dir, "epoch-*.samples"))
	packed = append(packed, samples...)
	tmp := filepath.Join(dir, EpochIndexFile+".tmp")
	if _, err := os.Lstat(tmp); err == nil {
		packed = append(packed, tmp)
	}
	if len(packed) == 0 {
		return did, nil
	}
	lock, err := lockPlan(dir, false)
	if err != nil || lock == nil {
		return did, err // a live planner's, or a directory this user cannot lock
	}
	defer lock.Close()
	listed := map[string]bool{}
	data, err := dataset.ReadIn(dir, EpochIndexFile, maxIndexBytes(MaxPlannedEpochs, 1<<20))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return did, nil // not ours to judge: OpenEpochs reports it
	default:
		var idx epochIndex
		if json.Unmarshal(data, &idx) != nil {
			return did, nil
		}
		for _, ef := range idx.Epochs {
			listed[filepath.Join(dir, ef.File)] = true
			if ef.Samples != "" {
				listed[filepath.Join(dir, ef.Samples)] = true
			}
		}
	}
	var errs []error
	for _, p := range packed {
		if listed[p] {
			continue
		}
		if err := os.Remove(p); err == nil {
			did = append(did, "removed "+p+", left by a killed epoch planner")
		} else if !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("planned: remove %s: %w", p, err))
		}
	}
	return did, errors.Join(errs...)
}
