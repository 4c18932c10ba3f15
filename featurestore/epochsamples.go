package featurestore

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/topology"
)

// Stored samples (DiskGNN keeps each batch's sample beside its packed rows): a plan of seed
// nodes of one node type writes every batch's topology.Sample into a samples file per planned
// epoch (samplesFile), one record a batch, one after another in batch order, each listed in the
// index with its offset, length and xxhash64. Epochs.Sample reads the record with one pread,
// checks its xxhash64 and the hash of its nodes against the plan, and draws nothing. Link plans
// and heterogeneous plans store none and re-draw their batches.
//
// A record, little-endian:
//
//	header (32 bytes): nodes uint64, edges uint64, len(NodesPerHop) uint32, len(EdgesPerHop)
//	    uint32, flags uint32 (sampleHasEdgeIDs, sampleRowCol32), 0 uint32
//	Nodes        int64 × nodes
//	NodesPerHop  int64 × len(NodesPerHop)
//	EdgesPerHop  int64 × len(EdgesPerHop)
//	Row          int32 × edges (local ids: < nodes < 2^31)
//	Col          int32 × edges
//	EdgeIDs      int64 × edges, when sampleHasEdgeIDs
//
// Every int64 array starts 8-byte aligned in the record, so a record read into 8-aligned memory
// decodes them in place.

// sampleRecord is where batch b's sample lies in its epoch's samples file.
type sampleRecord struct {
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
	Sum    uint64 `json:"sum"` // xxhash64 of the record's bytes
}

// Record flags.
const (
	sampleHasEdgeIDs = 1 << 0 // EdgeIDs follow Col (a nil EdgeIDs has none)
	sampleRowCol32   = 1 << 1 // Row and Col are int32 (every record of this version)
)

const sampleHeader = 32

// storesSamples says whether a plan of o on src stores its batches' samples: a plan of seed
// nodes (not seed edges) of one node type (a Store's, not a Session's).
func (src *epochSource) storesSamples(o *EpochOptions) bool {
	return src.hetero == nil && o.SeedEdges == nil
}

// sampleRecordLen is the bytes of smp's record, or an error naming what does not fit.
func sampleRecordLen(smp *topology.Sample) (int64, error) {
	n, m := int64(len(smp.Nodes)), int64(len(smp.Row))
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("featurestore: a batch's sample of %d nodes has local ids past int32, which a samples record stores (at most %d nodes a batch)", n, math.MaxInt32)
	}
	if int64(len(smp.Col)) != m || (smp.EdgeIDs != nil && int64(len(smp.EdgeIDs)) != m) {
		return 0, fmt.Errorf("featurestore: a batch's sample has %d rows, %d cols and %d edge ids", m, len(smp.Col), len(smp.EdgeIDs))
	}
	size := sampleHeader + 8*(n+int64(len(smp.NodesPerHop))+int64(len(smp.EdgesPerHop))) + 8*m
	if smp.EdgeIDs != nil {
		size += 8 * m
	}
	return size, nil
}

// encodeSample is smp's record.
func encodeSample(smp *topology.Sample) ([]byte, error) {
	size, err := sampleRecordLen(smp)
	if err != nil {
		return nil, err
	}
	n, m := len(smp.Nodes), len(smp.Row)
	buf := make([]byte, size)
	le := binary.LittleEndian
	le.PutUint64(buf[0:], uint64(n))
	le.PutUint64(buf[8:], uint64(m))
	le.PutUint32(buf[16:], uint32(len(smp.NodesPerHop)))
	le.PutUint32(buf[20:], uint32(len(smp.EdgesPerHop)))
	flags := uint32(sampleRowCol32)
	if smp.EdgeIDs != nil {
		flags |= sampleHasEdgeIDs
	}
	le.PutUint32(buf[24:], flags)
	at := sampleHeader
	put64 := func(a []int64) {
		for _, v := range a {
			le.PutUint64(buf[at:], uint64(v))
			at += 8
		}
	}
	put32 := func(what string, a []int64) error {
		for i, v := range a {
			if uint64(v) >= uint64(n) {
				return fmt.Errorf("featurestore: a batch's sample has %s[%d] = %d, not a local id of its %d nodes", what, i, v, n)
			}
			le.PutUint32(buf[at:], uint32(v))
			at += 4
		}
		return nil
	}
	put64(smp.Nodes)
	put64(smp.NodesPerHop)
	put64(smp.EdgesPerHop)
	if err := put32("Row", smp.Row); err != nil {
		return nil, err
	}
	if err := put32("Col", smp.Col); err != nil {
		return nil, err
	}
	if smp.EdgeIDs != nil {
		put64(smp.EdgeIDs)
	}
	return buf, nil
}

