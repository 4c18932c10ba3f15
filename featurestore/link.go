package featurestore

import (
	"fmt"
	"math"

	"github.com/tierfs/tierfs/topology"
)

// SampleFromEdges draws the k-hop neighborhood of the seed edges (src[i], dst[i]) from the
// store's topology and where each seed edge and negative lies in it (see
// topology.SampleFromEdges for the contract: PyG's edge_sample, disjoint=False). It checks
// everything before drawing: endpoints outside [0, NumNodes) are ErrIDOutOfRange naming the
// array, position and value; bad sampling or link options (fanouts, workers, negatives,
// neg_amount, reverse edge types) an *OptionError; src, dst and labels of other lengths
// ErrInvalidOption; a dataset without topology ErrNotFound.
func (s *Store) SampleFromEdges(src, dst, labels []int64, opt topology.LinkSampleOptions) (*topology.LinkSample, error) {
	return s.sampleFromEdgesOf(s.sampleGraph, src, dst, labels, opt)
}

// sampleFromEdgesOf is SampleFromEdges from the graph that graph returns (the epoch planner's:
// hostSampleGraph, as sampleOnHost).
func (s *Store) sampleFromEdgesOf(graph func() topology.Graph, src, dst, labels []int64, opt topology.LinkSampleOptions) (*topology.LinkSample, error) {
	leave, err := s.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	if err := s.checkSampling(opt.SampleOptions); err != nil {
		return nil, err
	}
	if err := s.checkSeedEdges(src, dst, labels, opt.LinkOptions); err != nil {
		return nil, err
	}
	opt.MaxEdges = s.opt.sampleBound(opt.MaxEdges)
	out, err := topology.SampleFromEdges(graph(), src, dst, labels, opt)
	if err == nil {
		s.stats.samples.Add(1)
	}
	return out, sampleTooLarge(err)
}

// checkSeedEdges checks seed edges, their labels and link options for the store's graph (what
// SampleFromEdges checks besides the sampling options).
func (s *Store) checkSeedEdges(src, dst, labels []int64, link topology.LinkOptions) error {
	if err := checkLinkOptions(link, labels != nil); err != nil {
		return err
	}
	if len(src) != len(dst) {
		return fmt.Errorf("featurestore: %d src ids but %d dst ids; give one of each per seed edge: %w", len(src), len(dst), ErrInvalidOption)
	}
	if labels != nil && len(labels) != len(src) {
		return fmt.Errorf("featurestore: %d labels for %d seed edges; give one label per seed edge or none: %w", len(labels), len(src), ErrInvalidOption)
	}
	n := s.NumNodes()
	for _, end := range []struct {
		name string
		ids  []int64
	}{{"src", src}, {"dst", dst}} {
		for i, v := range end.ids {
			if uint64(v) >= uint64(n) {
				return fmt.Errorf("featurestore: %s[%d] = %d is out of range [0, %d): %w", end.name, i, v, n, ErrIDOutOfRange)
			}
		}
	}
	return nil
}

// checkLinkOptions is the one check of link options on a store (one node type, one edge type);
// its errors are *OptionError.
func checkLinkOptions(opt topology.LinkOptions, labels bool) error {
	amount := opt.NegAmount
	switch opt.Negatives {
	case topology.NoNegatives:
	case topology.BinaryNegatives:
		if amount < 0 || math.IsNaN(amount) || math.IsInf(amount, 0) {
			return &OptionError{Option: "neg_amount", Value: amount, Want: "a ratio of negative pairs to seed edges > 0 (0: 1)"}
		}
	case topology.TripletNegatives:
		if amount < 0 || amount != math.Trunc(amount) || amount > math.MaxInt32 {
			return &OptionError{Option: "neg_amount", Value: amount, Want: "a whole number >= 1 of negative destinations per seed edge (0: 1)"}
		}
		if labels {
			return &OptionError{Option: "labels", Value: "given", Want: "none with triplet negatives (src_index, dst_pos_index and dst_neg_index tell positives from negatives)"}
		}
	default:
		return &OptionError{Option: "negatives", Value: string(opt.Negatives), Want: `"" (none), "binary" or "triplet"`}
	}
	for e, r := range opt.ReverseEdgeTypes {
		if e != 0 || r != 0 {
			return &OptionError{Option: "reverse_edge_types", Value: fmt.Sprintf("{%d: %d}", e, r), Want: "{0: 0} (an undirected graph) or none: the store has one edge type"}
		}
	}
	return nil
}

// SampleFromEdges draws the neighborhood of seed edges (Store.SampleFromEdges) with the
// sampler's options and link, with seed Options().Seed + Calls(): node and link samples count
// alike.
func (sp *Sampler) SampleFromEdges(src, dst, labels []int64, link topology.LinkOptions) (*topology.LinkSample, error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	opt := topology.LinkSampleOptions{SampleOptions: sp.opt, LinkOptions: link}
	opt.Seed += sp.calls
	out, err := sp.s.SampleFromEdges(src, dst, labels, opt)
	if err == nil {
		sp.calls++
	}
	return out, err
}
