package ssd

import (
	"fmt"
	"sync/atomic"

	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/tiers"
)

// Filling: the memory tiers fill from Source, which reads a chunk of rows at a time either by a
// scan (PlanScan, ranges bridging gaps up to the disk model's break-even gap) or by one random
// read a row (the IO stack merging touching blocks), whichever the disk model (DiskModel) gives
// less disk time. Both read through the tier's files, so every block is checked against the
// dataset's checksums under VerifyReads.

// FillMethod is how Source reads the rows of a chunk.
type FillMethod int

const (
	FillByModel  FillMethod = iota // the cheaper of the two by DiskModel, chunk by chunk
	FillByScan                     // always a scan
	FillByRandom                   // always one read a row
)

// fillChunk is the rows Source plans and reads at once: its memory beyond the rows is the plan
// (24 bytes a row) and the scan's two buffers (at most 16 MiB each).
const fillChunk = 1 << 18

// FillStats counts what Source read since the tier was made, chunk by chunk, by method: rows,
// reads and bytes as the disk sees them (RandomReads, ScanPlan), and the model's disk seconds of
// both methods for the chunks it chose between.
type FillStats struct {
	ScanChunks     int64   `json:"scan_chunks"`
	ScanRows       int64   `json:"scan_rows"`
	RandomChunks   int64   `json:"random_chunks"`
	RandomRows     int64   `json:"random_rows"`
	Reads          int64   `json:"reads"`
	Bytes          int64   `json:"bytes"`
	ScanEstimate   float64 `json:"scan_estimate_seconds"`
	RandomEstimate float64 `json:"random_estimate_seconds"`
}

type fillCounters struct {
	scanChunks, scanRows, randomChunks, randomRows, reads, bytes atomic.Int64
	scanEstNs, randomEstNs                                       atomic.Int64
}

// FillStats is what Source has read so far (safe to call while it runs).
func (t *Tier) FillStats() FillStats {
	c := &t.fill
	return FillStats{
		ScanChunks: c.scanChunks.Load(), ScanRows: c.scanRows.Load(),
		RandomChunks: c.randomChunks.Load(), RandomRows: c.randomRows.Load(),
		Reads: c.reads.Load(), Bytes: c.bytes.Load(),
		ScanEstimate: float64(c.scanEstNs.Load()) / 1e9, RandomEstimate: float64(c.randomEstNs.Load()) / 1e9,
	}
}

// Source reads the rows of ids (any order, repeats allowed) into consecutive rows of rows, row k
// for ids[k], by the cheaper method by the tier's DiskModel, a chunk at a time (tiers.Source);
// the memory tiers fill from it.
func (t *Tier) Source(ids []int64, rows []byte) error { return t.read(ids, rows, FillOptions{}) }

// FillOptions configure SourceWith. Zero values: Source.
type FillOptions struct {
	Method FillMethod
	// Model prices the two methods for FillByModel; zero: the tier's DiskModel.
	Model DiskModel
}

// SourceWith is Source reading by o.
func (t *Tier) SourceWith(o FillOptions) tiers.Source {
	return func(ids []int64, rows []byte) error { return t.read(ids, rows, o) }
}

func (t *Tier) read(ids []int64, rows []byte, o FillOptions) error {
	m, model := o.Method, o.Model
	if model == (DiskModel{}) {
		model = t.DiskModel()
	}
	rb := t.spec.RowBytes
	if int64(len(rows)) < int64(len(ids))*rb {
		return fmt.Errorf("ssd tier: %d rows of %d bytes into %d bytes", len(ids), rb, len(rows))
	}
	if m < FillByModel || m > FillByRandom {
		return fmt.Errorf("ssd tier: fill method %d unknown", m)
	}
	at := make([]int64, min(fillChunk, len(ids)))
	for lo := 0; lo < len(ids); lo += fillChunk {
		part := ids[lo:min(lo+fillChunk, len(ids))]
		dst := rows[int64(lo)*rb : int64(lo+len(part))*rb]
		var plan *ScanPlan
		var randomReads, randomBytes int64
		if m != FillByRandom {
			for k := range part {
				at[k] = int64(k) * rb
			}
			// A buffer of 16 MiB at most, less for a small chunk (the scan holds two).
			buffer := min(16<<20, max(int64(len(part))*rb, 64<<10))
			var err error
			if plan, err = t.PlanScan(part, at[:len(part)], ScanOptions{Gap: model.BreakEvenGap(), MaxRange: min(buffer, 4<<20), Buffer: buffer}); err != nil {
				return err
			}
		}
		if m != FillByScan {
			randomReads, randomBytes = t.RandomReads(part)
		}
		c, how := &t.fill, m
		if m == FillByModel {
			scanEst, randomEst := model.Seconds(plan.Reads, plan.Bytes), model.Seconds(randomReads, randomBytes)
			c.scanEstNs.Add(int64(scanEst * 1e9))
			c.randomEstNs.Add(int64(randomEst * 1e9))
			how = FillByRandom
			if scanEst < randomEst {
				how = FillByScan
			}
		}
		var err error
		if how == FillByScan {
			c.scanChunks.Add(1)
			c.scanRows.Add(int64(len(part)))
			c.reads.Add(plan.Reads)
			c.bytes.Add(plan.Bytes)
			err = t.Scan(plan, dst, nil)
		} else {
			c.randomChunks.Add(1)
			c.randomRows.Add(int64(len(part)))
			c.reads.Add(randomReads)
			c.bytes.Add(randomBytes)
			err = t.ReadRows(part, dst)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ReadRows reads row k of ids into row k of rows by one request a row, 65,536 requests a
// Files.Read (the IO stack merging touching blocks): a gather's reads, with no planning and no
// fill counters.
func (t *Tier) ReadRows(ids []int64, rows []byte) error {
	rb := t.spec.RowBytes
	const chunk = 1 << 16
	reqs := make([]gpuio.Request, 0, min(chunk, len(ids)))
	for lo := 0; lo < len(ids); lo += chunk {
		reqs = reqs[:0]
		for i := lo; i < min(lo+chunk, len(ids)); i++ {
			file, off := t.spec.Locate(ids[i])
			reqs = append(reqs, gpuio.Request{File: t.stripes[file], Offset: off, Length: int(rb), Dst: rows[int64(i)*rb : int64(i+1)*rb]})
		}
		if err := t.files.Read(reqs); err != nil {
			return fmt.Errorf("ssd tier: %w", err)
		}
	}
	return nil
}
