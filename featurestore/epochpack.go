package featurestore

import (
	"cmp"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/tierfs/tierfs/tiers/ssd"
)

// Packing a planned epoch: the planner hands the packer its batches in order, each with the rows
// its extents hold; the packer lays the extents out in a window of the packed file (their
// offsets are known before any row is read), and when the window is full reads every row of it,
// hashes each extent and writes the window in order. A window's rows of one packed type are read
// either by a scan (ssd.Tier.Scan: the feature's stripes in ascending order, large reads, a row
// that several batches need read once; DiskGNN's batched packing) or by random reads (one read a
// row, batch by batch), whichever the disk model (ssd.DiskModel) says takes less disk time, or
// as EpochOptions.PackMethod says. Both write the same bytes.

// Pack methods (EpochOptions.PackMethod, EpochPlanReport.PackMethod).
const (
	PackScan   = "scan"
	PackRandom = "random"
)

// DefaultPackMemory is EpochOptions.PackMemory's default: the packed bytes of a window. Each
// window scans the feature file once, so a window that holds an epoch (600 MiB a packed epoch
// of a 10M-node, 512 B-row graph placed 10/20) packs it in one scan.
const DefaultPackMemory = 1 << 30

// packer fills one window of an epoch's packed file while the window before is read, hashed
// and written (pack, on a goroutine of its own): sampling overlaps the disk. Memory: two windows.
type packer struct {
	src  *epochSource
	o    *EpochOptions
	rep  *EpochPlanReport
	stop func() error // an error stops the packer (CancelEpochPlan)
	ef   *epochFile

	cur, spare *window // filling; free for the next
	busy       *window // being packed, done says when
	done       chan error

	scans, randoms int // windows of one packed type read each way
}

// window is a run of extents of a packed file: the batches laid out in it and, once packed,
// their checksums and what reading them took.
type window struct {
	f       *os.File
	path    string
	buf     []byte // packAlign-aligned; len is what the window holds
	start   int64  // the packed file's offset of buf[0]
	batches []windowBatch
	sums    []uint64 // per extent of the window, in ef.Batches order from the first's index

	readSecs, writeSecs float64
	reads, bytes        int64
	scanEst, randomEst  float64
	scans, randoms      int
	model               ssd.DiskModel
}

// windowBatch is a batch in a window: its rows per packed type, and where each extent lies (its
// index in ef.Batches, its offset in the window).
type windowBatch struct {
	ids    [][]int64
	extent []int
	at     []int64
}

func newPacker(src *epochSource, o *EpochOptions, rep *EpochPlanReport, stop func() error) *packer {
	return &packer{src: src, o: o, rep: rep, stop: stop, cur: &window{}, spare: &window{}}
}

// reset starts the packed file f of epoch file ef, empty. No window may be in flight (wait).
func (pk *packer) reset(f *os.File, path string, ef *epochFile) {
	pk.ef = ef
	pk.cur.f, pk.cur.path, pk.cur.start = f, path, 0
	pk.cur.buf, pk.cur.batches = pk.cur.buf[:0], pk.cur.batches[:0]
}

// end is the packed file's offset past the last extent added.
func (pk *packer) end() int64 { return pk.cur.start + int64(len(pk.cur.buf)) }

// limit is the window's bytes: EpochOptions.PackMemory or its default.
func (pk *packer) limit() int64 { return cmp.Or(pk.o.PackMemory, DefaultPackMemory) }

// add lays batch p's extents out after the last, flushing the window first when they do not fit
// (a batch larger than the window gets a window of its own size).
func (pk *packer) add(p *packedBatch) error {
	var n int64
	for k, pt := range p.types {
		n += alignUp64(pt.rows * pk.src.stacks[k].spec.RowBytes)
	}
	limit := pk.limit()
	if len(pk.cur.batches) > 0 && int64(len(pk.cur.buf))+n > limit {
		if err := pk.flush(); err != nil {
			return err
		}
	}
	w := pk.cur
	if need := int64(len(w.buf)) + n; need > int64(cap(w.buf)) {
		grown := alignedBytes(max(need, min(limit, 2*int64(cap(w.buf)))))
		w.buf = grown[:copy(grown, w.buf)]
	}
	wb := windowBatch{ids: make([][]int64, len(p.types)), extent: make([]int, len(p.types)), at: make([]int64, len(p.types))}
	for k, pt := range p.types {
		at := int64(len(w.buf))
		size := alignUp64(pt.rows * pk.src.stacks[k].spec.RowBytes)
		wb.ids[k], wb.at[k], wb.extent[k] = pt.ids, at, len(pk.ef.Batches)
		pk.ef.Batches = append(pk.ef.Batches, batchExtent{Offset: w.start + at, Rows: pt.rows, Nodes: pt.nodesID})
		w.buf = w.buf[:at+size]
		clear(w.buf[at:])
	}
	w.batches = append(w.batches, wb)
	pk.rep.RowsPacked += p.rows()
	return nil
}

// flush waits for the window in flight, then hands the filled window to a goroutine that reads,
// hashes and writes it, and starts the next window after it.
func (pk *packer) flush() error {
	if len(pk.cur.batches) == 0 {
		return nil
	}
	if err := pk.wait(); err != nil {
		return err
	}
	w, next := pk.cur, pk.spare
	next.f, next.path, next.start = w.f, w.path, w.start+int64(len(w.buf))
	next.buf, next.batches = next.buf[:0], next.batches[:0]
	pk.cur, pk.spare, pk.busy = next, nil, w
	pk.done = make(chan error, 1)
	go func() { pk.done <- pk.pack(w) }()
	return nil
}

