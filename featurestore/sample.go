package featurestore

import (
	"fmt"

	"github.com/tierfs/tierfs/topology"
)

// Sample draws a k-hop neighborhood of seeds from the store's topology (see
// topology.SampleNeighbors for the contract). Hop reads of a topology kept on disk go through the
// IO stacks, one batched read per hop. With Options.GPUTopology the hops are drawn on the GPU,
// with the same result. Seeds outside [0, NumNodes) are ErrIDOutOfRange, bad options
// ErrInvalidOption, a dataset without topology ErrNotFound.
func (s *Store) Sample(seeds []int64, opt topology.SampleOptions) (*topology.Sample, error) {
	return s.sampleFrom(s.sampleGraph, seeds, opt)
}

// sampleOnHost is Sample drawn on the host where the topology is in host memory, even with
// Options.GPUTopology (the same sample: the GPU draws what the host would): for the epoch
// planner, which draws several batches at once, each on one goroutine, where the GPU sampler
// draws one hop at a time for every caller (and the training loop's batches wait behind it).
func (s *Store) sampleOnHost(seeds []int64, opt topology.SampleOptions) (*topology.Sample, error) {
	return s.sampleFrom(s.hostSampleGraph, seeds, opt)
}

// hostSampleGraph is the topology in host memory where it is there, else sampleGraph.
func (s *Store) hostSampleGraph() topology.Graph {
	if csc, ok := s.graph.(*topology.CSC); ok {
		return csc
	}
	return s.sampleGraph()
}

// sampleFrom is Sample from the graph that graph returns.
func (s *Store) sampleFrom(graph func() topology.Graph, seeds []int64, opt topology.SampleOptions) (*topology.Sample, error) {
	leave, err := s.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	if err := s.checkSampling(opt); err != nil {
		return nil, err
	}
	n := s.NumNodes()
	for i, v := range seeds {
		if uint64(v) >= uint64(n) {
			return nil, fmt.Errorf("featurestore: seeds[%d] = %d is out of range [0, %d): %w", i, v, n, ErrIDOutOfRange)
		}
	}
	opt.MaxEdges = s.opt.sampleBound(opt.MaxEdges)
	out, err := topology.SampleNeighbors(graph(), seeds, opt)
	if err == nil {
		s.stats.samples.Add(1)
	}
	return out, sampleTooLarge(err)
}

// checkSampling checks opt and that the dataset has a topology to sample.
func (s *Store) checkSampling(opt topology.SampleOptions) error {
	if err := checkSampleOptions(opt); err != nil {
		return err
	}
	if s.graph == nil {
		return s.errNoTopology()
	}
	return nil
}

func (s *Store) errNoTopology() error {
	if len(s.sess.edges) > 0 {
		return fmt.Errorf("featurestore: dataset %s has %d edge types (%s): sample it with fanouts per edge type (a heterogeneous sampler): %w", s.m.Dir(), len(s.sess.edges), s.sess.edgeTypeList(), ErrNotFound)
	}
	return fmt.Errorf("featurestore: dataset %s has no topology to sample: %w", s.m.Dir(), ErrNotFound)
}
