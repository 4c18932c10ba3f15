package planned

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/internal/wfs"
	"github.com/tierfs/tierfs/topology"
)

// Stored samples (DiskGNN keeps each batch's sample beside its packed rows): every plan writes
// each batch's sample, whatever Epochs serves for the batch (a topology.Sample, LinkSample,
// HeteroSample or HeteroLinkSample), into a samples file per planned epoch (samplesFile), one
// record a batch, one after another in batch order, each listed in the index with its offset,
// length and xxhash64. Serving a batch reads the record with one pread, checks its xxhash64 and
// the hash of every packed type's nodes against the plan, and draws nothing.
//
// A record, little-endian, is a header, a table of array lengths and the arrays:
//
//	header (16 bytes): node types T uint32, edge types E uint32, flags uint32 (sampleHetero,
//	    sampleLink), coding uint32 (codeNarrowNodes, codeShortLocal, codeNarrowEdgeIDs or 0)
//	lengths  int64 × L, L = 2T + 4E (+ 8 with sampleLink): each array's length, -1 for a nil one
//	arrays, in table order, each padded to a multiple of 8 bytes:
//	    Nodes[t] for every node type t                               uint32 with codeNarrowNodes,
//	                                                                 else int64
//	    NodesPerHop[t]                                               int64
//	    Row[e] for every edge type e, then Col[e]                    local ids of e's src and dst
//	                                                                 node types: uint16 with
//	                                                                 codeShortLocal, else int32
//	    EdgeIDs[e]                                                   uint32 with codeNarrowEdgeIDs,
//	                                                                 else int64
//	    EdgesPerHop[e]                                               int64
//	    with sampleLink, the LinkLabels: EdgeLabelIndex[0],
//	    EdgeLabelIndex[1], EdgeLabel, SrcIndex, DstPosIndex,
//	    DstNegIndex, NegSrc, NegDst                                  int64
//
// A Store's sample is one node type and one edge type (its Nodes is Nodes[0], ...); sampleHetero
// marks a Session's (decoded as a HeteroSample of T and E types). Nil and empty arrays are kept
// apart, so a decoded sample is the drawn one, reflect.DeepEqual. Every int64 array starts 8-byte
// aligned in the record, so a record read into 8-aligned memory decodes them in place.
//
// The coding narrows what fits (planning sets each bit where every value of the record fits):
// node ids below 2^32 take 4 bytes (codeNarrowNodes), local ids of batches of at most 2^16 nodes
// of every type 2 (codeShortLocal), edge ids below 2^32 4 (codeNarrowEdgeIDs). Version 4 wrote
// coding 0: 8 bytes a node and 16 an edge, where a [25,10] batch of 1,024 seeds now takes 4 and 8.

// sampleRecord is where batch b's sample lies in its epoch's samples file.
type sampleRecord struct {
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
	Sum    uint64 `json:"sum"` // xxhash64 of the record's bytes
}

// Record flags.
const (
	sampleHetero = 1 << 0 // a Session's sample: a HeteroSample
	sampleLink   = 1 << 1 // LinkLabels follow the sample's arrays
)

// Record codings (the header's fourth word), each a narrower width for one kind of array.
const (
	codeNarrowEdgeIDs = 1 << 0 // EdgeIDs hold uint32s
	codeNarrowNodes   = 1 << 1 // Nodes hold uint32s
	codeShortLocal    = 1 << 2 // Row and Col hold uint16s
	codings           = codeNarrowEdgeIDs | codeNarrowNodes | codeShortLocal
)

// narrowRecords lets encode narrow what fits; tests turn it off to write records as index
// version 4 did (coding 0).
var narrowRecords = true

const (
	sampleHeader = 16
	linkArrays   = 8 // the LinkLabels' arrays
)

// recordShape is what the records of a plan hold: per edge type, the node types its Row and Col
// index (len(ends) edge types), how many node types, and the flags.
type recordShape struct {
	types int
	ends  [][2]int
	flags uint32
}

// nodeShape is the shape of a Store's plan of seed nodes: one node type and one edge type.
var nodeShape = recordShape{types: 1, ends: [][2]int{{0, 0}}}

