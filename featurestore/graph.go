package featurestore

import (
	"fmt"
	"io"
	"os"
	"unsafe"

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
	indptr := make([]int64, n+1)
	if err := readArray(s.m.Path(et.Indptr.File), unsafe.Slice((*byte)(unsafe.Pointer(&indptr[0])), len(indptr)*8)); err != nil {
		return err
	}
	var g *topology.CSC
	var err error
	if et.Indices.DType == dataset.Int32 {
		idx := make([]int32, et.Count)
		if err := readArray(s.m.Path(et.Indices.File), int32Bytes(idx)); err != nil {
			return err
		}
		g, err = topology.NewCSC(indptr, idx, nil)
	} else {
		idx := make([]int64, et.Count)
		if err := readArray(s.m.Path(et.Indices.File), int64Bytes(idx)); err != nil {
			return err
		}
		g, err = topology.NewCSC(indptr, nil, idx)
	}
	if err != nil {
		return fmt.Errorf("featurestore: topology of %s: %w", s.m.Dir(), err)
	}
	s.graph = g
	return nil
}

func int32Bytes(v []int32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*4)
}

func int64Bytes(v []int64) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*8)
}

// readArray fills dst from the start of path (arrays are little-endian, as is every machine
// tierfs builds for).
func readArray(path string, dst []byte) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("featurestore: %w", err)
	}
	defer f.Close()
	if _, err := io.ReadFull(f, dst); err != nil {
		return fmt.Errorf("featurestore: read %d bytes of %s: %w", len(dst), path, err)
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
