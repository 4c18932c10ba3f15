package ssd

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"

	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/internal/par"
)

// Scanning: reading many rows, each to one or more places, in one ascending pass over the
// feature's stripes with large reads, instead of one random read a row (DiskGNN's batched
// packing). PlanScan lays the reads out without reading; Scan reads them.

// ScanOptions configure PlanScan. Zero values take the defaults named on each field.
type ScanOptions struct {
	// Gap: rows of a stripe whose blocks are at most this many bytes apart (the whole blocks
	// between the last block of one and the first of the next, what bridging them adds to the
	// reads) are read by one range, the gap read and dropped. Default 0: rows in touching or
	// shared blocks share a range, as the IO stack merges them.
	Gap int64
	// MaxRange is the largest range one request reads (the IO stack splits it into its reads);
	// default 4 MiB, at least a row.
	MaxRange int64
	// Buffer is the bytes of ranges read at once (one Files.Read), the scan's memory; default
	// 16 MiB, at least MaxRange.
	Buffer int64
}

// ScanPlan is the reads a Scan makes: the rows sorted by their place on disk and the ranges
// covering them.
type ScanPlan struct {
	Ranges int   // requests (each up to MaxRange bytes)
	Bytes  int64 // bytes the ranges' reads cover, aligned to blocks (gaps included)
	// Reads is the reads the IO stack makes of the ranges: each range split into its largest
	// reads and aligned to its blocks, as a disk sees them.
	Reads int64

	rows   []scanRow
	ranges []scanRange
	buffer int64
}

// scanRow is one destination of a row: its stripe, its offset there, and where it goes in dst.
type scanRow struct {
	file int
	off  int64
	at   int64
}

// scanRange is bytes [off, off+n) of stripe file, holding rows[first:last].
type scanRange struct {
	file        int
	off, n      int64
	first, last int
}

// PlanScan lays out the reads of Scan(ids[k] into dst[at[k]:at[k]+RowBytes] for every k): the
// rows sorted by stripe and offset (a row asked for several times is read once), grouped into
// ranges by opt. It reads nothing.
func (t *Tier) PlanScan(ids, at []int64, opt ScanOptions) (*ScanPlan, error) {
	if len(at) != len(ids) {
		return nil, fmt.Errorf("ssd tier: scan of %d rows with %d destinations", len(ids), len(at))
	}
	if opt.Gap < 0 || opt.MaxRange < 0 || opt.Buffer < 0 {
		return nil, fmt.Errorf("ssd tier: scan options must not be negative (gap %d, range %d, buffer %d)", opt.Gap, opt.MaxRange, opt.Buffer)
	}
	rb := t.spec.RowBytes
	maxRange := max(cmp.Or(opt.MaxRange, 4<<20), rb)
	p := &ScanPlan{rows: make([]scanRow, len(ids)), buffer: max(cmp.Or(opt.Buffer, 16<<20), maxRange)}
	for k, id := range ids {
		if id < 0 || id >= t.nodes {
			return nil, fmt.Errorf("ssd tier: scan of row %d, outside [0, %d)", id, t.nodes)
		}
		file, off := t.spec.Locate(id)
		p.rows[k] = scanRow{file: file, off: off, at: at[k]}
	}
	p.rows = sortScanRows(p.rows)
	st := t.files.Stats()
	block, maxIO := int64(max(st.BlockSize, 1)), int64(128<<10) // gpuio's default largest read
	for k, r := range p.rows {
		if n := len(p.ranges); n > 0 {
			last := &p.ranges[n-1]
			endBlock := (last.off + last.n + block - 1) / block * block
			if last.file == r.file && r.off/block*block-endBlock <= opt.Gap && r.off+rb-last.off <= maxRange {
				last.n = max(last.n, r.off+rb-last.off)
				last.last = k + 1
				continue
			}
		}
		p.ranges = append(p.ranges, scanRange{file: r.file, off: r.off, n: rb, first: k, last: k + 1})
	}
	for _, r := range p.ranges {
		lo, hi := r.off/block*block, (r.off+r.n+block-1)/block*block
		p.Bytes += hi - lo
		p.Reads += (hi - lo + maxIO - 1) / maxIO
	}
	p.Ranges = len(p.ranges)
	return p, nil
}

// compareScanRows orders rows by stripe, offset, then destination.
func compareScanRows(a, b scanRow) int {
	return cmp.Or(cmp.Compare(a.file, b.file), cmp.Compare(a.off, b.off), cmp.Compare(a.at, b.at))
}