// recordShape is the shape of the records of a plan of o on src.
func (src *epochSource) recordShape(o *EpochOptions) recordShape {
	s := nodeShape
	if src.typed {
		m := src.ss.Manifest()
		s = recordShape{types: len(m.NodeTypes), flags: sampleHetero}
		for e := range m.EdgeTypes {
			es, ed := src.ss.Internals().EdgeTypeEnds(e)
			s.ends = append(s.ends, [2]int{es, ed})
		}
	}
	if o.SeedEdges != nil {
		s.flags |= sampleLink
	}
	return s
}

// arrays is the table's length: its number of arrays.
func (s recordShape) arrays() int {
	n := 2*s.types + 4*len(s.ends)
	if s.flags&sampleLink != 0 {
		n += linkArrays
	}
	return n
}

// local says whether table entry i is Row or Col of an edge type, and then the node type its
// local ids index.
func (s recordShape) local(i int) (int, bool) {
	e := i - 2*s.types
	if e < 0 || e >= 2*len(s.ends) {
		return 0, false
	}
	return s.ends[e%len(s.ends)][e/len(s.ends)], true
}

// edgeIDs says whether table entry i is EdgeIDs of an edge type.
func (s recordShape) edgeIDs(i int) bool {
	e := i - 2*s.types - 2*len(s.ends)
	return e >= 0 && e < len(s.ends)
}

// width is the bytes of a value of table entry i in a record of coding.
func (s recordShape) width(i int, coding uint32) int64 {
	_, local := s.local(i)
	switch {
	case local && coding&codeShortLocal != 0:
		return 2
	case local, i < s.types && coding&codeNarrowNodes != 0, s.edgeIDs(i) && coding&codeNarrowEdgeIDs != 0:
		return 4
	}
	return 8
}

// coding is the coding of the record of arrays a (table order): every narrower width its values
// fit.
func (s recordShape) coding(a [][]int64) uint32 {
	if !narrowRecords {
		return 0
	}
	fits := func(v []int64, most uint64) bool {
		for _, x := range v {
			if uint64(x) > most {
				return false
			}
		}
		return true
	}
	coding := uint32(codings)
	for i, v := range a {
		if i < s.types && !fits(v, math.MaxUint32) {
			coding &^= codeNarrowNodes
		}
		if i < s.types && len(v) > 1<<16 {
			coding &^= codeShortLocal
		}
		if s.edgeIDs(i) && !fits(v, math.MaxUint32) {
			coding &^= codeNarrowEdgeIDs
		}
	}
	return coding
}

// name names table entry i in errors: "Col" of a Store's sample, "Col[e]" of a Session's.
func (s recordShape) name(i int) string {
	names := []string{"Nodes", "NodesPerHop", "Row", "Col", "EdgeIDs", "EdgesPerHop"}
	per := []int{s.types, s.types, len(s.ends), len(s.ends), len(s.ends), len(s.ends)}
	for k, n := range per {
		if i < n {
			if s.flags&sampleHetero == 0 {
				return names[k]
			}
			return fmt.Sprintf("%s[%d]", names[k], i)
		}
		i -= n
	}
	return [linkArrays]string{"EdgeLabelIndex[0]", "EdgeLabelIndex[1]", "EdgeLabel", "SrcIndex", "DstPosIndex", "DstNegIndex", "NegSrc", "NegDst"}[i]
}

// arraysOf lists the arrays of d's sample in table order: d.sample (with d.link of a link plan)
// of a Store's plan, d.hetero (with d.heteroLink) of a Session's.
func (s recordShape) arraysOf(d *batchDraw) ([][]int64, error) {
	var out [][]int64
	var link *topology.LinkLabels
	if s.flags&sampleHetero == 0 {
		smp := d.sample
		out = [][]int64{smp.Nodes, smp.NodesPerHop, smp.Row, smp.Col, smp.EdgeIDs, smp.EdgesPerHop}
		if d.link != nil {
			link = &d.link.LinkLabels
		}
	} else {
		h := d.hetero
		if len(h.Nodes) != s.types || len(h.NodesPerHop) != s.types || len(h.Row) != len(s.ends) || len(h.Col) != len(s.ends) ||
			len(h.EdgeIDs) != len(s.ends) || len(h.EdgesPerHop) != len(s.ends) {
			return nil, fmt.Errorf("planned: a batch's sample has %d/%d node types and %d/%d/%d/%d edge types, the graph %d and %d",
				len(h.Nodes), len(h.NodesPerHop), len(h.Row), len(h.Col), len(h.EdgeIDs), len(h.EdgesPerHop), s.types, len(s.ends))
		}
		out = slices.Concat(h.Nodes, h.NodesPerHop, h.Row, h.Col, h.EdgeIDs, h.EdgesPerHop)
		if d.heteroLink != nil {
			link = &d.heteroLink.LinkLabels
		}
	}
	if (link != nil) != (s.flags&sampleLink != 0) {
		return nil, fmt.Errorf("planned: a batch's sample has link labels %v, its plan %v", link != nil, s.flags&sampleLink != 0)
	}
	if link != nil {
		out = append(out, link.EdgeLabelIndex[0], link.EdgeLabelIndex[1], link.EdgeLabel, link.SrcIndex, link.DstPosIndex,
			link.DstNegIndex, link.NegSrc, link.NegDst)
	}
	return out, nil
}

