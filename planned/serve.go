package planned

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/internal/strictjson"
	"github.com/tierfs/tierfs/placement"
	"github.com/tierfs/tierfs/topology"
)

// Epochs serves a plan (PlanEpochs) to a training loop: for epoch e and batch b, the batch's
// seeds, its sample and its feature rows: exactly planned epoch e for e in [FirstEpoch,
// FirstEpoch+Planned()), else a replay (planned returns which). Its methods are
// safe for concurrent use; Close waits for none of them, so call it when they are done. The plan
// holds open files and up to a few IO stacks (16 MiB of staging each) until Close.
type Epochs struct {
	src *epochSource
	o   EpochOptions
	idx epochIndex

	orders []func() []int64 // per planned epoch (index k), computed once

	fds   []int
	paths []string // of fds
	// sampleFDs are the samples files per planned epoch (samples.go).
	sampleFDs []int
	stackMu   sync.Mutex
	stacksN   int // stacks open
	stacks    chan *gpuio.Stack
	backend   gpuio.Backend

	// tierGen is, per packed stack, its tierGen when the plan was checked against its memory
	// tiers.
	tierGen []uint64

	batches, rows, bytes, reads, readsNs atomic.Int64
	sampleBytes, sampleNs                atomic.Int64 // stored samples read

	// Planned device gathers (device.go): pinned buffers per packed type, sized for its
	// largest extent (maxRows), made on first use and freed by Close.
	deviceOnce sync.Once
	pinned     []packedBufs
	maxRows    []int64

	// Calls in flight and Close: Close waits for the calls, later calls fail.
	closeMu  sync.Mutex
	closed   bool
	inflight sync.WaitGroup
}

// enter admits a call unless the plan is closed; the caller calls done when it returns.
func (p *Epochs) enter() (done func(), err error) {
	p.closeMu.Lock()
	defer p.closeMu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("planned: epoch plan %s is closed: %w", p.o.Dir, featurestore.ErrClosed)
	}
	p.inflight.Add(1)
	return p.inflight.Done, nil
}

// epochStacks is the most IO stacks a plan opens (gathers reading packed files at once).
const epochStacks = 4

// OpenEpochs opens the plan in o.Dir for the session as placed now (what it packs follows o, as
// PlanEpochs). A missing plan is ErrNotFound and a plan made for other inputs a *StalePlanError,
// unless o.Replan: then it plans anew (PlanEpochs) first and the report is returned too.
func OpenEpochs(ss *featurestore.Session, o EpochOptions) (*Epochs, *EpochPlanReport, error) {
	src, err := sourceOf(ss, &o, "OpenEpochs")
	if err != nil {
		return nil, nil, err
	}
	return src.open(o)
}

// open is OpenEpochs of src.
func (src *epochSource) open(o EpochOptions) (*Epochs, *EpochPlanReport, error) {
	leave, err := src.enter()
	if err != nil {
		return nil, nil, err
	}
	defer leave()
	if err := o.check(src); err != nil {
		return nil, nil, err
	}
	start := time.Now()
	var pl *placed
	if o.PlaceTiers {
		// Samples spooled for a plan that may be reused are wasted, so only with Replan.
		if pl, err = src.placeForEpochs(&o, o.Replan); err != nil {
			return nil, nil, err
		}
		defer pl.close()
	}
	p, err := src.openPlan(o)
	if err == nil || !o.Replan || !(errors.Is(err, ErrStalePlan) || errors.Is(err, featurestore.ErrNotFound)) {
		return p, nil, err
	}
	rep, err := src.planPlaced(o, pl, start)
	if err != nil {
		return nil, nil, err
	}
	p, err = src.openPlan(o)
	return p, rep, err
}

