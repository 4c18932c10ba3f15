package featurestore

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/topology"
)

// LinkOptions is what link sampling (Sampler.SampleFromEdges) adds to a node sample, as
// topology.LinkOptions with edge types by key: negatives (Negatives, NegAmount,
// StrictNegatives) and the exclusion of the seed edges from the sampled neighborhoods
// (ExcludeSeedEdges). With ExcludeSeedEdges their reverse edges are excluded too where they
// are: Undirected says the seed edge type holds its own reverses (an undirected graph; its src
// and dst node types are one), ReverseEdgeTypes maps an edge type ("src:rel:dst", "" for the
// only one) to the edge type holding its reverse edges (DGL's reverse_etypes, PyG's rev_ ...
// types); only the seed edge type's entry is used.
//
// LinkOptions is also the link-sampling option family as every front end gives it (TableOf: the
// JSON keys of tfs_sample_from_edges' link_options_json and of a plan's seed_edges, the CLI's
// link flags, Python's sample_from_edges and plan_epochs keywords); the flag tag is the CLI's
// name where it differs.
type LinkOptions struct {
	Negatives        topology.NegativeMode `json:"neg_sampling" help:"negatives to draw: binary (random pairs labelled 0) or triplet (random destinations per seed edge); default none"`
	NegAmount        float64               `json:"amount" flag:"neg-amount" default:"1" help:"with neg_sampling: negative pairs per seed edge (binary; any number > 0) or destinations per seed edge (triplet; a whole number)"`
	StrictNegatives  bool                  `json:"strict" flag:"strict-negatives" help:"with neg_sampling: redraw negatives that are edges of the graph or seed edges"`
	ExcludeSeedEdges bool                  `json:"exclude_seed_edges" help:"leave the seed edges out of the sampled neighborhoods"`
	Undirected       bool                  `json:"undirected" help:"the graph holds each edge's reverse (an edge type that is its own reverse): exclude_seed_edges leaves the reverses out too"`
	ReverseEdgeTypes map[string]string     `json:"reverse_edge_types" kind:"map" help:"edge type -> the edge type holding its reverse edges (a graph of several types), for exclude_seed_edges"`
}

// SampleFromEdges draws the k-hop neighborhood of the seed edges (src[i], dst[i]) of edge type
// edgeType ("src:rel:dst"; "" for the only one) — src ids of its src node type, dst ids of its
// dst node type — with the sampler's fanouts and seed Seed + Calls() (node and link samples
// count alike), and where each seed edge and negative lies in it: topology.SampleHeteroFromEdges
// (PyG's edge_sample; a disjoint sampler's, disjoint=True). Negatives are of the edge type's node types. The edge
// type may be one the dataset has no edges of, between two of its node types (PyG's
// LinkNeighborLoader takes those: links to predict that the graph does not hold): the seeds'
// neighborhoods are drawn from the dataset's edge types alone, as if it had that type with no
// edges, and the sample has the dataset's edge types. Everything is checked before drawing: an
// unknown edge type (or an absent one whose node types the dataset lacks) is
// dataset.ErrTypeNotFound naming the types there are; an endpoint outside its type's range
// ErrIDOutOfRange naming the array, position, value and type; src, dst and labels of other
// lengths ErrInvalidOption; bad negatives, amount, labels with triplets, Undirected of an edge
// type between two node types, a ReverseEdgeTypes key or value the dataset lacks or one that
// does not swap the endpoints' types an *OptionError. Strict negatives that cannot be met (every
// pair of the types an edge) fail naming the edge type.
func (sp *Sampler) SampleFromEdges(edgeType string, src, dst, labels []int64, link LinkOptions) (*topology.HeteroLinkSample, error) {
	return sp.SampleFromEdgesAt(edgeType, src, dst, labels, nil, link)
}