// drawOf is the batch draw of a record's arrays (table order): views of them, Row and Col
// included (the caller converted them).
func (s recordShape) drawOf(a [][]int64) *batchDraw {
	d := &batchDraw{}
	var link *topology.LinkLabels
	if s.flags&sampleHetero == 0 {
		smp := topology.Sample{Nodes: a[0], NodesPerHop: a[1], Row: a[2], Col: a[3], EdgeIDs: a[4], EdgesPerHop: a[5]}
		if s.flags&sampleLink != 0 {
			d.link = &topology.LinkSample{Sample: smp}
			d.sample, link = &d.link.Sample, &d.link.LinkLabels
		} else {
			d.sample = &smp
		}
	} else {
		T, E := s.types, len(s.ends)
		h := topology.HeteroSample{Nodes: a[:T:T], NodesPerHop: a[T : 2*T : 2*T]}
		at := 2 * T
		for _, f := range []*[][]int64{&h.Row, &h.Col, &h.EdgeIDs, &h.EdgesPerHop} {
			*f = a[at : at+E : at+E]
			at += E
		}
		if s.flags&sampleLink != 0 {
			d.heteroLink = &topology.HeteroLinkSample{HeteroSample: h}
			d.hetero, link = &d.heteroLink.HeteroSample, &d.heteroLink.LinkLabels
		} else {
			d.hetero = &h
		}
	}
	if link != nil {
		l := a[len(a)-linkArrays:]
		*link = topology.LinkLabels{EdgeLabelIndex: [2][]int64{l[0], l[1]}, EdgeLabel: l[2], SrcIndex: l[3], DstPosIndex: l[4],
			DstNegIndex: l[5], NegSrc: l[6], NegDst: l[7]}
	}
	return d
}

// arrayBytes is the bytes of an array of n values of width bytes in the record (n < 0: nil),
// padded to 8.
func arrayBytes(n, width int64) int64 {
	if n <= 0 {
		return 0
	}
	return (width*n + 7) &^ 7
}

// recordLen is the bytes of the record of arrays a (table order) and its coding, or an error
// naming what does not fit the format.
func (s recordShape) recordLen(a [][]int64) (int64, uint32, error) {
	if len(a) != s.arrays() {
		return 0, 0, fmt.Errorf("planned: a batch's sample has %d arrays, its record %d", len(a), s.arrays())
	}
	coding := s.coding(a)
	size := int64(sampleHeader + 8*len(a))
	for i, v := range a {
		t, local := s.local(i)
		if local && int64(len(a[t])) > math.MaxInt32 {
			return 0, 0, fmt.Errorf("planned: a batch's sample of %d nodes has local ids past int32, which a samples record stores (at most %d nodes a batch)", len(a[t]), math.MaxInt32)
		}
		size += arrayBytes(int64(len(v)), s.width(i, coding))
	}
	return size, coding, nil
}

// encode is the record of arrays a (table order): local ids outside their node type's nodes
// are refused, naming the array.
func (s recordShape) encode(a [][]int64) ([]byte, error) {
	size, coding, err := s.recordLen(a)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	le := binary.LittleEndian
	le.PutUint32(buf[0:], uint32(s.types))
	le.PutUint32(buf[4:], uint32(len(s.ends)))
	le.PutUint32(buf[8:], s.flags)
	le.PutUint32(buf[12:], coding)
	at := sampleHeader
	for _, v := range a {
		n := int64(len(v))
		if v == nil {
			n = -1
		}
		le.PutUint64(buf[at:], uint64(n))
		at += 8
	}
	for i, v := range a {
		if t, local := s.local(i); local {
			for j, x := range v {
				if uint64(x) >= uint64(len(a[t])) {
					return nil, fmt.Errorf("planned: a batch's sample has %s[%d] = %d, not a local id of its %d nodes", s.name(i), j, x, len(a[t]))
				}
			}
		}
		w := s.width(i, coding)
		out := buf[at:]
		switch w { // each value fits its width (coding)
		case 2:
			for j, x := range v {
				le.PutUint16(out[2*j:], uint16(x))
			}
		case 4:
			for j, x := range v {
				le.PutUint32(out[4*j:], uint32(x))
			}
		default:
			for j, x := range v {
				le.PutUint64(out[8*j:], uint64(x))
			}
		}
		at += int(arrayBytes(int64(len(v)), w))
	}
	return buf, nil
}