func (src *epochSource) openPlan(o EpochOptions) (_ *Epochs, err error) {
	nb := BatchesPerEpoch(o.count(), o.BatchSize, o.DropLast)
	// Per batch: an extent per packed type and a sample record.
	data, err := dataset.ReadIn(o.Dir, EpochIndexFile, maxIndexBytes(o.Epochs, nb*(len(src.stacks)+1)))
	if errors.Is(err, os.ErrNotExist) {
		// What a killed PlanEpochs left (packed files without an index) goes now.
		_, _ = CleanEpochPlan(o.Dir)
		return nil, fmt.Errorf("planned: no epoch plan in %s: %w (%w)", o.Dir, err, featurestore.ErrNotFound)
	}
	var big *dataset.SizeError
	if errors.As(err, &big) {
		// Larger than a plan of these options can be: made for more epochs, or not a plan.
		return nil, &StalePlanError{Dir: o.Dir, Input: EpochIndexFile + " size", Plan: fmt.Sprintf("%d bytes", big.Size),
			Store: fmt.Sprintf("at most %d bytes for %d epochs of %d batches", big.Max, o.Epochs, nb)}
	}
	if err != nil {
		return nil, fmt.Errorf("planned: epoch plan: %w", err)
	}
	var idx epochIndex
	if err := strictjson.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("planned: epoch plan index %s: %v: %w", filepath.Join(o.Dir, EpochIndexFile), err, dataset.ErrCorrupt)
	}
	if idx.Version < oldestEpochIndexVersion || idx.Version > epochIndexVersion {
		return nil, &StalePlanError{Dir: o.Dir, Input: "index version", Plan: fmt.Sprint(idx.Version),
			Store: fmt.Sprintf("%d to %d", oldestEpochIndexVersion, epochIndexVersion)}
	}
	fp, err := placement.Fingerprint(src.ss.Manifest().Dir())
	if err != nil {
		return nil, err
	}
	snaps, unlock := src.snapshots()
	now := src.planInputs(&o, fp, snaps)
	gen := make([]uint64, len(src.stacks))
	for t, snap := range snaps {
		gen[t] = snap.Gen
	}
	unlock()
	if in, a, b := idx.Inputs.diff(now); in != "" {
		return nil, &StalePlanError{Dir: o.Dir, Input: in, Plan: a, Store: b}
	}
	if idx.Version >= boundEpochIndexVersion {
		if err := idx.bind(); err != nil { // unbinds
			return nil, err
		}
	}
	if idx.Planned < 1 || idx.Planned != len(idx.Epochs) || idx.Batches != nb {
		return nil, fmt.Errorf("planned: epoch plan index %s lists %d of %d epochs of %d batches: %w", o.Dir, len(idx.Epochs), idx.Planned, idx.Batches, dataset.ErrCorrupt)
	}
	o.Seeds = slices.Clone(o.Seeds)
	o.Sample.Fanouts = slices.Clone(o.Sample.Fanouts)
	o.EdgeFanouts = maps.Clone(o.EdgeFanouts)
	o.SeedOrders = slices.Clone(o.SeedOrders)
	for e, ord := range o.SeedOrders {
		o.SeedOrders[e] = slices.Clone(ord)
	}
	o.Elsewhere = nil // resolved into o.elsewhere
	if se := o.SeedEdges; se != nil {
		o.SeedEdges = &SeedEdges{EdgeType: se.EdgeType, Src: slices.Clone(se.Src), Dst: slices.Clone(se.Dst), Labels: slices.Clone(se.Labels), Link: se.Link}
		o.SeedEdges.Link.ReverseEdgeTypes = maps.Clone(se.Link.ReverseEdgeTypes)
	}
	p := &Epochs{src: src, o: o, idx: idx, tierGen: gen, stacks: make(chan *gpuio.Stack, epochStacks)}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	for e, ef := range idx.Epochs {
		// Entry e is planned epoch e's: the planner names its files by their epoch, so entries
		// reordered or copied over each other in the index are refused, not served as the
		// wrong epoch.
		if ef.File != packedFile(e) || ef.Samples != samplesFile(e) {
			return nil, fmt.Errorf("planned: epoch plan index %s lists %q and %q as planned epoch %d's files, which are %q and %q (its entries were reordered or copied): %w",
				filepath.Join(o.Dir, EpochIndexFile), ef.File, ef.Samples, e, packedFile(e), samplesFile(e), dataset.ErrCorrupt)
		}
		if len(ef.Batches) != idx.Batches*len(src.stacks) {
			return nil, fmt.Errorf("planned: epoch plan %s: epoch %d lists %d extents, want %d (%d batches of %d node types): %w", o.Dir, e, len(ef.Batches), idx.Batches*len(src.stacks), idx.Batches, len(src.stacks), dataset.ErrCorrupt)
		}
		path := filepath.Join(o.Dir, ef.File)
		// A regular file inside the plan directory, of the size the index says (the planner
		// writes exactly that much), never blocking on a FIFO.
		fd, size, err := dataset.OpenFDIn(o.Dir, ef.File, unix.O_DIRECT, ef.Bytes)
		if errors.Is(err, unix.EINVAL) {
			fd, size, err = dataset.OpenFDIn(o.Dir, ef.File, 0, ef.Bytes)
		}
		if err != nil {
			return nil, fmt.Errorf("planned: epoch plan %s: %w", path, err)
		}
		p.fds, p.paths = append(p.fds, fd), append(p.paths, path)
		if size < ef.Bytes {
			return nil, fmt.Errorf("planned: epoch plan %s holds %d bytes, its index says %d: %w", path, size, ef.Bytes, dataset.ErrCorrupt)
		}
		order := sync.OnceValue(func() []int64 { return p.o.order(e) }) // e indexes the planned epochs
		p.orders = append(p.orders, order)
	}
	if err := p.openSamples(); err != nil {
		return nil, err
	}
	st, err := p.newStack()
	if err != nil {
		return nil, err
	}
	p.backend, p.stacksN = st.Backend(), 1
	p.stacks <- st
	return p, nil
}

