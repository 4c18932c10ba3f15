package cli

import (
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/topology"
)

// oneTypeSampler is the session's one sampler of s's one edge type with opt's fanouts, replace
// and seed (its call k draws with Seed + k).
func oneTypeSampler(s *featurestore.Store, opt topology.SampleOptions) (*featurestore.Sampler, error) {
	return s.Session().NewSampler(featurestore.SampleOptions{Fanouts: map[string][]int{"": opt.Fanouts}, Replace: opt.Replace, Seed: opt.Seed, Workers: opt.Workers})
}

// sampleOnce is the sample of seeds of s's one type with opt: the first call of oneTypeSampler,
// as the one type's arrays.
func sampleOnce(s *featurestore.Store, seeds []int64, opt topology.SampleOptions) (*topology.Sample, error) {
	sp, err := oneTypeSampler(s, opt)
	if err != nil {
		return nil, err
	}
	typed, err := sp.Sample("", seeds)
	if err != nil {
		return nil, err
	}
	one, _ := typed.OneType()
	return one, nil
}
