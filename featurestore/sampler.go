package featurestore

import (
	"fmt"
	"slices"
	"sync"

	"github.com/tierfs/tierfs/topology"
)

// Sampler draws the k-hop neighborhoods of batches of seeds with fixed options (Store.Sample
// draws each). Its k-th successful call, counting from 0, draws with seed Seed + k, so a loader's
// consecutive batches differ while a run with the same seed repeats; a failed call does not
// count. Calls on one Sampler are serialized (that is what makes the numbering well defined); use
// one Sampler per goroutine to sample in parallel.
type Sampler struct {
	s   *Store
	opt topology.SampleOptions

	mu    sync.Mutex
	calls uint64
}

// NewSampler makes a sampler over the store's topology. It checks opt (fanouts, workers) and that
// the dataset has a topology; opt.Seed is the seed of the first call.
func (s *Store) NewSampler(opt topology.SampleOptions) (*Sampler, error) {
	leave, err := s.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	if err := s.checkSampling(opt); err != nil {
		return nil, err
	}
	opt.Fanouts = slices.Clone(opt.Fanouts)
	return &Sampler{s: s, opt: opt}, nil
}

// Sample draws the neighborhood of seeds with seed Options().Seed + Calls().
func (sp *Sampler) Sample(seeds []int64) (*topology.Sample, error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	opt := sp.opt
	opt.Seed += sp.calls
	out, err := sp.s.Sample(seeds, opt)
	if err == nil {
		sp.calls++
	}
	return out, err
}

// Options are the sampler's options; Seed is its first call's.
func (sp *Sampler) Options() topology.SampleOptions {
	opt := sp.opt
	opt.Fanouts = slices.Clone(opt.Fanouts)
	return opt
}

// Calls is the number of successful Sample calls so far.
func (sp *Sampler) Calls() uint64 {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.calls
}

// checkSampleOptions is the one check of sampling options; its errors are *OptionError.
func checkSampleOptions(opt topology.SampleOptions) error {
	if len(opt.Fanouts) == 0 {
		return &OptionError{Option: "fanouts", Value: "[]", Want: "one fanout per hop, at least one hop"}
	}
	for i, f := range opt.Fanouts {
		if f < -1 {
			return &OptionError{Option: fmt.Sprintf("fanouts[%d]", i), Value: f, Want: "-1 (every neighbor) or a count >= 0"}
		}
	}
	if opt.Workers < 0 {
		return &OptionError{Option: "workers", Value: opt.Workers, Want: "goroutines >= 0 (0: one per CPU)"}
	}
	return nil
}