// newStack opens one more IO stack over the packed files: reads of up to 1 MiB, 16 in flight,
// with the store's fault injector (Options.Faults).
func (p *Epochs) newStack() (*gpuio.Stack, error) {
	st, err := gpuio.Open(p.fds, gpuio.Options{Backend: p.src.ss.Internals().Options().IOBackend, BlockSize: packAlign, QueueDepth: 16, MaxIOBytes: 1 << 20,
		Faults: p.src.ss.Internals().Options().Faults, Paths: p.paths})
	if err != nil {
		return nil, fmt.Errorf("planned: epoch plan %s: %w", p.o.Dir, err)
	}
	return st, nil
}

// takeStack takes a free IO stack, opening another while fewer than epochStacks are open.
func (p *Epochs) takeStack() (*gpuio.Stack, error) {
	select {
	case st := <-p.stacks:
		return st, nil
	default:
	}
	p.stackMu.Lock()
	open := p.stacksN < epochStacks
	if open {
		p.stacksN++
	}
	p.stackMu.Unlock()
	if !open {
		return <-p.stacks, nil
	}
	st, err := p.newStack()
	if err != nil {
		p.stackMu.Lock()
		p.stacksN--
		p.stackMu.Unlock()
	}
	return st, err
}

// Planned is the number of planned epochs: the plan covers the training epochs [FirstEpoch,
// FirstEpoch+Planned).
func (p *Epochs) Planned() int { return p.idx.Planned }

// FirstEpoch is the training epoch of planned epoch 0 (EpochOptions.FirstEpoch).
func (p *Epochs) FirstEpoch() int { return p.o.FirstEpoch }

// BatchesPerEpoch is the number of batches of every epoch.
func (p *Epochs) BatchesPerEpoch() int { return p.idx.Batches }

// RowBytes is the size of one feature row of the plan's one node type (the first packed type
// of a Session's plan: see RowBytesOf).
func (p *Epochs) RowBytes() int64 { return p.src.stacks[0].RowBytes() }

// RowBytesOf is the size of one feature row of packed node type ntype ("" for the only one).
func (p *Epochs) RowBytesOf(ntype string) (int64, error) {
	t, err := p.src.packedType(ntype)
	if err != nil {
		return 0, err
	}
	return p.src.stacks[t].RowBytes(), nil
}

// Dir is the plan's directory.
func (p *Epochs) Dir() string { return p.o.Dir }

// planned is the index k of the planned epoch serving epoch e, checking e and b: epoch e is
// planned epoch FirstEpoch+k with k = (e-FirstEpoch) mod Planned, e itself when the plan covers it.
func (p *Epochs) planned(e, b int) (int, error) {
	if e < 0 || b < 0 || b >= p.idx.Batches {
		return 0, &featurestore.OptionError{Option: "epoch, batch", Value: fmt.Sprintf("%d, %d", e, b), Want: fmt.Sprintf("an epoch >= 0 and a batch in [0, %d)", p.idx.Batches)}
	}
	k := (e - p.o.FirstEpoch) % p.idx.Planned
	if k < 0 {
		k += p.idx.Planned
	}
	return k, nil
}

// batchOfType enters a call (done ends it) for batch b of epoch e, of the packed node type
// ntype ("" for the only one): its planned epoch pe and the type's index t among the packed ones.
func (p *Epochs) batchOfType(e, b int, ntype string) (done func(), pe, t int, err error) {
	if done, err = p.enter(); err != nil {
		return nil, 0, 0, err
	}
	if pe, err = p.planned(e, b); err == nil {
		t, err = p.src.packedType(ntype)
	}
	if err != nil {
		done()
		return nil, 0, 0, err
	}
	return done, pe, t, nil
}

