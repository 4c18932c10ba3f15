package featurestore

import (
	"fmt"
	"maps"
	"slices"

	"github.com/tierfs/tierfs/topology"
)

// HeteroLinkOptions is topology.LinkOptions for a dataset of several types: ReverseEdgeTypes is
// keyed by edge type ("src:rel:dst" → the key of the edge type holding its reverse edges, DGL's
// reverse_etypes, PyG's rev_ ... types). Only the seed edge type's entry is used, with
// ExcludeSeedEdges.
type HeteroLinkOptions struct {
	Negatives        topology.NegativeMode `json:"neg_sampling"`
	NegAmount        float64               `json:"amount"`
	StrictNegatives  bool                  `json:"strict"`
	ExcludeSeedEdges bool                  `json:"exclude_seed_edges"`
	ReverseEdgeTypes map[string]string     `json:"reverse_edge_types"`
}

// SampleFromEdges draws the k-hop neighborhood of the seed edges (src[i], dst[i]) of edge type
// edgeType ("src:rel:dst"; "" for the only one) — src ids of its src node type, dst ids of its
// dst node type — with the sampler's fanouts and seed Seed + Calls() (node and link samples
// count alike), and where each seed edge and negative lies in it: topology.SampleHeteroFromEdges
// (PyG's edge_sample, disjoint=False). Negatives are of the edge type's node types. Everything is
// checked before drawing: an unknown edge type is dataset.ErrTypeNotFound naming the types
// there are; an endpoint outside its type's range
// ErrIDOutOfRange naming the array, position, value and type; src, dst and labels of other
// lengths ErrInvalidOption; bad negatives, amount, labels with triplets, a ReverseEdgeTypes
// key or value the dataset lacks or one that does not swap the endpoints' types an *OptionError. Strict negatives that cannot be met (every
// pair of the types an edge) fail naming the edge type.
func (hs *HeteroSampler) SampleFromEdges(edgeType string, src, dst, labels []int64, link HeteroLinkOptions) (*topology.HeteroLinkSample, error) {
	ss := hs.ss
	leave, err := ss.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	e, core, err := ss.checkSeedEdges(edgeType, src, dst, labels, link)
	if err != nil {
		return nil, err
	}
	key := ss.edges[e].spec.Key()
	graph := ss.sampleGraph
	if hs.onHost {
		graph = ss.hostSampleGraph
	}
	numNodes, edges := ss.typedGraphs(graph)
	hs.mu.Lock()
	defer hs.mu.Unlock()
	opt := topology.HeteroLinkSampleOptions{HeteroSampleOptions: hs.opt, LinkOptions: core}
	opt.Seed += hs.calls
	out, err := topology.SampleHeteroFromEdges(numNodes, edges, e, src, dst, labels, opt)
	if err != nil {
		return nil, sampleTooLarge(fmt.Errorf("featurestore: sampling from edges of edge type %q: %w", key, err))
	}
	hs.calls++
	return out, nil
}

// checkSeedEdges checks seed edges of edge type edgeType, their labels and link options (what
// HeteroSampler.SampleFromEdges checks) and answers the edge type's index and the core's link
// options.
func (ss *Session) checkSeedEdges(edgeType string, src, dst, labels []int64, link HeteroLinkOptions) (int, topology.LinkOptions, error) {
	e, err := ss.edgeTypeOf(edgeType)
	if err != nil {
		return -1, topology.LinkOptions{}, err
	}
	key := ss.edges[e].spec.Key()
	core := topology.LinkOptions{Negatives: link.Negatives, NegAmount: link.NegAmount, StrictNegatives: link.StrictNegatives, ExcludeSeedEdges: link.ExcludeSeedEdges}
	if err := checkLinkOptions(core, labels != nil); err != nil {
		return -1, core, err
	}
	if core.ReverseEdgeTypes, err = ss.reverseEdgeTypes(link.ReverseEdgeTypes); err != nil {
		return -1, core, err
	}
	if len(src) != len(dst) {
		return -1, core, fmt.Errorf("featurestore: %d src ids but %d dst ids of edge type %q; give one of each per seed edge: %w", len(src), len(dst), key, ErrInvalidOption)
	}
	if labels != nil && len(labels) != len(src) {
		return -1, core, fmt.Errorf("featurestore: %d labels for %d seed edges of edge type %q; give one label per seed edge or none: %w", len(labels), len(src), key, ErrInvalidOption)
	}
	if err := ss.checkTypedIDs(ss.edges[e].src, "src", src); err != nil {
		return -1, core, err
	}
	if err := ss.checkTypedIDs(ss.edges[e].dst, "dst", dst); err != nil {
		return -1, core, err
	}
	return e, core, nil
}

// reverseEdgeTypes maps HeteroLinkOptions.ReverseEdgeTypes to edge type indices, refusing a key
// or value the dataset lacks and a pair whose types do not swap src and dst.
func (ss *Session) reverseEdgeTypes(byKey map[string]string) (map[int]int, error) {
	if len(byKey) == 0 {
		return nil, nil
	}
	out := make(map[int]int, len(byKey))
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		e, err := ss.edgeTypeOf(k)
		if err != nil || k == "" {
			return nil, &OptionError{Option: "reverse_edge_types", Value: k, Want: "keys that are edge types of the dataset: " + ss.edgeTypeList()}
		}
		r, err := ss.edgeTypeOf(byKey[k])
		if err != nil || byKey[k] == "" {
			return nil, &OptionError{Option: fmt.Sprintf("reverse_edge_types[%q]", k), Value: byKey[k], Want: "an edge type of the dataset: " + ss.edgeTypeList()}
		}
		if ss.edges[r].src != ss.edges[e].dst || ss.edges[r].dst != ss.edges[e].src {
			return nil, &OptionError{Option: fmt.Sprintf("reverse_edge_types[%q]", k), Value: byKey[k],
				Want: fmt.Sprintf("an edge type from %q to %q (a reverse type swaps the endpoints' types)", ss.nodes[ss.edges[e].dst].spec.Name, ss.nodes[ss.edges[e].src].spec.Name)}
		}
		out[e] = r
	}
	return out, nil
}
