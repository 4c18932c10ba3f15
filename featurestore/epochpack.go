package featurestore

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/tiers/ssd"
)

// Packing a planned epoch: the planner hands the packer its batches in order, each with the rows
// its extents hold; the packer lays the extents out in a window of the packed file (their
// offsets are known before any row is read; a window runs on from one epoch's file into the
// next), and when the window is full reads every row of it, hashes each extent and writes the
// window in order. A window's rows of one packed type are read
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
// window scans the feature file once, and a window holds the batches of as many epochs as fit
// (600 MiB a packed epoch of a 10M-node, 512 B-row graph placed 10/20), so a plan of K epochs
// scans the file about K × (packed bytes of an epoch) / PackMemory times, at least once.
const DefaultPackMemory = 1 << 30

// packer lays one window out while the window before is read and the one before that hashed
// and written, each window on a goroutine of its own (pack): sampling, the disk's reads and its
// writes overlap, and one window reads at a time. A window runs on across the end of an epoch's
// packed file into the next one's. Memory: two windows (the one read and the one written), each
// an anonymous mapping that grows by mremap (no copy) up to the window's bytes; its pages are
// first touched by the reads that fill it, not by the planner laying batches out, and given
// back once it is written (the window laid out holds none).
type packer struct {
	src  *epochSource
	o    *EpochOptions
	rep  *EpochPlanReport
	stop func() error // an error stops the packer (CancelEpochPlan)

	out  *packOut   // the packed file batches are laid out in now; nil between files
	outs []*packOut // every packed file opened, to close those left open on failure

	batches   int   // the plan's batches, every epoch's (target estimates its bytes)
	laid      int   // batches laid out so far
	laidBytes int64 // their extents' bytes
	handed    int64 // the bytes of the windows handed to packing

	cur      *window   // laid out now
	inflight []*window // handed to pack, oldest first: at most one reading, one writing
	free     []*window // taken back, for the next windows

	scans, randoms int // windows of one packed type read each way
}

// packOut is one epoch's packed file as the packer writes it.
type packOut struct {
	f       *os.File
	path    string
	ef      *epochFile // its extents; wait sets their checksums
	end     int64      // bytes laid out
	ended   bool       // every batch laid out (closeOut)
	pending int        // windows with extents of it not yet written and taken back (wait)
	closed  bool
}

// window is a run of extents, of one or more packed files in order: the batches laid out in it
// and, once packed, their checksums and what reading them took.
type window struct {
	buf     []byte // a mapping (page-aligned, so packAlign-aligned); len is what the window holds
	batches []windowBatch
	outs    []*packOut // the files of its batches, each once, in order
	sums    []uint64   // per extent of the window, in batches' order

	// Set by pack: read is closed once its rows are read (readErr says how), written once it
	// is hashed and written or will not be (writeErr).
	read, written     chan struct{}
	readErr, writeErr error

	readSecs, writeSecs float64
	reads, bytes        int64
	scanEst, randomEst  float64
	scans, randoms      int
	model               ssd.DiskModel
}

// windowBatch is a batch in a window: its file, its rows per packed type, and where each extent
// lies (its index in the file's Batches, its offset in the window and in the file).
type windowBatch struct {
	out    *packOut
	ids    [][]int64
	extent []int
	at     []int64
	off    []int64
}

// newPacker packs a plan of batches batches, every epoch's.
func newPacker(src *epochSource, o *EpochOptions, rep *EpochPlanReport, batches int, stop func() error) *packer {
	return &packer{src: src, o: o, rep: rep, stop: stop, batches: batches, cur: &window{}, free: []*window{{}, {}}}
}

// open starts laying batches out in packed file f (path) of epoch file ef, empty. The file
// before it must be closed (closeOut) or dropped (dropOut).
func (pk *packer) open(f *os.File, path string, ef *epochFile) {
	pk.out = &packOut{f: f, path: path, ef: ef}
	pk.outs = append(pk.outs, pk.out)
}

// end is the current packed file's offset past the last extent added.
func (pk *packer) end() int64 { return pk.out.end }

// limit is the window's bytes: EpochOptions.PackMemory or its default.
func (pk *packer) limit() int64 { return cmp.Or(pk.o.PackMemory, DefaultPackMemory) }

// target is the bytes at which a window is handed to packing: the plan's packed bytes not yet
// handed, estimated from the batches laid out so far, split evenly into as few windows as the
// limit allows, so that no pass of the feature file packs a small remainder (a pass costs
// about as much for a remainder as for a full window).
func (pk *packer) target() int64 {
	limit := pk.limit()
	if pk.laid == 0 || pk.laid >= pk.batches {
		return limit
	}
	left := float64(pk.laidBytes)/float64(pk.laid)*float64(pk.batches) - float64(pk.handed)
	if left <= 0 {
		return limit
	}
	return min(limit, int64(left/math.Ceil(left/float64(limit))))
}