// Seeds are the seeds of batch b of epoch e (those of the planned epoch serving it: see
// planned); of a link plan, the positions of its seed edges in EpochOptions.SeedEdges.
func (p *Epochs) Seeds(e, b int) ([]int64, error) {
	pe, err := p.planned(e, b)
	if err != nil {
		return nil, err
	}
	return slices.Clone(batchSeeds(p.orders[pe](), p.o.BatchSize, b)), nil
}

// Sample is the sample of batch b of epoch e, checked against the plan; it returns the batch's
// seeds too. It reads the sample from the plan's samples file (one read, its xxhash64 checked: a
// mismatch wraps dataset.ErrCorrupt naming the file, epoch and batch) and draws nothing. A
// Store's plan's sample is of its one type (the arrays of the records' homogeneous format), a
// Session's of every type. Of a link plan it is the node sample of SampleEdges, the seeds the
// positions of its seed edges.
func (p *Epochs) Sample(e, b int) ([]int64, *topology.HeteroSample, error) {
	seeds, d, err := p.storedDraw(e, b)
	if err != nil {
		return nil, nil, err
	}
	if !p.src.typed {
		return seeds, d.sample.Typed(), nil
	}
	return seeds, d.hetero, nil
}

// draw samples batch b of epoch e again and checks every packed type's nodes against the plan:
// what serving did before plans stored their samples (tests and BenchmarkEpochSample compare
// the stored sample with it).
func (p *Epochs) draw(e, b int) ([]int64, *batchDraw, error) {
	seeds, err := p.Seeds(e, b)
	if err != nil {
		return nil, nil, err
	}
	k, _ := p.planned(e, b) // checked by Seeds
	d, err := p.src.draw(&p.o, p.o.sampleSeed(k, b), seeds)
	if err != nil {
		return nil, nil, err
	}
	for t, nodes := range d.nodes {
		if err := p.checkNodes(e, b, k, t, nodes); err != nil {
			return nil, nil, err
		}
	}
	return seeds, d, nil
}

// extent is the extent of packed type t of batch b of planned epoch (index) pe.
func (p *Epochs) extent(pe, b, t int) batchExtent {
	return p.idx.Epochs[pe].Batches[b*len(p.src.stacks)+t]
}

// checkNodes checks the node list of packed type t of batch b of epoch e (planned epoch index
// k) against the plan.
func (p *Epochs) checkNodes(e, b, k, t int, nodes []int64) error {
	ext := p.extent(k, b, t)
	if got := hashIDs(nodes); got != ext.Nodes {
		what := "nodes"
		if len(p.src.stacks) > 1 {
			what = fmt.Sprintf("nodes of type %q", p.src.typeName(t))
		}
		return fmt.Errorf("planned: epoch %d batch %d (planned epoch %d) of plan %s: the sample's %d %s hash to %016x, the plan has %016x: %w",
			e, b, p.o.epoch(k), p.o.Dir, len(nodes), what, got, ext.Nodes, &StalePlanError{Dir: p.o.Dir, Input: "sample", Plan: fmt.Sprintf("%016x", ext.Nodes), Store: fmt.Sprintf("%016x", got)})
	}
	return nil
}

// BatchIO is what serving one batch read from its packed file.
type BatchIO struct {
	Rows  int64 `json:"rows"`  // packed rows (the sample's nodes no memory tier holds)
	Bytes int64 `json:"bytes"` // bytes read from the packed file (aligned)
	Reads int64 `json:"reads"` // reads issued
}

