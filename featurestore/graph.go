package featurestore

import (
	"bytes"
	"fmt"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/topology"
)

// openEdgeTypes opens the topology of every edge type: in memory while the edge types so far fit
// Options.TopologyMemoryBytes together, otherwise from disk through the IO stacks.
func (ss *Session) openEdgeTypes() error {
	budget := ss.opt.TopologyMemoryBytes
	for i := range ss.m.EdgeTypes {
		et := &ss.m.EdgeTypes[i]
		e := edgeState{spec: et, src: ss.nodeTypeIndex(et.Src), dst: ss.nodeTypeIndex(et.Dst)}
		if e.src < 0 || e.dst < 0 {
			return fmt.Errorf("featurestore: edge type %s of dataset %s names a node type it lacks: %w", et.Key(), ss.m.Dir(), dataset.ErrCorrupt)
		}
		n := ss.m.NodeTypes[e.dst].Count
		isz := int64(et.Indices.DType.Size())
		need := (n+1)*8 + et.Count*isz
		var err error
		if budget < 0 || need > budget {
			e.graph, err = topology.NewBipartiteDiskCSC(ss.m.NodeTypes[e.src].Count, n, et.Count, isz, ss.files.Index(et.Indptr.File), ss.files.Index(et.Indices.File), ss.readGuarded)
			if err != nil {
				return fmt.Errorf("featurestore: %w", err)
			}
		} else {
			budget -= need
			if e.graph, err = ss.readCSC(et, ss.m.NodeTypes[e.src].Count, n); err != nil {
				return err
			}
		}
		ss.edges = append(ss.edges, e)
	}
	return nil
}

// readCSC reads the topology of et, over n destination nodes whose neighbors are ids of a type of
// numSrc nodes, into memory through the IO stacks, so every block is checked (readFile).
func (ss *Session) readCSC(et *dataset.EdgeType, numSrc, n int64) (*topology.CSC, error) {
	indptr := make([]int64, n+1)
	if err := ss.readFile(et.Indptr.File, dataset.BytesOf(indptr)); err != nil {
		return nil, err
	}
	var g *topology.CSC
	var err error
	if et.Indices.DType == dataset.Int32 {
		idx := make([]int32, et.Count)
		if err := ss.readFile(et.Indices.File, dataset.BytesOf(idx)); err != nil {
			return nil, err
		}
		g, err = topology.NewBipartiteCSC(numSrc, indptr, idx, nil)
	} else {
		idx := make([]int64, et.Count)
		if err := ss.readFile(et.Indices.File, dataset.BytesOf(idx)); err != nil {
			return nil, err
		}
		g, err = topology.NewBipartiteCSC(numSrc, indptr, nil, idx)
	}
	if err != nil { // the arrays match the manifest's sizes, so a bad structure is damage
		return nil, fmt.Errorf("featurestore: topology of %s: %w: %w", ss.m.Dir(), err, dataset.ErrCorrupt)
	}
	return g, nil
}

// readFile fills dst from the start of file (a path of the store's file set) through the IO
// stacks; a long dst is read a chunk at a time. What it reads is checked against the dataset's
// checksums whatever Options.UnverifiedReads says: labels, splits and topology are read whole, once,
// where checking costs a hash pass over memory. Arrays are little-endian, as is every machine
// tierfs builds for.
func (ss *Session) readFile(file string, dst []byte) error {
	if err := ss.readFileAt(file, 0, dst); err != nil {
		return err
	}
	if !ss.opt.UnverifiedReads || len(dst) == 0 {
		return nil // the IO stacks checked every block
	}
	return ss.checkRead(file, dst)
}

// checkRead checks data, the first bytes of file, against its block checksums: the whole blocks
// it covers in place, and its partial last block (if any) read whole again.
func (ss *Session) checkRead(file string, data []byte) error {
	f := ss.m.File(file)
	if f == nil {
		return fmt.Errorf("featurestore: %s is not a file of dataset %s", file, ss.m.Dir())
	}
	sums, err := ss.m.LoadChecksums(f)
	if err != nil {
		return fmt.Errorf("featurestore: %w", err)
	}
	bs := sums.BlockSize
	whole := int64(len(data)) / bs * bs
	if whole == int64(len(data)) || int64(len(data)) == f.Bytes {
		whole = int64(len(data))
	}
	if err := sums.Check(0, data[:whole]); err != nil {
		return fmt.Errorf("featurestore: %w", err)
	}
	if whole == int64(len(data)) {
		return nil
	}
	last := make([]byte, min(bs, f.Bytes-whole))
	if err := ss.readFileAt(file, whole, last); err != nil {
		return err
	}
	if !bytes.Equal(last[:int64(len(data))-whole], data[whole:]) {
		return fmt.Errorf("featurestore: %s: block %d read twice gave different bytes: %w", file, whole/bs, dataset.ErrCorrupt)
	}
	if err := sums.Check(whole, last); err != nil {
		return fmt.Errorf("featurestore: %w", err)
	}
	return nil
}

// readFileAt is readFile from byte offset off.
func (ss *Session) readFileAt(file string, off int64, dst []byte) error {
	idx := ss.files.Index(file)
	if idx < 0 {
		return fmt.Errorf("featurestore: %s is not a file this store reads", file)
	}
	const chunk = 16 << 20
	for lo := 0; lo < len(dst); lo += chunk {
		hi := min(lo+chunk, len(dst))
		if err := ss.files.Read([]gpuio.Request{{File: idx, Offset: off + int64(lo), Length: hi - lo, Dst: dst[lo:hi]}}); err != nil {
			return fmt.Errorf("featurestore: read %d bytes of %s at offset %d: %w", hi-lo, file, off+int64(lo), err)
		}
	}
	return nil
}

// readGuarded is a read under the session's close guard (the disk graph reads while sampling).
func (ss *Session) readGuarded(reqs []gpuio.Request) error {
	leave, err := ss.enter()
	if err != nil {
		return err
	}
	defer leave()
	return ss.files.Read(reqs)
}