// SampleFromEdgesAt is SampleFromEdges at seedTimes, one a seed edge (PyG's edge_label_time: both
// endpoints' trees, and their negatives', draw neighbors of time at most the seed edge's), for a
// temporal sampler (Time), which needs them; a disjoint sampler's samples are PyG's disjoint
// layout (topology.SampleHeteroFromEdges). A sampler that is not temporal takes none; one none
// of whose edge types draws in time reads none. Bad seed times are an *OptionError.
func (sp *Sampler) SampleFromEdgesAt(edgeType string, src, dst, labels, seedTimes []int64, link LinkOptions) (*topology.HeteroLinkSample, error) {
	ss := sp.ss
	leave, err := ss.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	st, core, err := ss.checkSeedEdges(edgeType, src, dst, labels, link)
	if err != nil {
		return nil, err
	}
	switch {
	case seedTimes != nil && sp.times == nil:
		return nil, &OptionError{Option: "edge_label_time", Value: fmt.Sprintf("%d times", len(seedTimes)), Want: "none: the sampler is not temporal (create it with \"time\")"}
	case seedTimes != nil && len(seedTimes) != len(src):
		return nil, &OptionError{Option: "edge_label_time", Value: fmt.Sprintf("%d times", len(seedTimes)), Want: fmt.Sprintf("one a seed edge (%d seed edges)", len(src))}
	case sp.times != nil && !sp.times.inTime(ss):
		seedTimes = nil // no edge type draws in time: nothing reads them
	case sp.times != nil && seedTimes == nil:
		return nil, &OptionError{Option: "edge_label_time", Value: "none", Want: fmt.Sprintf("one a seed edge: a sampler in time %q samples seed edges at their times", sp.time)}
	case seedTimes != nil && link.StrictNegatives && link.Negatives != topology.NoNegatives && (sp.times.node[st.src] != nil || sp.times.node[st.dst] != nil):
		return nil, &OptionError{Option: "strict", Value: true, Want: fmt.Sprintf("off in time %q of the seed edges' node types: negatives keep within their seed edge's node time, not redrawn off the graph's edges", sp.time)}
	}
	numNodes, edges := ss.typedGraphs(sp.graph())
	sp.mu.Lock()
	defer sp.mu.Unlock()
	opt := topology.HeteroLinkSampleOptions{HeteroSampleOptions: sp.opt, LinkOptions: core}
	opt.Seed += sp.calls
	opt.SeedTimes = seedTimes
	if st.absent() { // the type the seed edges name, with no edges and no draws, after the dataset's
		hops := 0
		if len(opt.Fanouts) > 0 {
			hops = len(opt.Fanouts[0])
		}
		edges = append(edges, topology.EdgeGraph{Src: st.src, Dst: st.dst, G: noEdges(numNodes[st.dst])})
		opt.Fanouts = append(slices.Clip(opt.Fanouts), make([]int, hops))
	}
	out, err := topology.SampleHeteroFromEdges(numNodes, edges, st.e, src, dst, labels, opt)
	if err != nil {
		return nil, sampleTooLarge(fmt.Errorf("featurestore: sampling from edges of edge type %q: %w", st.key, err))
	}
	if n := len(ss.edges); st.absent() {
		out.Row, out.Col, out.EdgeIDs, out.EdgesPerHop = out.Row[:n], out.Col[:n], out.EdgeIDs[:n], out.EdgesPerHop[:n]
	}
	sp.calls++
	ss.countSample(st.dst)
	return out, nil
}

// seedEdgeType is the edge type seed edges name: the dataset's edge type e, or (e ==
// len(ss.edges), the index it takes after the dataset's) one the dataset has no edges of.
type seedEdgeType struct {
	e, src, dst int
	key         string
	n           int // the dataset's edge types
}

func (st seedEdgeType) absent() bool { return st.e == st.n }

// seedEdgeTypeOf resolves the edge type of seed edges: one of the dataset's, else "src:rel:dst"
// between two of its node types. An edge type neither is, edgeTypeOf's error.
func (ss *Session) seedEdgeTypeOf(key string) (seedEdgeType, error) {
	e, err := ss.edgeTypeOf(key)
	if err == nil {
		return seedEdgeType{e: e, src: ss.edges[e].src, dst: ss.edges[e].dst, key: ss.edges[e].spec.Key(), n: len(ss.edges)}, nil
	}
	parts := strings.Split(key, ":")
	if !errors.Is(err, dataset.ErrTypeNotFound) || len(parts) != 3 || parts[1] == "" {
		return seedEdgeType{}, err
	}
	var ends [2]int
	for i, name := range []string{parts[0], parts[2]} {
		if ends[i] = ss.nodeTypeIndex(name); ends[i] < 0 {
			return seedEdgeType{}, fmt.Errorf("featurestore: dataset %s has no edge type %q (it has %s), nor node type %q for seed edges of a type without edges: %w",
				ss.m.Dir(), key, ss.edgeTypeList(), name, dataset.ErrTypeNotFound)
		}
	}
	src, dst := ends[0], ends[1]
	return seedEdgeType{e: len(ss.edges), src: src, dst: dst, key: key, n: len(ss.edges)}, nil
}

// noEdges is the graph of a seed edge type the dataset has no edges of: n destination nodes
// without in-edges.
type noEdges int64

func (g noEdges) NumNodes() int64                              { return int64(g) }
func (noEdges) NumEdges() int64                                { return 0 }
func (noEdges) Degrees(nodes []int64, deg []int64) error       { clear(deg); return nil }
func (noEdges) NeighborsAt(nodes, off, pos, out []int64) error { return nil }