// Gather writes the feature rows of nodes of node type ntype ("" for the only packed one), the
// batch's sampled nodes of that type (Sample.Nodes of batch b of epoch e as Sample returns them,
// or HeteroSample.Nodes of its index), into dst (len(nodes) rows of its RowBytesOf), in order:
// rows the memory tiers hold through them, the rest from the batch's packed extent, one large
// read checked against its xxhash64 (a mismatch wraps dataset.ErrCorrupt naming the file, epoch
// and batch). The rows of nodes served elsewhere (EpochOptions.Elsewhere) are not written: the
// caller fills them. A type without features has no rows to gather (ErrNotFound).
func (p *Epochs) Gather(e, b int, ntype string, nodes []int64, dst []byte) (BatchIO, error) {
	var io BatchIO
	done, pe, t, err := p.batchOfType(e, b, ntype)
	if err != nil {
		return io, err
	}
	defer done()
	s := p.src.stacks[t]
	leave, err := s.Internals().Enter()
	if err != nil {
		return io, err
	}
	defer leave()
	rb := s.RowBytes()
	if int64(len(dst)) != int64(len(nodes))*rb {
		return io, fmt.Errorf("planned: planned gather of %d rows needs a %d-byte destination, got %d bytes", len(nodes), int64(len(nodes))*rb, len(dst))
	}
	if err := p.checkNodes(e, b, pe, t, nodes); err != nil {
		return io, err
	}
	ef := p.idx.Epochs[pe]
	ext := p.extent(pe, b, t)
	path := filepath.Join(p.o.Dir, ef.File)

	snap := s.Internals().Snapshot()
	if snap.Gen != p.tierGen[t] {
		snap.Release()
		return io, p.refilled(e, b)
	}
	ts := snap.Tiers
	ids, posOf := p.o.keep(t, nodes) // rows served elsewhere are the caller's to fill
	sp := snap.Split(ids, posOf)
	last := len(ts) - 1
	if int64(sp.Count(last)) != ext.Rows {
		snap.Release()
		return io, p.missMismatch(e, b, int64(sp.Count(last)), ext.Rows)
	}
	// The packed rows go straight into dst when they are its rows in one run (no memory tier
	// holds any of them), else into scratch and are scattered after the check.
	pos := sp.Pos(last)
	n := ext.Rows * rb
	var buf []byte
	direct := ext.Rows > 0 && pos[0]+ext.Rows-1 == pos[len(pos)-1]
	if direct {
		buf = dst[pos[0]*rb : pos[0]*rb+n]
	} else {
		buf = make([]byte, n)
	}
	errs := make([]error, len(ts))
	var disk, memory sync.WaitGroup
	if ext.Rows > 0 {
		disk.Go(func() { io, errs[last] = p.readExtent(pe, ext, buf) })
	}
	for k := range last {
		if sp.Count(k) > 0 {
			memory.Go(func() { errs[k] = ts[k].CopyToHost(sp.Slots(k), sp.Pos(k), dst) })
		}
	}
	memory.Wait()
	snap.Release()
	disk.Wait()
	if err := errors.Join(errs...); err != nil {
		return io, fmt.Errorf("planned: epoch %d batch %d of plan %s (%s): %w", e, b, p.o.Dir, path, err)
	}
	if err := p.checkExtent(e, b, pe, ext, buf); err != nil {
		return io, err
	}
	if !direct {
		for k, at := range pos {
			copy(dst[at*rb:(at+1)*rb], buf[int64(k)*rb:int64(k+1)*rb])
		}
	}
	return p.served(io, ext), nil
}

// served counts a batch served in full: its extent's rows and io's bytes and reads.
func (p *Epochs) served(io BatchIO, ext batchExtent) BatchIO {
	io.Rows = ext.Rows
	p.batches.Add(1)
	p.rows.Add(io.Rows)
	p.bytes.Add(io.Bytes)
	p.reads.Add(io.Reads)
	return io
}

// refilled is the error of a batch served after the memory tiers were refilled.
func (p *Epochs) refilled(e, b int) error {
	return fmt.Errorf("planned: epoch %d batch %d of plan %s: the memory tiers were refilled after the plan was opened: %w",
		e, b, p.o.Dir, &StalePlanError{Dir: p.o.Dir, Input: "memory tiers' contents", Plan: "as opened", Store: "refilled since"})
}

// missMismatch is the error of a batch whose memory tiers miss other than the rows packed.
func (p *Epochs) missMismatch(e, b int, missed, packed int64) error {
	return fmt.Errorf("planned: epoch %d batch %d of plan %s: the memory tiers miss %d of its rows, the plan packed %d: %w",
		e, b, p.o.Dir, missed, packed, &StalePlanError{Dir: p.o.Dir, Input: "memory tiers' contents", Plan: fmt.Sprint(packed), Store: fmt.Sprint(missed)})
}

// checkExtent checks the packed rows of batch b of epoch e (planned epoch index pe) against the plan's
// xxhash64: a mismatch wraps dataset.ErrCorrupt naming the file and batch.
func (p *Epochs) checkExtent(e, b, pe int, ext batchExtent, data []byte) error {
	if sum := xxhash.Sum64(data); sum != ext.Sum {
		return fmt.Errorf("planned: epoch %d batch %d (planned epoch %d): packed file %s at byte %d (%d rows) has checksum %016x, the plan has %016x: %w",
			e, b, p.o.epoch(pe), filepath.Join(p.o.Dir, p.idx.Epochs[pe].File), ext.Offset, ext.Rows, sum, ext.Sum, dataset.ErrCorrupt)
	}
	return nil
}

