package featurestore

import (
	"testing"

	fst "github.com/tierfs/tierfs/featurestore/featurestoretest"
)

// The shared test datasets and helpers (featurestoretest), under the names this package's tests
// use.
type (
	testData    = fst.Data
	heteroData  = fst.HeteroData
	inPlaceData = fst.InPlaceData
)

var (
	writeDataset        = fst.WriteDataset
	writeTypedDataset   = fst.WriteTypedDataset
	writeDatasetOf      = fst.WriteDatasetOf
	writeSplitDataset   = fst.WriteSplitDataset
	newRand             = fst.NewRand
	backends            = fst.Backends
	parseFaults         = fst.ParseFaults
	writeHetero         = fst.WriteHetero
	writeInPlaceDataset = fst.WriteInPlaceDataset
	int64s              = fst.Int64s
	randomSeedEdges     = fst.RandomSeedEdges
	permutation         = fst.Permutation
	firstDiff           = fst.FirstDiff
	gpuPresent          = fst.GPUPresent
	requireGPU          = fst.RequireGPU
)

// mustOpen opens dir with opt, closing the store when the test ends.
func mustOpen(t *testing.T, dir string, opt Options) *Store {
	s, err := Open(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// deviceRows is fst.DeviceRows of n rows of s's row size.
func deviceRows(t *testing.T, s *Store, n int, gather func(dst, stream uintptr) error) []byte {
	return fst.DeviceRows(t, s.RowBytes(), n, gather)
}
