package planned

import (
	"testing"

	"github.com/tierfs/tierfs/featurestore"
	fst "github.com/tierfs/tierfs/featurestore/featurestoretest"
	"github.com/tierfs/tierfs/topology"
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

// storeSample is the first sample of s's session's one sampler of opt (its fanouts for the only
// edge type), as the one type's arrays.
func storeSample(s *featurestore.Store, seeds []int64, opt topology.SampleOptions) (*topology.Sample, error) {
	sp, err := s.Session().NewSampler(featurestore.SampleOptions{Fanouts: map[string][]int{"": opt.Fanouts}, Replace: opt.Replace, Seed: opt.Seed, Workers: opt.Workers})
	if err != nil {
		return nil, err
	}
	h, err := sp.Sample("", seeds)
	if err != nil {
		return nil, err
	}
	one, _ := h.OneType()
	return one, nil
}

// oneSample is p.Sample of a Store's plan as the one type's arrays.
func oneSample(p *Epochs, e, b int) ([]int64, *topology.Sample, error) {
	seeds, h, err := p.Sample(e, b)
	if err != nil {
		return nil, nil, err
	}
	one, _ := h.OneType()
	return seeds, one, nil
}

// oneEdges is p.SampleEdges of a Store's plan as the one type's arrays.
func oneEdges(p *Epochs, e, b int) ([]int64, *topology.LinkSample, error) {
	pos, h, err := p.SampleEdges(e, b)
	if err != nil {
		return nil, nil, err
	}
	one, _ := h.OneType()
	return pos, &topology.LinkSample{Sample: *one, LinkLabels: h.LinkLabels}, nil
}

// oneBatch is a PlannedBatch of a Store's plan: its one type's sample and rows.
type oneBatch struct {
	Seeds  []int64
	Sample *topology.Sample
	Rows   []byte
	IO     BatchIO
}

// oneLoad is p.Load of a Store's plan as a oneBatch.
func oneLoad(p *Epochs, e, b int) (*oneBatch, error) {
	l, err := p.Load(e, b)
	if err != nil {
		return nil, err
	}
	one, _ := l.Sample.OneType()
	return &oneBatch{Seeds: l.Seeds, Sample: one, Rows: l.Rows[p.NodeTypes()[0]], IO: l.IO}, nil
}