// lengths checks a record's header against s and returns its table and coding, for a record of
// recLen bytes (head holds at least the header and the table). Errors say what is malformed.
func (s recordShape) lengths(head []byte, recLen int64) ([]int64, uint32, error) {
	le := binary.LittleEndian
	if len(head) < sampleHeader {
		return nil, 0, fmt.Errorf("a record of %d bytes, shorter than its %d-byte header", recLen, sampleHeader)
	}
	T, E, flags, coding := le.Uint32(head[0:]), le.Uint32(head[4:]), le.Uint32(head[8:]), le.Uint32(head[12:])
	if int(T) != s.types || int(E) != len(s.ends) || flags != s.flags || coding&^codings != 0 {
		return nil, 0, fmt.Errorf("a record of %d node types, %d edge types, flags %#x and coding %#x; the plan's records have %d, %d, %#x and a coding within %#x",
			T, E, flags, coding, s.types, len(s.ends), s.flags, codings)
	}
	L := s.arrays()
	if int64(len(head)) < int64(sampleHeader+8*L) || recLen < int64(sampleHeader+8*L) {
		return nil, 0, fmt.Errorf("a record of %d bytes, shorter than its %d-byte header and table", recLen, sampleHeader+8*L)
	}
	n := make([]int64, L)
	total := int64(sampleHeader + 8*L)
	for i := range n {
		n[i] = int64(le.Uint64(head[sampleHeader+8*i:]))
		if n[i] < -1 || n[i] > recLen {
			return nil, 0, fmt.Errorf("a record of %d bytes lists %d values of %s", recLen, n[i], s.name(i))
		}
		total += arrayBytes(n[i], s.width(i, coding))
	}
	if total != recLen {
		return nil, 0, fmt.Errorf("a record whose table takes %d bytes, it has %d", total, recLen)
	}
	return n, coding, nil
}

// decode is the arrays of record rec (table order), which must start 8-byte aligned: the int64
// arrays are views of rec. Errors say what is malformed (the caller wraps dataset.ErrCorrupt).
func (s recordShape) decode(rec []byte) ([][]int64, error) {
	n, coding, err := s.lengths(rec, int64(len(rec)))
	if err != nil {
		return nil, err
	}
	at := int64(sampleHeader + 8*len(n))
	a := make([][]int64, len(n))
	for i, k := range n {
		t, local := s.local(i)
		w := s.width(i, coding)
		switch {
		case k < 0:
		case k == 0:
			a[i] = []int64{}
		case w == 8:
			a[i] = unsafe.Slice((*int64)(unsafe.Pointer(&rec[at])), k)
		default:
			bound := int64(math.MaxInt64)
			if local {
				bound = int64(len(a[t]))
			}
			var bad int
			if a[i], bad = widen(rec[at:at+w*k], w, bound); bad >= 0 {
				return nil, fmt.Errorf("%s[%d] = %d, not a local id of the sample's %d nodes", s.name(i), bad, a[i][bad], bound)
			}
		}
		at += arrayBytes(k, w)
	}
	return a, nil
}

// widen is the little-endian unsigned values of width w (2 or 4 bytes) that b holds, and the
// index of the first that is not below bound (-1: none).
func widen(b []byte, w int64, bound int64) ([]int64, int) {
	le := binary.LittleEndian
	out := make([]int64, int64(len(b))/w)
	bad := -1
	if w == 2 {
		for j := range out {
			out[j] = int64(le.Uint16(b[2*j:]))
			if out[j] >= bound && bad < 0 {
				bad = j
			}
		}
		return out, bad
	}
	for j := range out {
		out[j] = int64(le.Uint32(b[4*j:]))
		if out[j] >= bound && bad < 0 {
			bad = j
		}
	}
	return out, bad
}

