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

// DefaultPackMemory is EpochOptions.PackMemory's default: the packed bytes of a window.
const DefaultPackMemory = 256 << 20

// packer fills, reads, hashes and writes the windows of one epoch's packed file at a time.
type packer struct {
	src  *epochSource
	o    *EpochOptions
	rep  *EpochPlanReport
	stop func() error // an error stops the packer (CancelEpochPlan)

	f    *os.File
	path string
	ef   *epochFile

	buf     []byte // the window, packAlign-aligned; len is what it holds
	start   int64  // the packed file's offset of buf[0]
	batches []windowBatch

	scans, randoms int // windows of one packed type read each way
}

// windowBatch is a batch in the window: its rows per packed type, and where each extent lies
// (its index in ef.Batches, its offset in the window).
type windowBatch struct {
	ids    [][]int64
	extent []int
	at     []int64
}

func newPacker(src *epochSource, o *EpochOptions, rep *EpochPlanReport, stop func() error) *packer {
	return &packer{src: src, o: o, rep: rep, stop: stop}
}

// reset starts the packed file f of epoch file ef, empty.
func (pk *packer) reset(f *os.File, path string, ef *epochFile) {
	pk.f, pk.path, pk.ef = f, path, ef
	pk.start, pk.buf, pk.batches = 0, pk.buf[:0], pk.batches[:0]
}

// end is the packed file's offset past the last extent added.
func (pk *packer) end() int64 { return pk.start + int64(len(pk.buf)) }

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
	if len(pk.buf) > 0 && int64(len(pk.buf))+n > limit {
		if err := pk.flush(); err != nil {
			return err
		}
	}
	if need := int64(len(pk.buf)) + n; need > int64(cap(pk.buf)) {
		grown := alignedBytes(max(need, min(limit, 2*int64(cap(pk.buf)))))
		pk.buf = grown[:copy(grown, pk.buf)]
	}
	wb := windowBatch{ids: make([][]int64, len(p.types)), extent: make([]int, len(p.types)), at: make([]int64, len(p.types))}
	for k, pt := range p.types {
		at := int64(len(pk.buf))
		size := alignUp64(pt.rows * pk.src.stacks[k].spec.RowBytes)
		wb.ids[k], wb.at[k], wb.extent[k] = pt.ids, at, len(pk.ef.Batches)
		pk.ef.Batches = append(pk.ef.Batches, batchExtent{Offset: pk.start + at, Rows: pt.rows, Nodes: pt.nodesID})
		pk.buf = pk.buf[:at+size]
		clear(pk.buf[at:])
	}
	pk.batches = append(pk.batches, wb)
	pk.rep.RowsPacked += p.rows()
	return nil
}

// flush reads the window's rows, hashes its extents and writes it.
func (pk *packer) flush() error {
	if len(pk.batches) == 0 {
		return nil
	}
	t := time.Now()
	for k := range pk.src.stacks {
		if err := pk.read(k); err != nil {
			return err
		}
	}
	pk.rep.ReadSeconds += time.Since(t).Seconds()
	t = time.Now()
	for _, wb := range pk.batches {
		for k, ids := range wb.ids {
			rb := pk.src.stacks[k].spec.RowBytes
			size := alignUp64(int64(len(ids)) * rb)
			ext := pk.buf[wb.at[k] : wb.at[k]+size]
			pk.ef.Batches[wb.extent[k]].Sum = xxhash.Sum64(ext[:int64(len(ids))*rb])
			if err := pk.stop(); err != nil {
				return err
			}
			for done := int64(0); done < size; {
				w, err := planWriteAt(pk.f, ext[done:], pk.start+wb.at[k]+done)
				if err != nil {
					return fmt.Errorf("featurestore: writing epoch plan %s at byte %d: %w", pk.path, pk.start+wb.at[k]+done, err)
				}
				done += int64(w)
			}
		}
	}
	pk.rep.WriteSeconds += time.Since(t).Seconds()
	pk.rep.PackWindows++
	pk.start += int64(len(pk.buf))
	pk.buf, pk.batches = pk.buf[:0], pk.batches[:0]
	return nil
}

// read reads packed type k's rows of the window into it, by the cheaper method (or the one
// EpochOptions.PackMethod names).
func (pk *packer) read(k int) error {
	s := pk.src.stacks[k]
	rb := s.spec.RowBytes
	model := s.ssd.DiskModel()
	pk.rep.DiskModel = model
	var ids, at []int64
	var randomReads, randomBytes int64
	for _, wb := range pk.batches {
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
			return fmt.Errorf("featurestore: packing %s: %w", pk.path, err)
		}
		pk.rep.ScanEstimate += model.Seconds(plan.Reads, plan.Bytes)
	}
	if pk.o.PackMethod != PackScan {
		pk.rep.RandomEstimate += model.Seconds(randomReads, randomBytes)
	}
	scan := pk.o.PackMethod == PackScan ||
		(pk.o.PackMethod == "" && model.Seconds(plan.Reads, plan.Bytes) < model.Seconds(randomReads, randomBytes))
	if scan {
		pk.scans++
		pk.rep.PackReads += plan.Reads
		pk.rep.PackReadBytes += plan.Bytes
		if err := s.ssd.Scan(plan, pk.buf, pk.stop); err != nil {
			return fmt.Errorf("featurestore: packing %s: %w", pk.path, err)
		}
		return nil
	}
	pk.randoms++
	pk.rep.PackReads += randomReads
	pk.rep.PackReadBytes += randomBytes
	// One batch's rows a Files.Read, planWorkers batches at once: the planner's random reads.
	var mu sync.Mutex
	var first error
	next := make(chan windowBatch)
	var wg sync.WaitGroup
	for range planWorkers {
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
					err = s.ssd.CopyToHost(ids, pos, pk.buf[wb.at[k]:wb.at[k]+int64(len(ids))*rb])
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("featurestore: packing %s: %w", pk.path, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, wb := range pk.batches {
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
