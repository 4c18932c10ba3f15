package planned

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/internal/par"
	"github.com/tierfs/tierfs/internal/wfs"
	"github.com/tierfs/tierfs/tiers/ssd"
)

// Packing a planned epoch: the planner hands the packer its batches in order, each with the rows
// its extents hold; the packer lays the extents out in the packed file (their offsets are known
// before any row is read) and adds their rows to a window, each distinct row once (a window runs
// on from one epoch's file into the next). When the window's distinct rows are full it reads
// them, then gathers each extent from them, hashes it and writes it, in order. A window's rows
// of one packed type are read
// either by a scan (ssd.Tier.Scan: the feature's stripes in ascending order, large reads, a row
// that several batches need read once; DiskGNN's batched packing) or by random reads (one read a
// row, batch by batch), whichever the disk model (ssd.DiskModel) says takes less disk time, or
// as EpochOptions.PackMethod says. Both write the same bytes.

// Pack methods (EpochOptions.PackMethod, EpochPlanReport.PackMethod).
const (
	PackScan   = "scan"
	PackRandom = "random"
)

// DefaultPackMemory is EpochOptions.PackMemory's default: the distinct rows of a window. Each
// window scans the feature file once, and a window holds the batches of as many epochs as fit
// (600 MiB a packed epoch of a 10M-node, 512 B-row graph placed 10/20, about 450 MiB of it
// distinct rows), so a plan of K epochs scans the file about K × (distinct bytes of an epoch) /
// PackMemory times, at least once.
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

	batches       int // the plan's batches, every epoch's
	handedBatches int // the batches of the windows handed to packing
	fullBatches   int // the batches of the last window handed because it was full; 0: none yet

	cur      *window   // laid out now
	inflight []*window // handed to pack, oldest first: at most one reading, one writing
	free     []*window // taken back, for the next windows

	scans, randoms int    // windows of one packed type read each way
	wbuf           []byte // the write buffers (a mapping, packWriteBuffers × packWriteBytes), of the window writing
}

// packOut is one epoch's packed file as the packer writes it.
type packOut struct {
	f       wfs.File
	path    string
	ef      *epochFile // its extents; wait sets their checksums
	end     int64      // bytes laid out
	ended   bool       // every batch laid out (closeOut)
	pending int        // windows with extents of it not yet written and taken back (wait)
	closed  bool
}