// wait waits for the window in flight, if any, and takes its checksums and counts into the plan.
func (pk *packer) wait() error {
	if pk.done == nil {
		return nil
	}
	err := <-pk.done
	w := pk.busy
	pk.done, pk.busy, pk.spare = nil, nil, w
	if err != nil {
		return err
	}
	if len(w.batches) > 0 {
		first := w.batches[0].extent[0]
		for i, sum := range w.sums {
			pk.ef.Batches[first+i].Sum = sum
		}
	}
	r := pk.rep
	r.ReadSeconds += w.readSecs
	r.WriteSeconds += w.writeSecs
	r.PackReads += w.reads
	r.PackReadBytes += w.bytes
	r.ScanEstimate += w.scanEst
	r.RandomEstimate += w.randomEst
	r.DiskModel = w.model
	r.PackWindows++
	pk.scans += w.scans
	pk.randoms += w.randoms
	return nil
}

// pack reads window w's rows, hashes its extents and writes it. It touches w alone (and the
// packed file), so it runs beside the planner filling the next window.
func (pk *packer) pack(w *window) error {
	w.sums = w.sums[:0]
	w.readSecs, w.writeSecs, w.reads, w.bytes, w.scanEst, w.randomEst, w.scans, w.randoms = 0, 0, 0, 0, 0, 0, 0, 0
	t := time.Now()
	for k := range pk.src.stacks {
		if err := pk.read(w, k); err != nil {
			return err
		}
	}
	w.readSecs = time.Since(t).Seconds()
	t = time.Now()
	for _, wb := range w.batches {
		for k, ids := range wb.ids {
			rb := pk.src.stacks[k].spec.RowBytes
			size := alignUp64(int64(len(ids)) * rb)
			ext := w.buf[wb.at[k] : wb.at[k]+size]
			w.sums = append(w.sums, xxhash.Sum64(ext[:int64(len(ids))*rb]))
			if err := pk.stop(); err != nil {
				return err
			}
			for done := int64(0); done < size; {
				n, err := planWriteAt(w.f, ext[done:], w.start+wb.at[k]+done)
				if err != nil {
					return fmt.Errorf("featurestore: writing epoch plan %s at byte %d: %w", w.path, w.start+wb.at[k]+done, err)
				}
				done += int64(n)
			}
		}
	}
	w.writeSecs = time.Since(t).Seconds()
	return nil
}

// read reads packed type k's rows of window w into it, by the cheaper method (or the one
// EpochOptions.PackMethod names).
func (pk *packer) read(w *window, k int) error {
	s := pk.src.stacks[k]
	rb := s.spec.RowBytes
	model := s.ssd.DiskModel()
	w.model = model
	var ids, at []int64
	var randomReads, randomBytes int64
	for _, wb := range w.batches {
		for i, id := range wb.ids[k] {
			ids, at = append(ids, id), append(at, wb.at[k]+int64(i)*rb)
		}
		if pk.o.PackMethod != PackScan {
			r, b := s.ssd.RandomReads(wb.ids[k])
			randomReads, randomBytes = randomReads+r, randomBytes+b
		}
	}
	if len(ids) == 0 {
		return nil
	}
	var plan *ssd.ScanPlan
	if pk.o.PackMethod != PackRandom {
		var err error
		// The scan's read buffer: a sixteenth of the window, from 16 KiB to 16 MiB (a queue of
		// the IO stack's largest reads).
		buffer := min(max(pk.limit()/16, 16<<10), 16<<20)
		opt := ssd.ScanOptions{Gap: model.BreakEvenGap(), MaxRange: min(buffer, 4<<20), Buffer: buffer}
		if plan, err = s.ssd.PlanScan(ids, at, opt); err != nil {
			return fmt.Errorf("featurestore: packing %s: %w", w.path, err)
		}
		w.scanEst += model.Seconds(plan.Reads, plan.Bytes)
	}
	if pk.o.PackMethod != PackScan {
		w.randomEst += model.Seconds(randomReads, randomBytes)
	}
	scan := pk.o.PackMethod == PackScan ||
		(pk.o.PackMethod == "" && model.Seconds(plan.Reads, plan.Bytes) < model.Seconds(randomReads, randomBytes))
	if scan {
		w.scans++
		w.reads += plan.Reads
		w.bytes += plan.Bytes
		if err := s.ssd.Scan(plan, w.buf, pk.stop); err != nil {
			return fmt.Errorf("featurestore: packing %s: %w", w.path, err)
		}
		return nil
	}
	w.randoms++
	w.reads += randomReads
	w.bytes += randomBytes
	// One batch's rows a Files.Read, planWorkers batches at once: the planner's random reads.
	var mu sync.Mutex
	var first error
	next := make(chan windowBatch)
	var wg sync.WaitGroup
	for range planWorkers() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for wb := range next {
				ids := wb.ids[k]
				pos := make([]int64, len(ids))
				for i := range pos {
					pos[i] = int64(i)
				}
				err := pk.stop()
				if err == nil {
					err = s.ssd.CopyToHost(ids, pos, w.buf[wb.at[k]:wb.at[k]+int64(len(ids))*rb])
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("featurestore: packing %s: %w", w.path, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, wb := range w.batches {
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed {
			break
		}
		if len(wb.ids[k]) > 0 {
			next <- wb
		}
	}
	close(next)
	wg.Wait()
	return first
}

// report sets the report's PackMethod from the windows read.
func (pk *packer) report() {
	switch {
	case pk.scans > 0 && pk.randoms > 0:
		pk.rep.PackMethod = PackScan + "+" + PackRandom
	case pk.scans > 0:
		pk.rep.PackMethod = PackScan
	case pk.randoms > 0:
		pk.rep.PackMethod = PackRandom
	}
}
