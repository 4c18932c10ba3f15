package featurestore

import (
	"github.com/tierfs/tierfs/topology"
)

// LinkRequest is the link-sampling option family as every front end gives it (TableOf: the JSON
// keys of tfs_sample_edges', tfs_hetero_sample_from_edges' and a plan's seed_edges link options,
// the CLI's link flags, Python's sample_from_edges and plan_epochs keywords). Options and
// OneType turn it into the core's options. The flag tag is the CLI's name where it differs.
type LinkRequest struct {
	NegSampling      string            `json:"neg_sampling" help:"negatives to draw: binary (random pairs labelled 0) or triplet (random destinations per seed edge); default none"`
	Amount           float64           `json:"amount" flag:"neg-amount" default:"1" help:"with neg_sampling: negative pairs per seed edge (binary; any number > 0) or destinations per seed edge (triplet; a whole number)"`
	Strict           bool              `json:"strict" flag:"strict-negatives" help:"with neg_sampling: redraw negatives that are edges of the graph or seed edges"`
	ExcludeSeedEdges bool              `json:"exclude_seed_edges" help:"leave the seed edges out of the sampled neighborhoods"`
	Undirected       bool              `json:"undirected" help:"the graph holds each edge's reverse (an edge type that is its own reverse): exclude_seed_edges leaves the reverses out too"`
	ReverseEdgeTypes map[string]string `json:"reverse_edge_types" kind:"map" help:"edge type -> the edge type holding its reverse edges (a graph of several types), for exclude_seed_edges"`
}

// Options is r for seed edges of edgeType ("src:rel:dst"; "" for the only one): Undirected is
// ReverseEdgeTypes {edgeType: edgeType}. An Amount of 0 (the core's "default, 1", but given here
// it is a mistake) and Undirected beside ReverseEdgeTypes are *OptionErrors.
func (r LinkRequest) Options(edgeType string) (HeteroLinkOptions, error) {
	if r.Amount == 0 {
		return HeteroLinkOptions{}, &OptionError{Option: "amount", Value: 0, Want: "> 0 (binary: negative pairs per seed edge; triplet: a whole number of negatives per seed edge)"}
	}
	o := HeteroLinkOptions{Negatives: topology.NegativeMode(r.NegSampling), NegAmount: r.Amount, StrictNegatives: r.Strict,
		ExcludeSeedEdges: r.ExcludeSeedEdges, ReverseEdgeTypes: r.ReverseEdgeTypes}
	if r.Undirected {
		if len(r.ReverseEdgeTypes) > 0 {
			return HeteroLinkOptions{}, &OptionError{Option: "undirected", Value: true, Want: "no reverse_edge_types beside it (undirected and reverse_edge_types both given; give one: undirected says the seed edge type is its own reverse)"}
		}
		o.ReverseEdgeTypes = map[string]string{edgeType: edgeType}
	}
	return o, nil
}

// OneType is r for a sampler of one edge type (topology.LinkOptions): reverse_edge_types is an
// *OptionError there (undirected says the type is its own reverse).
func (r LinkRequest) OneType() (topology.LinkOptions, error) {
	if len(r.ReverseEdgeTypes) > 0 {
		return topology.LinkOptions{}, &OptionError{Option: "reverse_edge_types", Value: r.ReverseEdgeTypes, Want: "none for a sampler of one edge type (undirected=true when the graph holds each edge's reverse)"}
	}
	o, err := r.Options("")
	if err != nil {
		return topology.LinkOptions{}, err
	}
	lo := topology.LinkOptions{Negatives: o.Negatives, NegAmount: o.NegAmount, StrictNegatives: o.StrictNegatives, ExcludeSeedEdges: o.ExcludeSeedEdges}
	if r.Undirected {
		lo.ReverseEdgeTypes = map[int]int{0: 0}
	}
	return lo, nil
}