// window is a run of extents, of one or more packed files in order: the batches laid out in it,
// the distinct rows they pack per packed type, and, once packed, their checksums and what
// reading them took.
type window struct {
	buf      []byte // a mapping (page-aligned); pack reads the distinct rows into it, type by type
	batches  []windowBatch
	outs     []*packOut        // the files of its batches, each once, in order
	distinct [][]int64         // per packed type, its rows in the order first laid out
	slot     []map[int64]int32 // per packed type, a row's index in distinct (while laid out)
	place    [][]int32         // per packed type, from pack on: each distinct row's place in the buffer
	sums     []uint64          // per extent of the window, in batches' order

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

// windowBatch is a batch in a window: its file, per packed type its rows (as slots of the
// window's distinct rows) and where its extent lies (its index in the file's Batches, its offset
// in the file), and the window's distinct rows of each type before it (dropOut cuts them there).
type windowBatch struct {
	out      *packOut
	slots    [][]int32
	extent   []int
	off      []int64
	distinct []int
}

// distinctBytes is the window's distinct rows' bytes, each type's rows from a packAlign boundary.
func (w *window) distinctBytes(src *epochSource) int64 {
	var n int64
	for k, ids := range w.distinct {
		n += alignUp64(int64(len(ids)) * src.stacks[k].RowBytes())
	}
	return n
}

// reset empties w for the next batches, for types packed types: its maps of slots new, sized
// for as many rows as it held last.
func (w *window) reset(types int) {
	w.buf, w.batches, w.outs = w.buf[:0], w.batches[:0], w.outs[:0]
	if len(w.distinct) != types {
		w.distinct = make([][]int64, types)
	}
	w.slot = make([]map[int64]int32, types)
	for k := range types {
		w.slot[k] = make(map[int64]int32, len(w.distinct[k]))
		w.distinct[k] = w.distinct[k][:0]
	}
}

// newPacker packs a plan of batches batches, every epoch's.
func newPacker(src *epochSource, o *EpochOptions, rep *EpochPlanReport, batches int, stop func() error) *packer {
	pk := &packer{src: src, o: o, rep: rep, stop: stop, batches: batches, cur: &window{}, free: []*window{{}, {}}}
	pk.cur.reset(len(src.stacks))
	return pk
}

// open starts laying batches out in packed file f (path) of epoch file ef, empty. The file
// before it must be closed (closeOut) or dropped (dropOut).
func (pk *packer) open(f wfs.File, path string, ef *epochFile) {
	pk.out = &packOut{f: f, path: path, ef: ef}
	pk.outs = append(pk.outs, pk.out)
}

// end is the current packed file's offset past the last extent added.
func (pk *packer) end() int64 { return pk.out.end }

// limit is the window's bytes: EpochOptions.PackMemory or its default.
func (pk *packer) limit() int64 { return cmp.Or(pk.o.PackMemory, DefaultPackMemory) }

// targetBatches is the batches at which the window laid out now is handed to packing, unless
// it fills first: 0 (fill it) until a window has filled up to the limit, then the plan's batches
// from this window on split evenly over as few windows as a full window's batches say they need,
// so that no pass of the feature file packs a small remainder (a pass costs about as much for a
// remainder as for a full window). Counted in batches, not bytes: a window's batches share more
// rows the more of them it holds, so bytes per batch depend on the window.
func (pk *packer) targetBatches() int {
	if pk.fullBatches == 0 {
		return 0
	}
	left := pk.batches - pk.handedBatches
	if left <= 0 {
		return 0
	}
	windows := (left + pk.fullBatches - 1) / pk.fullBatches
	return (left + windows - 1) / windows
}

// add lays batch p's extents out after the last and adds its rows to the window, handing the
// window to packing first when it is at its target or p's new distinct rows do not fit (a batch
// larger than the window gets a window of its own).
func (pk *packer) add(p *packedBatch) error {
	if n := len(pk.cur.batches); n > 0 {
		if target := pk.targetBatches(); target > 0 && n >= target {
			if err := pk.flush(); err != nil {
				return err
			}
		}
	}
	slots, before := pk.cur.hold(p)
	if n := len(pk.cur.batches); n > 0 && pk.cur.distinctBytes(pk.src) > pk.limit() {
		pk.cur.drop(before) // the window is full without p
		pk.fullBatches = n
		if err := pk.flush(); err != nil {
			return err
		}
		slots, before = pk.cur.hold(p)
	}
	w, out := pk.cur, pk.out
	if len(w.outs) == 0 || w.outs[len(w.outs)-1] != out {
		w.outs = append(w.outs, out)
		out.pending++
	}
	wb := windowBatch{out: out, slots: slots, extent: make([]int, len(p.types)), off: make([]int64, len(p.types)), distinct: before}
	for k, pt := range p.types {
		size := alignUp64(pt.rows * pk.src.stacks[k].RowBytes())
		wb.off[k], wb.extent[k] = out.end, len(out.ef.Batches)
		out.ef.Batches = append(out.ef.Batches, batchExtent{Offset: out.end, Rows: pt.rows, Nodes: pt.nodesID})
		out.end += size
	}
	w.batches = append(w.batches, wb)
	pk.rep.RowsPacked += p.rows()
	return nil
}

// hold adds batch p's rows to w's distinct rows (those it holds already once more): their slots
// per packed type, and w's distinct rows of each type before p (drop takes p's back out).
func (w *window) hold(p *packedBatch) (slots [][]int32, before []int) {
	slots, before = make([][]int32, len(p.types)), make([]int, len(p.types))
	for k, pt := range p.types {
		before[k] = len(w.distinct[k])
		slots[k] = make([]int32, len(pt.ids))
		seen := w.slot[k]
		for i, id := range pt.ids {
			x, ok := seen[id]
			if !ok {
				x = int32(len(w.distinct[k]))
				seen[id] = x
				w.distinct[k] = append(w.distinct[k], id)
			}
			slots[k][i] = x
		}
	}
	return slots, before
}

// drop takes the distinct rows after before (per packed type) out of w: those the batches last
// held first brought in.
func (w *window) drop(before []int) {
	for k, n := range before {
		for _, id := range w.distinct[k][n:] {
			delete(w.slot[k], id)
		}
		w.distinct[k] = w.distinct[k][:n]
	}
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
		return fmt.Errorf("planned: a packing window of %d bytes (pack_memory): %w", n, err)
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
		w.drop(w.batches[i].distinct) // the rows its batches first brought in are the last
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
	if err := cmp.Or(out.f.Sync(), out.f.Close()); err != nil {
		return fmt.Errorf("planned: writing epoch plan %s: %w", out.path, err)
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
	pk.handedBatches += len(w.batches)
	w.slot = nil // packing needs its batches' slots, not the map: only the window laid out holds one
	w.read, w.written, w.readErr, w.writeErr = make(chan struct{}), make(chan struct{}), nil, nil
	pk.inflight = append(pk.inflight, w)
	go pk.pack(w, prev)
	next := pk.free[len(pk.free)-1]
	pk.free = pk.free[:len(pk.free)-1]
	next.reset(len(pk.src.stacks))
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
	if pk.wbuf != nil {
		unix.Munmap(pk.wbuf)
		pk.wbuf = nil
	}
}

// pack reads window w's distinct rows, then, once the window before it (prev closed; nil: none)
// is written, writes its extents (write). It touches w alone (and the packed files, at offsets no
// other window writes, and the packer's write buffers, which windows take in turn), so it runs
// beside the planner laying the next window out and the window before being written.
func (pk *packer) pack(w *window, prev chan struct{}) {
	defer close(w.written)
	w.sums = w.sums[:0]
	w.readSecs, w.writeSecs, w.reads, w.bytes, w.scanEst, w.randomEst, w.scans, w.randoms = 0, 0, 0, 0, 0, 0, 0, 0
	t := time.Now()
	// Each type's distinct rows from a packAlign boundary of the buffer, in ascending order of
	// id (the feature file's), so that the reads fill the buffer front to back.
	base := make([]int64, len(pk.src.stacks))
	w.place = slices.Grow(w.place[:0], len(w.distinct))[:len(w.distinct)]
	var total int64
	for k, ids := range w.distinct {
		if w.distinct[k], w.place[k], w.readErr = ascending(ids, pk.src.stacks[k].NumNodes()); w.readErr != nil {
			break
		}
		base[k] = total
		total += alignUp64(int64(len(ids)) * pk.src.stacks[k].RowBytes())
	}
	if w.readErr == nil && total > int64(cap(w.buf)) {
		w.readErr = w.grow(total)
	}
	if w.readErr == nil {
		w.buf = w.buf[:total]
		for k := range pk.src.stacks {
			if w.readErr = pk.read(w, k, base[k]); w.readErr != nil {
				break
			}
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
	w.writeErr = pk.write(w, base)
}

// packWriteBytes is the size of each of the packer's packWriteBuffers write buffers (a multiple
// of packAlign; a variable so tests can make an extent take several).
var packWriteBytes = 8 << 20

// packWriteBuffers is how many write buffers a window's writing takes turns with: one is filled
// while the others are written.
const packWriteBuffers = 2

// write gathers window w's extents, in order, from its distinct rows (type k's from base[k]),
// hashes each, and writes them through the packer's write buffers, a run of consecutive extents
// of one file (up to a buffer's bytes) a write; a goroutine writes each buffer while the next is
// filled.
func (pk *packer) write(w *window, base []int64) (err error) {
	t := time.Now()
	if pk.wbuf == nil {
		m, err := unix.Mmap(-1, 0, packWriteBuffers*packWriteBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return fmt.Errorf("planned: the packing write buffers of %d bytes: %w", packWriteBuffers*packWriteBytes, err)
		}
		pk.wbuf = m
	}
	type pending struct {
		out *packOut
		off int64
		b   []byte
	}
	free := make(chan []byte, packWriteBuffers)
	for i := range packWriteBuffers {
		free <- pk.wbuf[i*packWriteBytes : (i+1)*packWriteBytes : (i+1)*packWriteBytes]
	}
	writes, failed, written := make(chan pending, packWriteBuffers), make(chan error, 1), make(chan struct{})
	go func() {
		defer close(written)
		ok := true
		for p := range writes {
			for done := int64(0); ok && done < int64(len(p.b)); {
				m, err := p.out.f.WriteAt(p.b[done:], p.off+done)
				if err != nil {
					failed <- fmt.Errorf("planned: writing epoch plan %s at byte %d: %w", p.out.path, p.off+done, err)
					ok = false
				}
				done += int64(m)
			}
			free <- p.b[:cap(p.b)]
		}
	}()
	defer func() {
		close(writes)
		<-written
		if err == nil {
			select {
			case err = <-failed:
			default:
			}
		}
		w.writeSecs = time.Since(t).Seconds()
	}()
	buf := <-free
	var out *packOut
	var off, n int64 // buf holds n bytes of out, from its byte off
	flush := func() error {
		if n > 0 {
			writes <- pending{out, off, buf[:n]}
			off, n = off+n, 0
			buf = <-free
		}
		select {
		case err := <-failed:
			return err
		default:
			return nil
		}
	}
	put := func(b []byte) error {
		for len(b) > 0 {
			c := copy(buf[n:], b)
			n, b = n+int64(c), b[c:]
			if n == int64(len(buf)) {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		return nil
	}
	var zeros [packAlign]byte
	var d xxhash.Digest
	for _, wb := range w.batches {
		if err := pk.stop(); err != nil {
			return err
		}
		for k, slots := range wb.slots {
			if n > 0 && (out != wb.out || off+n != wb.off[k]) {
				if err := flush(); err != nil {
					return err
				}
			}
			if n == 0 {
				out, off = wb.out, wb.off[k]
			}
			rb := pk.src.stacks[k].RowBytes()
			rows, place := w.buf[base[k]:], w.place[k]
			d.Reset()
			for _, x := range slots {
				at := int64(place[x]) * rb
				row := rows[at : at+rb]
				d.Write(row)
				if err := put(row); err != nil {
					return err
				}
			}
			w.sums = append(w.sums, d.Sum64())
			size := int64(len(slots)) * rb
			if err := put(zeros[:alignUp64(size)-size]); err != nil {
				return err
			}
		}
	}
	return flush()
}

// ascending is ids (distinct) in ascending order, and each one's place in it, by a bit per node
// and a count of the bits before each word (nodes/8 + nodes/16 bytes); an id outside [0, nodes)
// is an error.
func ascending(ids []int64, nodes int64) (sorted []int64, place []int32, err error) {
	set := newNodeSet(nodes)
	for _, id := range ids {
		if id < 0 || id >= nodes {
			return nil, nil, fmt.Errorf("planned: packing row %d, outside [0, %d)", id, nodes)
		}
		set.add(id)
	}
	before := make([]int32, len(set))
	sorted = make([]int64, 0, len(ids))
	for i, word := range set {
		before[i] = int32(len(sorted))
		for ; word != 0; word &= word - 1 {
			sorted = append(sorted, int64(i)*64+int64(bits.TrailingZeros64(word)))
		}
	}
	place = make([]int32, len(ids))
	for j, id := range ids {
		below := set[id>>6] & (1<<(uint64(id)&63) - 1)
		place[j] = before[id>>6] + int32(bits.OnesCount64(below))
	}
	return sorted, place, nil
}

// packRandomRows is the distinct rows a random read of a window takes at once (one Files.Read).
const packRandomRows = 4096

// read reads packed type k's distinct rows of window w into it from byte base, by the cheaper
// method (or the one EpochOptions.PackMethod names).
func (pk *packer) read(w *window, k int, base int64) error {
	s := pk.src.stacks[k]
	rb := s.RowBytes()
	disk := s.Internals().SSD() // the feature's files
	model := disk.DiskModel()
	w.model = model
	ids := w.distinct[k]
	if len(ids) == 0 {
		return nil
	}
	dst := w.buf[base : base+int64(len(ids))*rb]
	// Random reads take the rows (ascending), packRandomRows a read of the IO stack.
	var randomReads, randomBytes int64
	if pk.o.PackMethod != PackScan {
		for lo := 0; lo < len(ids); lo += packRandomRows {
			r, b := disk.RandomReads(ids[lo:min(lo+packRandomRows, len(ids))])
			randomReads, randomBytes = randomReads+r, randomBytes+b
		}
	}
	var plan *ssd.ScanPlan
	if pk.o.PackMethod != PackRandom {
		at := make([]int64, len(ids))
		for i := range at {
			at[i] = base + int64(i)*rb
		}
		// The scan's read buffer: a sixteenth of the window, from 16 KiB to 16 MiB (a queue of
		// the IO stack's largest reads).
		buffer := min(max(pk.limit()/16, 16<<10), 16<<20)
		opt := ssd.ScanOptions{Gap: model.BreakEvenGap(), MaxRange: min(buffer, 4<<20), Buffer: buffer}
		var err error
		if plan, err = disk.PlanScan(ids, at, opt); err != nil {
			return fmt.Errorf("planned: packing %s: %w", w.name(), err)
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
		if err := disk.Scan(plan, w.buf, pk.stop); err != nil {
			return fmt.Errorf("planned: packing %s: %w", w.name(), err)
		}
		return nil
	}
	w.randoms++
	w.reads += randomReads
	w.bytes += randomBytes
	chunks := (len(ids) + packRandomRows - 1) / packRandomRows
	return par.InTurn(planWorkers(), chunks, func() (func(int) error, func(), error) {
		pos := make([]int64, packRandomRows) // chunk row i to row i of the chunk's place in dst
		for i := range pos {
			pos[i] = int64(i)
		}
		return func(c int) error {
			lo, hi := c*packRandomRows, min((c+1)*packRandomRows, len(ids))
			if err := pk.stop(); err != nil {
				return err
			}
			if err := disk.CopyToHost(ids[lo:hi], pos[:hi-lo], dst[int64(lo)*rb:]); err != nil {
				return fmt.Errorf("planned: packing %s: %w", w.name(), err)
			}
			return nil
		}, nil, nil
	})
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
