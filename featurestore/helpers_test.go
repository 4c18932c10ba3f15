package featurestore

import (
	"fmt"
	"testing"

	fst "github.com/tierfs/tierfs/featurestore/featurestoretest"
	"github.com/tierfs/tierfs/topology"
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

// sampleOf is the first sample of s's session's one sampler of opt's fanouts (for the only edge
// type), replace, workers and seed, as the one type's arrays: what a store's homogeneous sample
// is.
func sampleOf(s *Store, seeds []int64, opt topology.SampleOptions) (*topology.Sample, error) {
	sp, err := s.Session().NewSampler(SampleOptions{Fanouts: map[string][]int{"": opt.Fanouts}, Replace: opt.Replace, Seed: opt.Seed, Workers: opt.Workers})
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

// linkOf is the core's link options of a one-type graph as LinkOptions: ReverseEdgeTypes {0: 0}
// is Undirected, any other entry an edge type key of its numbers.
func linkOf(l topology.LinkOptions) LinkOptions {
	out := LinkOptions{Negatives: l.Negatives, NegAmount: l.NegAmount, StrictNegatives: l.StrictNegatives, ExcludeSeedEdges: l.ExcludeSeedEdges}
	for k, v := range l.ReverseEdgeTypes {
		if k == 0 && v == 0 {
			out.Undirected = true
			continue
		}
		if out.ReverseEdgeTypes == nil {
			out.ReverseEdgeTypes = map[string]string{}
		}
		out.ReverseEdgeTypes[fmt.Sprint(k)] = fmt.Sprint(v)
	}
	return out
}

// linkSampleOf is sampleOf's link sample: the first SampleFromEdges of the one sampler of opt.
func linkSampleOf(s *Store, src, dst, labels []int64, opt topology.LinkSampleOptions) (*topology.LinkSample, error) {
	sp, err := s.Session().NewSampler(SampleOptions{Fanouts: map[string][]int{"": opt.Fanouts}, Replace: opt.Replace, Seed: opt.Seed, Workers: opt.Workers})
	if err != nil {
		return nil, err
	}
	h, err := sp.SampleFromEdges("", src, dst, labels, linkOf(opt.LinkOptions))
	if err != nil {
		return nil, err
	}
	one, _ := h.OneType()
	return &topology.LinkSample{Sample: *one, LinkLabels: h.LinkLabels}, nil
}
