package featurestore

import (
	"fmt"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/topology"
)

// openGraph holds the topology in memory when it fits Options.TopologyMemoryBytes, otherwise
// serves it from disk through the IO stacks.
func (s *Store) openGraph() error {
	if err := s.checkPlacement(); err != nil {
		return err
	}
	et := s.m.Edges()
	if et == nil {
		return nil
	}
	n := s.NumNodes()
	isz := int64(et.Indices.DType.Size())
	need := (n+1)*8 + et.Count*isz
	if s.opt.TopologyMemoryBytes < 0 || need > s.opt.TopologyMemoryBytes {
		g, err := topology.NewDiskCSC(n, et.Count, isz, s.indptrFile, s.indptrFile+1, s.readGuarded)
		if err != nil {
			return fmt.Errorf("featurestore: %w", err)
		}
		s.graph = g
		return s.cachePlanTopology(s.opt.Placement)
	}
	// Read through the IO stacks, so every block is checked under Options.VerifyReads.
	indptr := make([]int64, n+1)
	if err := s.readFile(et.Indptr.File, dataset.BytesOf(indptr)); err != nil {
		return err
	}
	var g *topology.CSC
	var err error
	if et.Indices.DType == dataset.Int32 {
		idx := make([]int32, et.Count)
		if err := s.readFile(et.Indices.File, dataset.BytesOf(idx)); err != nil {
			return err
		}
		g, err = topology.NewCSC(indptr, idx, nil)
	} else {
		idx := make([]int64, et.Count)
		if err := s.readFile(et.Indices.File, dataset.BytesOf(idx)); err != nil {
			return err
		}
		g, err = topology.NewCSC(indptr, nil, idx)
	}
	if err != nil { // the arrays match the manifest's sizes, so a bad structure is damage
		return fmt.Errorf("featurestore: topology of %s: %w: %w", s.m.Dir(), err, dataset.ErrCorrupt)
	}
	s.graph = g
	return nil
}

// readFile fills dst from the start of file (a path of the store's file set) through the IO
// stacks, so that every block is checked under Options.VerifyReads; a long dst is read a chunk
// at a time. Arrays are little-endian, as is every machine tierfs builds for.
func (s *Store) readFile(file string, dst []byte) error {
	return s.readFileAt(file, 0, dst)
}

// readFileAt is readFile from byte offset off.
func (s *Store) readFileAt(file string, off int64, dst []byte) error {
	idx := s.files.Index(file)
	if idx < 0 {
		return fmt.Errorf("featurestore: %s is not a file this store reads", file)
	}
	const chunk = 16 << 20
	for lo := 0; lo < len(dst); lo += chunk {
		hi := min(lo+chunk, len(dst))
		if err := s.read([]gpuio.Request{{File: idx, Offset: off + int64(lo), Length: hi - lo, Dst: dst[lo:hi]}}); err != nil {
			return fmt.Errorf("featurestore: read %d bytes of %s at offset %d: %w", hi-lo, file, off+int64(lo), err)
		}
	}
	return nil
}

// readGuarded is read under the close guard (the disk graph reads while sampling).
func (s *Store) readGuarded(reqs []gpuio.Request) error {
	leave, err := s.enter()
	if err != nil {
		return err
	}
	defer leave()
	return s.read(reqs)
}