// samplesWriter writes one planned epoch's samples file: records one after another, buffered,
// written through its file by a goroutine of its own (the planner goes on sampling while a
// buffer is written), each buffer's writeback started as it is written (sync_file_range), so
// that finish's fsync waits for little. Memory: samplesBuffers buffers of samplesFlushBytes.
type samplesWriter struct {
	f       wfs.File
	path    string
	buf     []byte
	added   int64 // bytes added: the file's size once written
	records *[]sampleRecord

	full, free chan []byte
	done       chan error
	failed     atomic.Pointer[error] // the writer's first error, seen by add
}

// samplesFlushBytes is how much a samplesWriter buffers before it writes; samplesBuffers the
// buffers: one filling, the others queued or being written.
const (
	samplesFlushBytes = 4 << 20
	samplesBuffers    = 3
)

func createSamples(fsys wfs.FS, path string, records *[]sampleRecord) (*samplesWriter, error) {
	f, err := wfs.Create(fsys, path)
	if err != nil {
		return nil, fmt.Errorf("planned: epoch plan: %w", err)
	}
	w := &samplesWriter{f: f, path: path, records: records,
		full: make(chan []byte, samplesBuffers), free: make(chan []byte, samplesBuffers), done: make(chan error, 1)}
	for range samplesBuffers - 1 {
		w.free <- nil
	}
	go w.write()
	return w, nil
}

// write writes the buffers sent on full in order, starting each one's writeback, until full is
// closed; it stops writing at the first error and reports it on done.
func (w *samplesWriter) write() {
	var off int64
	var err error
	for b := range w.full {
		for done := 0; err == nil && done < len(b); {
			n, werr := w.f.WriteAt(b[done:], off+int64(done))
			if werr != nil {
				err = fmt.Errorf("planned: writing epoch plan %s at byte %d: %w", w.path, off+int64(done), werr)
				w.failed.Store(&err)
			}
			done += n
		}
		if err == nil {
			// Start writing it back now; finish's fsync then waits for the last buffers only.
			_ = unix.SyncFileRange(int(w.f.Fd()), off, int64(len(b)), unix.SYNC_FILE_RANGE_WRITE)
		}
		off += int64(len(b))
		w.free <- b[:0]
	}
	w.done <- err
}

// size is the file's bytes once the records added are written.
func (w *samplesWriter) size() int64 { return w.added }

// add appends a record with checksum sum and lists it. It fails once a write has failed.
func (w *samplesWriter) add(rec []byte, sum uint64) error {
	if err := w.failed.Load(); err != nil {
		return *err
	}
	*w.records = append(*w.records, sampleRecord{Offset: w.added, Length: int64(len(rec)), Sum: sum})
	w.buf = append(w.buf, rec...)
	w.added += int64(len(rec))
	if len(w.buf) >= samplesFlushBytes {
		w.full <- w.buf
		w.buf = <-w.free
	}
	return nil
}

// finish writes what is buffered and syncs the file when write (an epoch that failed or did
// not fit skips both, its buffers dropped), then closes it.
func (w *samplesWriter) finish(write bool) error {
	if write && len(w.buf) > 0 {
		w.full <- w.buf
	}
	w.buf = nil
	close(w.full)
	err := <-w.done
	if !write {
		err = nil
	} else if err == nil {
		err = w.f.Sync()
	}
	return cmp.Or(err, w.f.Close())
}

// openSamples opens the samples files of the plan's epochs and checks their records against the
// index.
func (p *Epochs) openSamples() error {
	for e, ef := range p.idx.Epochs {
		if ef.Samples == "" || len(ef.SampleRecords) != p.idx.Batches {
			return fmt.Errorf("planned: epoch plan %s: epoch %d lists samples file %q with %d records, want %d (one a batch): %w", p.o.Dir, e, ef.Samples, len(ef.SampleRecords), p.idx.Batches, dataset.ErrCorrupt)
		}
		path := filepath.Join(p.o.Dir, ef.Samples)
		var end int64
		for b, r := range ef.SampleRecords {
			if r.Offset != end || r.Length < sampleHeader {
				return fmt.Errorf("planned: epoch plan %s: batch %d's record at byte %d of %d bytes does not follow the last (byte %d): %w", path, b, r.Offset, r.Length, end, dataset.ErrCorrupt)
			}
			end += r.Length
		}
		if end != ef.SampleBytes {
			return fmt.Errorf("planned: epoch plan %s: its records take %d bytes, the index says %d: %w", path, end, ef.SampleBytes, dataset.ErrCorrupt)
		}
		fd, size, err := dataset.OpenFDIn(p.o.Dir, ef.Samples, 0, ef.SampleBytes)
		if err != nil {
			return fmt.Errorf("planned: epoch plan %s: %w", path, err)
		}
		p.sampleFDs = append(p.sampleFDs, fd)
		if size < ef.SampleBytes {
			return fmt.Errorf("planned: epoch plan %s holds %d bytes, its index says %d: %w", path, size, ef.SampleBytes, dataset.ErrCorrupt)
		}
	}
	return nil
}