// readExtent reads a batch's packed rows into buf through an IO stack.
func (p *Epochs) readExtent(pe int, ext batchExtent, buf []byte) (BatchIO, error) {
	st, err := p.takeStack()
	if err != nil {
		return BatchIO{}, err
	}
	defer func() { p.stacks <- st }()
	before := st.Stats()
	t := time.Now()
	if err := st.Submit([]gpuio.Request{{File: pe, Offset: ext.Offset, Length: len(buf), Dst: buf}}); err != nil {
		st.Complete()
		return BatchIO{}, err
	}
	err = st.Complete()
	p.readsNs.Add(int64(time.Since(t)))
	after := st.Stats()
	return BatchIO{Bytes: int64(after.BytesRead - before.BytesRead), Reads: int64(after.Reads - before.Reads)}, err
}

// PlannedBatch is one served batch.
type PlannedBatch struct {
	Seeds  []int64
	Sample *topology.HeteroSample
	Rows   map[string][]byte // per packed node type: the rows of its Sample.Nodes, in order
	IO     BatchIO           // summed over the types
}

// Load is Sample then Gather of every packed node type of batch b of epoch e, into new
// memory.
func (p *Epochs) Load(e, b int) (*PlannedBatch, error) {
	seeds, smp, err := p.Sample(e, b)
	if err != nil {
		return nil, err
	}
	out := &PlannedBatch{Seeds: seeds, Sample: smp, Rows: map[string][]byte{}}
	for t, s := range p.src.stacks {
		nodes := smp.Nodes[p.src.recordType(t)]
		rows := make([]byte, int64(len(nodes))*s.RowBytes())
		io, err := p.Gather(e, b, p.src.typeName(t), nodes, rows)
		if err != nil {
			return nil, err
		}
		out.Rows[p.src.typeName(t)] = rows
		out.IO.Rows += io.Rows
		out.IO.Bytes += io.Bytes
		out.IO.Reads += io.Reads
	}
	return out, nil
}

// EpochStats counts what an Epochs served since it was opened.
type EpochStats struct {
	Planned         int           `json:"planned"`
	FirstEpoch      int           `json:"first_epoch"` // the training epoch of planned epoch 0
	BatchesPerEpoch int           `json:"batches_per_epoch"`
	PlanSeconds     float64       `json:"plan_seconds"` // how long planning took
	Backend         gpuio.Backend `json:"backend"`
	Batches         int64         `json:"batches"`    // gathers: one per batch and packed node type
	Rows            int64         `json:"rows"`       // rows read from packed files
	BytesRead       int64         `json:"bytes_read"` // bytes read from packed files
	Reads           int64         `json:"reads"`      // reads issued
	ReadSeconds     float64       `json:"read_seconds"`
	// Stored samples read (Sample, SampleEdges): bytes and
	// seconds of the reads.
	SampleBytesRead   int64   `json:"sample_bytes_read"`
	SampleReadSeconds float64 `json:"sample_read_seconds"`
}

// Stats returns the counters; per batch, divide by Batches.
func (p *Epochs) Stats() EpochStats {
	return EpochStats{Planned: p.idx.Planned, FirstEpoch: p.o.FirstEpoch, BatchesPerEpoch: p.idx.Batches, PlanSeconds: p.idx.PlanSecs, Backend: p.backend,
		Batches: p.batches.Load(), Rows: p.rows.Load(), BytesRead: p.bytes.Load(), Reads: p.reads.Load(),
		ReadSeconds:     time.Duration(p.readsNs.Load()).Seconds(),
		SampleBytesRead: p.sampleBytes.Load(), SampleReadSeconds: time.Duration(p.sampleNs.Load()).Seconds()}
}

// Close waits for the calls in flight, then closes the IO stacks and files; later calls fail
// with ErrClosed.
func (p *Epochs) Close() error {
	p.closeMu.Lock()
	first := !p.closed
	p.closed = true
	p.closeMu.Unlock()
	p.inflight.Wait()
	if first {
		p.stackMu.Lock()
		n := p.stacksN
		p.stacksN = epochStacks // no more open
		p.stackMu.Unlock()
		for range n {
			(<-p.stacks).Close()
		}
		for _, fd := range p.fds {
			unix.Close(fd)
		}
		for _, fd := range p.sampleFDs {
			unix.Close(fd)
		}
		for i := range p.pinned {
			p.pinned[i].close()
		}
	}
	return nil
}