// decodeSample is the sample of record rec, which must start 8-byte aligned: its int64 arrays
// are views of rec. Errors say what is malformed (the caller wraps dataset.ErrCorrupt).
func decodeSample(rec []byte) (*topology.Sample, error) {
	if len(rec) < sampleHeader {
		return nil, fmt.Errorf("a record of %d bytes, shorter than its %d-byte header", len(rec), sampleHeader)
	}
	le := binary.LittleEndian
	n, m := le.Uint64(rec[0:]), le.Uint64(rec[8:])
	hn, he := int64(le.Uint32(rec[16:])), int64(le.Uint32(rec[20:]))
	flags := le.Uint32(rec[24:])
	if flags&^(sampleHasEdgeIDs|sampleRowCol32) != 0 || flags&sampleRowCol32 == 0 || le.Uint32(rec[28:]) != 0 {
		return nil, fmt.Errorf("record flags %#x, %#x: not a record of this version", flags, le.Uint32(rec[28:]))
	}
	if n > math.MaxInt32 || m > uint64(len(rec)) {
		return nil, fmt.Errorf("a record of %d nodes and %d edges in %d bytes", n, m, len(rec))
	}
	want := sampleHeader + 8*(int64(n)+hn+he) + 8*int64(m)
	if flags&sampleHasEdgeIDs != 0 {
		want += 8 * int64(m)
	}
	if want != int64(len(rec)) {
		return nil, fmt.Errorf("a record of %d nodes, %d edges and %d+%d hops takes %d bytes, it has %d", n, m, hn, he, want, len(rec))
	}
	at := int64(sampleHeader)
	view64 := func(k int64) []int64 {
		if k == 0 {
			return []int64{}
		}
		v := unsafe.Slice((*int64)(unsafe.Pointer(&rec[at])), k)
		at += 8 * k
		return v
	}
	smp := &topology.Sample{Nodes: view64(int64(n)), NodesPerHop: view64(hn), EdgesPerHop: view64(he)}
	smp.Row, smp.Col = make([]int64, m), make([]int64, m)
	for _, dst := range [][]int64{smp.Row, smp.Col} {
		src := rec[at : at+4*int64(m)]
		for i := range dst {
			v := le.Uint32(src[4*i:])
			if uint64(v) >= n {
				return nil, fmt.Errorf("a local id %d of a sample of %d nodes", v, n)
			}
			dst[i] = int64(v)
		}
		at += 4 * int64(m)
	}
	if flags&sampleHasEdgeIDs != 0 {
		smp.EdgeIDs = view64(int64(m))
	}
	return smp, nil
}

// samplesWriter writes one planned epoch's samples file: records one after another, buffered,
// written through planWriteAt.
type samplesWriter struct {
	f       *os.File
	path    string
	buf     []byte
	flushed int64 // bytes written to f
	records *[]sampleRecord
}

// samplesFlushBytes is how much a samplesWriter buffers before it writes.
const samplesFlushBytes = 4 << 20

func createSamples(path string, records *[]sampleRecord) (*samplesWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("featurestore: epoch plan: %w", err)
	}
	return &samplesWriter{f: f, path: path, records: records}, nil
}

// size is the file's bytes once the records added are written.
func (w *samplesWriter) size() int64 { return w.flushed + int64(len(w.buf)) }

// add appends a record with checksum sum and lists it.
func (w *samplesWriter) add(rec []byte, sum uint64) error {
	*w.records = append(*w.records, sampleRecord{Offset: w.size(), Length: int64(len(rec)), Sum: sum})
	w.buf = append(w.buf, rec...)
	if len(w.buf) >= samplesFlushBytes {
		return w.flush()
	}
	return nil
}