// add lays batch p's extents out after the last, flushing the window first when they do not fit
// (a batch larger than the window gets a window of its own size).
func (pk *packer) add(p *packedBatch) error {
	var n int64
	for k, pt := range p.types {
		n += alignUp64(pt.rows * pk.src.stacks[k].spec.RowBytes)
	}
	// The window ends at the batch boundary nearest its target, never past the limit.
	limit, held := pk.limit(), int64(len(pk.cur.buf))
	if target := pk.target(); len(pk.cur.batches) > 0 && (held+n > limit || held+n-target > target-held) {
		if err := pk.flush(); err != nil {
			return err
		}
	}
	w, out := pk.cur, pk.out
	if need := int64(len(w.buf)) + n; need > int64(cap(w.buf)) {
		if err := w.grow(max(need, min(limit, 2*int64(cap(w.buf))))); err != nil {
			return err
		}
	}
	if len(w.outs) == 0 || w.outs[len(w.outs)-1] != out {
		w.outs = append(w.outs, out)
		out.pending++
	}
	wb := windowBatch{out: out, ids: make([][]int64, len(p.types)), extent: make([]int, len(p.types)),
		at: make([]int64, len(p.types)), off: make([]int64, len(p.types))}
	for k, pt := range p.types {
		at := int64(len(w.buf))
		size := alignUp64(pt.rows * pk.src.stacks[k].spec.RowBytes)
		wb.ids[k], wb.at[k], wb.off[k], wb.extent[k] = pt.ids, at, out.end, len(out.ef.Batches)
		out.ef.Batches = append(out.ef.Batches, batchExtent{Offset: out.end, Rows: pt.rows, Nodes: pt.nodesID})
		w.buf = w.buf[:at+size] // pack fills the rows and zeroes the padding
		out.end += size
	}
	w.batches = append(w.batches, wb)
	pk.laid, pk.laidBytes = pk.laid+1, pk.laidBytes+n
	pk.rep.RowsPacked += p.rows()
	return nil
}

// grow makes w's mapping n bytes (a multiple of packAlign), keeping what it holds: mremap moves
// the pages, it copies none.
func (w *window) grow(n int64) error {
	var m []byte
	var err error
	if cap(w.buf) == 0 {
		m, err = unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	} else {
		m, err = unix.Mremap(w.buf[:cap(w.buf)], int(n), unix.MREMAP_MAYMOVE)
	}
	if err != nil {
		return fmt.Errorf("featurestore: a packing window of %d bytes (pack_memory): %w", n, err)
	}
	// Huge pages where the kernel gives them (transparent huge pages on "madvise" or "always"):
	// a window's first touch then faults once per 2 MiB, not per 4 KiB.
	_ = unix.Madvise(m, unix.MADV_HUGEPAGE)
	w.buf = m[:len(w.buf)]
	return nil
}

// name is the packed files w writes, for errors.
func (w *window) name() string {
	paths := make([]string, len(w.outs))
	for i, out := range w.outs {
		paths[i] = out.path
	}
	return strings.Join(paths, ", ")
}

// release unmaps w's buffer.
func (w *window) release() {
	if cap(w.buf) > 0 {
		unix.Munmap(w.buf[:cap(w.buf)])
		w.buf = nil
	}
}

// closeOut ends the current packed file: no more batches. The window that writes its last
// extent syncs and closes it (wait); a file without extents in flight is closed now.
func (pk *packer) closeOut() error {
	out := pk.out
	pk.out, out.ended = nil, true
	if out.pending == 0 {
		return out.finish()
	}
	return nil
}

// dropOut drops the current packed file: its batches leave the filling window (the window in
// flight, which may write some of it, is waited for) and it is closed unsynced; the caller
// removes it.
func (pk *packer) dropOut() error {
	out := pk.out
	pk.out = nil
	err := pk.wait() // out not ended yet: wait does not sync it
	out.ended = true
	w := pk.cur
	if i := slices.IndexFunc(w.batches, func(wb windowBatch) bool { return wb.out == out }); i >= 0 {
		w.buf = w.buf[:w.batches[i].at[0]]
		w.batches = w.batches[:i]
		w.outs = w.outs[:len(w.outs)-1]
		out.pending--
	}
	if out.pending == 0 && !out.closed {
		out.closed = true
		out.f.Close()
	}
	return err
}

// finish syncs and closes a packed file whose extents are all written.
func (out *packOut) finish() error {
	out.closed = true
	err := out.f.Sync()
	if cerr := out.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("featurestore: writing epoch plan %s: %w", out.path, err)
	}
	return nil
}

// flush hands the window laid out to pack, once the window before it has been read (one window
// reads at a time), and starts the next in a window taken back (the oldest in flight, waited for,
// when none is free).
func (pk *packer) flush() error {
	w := pk.cur
	if len(w.batches) == 0 {
		return nil
	}
	var prev chan struct{}
	if n := len(pk.inflight); n > 0 {
		last := pk.inflight[n-1]
		<-last.read
		if last.readErr != nil {
			return last.readErr
		}
		prev = last.written
	}
	if len(pk.free) == 0 {
		if err := pk.takeBack(); err != nil {
			return err
		}
	}
	pk.handed += int64(len(w.buf))
	w.read, w.written, w.readErr, w.writeErr = make(chan struct{}), make(chan struct{}), nil, nil
	pk.inflight = append(pk.inflight, w)
	go pk.pack(w, prev)
	next := pk.free[len(pk.free)-1]
	pk.free = pk.free[:len(pk.free)-1]
	next.buf, next.batches, next.outs = next.buf[:0], next.batches[:0], next.outs[:0]
	pk.cur = next
	return nil
}