// storedDraw reads batch b of epoch e's sample from its samples file: one pread, its xxhash64
// checked (a mismatch wraps dataset.ErrCorrupt naming the file, epoch and batch), decoded, and
// every packed type's nodes checked against the plan. It returns the batch's seeds too.
func (p *Epochs) storedDraw(e, b int) ([]int64, *batchDraw, error) {
	done, err := p.enter()
	if err != nil {
		return nil, nil, err
	}
	defer done()
	seeds, err := p.Seeds(e, b)
	if err != nil {
		return nil, nil, err
	}
	k, _ := p.planned(e, b) // checked by Seeds
	ef := &p.idx.Epochs[k]
	r := ef.SampleRecords[b]
	path := filepath.Join(p.o.Dir, ef.Samples)
	words := make([]int64, (r.Length+7)/8) // 8-aligned: decode views its int64 arrays in place
	rec := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), len(words)*8)[:r.Length]
	t := time.Now()
	if err := preadFull(p.sampleFDs[k], rec, r.Offset); err != nil {
		return nil, nil, fmt.Errorf("planned: epoch %d batch %d (planned epoch %d): samples file %s: %w", e, b, p.o.epoch(k), path, err)
	}
	p.sampleNs.Add(int64(time.Since(t)))
	p.sampleBytes.Add(r.Length)
	if sum := xxhash.Sum64(rec); sum != r.Sum {
		return nil, nil, fmt.Errorf("planned: epoch %d batch %d (planned epoch %d): samples file %s at byte %d (%d bytes) has checksum %016x, the plan has %016x: %w",
			e, b, p.o.epoch(k), path, r.Offset, r.Length, sum, r.Sum, dataset.ErrCorrupt)
	}
	shape := p.src.recordShape(&p.o)
	a, err := shape.decode(rec)
	if err != nil {
		return nil, nil, fmt.Errorf("planned: epoch %d batch %d (planned epoch %d): samples file %s at byte %d: %v: %w", e, b, p.o.epoch(k), path, r.Offset, err, dataset.ErrCorrupt)
	}
	d := p.src.withNodes(shape.drawOf(a))
	if err := p.checkSeeds(e, b, k, path, seeds, d); err != nil {
		return nil, nil, err
	}
	for t, nodes := range d.nodes {
		if err := p.checkNodes(e, b, k, t, nodes); err != nil {
			return nil, nil, err
		}
	}
	return seeds, d, nil
}

// checkSeeds checks that a node plan's stored sample of batch b of epoch e begins with the
// batch's seeds (a sample's nodes of the seed type are its seeds first, as given): a record moved
// to another batch or epoch, with its checksum, is refused as corrupt naming the batch.
func (p *Epochs) checkSeeds(e, b, k int, path string, seeds []int64, d *batchDraw) error {
	if p.o.SeedEdges != nil || len(seeds) == 0 {
		return nil // a link plan's seeds are positions of seed edges
	}
	var nodes []int64
	if d.hetero != nil {
		nodes = d.hetero.Nodes[p.src.seedType]
	} else if d.sample != nil {
		nodes = d.sample.Nodes
	}
	if len(nodes) < len(seeds) || !slices.Equal(nodes[:len(seeds)], seeds) {
		first := int64(-1)
		if len(nodes) > 0 {
			first = nodes[0]
		}
		return fmt.Errorf("planned: epoch %d batch %d (planned epoch %d): samples file %s holds a sample of other seeds (its first seed %d, the batch's %d of %d): a record of another batch or epoch: %w",
			e, b, p.o.epoch(k), path, first, seeds[0], len(seeds), dataset.ErrCorrupt)
	}
	return nil
}