func (w *samplesWriter) flush() error {
	for done := 0; done < len(w.buf); {
		n, err := planWriteAt(w.f, w.buf[done:], w.flushed)
		if err != nil {
			return fmt.Errorf("featurestore: writing epoch plan %s at byte %d: %w", w.path, w.flushed, err)
		}
		done += n
		w.flushed += int64(n)
	}
	w.buf = w.buf[:0]
	return nil
}

// finish writes what is buffered and syncs the file when write (an epoch that failed or did
// not fit skips both), then closes it.
func (w *samplesWriter) finish(write bool) error {
	var err error
	if write {
		err = w.flush()
		if err == nil {
			err = w.f.Sync()
		}
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// openSamples opens the samples files of the plan's epochs (a plan that stores samples) and
// checks their records against the index.
func (p *Epochs) openSamples() error {
	for e, ef := range p.idx.Epochs {
		if ef.Samples == "" || len(ef.SampleRecords) != p.idx.Batches {
			return fmt.Errorf("featurestore: epoch plan %s: epoch %d lists samples file %q with %d records, want %d (one a batch): %w", p.o.Dir, e, ef.Samples, len(ef.SampleRecords), p.idx.Batches, dataset.ErrCorrupt)
		}
		path := filepath.Join(p.o.Dir, ef.Samples)
		var end int64
		for b, r := range ef.SampleRecords {
			if r.Offset != end || r.Length < sampleHeader {
				return fmt.Errorf("featurestore: epoch plan %s: batch %d's record at byte %d of %d bytes does not follow the last (byte %d): %w", path, b, r.Offset, r.Length, end, dataset.ErrCorrupt)
			}
			end += r.Length
		}
		if end != ef.SampleBytes {
			return fmt.Errorf("featurestore: epoch plan %s: its records take %d bytes, the index says %d: %w", path, end, ef.SampleBytes, dataset.ErrCorrupt)
		}
		fd, size, err := dataset.OpenFDIn(p.o.Dir, ef.Samples, 0, ef.SampleBytes)
		if err != nil {
			return fmt.Errorf("featurestore: epoch plan %s: %w", path, err)
		}
		p.sampleFDs = append(p.sampleFDs, fd)
		if size < ef.SampleBytes {
			return fmt.Errorf("featurestore: epoch plan %s holds %d bytes, its index says %d: %w", path, size, ef.SampleBytes, dataset.ErrCorrupt)
		}
	}
	return nil
}

// storedSample reads batch b of epoch e's sample from its samples file: one pread, its xxhash64
// checked (a mismatch wraps dataset.ErrCorrupt naming the file, epoch and batch), decoded, and
// its nodes checked against the plan.
func (p *Epochs) storedSample(e, b int) ([]int64, *topology.Sample, error) {
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
	words := make([]int64, (r.Length+7)/8) // 8-aligned: decodeSample views its int64 arrays in place
	rec := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), len(words)*8)[:r.Length]
	t := time.Now()
	if err := preadFull(p.sampleFDs[k], rec, r.Offset); err != nil {
		return nil, nil, fmt.Errorf("featurestore: epoch %d batch %d (planned epoch %d): samples file %s: %w", e, b, p.o.epoch(k), path, err)
	}
	p.sampleNs.Add(int64(time.Since(t)))
	p.sampleBytes.Add(r.Length)
	if sum := xxhash.Sum64(rec); sum != r.Sum {
		return nil, nil, fmt.Errorf("featurestore: epoch %d batch %d (planned epoch %d): samples file %s at byte %d (%d bytes) has checksum %016x, the plan has %016x: %w",
			e, b, p.o.epoch(k), path, r.Offset, r.Length, sum, r.Sum, dataset.ErrCorrupt)
	}
	smp, err := decodeSample(rec)
	if err != nil {
		return nil, nil, fmt.Errorf("featurestore: epoch %d batch %d (planned epoch %d): samples file %s at byte %d: %v: %w", e, b, p.o.epoch(k), path, r.Offset, err, dataset.ErrCorrupt)
	}
	if err := p.checkNodes(e, b, k, 0, smp.Nodes); err != nil {
		return nil, nil, err
	}
	return seeds, smp, nil
}