// sortScanRows returns rows sorted by compareScanRows, rows itself below parallelSortRows rows,
// else a new slice: a counting pass spreads the rows over buckets of even ranges of (stripe,
// offset), sorted side by side on every CPU Go may use (a window's 2M rows took 0.75 s on one
// goroutine on the GPU host, before any read of the window).
func sortScanRows(rows []scanRow) []scanRow {
	workers := runtime.GOMAXPROCS(0)
	if len(rows) < parallelSortRows || workers < 2 {
		slices.SortFunc(rows, compareScanRows)
		return rows
	}
	var maxOff int64
	maxFile := 0
	for _, r := range rows {
		maxOff, maxFile = max(maxOff, r.off), max(maxFile, r.file)
	}
	// key is a row's (stripe, offset) as one number, in their order; bucket is its bucket.
	span := uint64(maxOff) + 1
	key := func(r scanRow) uint64 { return uint64(r.file)*span + uint64(r.off) }
	buckets := 4 * workers
	width := key(scanRow{file: maxFile, off: maxOff})/uint64(buckets) + 1
	bucket := func(r scanRow) int { return int(key(r) / width) }
	start := make([]int, buckets+1)
	for _, r := range rows {
		start[bucket(r)+1]++
	}
	for b := range buckets {
		start[b+1] += start[b]
	}
	out, next := make([]scanRow, len(rows)), slices.Clone(start[:buckets])
	for _, r := range rows {
		b := bucket(r)
		out[next[b]] = r
		next[b]++
	}
	_ = par.InTurn(workers, buckets, func() (func(int) error, func(), error) {
		return func(b int) error {
			slices.SortFunc(out[start[b]:start[b+1]], compareScanRows)
			return nil
		}, nil, nil
	})
	return out
}

// parallelSortRows is the fewest rows sortScanRows sorts on several goroutines; tests lower it.
var parallelSortRows = 1 << 16

// maxScanReaders is the most Buffers a Scan reads at once, each through an IO stack of its own.
const maxScanReaders = 4

// Scan reads the rows of p (made by t.PlanScan) into dst: the ranges in ascending order, a
// Buffer of them a Files.Read, through the tier's files (their blocks checked against the
// dataset's checksums under VerifyReads, as every read of the tier). Up to maxScanReaders
// goroutines (at most the files' IO stacks; they share the queue depth) each take the next
// Buffer of ranges, read it through a stack of its own and copy its rows out, so the disk never
// waits for one buffer's last read, its checks or its copies (memory: a Buffer a goroutine).
// stop, when set, is called before each Files.Read; its error ends the scan.
func (t *Tier) Scan(p *ScanPlan, dst []byte, stop func() error) error {
	rb := t.spec.RowBytes
	// starts[i] is the first range of buffer i; the last entry is len(p.ranges).
	starts := []int{0}
	for lo := 0; lo < len(p.ranges); {
		hi := lo
		for used := int64(0); hi < len(p.ranges) && used+p.ranges[hi].n <= p.buffer; hi++ {
			used += p.ranges[hi].n
		}
		starts = append(starts, hi)
		lo = hi
	}
	buffers := len(starts) - 1
	return par.InTurn(min(t.files.Stacks(), maxScanReaders), buffers, func() (func(int) error, func(), error) {
		buf := make([]byte, p.buffer)
		var reqs []gpuio.Request
		return func(i int) error {
			if stop != nil {
				if err := stop(); err != nil {
					return err
				}
			}
			ranges := p.ranges[starts[i]:starts[i+1]]
			reqs = reqs[:0]
			used := int64(0)
			for _, r := range ranges {
				reqs = append(reqs, gpuio.Request{File: t.stripes[r.file], Offset: r.off, Length: int(r.n), Dst: buf[used : used+r.n]})
				used += r.n
			}
			if err := t.files.Read(reqs); err != nil {
				return fmt.Errorf("ssd tier: scan: %w", err)
			}
			used = 0
			for _, r := range ranges {
				for _, row := range p.rows[r.first:r.last] {
					src := used + row.off - r.off
					copy(dst[row.at:row.at+rb], buf[src:src+rb])
				}
				used += r.n
			}
			return nil
		}, nil, nil
	})
}

