package featurestore

import (
	"fmt"

	"github.com/tierfs/tierfs/topology"
)

// Sample draws a k-hop neighborhood of seeds from the store's topology (see
// topology.SampleNeighbors for the contract). Hop reads of a topology kept on disk go through the
// IO stacks, one batched read per hop. With Options.GPUTopology the hops are drawn on the GPU,
// with the same result.
func (s *Store) Sample(seeds []int64, opt topology.SampleOptions) (*topology.Sample, error) {
	leave, err := s.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	if s.graph == nil {
		return nil, fmt.Errorf("featurestore: dataset %s has no topology to sample", s.m.Dir())
	}
	out, err := topology.SampleNeighbors(s.sampleGraph(), seeds, opt)
	if err == nil {
		s.stats.samples.Add(1)
	}
	return out, err
}
