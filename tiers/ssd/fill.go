package ssd

import (
	"fmt"
	"sync/atomic"

	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/internal/par"
	"github.com/tierfs/tierfs/tiers"
)

// Filling: the memory tiers fill from Source, which reads a chunk of rows at a time by one
// request a row through an IO stack, in one of two ways: a scan, where the stack bridges gaps of
// up to the disk model's break-even gap between the rows' blocks (reading and dropping them), or
// random reads, where it merges only touching blocks; whichever the disk model (DiskModel) gives
// less disk time. Either way each row is copied once, from the stack's staging to its place.
// Chunks are read by as many goroutines as the files have IO stacks, each chunk through one
// stack, so while one chunk's reads drain, or its rows are planned, checked and copied, the
// others' reads keep the disk busy. Every block read, gaps included, is checked against the
// dataset's checksums under VerifyReads.

// FillMethod is how Source reads the rows of a chunk.
type FillMethod int

const (
	FillByModel  FillMethod = iota // the cheaper of the two by DiskModel, chunk by chunk
	FillByScan                     // always bridging gaps up to the model's break-even gap
	FillByRandom                   // always only merging touching blocks
)

// fillChunk is the most rows Source plans and reads at once, fillChunkBytes the most bytes of
// rows (where the files have several IO stacks to read chunks side by side; with one, a chunk is
// fillChunk rows, so the disk idles at a chunk's end less often; a variable for tests). A
// chunk's memory beyond its rows is its plan: about 80 bytes a row (its block span, its request
// and the IO stack's ordering of it). As many chunks are read at once as the files have IO stacks.
const fillChunk = 1 << 18

var fillChunkBytes int64 = 8 << 20

// FillStats counts what Source read since the tier was made, chunk by chunk, by method: rows,
// reads and bytes as the disk sees them (as the IO stack plans them), and the model's disk
// seconds of both methods for the chunks it chose between.
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
	stacks := t.files.Stacks()
	chunk := fillChunk
	if stacks > 1 {
		chunk = int(min(fillChunk, max(1, fillChunkBytes/rb)))
	}
	chunks := (len(ids) + chunk - 1) / chunk
	return par.InTurn(stacks, chunks, func() (func(int) error, func(), error) {
		return func(c int) error {
			lo := c * chunk
			part := ids[lo:min(lo+chunk, len(ids))]
			return t.readChunk(part, rows[int64(lo)*rb:int64(lo+len(part))*rb], m, model)
		}, nil, nil
	})
}

// readChunk reads the rows of part into dst by method m (for FillByModel, the cheaper by model).
func (t *Tier) readChunk(part []int64, dst []byte, m FillMethod, model DiskModel) error {
	gap := model.BreakEvenGap()
	runs := t.blockRuns(part)
	var scanReads, scanBytes, randomReads, randomBytes int64
	if m != FillByRandom {
		scanReads, scanBytes = t.readsOfRuns(runs, gap)
	}
	if m != FillByScan {
		randomReads, randomBytes = t.readsOfRuns(runs, 0)
	}
	c, how := &t.fill, m
	if m == FillByModel {
		scanEst, randomEst := model.Seconds(scanReads, scanBytes), model.Seconds(randomReads, randomBytes)
		c.scanEstNs.Add(int64(scanEst * 1e9))
		c.randomEstNs.Add(int64(randomEst * 1e9))
		how = FillByRandom
		if scanEst < randomEst {
			how = FillByScan
		}
	}
	if how == FillByScan {
		c.scanChunks.Add(1)
		c.scanRows.Add(int64(len(part)))
		c.reads.Add(scanReads)
		c.bytes.Add(scanBytes)
		return t.readRows(part, dst, gap)
	}
	c.randomChunks.Add(1)
	c.randomRows.Add(int64(len(part)))
	c.reads.Add(randomReads)
	c.bytes.Add(randomBytes)
	return t.readRows(part, dst, 0)
}

// ReadRows reads row k of ids into row k of rows by one request a row, 65,536 requests a
// Files.Read (the IO stack merging touching blocks): a gather's reads, with no planning and no
// fill counters.
func (t *Tier) ReadRows(ids []int64, rows []byte) error { return t.readRows(ids, rows, 0) }

// readRows is ReadRows with gaps of up to gap bytes between the rows' blocks bridged
// (Files.ReadBridging).
func (t *Tier) readRows(ids []int64, rows []byte, gap int64) error {
	rb := t.spec.RowBytes
	const chunk = 1 << 16
	reqs := make([]gpuio.Request, 0, min(chunk, len(ids)))
	for lo := 0; lo < len(ids); lo += chunk {
		reqs = reqs[:0]
		for i := lo; i < min(lo+chunk, len(ids)); i++ {
			file, off := t.spec.Locate(ids[i])
			reqs = append(reqs, gpuio.Request{File: t.stripes[file], Offset: off, Length: int(rb), Dst: rows[int64(i)*rb : int64(i+1)*rb]})
		}
		if err := t.files.ReadBridging(reqs, int(gap)); err != nil {
			return fmt.Errorf("ssd tier: %w", err)
		}
	}
	return nil
}