// wait waits for every window in flight and takes each back.
func (pk *packer) wait() error {
	for len(pk.inflight) > 0 {
		if err := pk.takeBack(); err != nil {
			return err
		}
	}
	return nil
}

// takeBack waits for the oldest window in flight to be written, takes its checksums and counts
// into the plan, closes the files it ended, and frees it (its pages given back to the kernel).
func (pk *packer) takeBack() error {
	w := pk.inflight[0]
	<-w.written
	if err := cmp.Or(w.readErr, w.writeErr); err != nil {
		return err // w stays in flight: close, which waits for it, unmaps it
	}
	pk.inflight = pk.inflight[1:]
	pk.free = append(pk.free, w)
	if cap(w.buf) > 0 {
		_ = unix.Madvise(w.buf[:cap(w.buf)], unix.MADV_DONTNEED)
	}
	sums := w.sums
	for _, wb := range w.batches {
		for _, x := range wb.extent {
			wb.out.ef.Batches[x].Sum, sums = sums[0], sums[1:]
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
	r.PackWindowBytes.add(int64(len(w.buf)))
	pk.scans += w.scans
	pk.randoms += w.randoms
	for _, out := range w.outs {
		if out.pending--; out.pending == 0 && out.ended && !out.closed {
			if err := out.finish(); err != nil {
				return err
			}
		}
	}
	return nil
}

// close ends the packer: it waits for the windows in flight, closes the packed files still open
// (a failed plan's) and unmaps the windows.
func (pk *packer) close() {
	for _, w := range pk.inflight {
		<-w.written
	}
	for _, out := range pk.outs {
		if !out.closed {
			out.closed = true
			out.f.Close()
		}
	}
	for _, w := range slices.Concat([]*window{pk.cur}, pk.inflight, pk.free) {
		w.release()
	}
	pk.inflight, pk.free = nil, nil
}

// pack reads window w's rows, then, once the window before it (prev closed; nil: none) is
// written, hashes its extents and writes them, a run of consecutive extents of one file a write.
// It touches w alone (and the packed files, at offsets no other window writes), so it runs beside
// the planner laying the next window out and the window before being written.
func (pk *packer) pack(w *window, prev chan struct{}) {
	defer close(w.written)
	w.sums = w.sums[:0]
	w.readSecs, w.writeSecs, w.reads, w.bytes, w.scanEst, w.randomEst, w.scans, w.randoms = 0, 0, 0, 0, 0, 0, 0, 0
	t := time.Now()
	for k := range pk.src.stacks {
		if w.readErr = pk.read(w, k); w.readErr != nil {
			break
		}
	}
	w.readSecs = time.Since(t).Seconds()
	close(w.read)
	if w.readErr != nil {
		return
	}
	if prev != nil {
		<-prev
	}
	w.writeErr = pk.write(w)
}

// write hashes window w's extents and writes them, a run of consecutive extents of one file a
// write.
func (pk *packer) write(w *window) error {
	t := time.Now()
	var run struct {
		out     *packOut
		at, off int64
		n       int64
	}
	write := func() error {
		for done := int64(0); done < run.n; {
			n, err := planWriteAt(run.out.f, w.buf[run.at+done:run.at+run.n], run.off+done)
			if err != nil {
				return fmt.Errorf("featurestore: writing epoch plan %s at byte %d: %w", run.out.path, run.off+done, err)
			}
			done += int64(n)
		}
		run.n = 0
		return nil
	}
	for _, wb := range w.batches {
		if err := pk.stop(); err != nil {
			return err
		}
		for k, ids := range wb.ids {
			rb := pk.src.stacks[k].spec.RowBytes
			rows, size := int64(len(ids))*rb, alignUp64(int64(len(ids))*rb)
			ext := w.buf[wb.at[k] : wb.at[k]+size]
			clear(ext[rows:])
			w.sums = append(w.sums, xxhash.Sum64(ext[:rows]))
			if run.n > 0 && (run.out != wb.out || run.at+run.n != wb.at[k] || run.off+run.n != wb.off[k]) {
				if err := write(); err != nil {
					return err
				}
			}
			if run.n == 0 {
				run.out, run.at, run.off = wb.out, wb.at[k], wb.off[k]
			}
			run.n += size
		}
	}
	if run.n > 0 {
		if err := write(); err != nil {
			return err
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
			return fmt.Errorf("featurestore: packing %s: %w", w.name(), err)
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
			return fmt.Errorf("featurestore: packing %s: %w", w.name(), err)
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
						first = fmt.Errorf("featurestore: packing %s: %w", w.name(), err)
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