// RandomReads is the reads CopyToHost makes of the rows ids (one Files.Read) and the bytes they
// read: each distinct block the rows cover once, touching blocks of a stripe read together (up
// to the IO stack's largest read), as the IO stack coalesces them.
func (t *Tier) RandomReads(ids []int64) (reads, bytes int64) {
	return t.readsOfRuns(t.blockRuns(ids), 0)
}

// blockSpan is blocks [lo, hi) of stripe file.
type blockSpan struct {
	file   int
	lo, hi int64
}

// blockRuns is the blocks the rows ids cover, as maximal runs of touching blocks of a stripe,
// in stripe and block order.
func (t *Tier) blockRuns(ids []int64) []blockSpan {
	rb := t.spec.RowBytes
	block := int64(max(t.files.Stats().BlockSize, 1))
	spans := make([]blockSpan, len(ids))
	for k, id := range ids {
		file, off := t.spec.Locate(id)
		spans[k] = blockSpan{file, off / block, (off + rb + block - 1) / block}
	}
	slices.SortFunc(spans, func(a, b blockSpan) int { return cmp.Or(cmp.Compare(a.file, b.file), cmp.Compare(a.lo, b.lo)) })
	runs := spans[:0]
	for _, s := range spans {
		if n := len(runs); n > 0 && s.file == runs[n-1].file && s.lo <= runs[n-1].hi {
			runs[n-1].hi = max(runs[n-1].hi, s.hi)
			continue
		}
		runs = append(runs, s)
	}
	return runs
}

// readsOfRuns is the reads the IO stack makes of runs (blockRuns) bridging gaps of up to gap
// bytes (gpuio.Stack.SubmitBridging; the stacks' own CoalesceGap where larger), and their bytes:
// runs of a stripe at most that far apart join one read while it stays within the stack's
// largest read; a longer run is cut into reads of that size.
func (t *Tier) readsOfRuns(runs []blockSpan, gap int64) (reads, bytes int64) {
	st := t.files.Stats()
	block, maxIO := int64(max(st.BlockSize, 1)), int64(128<<10) // gpuio's default largest read
	gap = max(gap, int64(st.CoalesceGap))
	var cur blockSpan
	flush := func() {
		if n := (cur.hi - cur.lo) * block; n > 0 {
			bytes += n
			reads += (n + maxIO - 1) / maxIO
		}
	}
	for k, r := range runs {
		if k > 0 && r.file == cur.file && (r.lo-cur.hi)*block <= gap && (r.hi-cur.lo)*block <= maxIO {
			cur.hi = r.hi
			continue
		}
		flush()
		cur = r
	}
	flush()
	return reads, bytes
}

// DiskModel is what a read of the tier's files costs: ReadCost + bytes/BytesPerSecond of disk
// time, reads in flight at the stacks' queue depth (DiskProbe's model).
type DiskModel struct {
	ReadCost       float64 `json:"read_cost_seconds"`
	BytesPerSecond float64 `json:"bytes_per_second"`
	Probed         bool    `json:"probed"` // measured by the disk probe (at open with Options.CoalesceGap -1, or by DiskModel: ModelProbeBytes), else the defaults
}

// DefaultDiskModel is the DiskModel where no probe ran: a datacenter NVMe SSD's 4 KiB random
// reads at queue depth 128 (about 250,000 a second) and sequential reads (about 2 GB/s).
var DefaultDiskModel = DiskModel{ReadCost: 2e-6, BytesPerSecond: 2e9}

// Seconds is the model's disk time of reads reads of bytes bytes in all.
func (d DiskModel) Seconds(reads, bytes int64) float64 {
	s := float64(reads) * d.ReadCost
	if d.BytesPerSecond > 0 {
		s += float64(bytes) / d.BytesPerSecond
	}
	return s
}

// BreakEvenGap is the gap worth reading to save a read: ReadCost × BytesPerSecond bytes.
func (d DiskModel) BreakEvenGap() int64 { return int64(d.ReadCost * d.BytesPerSecond) }

// DiskModel is the disk probe's model of the tier's files: the probe of OpenFiles where it ran,
// else one run by the first call where the first file is at least ModelProbeBytes, else
// DefaultDiskModel. Plans and fills call it; the probe's random reads (about half a second, once)
// share the disk with whatever else reads it then.
func (t *Tier) DiskModel() DiskModel {
	if p := t.files.modelProbe(); p != nil && p.ReadCost > 0 && p.BytesPerSecond > 0 {
		return DiskModel{ReadCost: p.ReadCost, BytesPerSecond: p.BytesPerSecond, Probed: true}
	}
	return DefaultDiskModel
}
