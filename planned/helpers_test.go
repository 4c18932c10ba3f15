package planned

import (
	"testing"

	"github.com/tierfs/tierfs/featurestore"
	fst "github.com/tierfs/tierfs/featurestore/featurestoretest"
)

// The shared test datasets and helpers (featurestoretest), under the names these tests use.
type (
	testData   = fst.Data
	heteroData = fst.HeteroData
)

var (
	writeDataset      = fst.WriteDataset
	writeSplitDataset = fst.WriteSplitDataset
	newRand           = fst.NewRand
	backends          = fst.Backends
	parseFaults       = fst.ParseFaults
	writeHetero       = fst.WriteHetero
	randomSeedEdges   = fst.RandomSeedEdges
	permutation       = fst.Permutation
	firstDiff         = fst.FirstDiff
	gpuPresent        = fst.GPUPresent
	requireGPU        = fst.RequireGPU
)

// deviceRows is fst.DeviceRows of n rows of s's row size.
func deviceRows(t *testing.T, s *featurestore.Store, n int, gather func(dst, stream uintptr) error) []byte {
	return fst.DeviceRows(t, s.RowBytes(), n, gather)
}

// planOf, openOf, planSessionOf and openSessionOf are the entry points bound to one store or
// session, for the tests that take them as functions.
func planOf(s *featurestore.Store) func(EpochOptions) (*EpochPlanReport, error) {
	return func(o EpochOptions) (*EpochPlanReport, error) { return PlanEpochs(s.Session(), o) }
}

func openOf(s *featurestore.Store) func(EpochOptions) (*Epochs, *EpochPlanReport, error) {
	return func(o EpochOptions) (*Epochs, *EpochPlanReport, error) { return OpenEpochs(s.Session(), o) }
}

func planSessionOf(ss *featurestore.Session) func(EpochOptions) (*EpochPlanReport, error) {
	return func(o EpochOptions) (*EpochPlanReport, error) { return PlanEpochs(ss, o) }
}

func openSessionOf(ss *featurestore.Session) func(EpochOptions) (*Epochs, *EpochPlanReport, error) {
	return func(o EpochOptions) (*Epochs, *EpochPlanReport, error) { return OpenEpochs(ss, o) }
}