// checkSeedEdges checks seed edges of edge type edgeType, their labels and link options (what
// Sampler.SampleFromEdges checks) and answers the edge type and the core's link options.
func (ss *Session) checkSeedEdges(edgeType string, src, dst, labels []int64, link LinkOptions) (seedEdgeType, topology.LinkOptions, error) {
	st, err := ss.seedEdgeTypeOf(edgeType)
	if err != nil {
		return st, topology.LinkOptions{}, fmt.Errorf("featurestore: seed edges of edge type %q: %w", edgeType, err)
	}
	key, e := st.key, st.e
	if link.Undirected && len(link.ReverseEdgeTypes) > 0 {
		return st, topology.LinkOptions{}, fmt.Errorf("featurestore: undirected and reverse_edge_types both given; give one (each says where the seed edges' reverses are): %w", ErrInvalidOption)
	}
	core := topology.LinkOptions{Negatives: link.Negatives, NegAmount: link.NegAmount, StrictNegatives: link.StrictNegatives, ExcludeSeedEdges: link.ExcludeSeedEdges}
	if err := checkLinkOptions(core, labels != nil); err != nil {
		return st, core, err
	}
	if core.ReverseEdgeTypes, err = ss.reverseEdgeTypes(link.ReverseEdgeTypes); err != nil {
		return st, core, err
	}
	if link.Undirected {
		if st.src != st.dst {
			return st, core, &OptionError{Option: "undirected", Value: true, Want: fmt.Sprintf("an edge type within one node type (%q is from %q to %q; name its reverse type in reverse_edge_types)", key, ss.nodes[st.src].spec.Name, ss.nodes[st.dst].spec.Name)}
		}
		if r, ok := core.ReverseEdgeTypes[e]; ok && r != e {
			return st, core, &OptionError{Option: "undirected", Value: true, Want: fmt.Sprintf("not with reverse_edge_types naming another reverse type (%q) of edge type %q", ss.edges[r].spec.Key(), key)}
		}
		if core.ReverseEdgeTypes == nil {
			core.ReverseEdgeTypes = map[int]int{}
		}
		core.ReverseEdgeTypes[e] = e
	}
	if len(src) != len(dst) {
		return st, core, fmt.Errorf("featurestore: %d src ids but %d dst ids of edge type %q; give one of each per seed edge: %w", len(src), len(dst), key, ErrInvalidOption)
	}
	if labels != nil && len(labels) != len(src) {
		return st, core, fmt.Errorf("featurestore: %d labels for %d seed edges of edge type %q; give one label per seed edge or none: %w", len(labels), len(src), key, ErrInvalidOption)
	}
	if err := ss.checkTypedIDs(st.src, "src", src); err != nil {
		return st, core, err
	}
	if err := ss.checkTypedIDs(st.dst, "dst", dst); err != nil {
		return st, core, err
	}
	return st, core, nil
}

// reverseEdgeTypes maps LinkOptions.ReverseEdgeTypes to edge type indices ("" for the only
// one), refusing a key or value the dataset lacks and a pair whose types do not swap src and
// dst.
func (ss *Session) reverseEdgeTypes(byKey map[string]string) (map[int]int, error) {
	if len(byKey) == 0 {
		return nil, nil
	}
	out := make(map[int]int, len(byKey))
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		e, err := ss.edgeTypeOf(k)
		if err != nil {
			return nil, &OptionError{Option: "reverse_edge_types", Value: k, Want: "keys that are edge types of the dataset: " + ss.edgeTypeList()}
		}
		r, err := ss.edgeTypeOf(byKey[k])
		if err != nil {
			return nil, &OptionError{Option: fmt.Sprintf("reverse_edge_types[%q]", k), Value: byKey[k], Want: "an edge type of the dataset: " + ss.edgeTypeList()}
		}
		if ss.edges[r].src != ss.edges[e].dst || ss.edges[r].dst != ss.edges[e].src {
			return nil, &OptionError{Option: fmt.Sprintf("reverse_edge_types[%q]", k), Value: byKey[k],
				Want: fmt.Sprintf("an edge type from %q to %q (a reverse type swaps the endpoints' types)", ss.nodes[ss.edges[e].dst].spec.Name, ss.nodes[ss.edges[e].src].spec.Name)}
		}
		if _, dup := out[e]; dup {
			return nil, &OptionError{Option: "reverse_edge_types", Value: fmt.Sprint(byKey), Want: fmt.Sprintf("one reverse type per edge type (%q is given twice)", ss.edges[e].spec.Key())}
		}
		out[e] = r
	}
	return out, nil
}

// checkLinkOptions is the one check of the core's link options besides the reverse edge types;
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
	return nil
}
