package planned

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/topology"
)

// epochSource is what a plan packs and how it draws a batch: the tier stacks of the node types
// whose rows it packs, in the session's node type order, and the sampler of its batches (the
// session's one sampler). A Store's plan packs its one stack; a Session's plan packs every node
// type with features.
type epochSource struct {
	ss       *featurestore.Session
	seedType int                   // the seeds' node type, an index into ss.nodes
	stacks   []*featurestore.Store // the stacks packed
	// sampler holds the plan's checked sampling options (its seed set per batch: draw); a
	// Store's plan sets it in EpochOptions.check.
	sampler *featurestore.Sampler
	// typed says the plan is a Session's (its records typed: recordShape).
	typed bool
}

// storeSource is the source of a plan of the one stack s.
func storeSource(s *featurestore.Store) *epochSource {
	return &epochSource{ss: s.Session(), seedType: s.Internals().NodeTypeIndex(), stacks: []*featurestore.Store{s}}
}

// enter guards a plan's call: the store's guard for a Store's plan, the session's for a
// Session's (each stack's own calls guard themselves).
func (src *epochSource) enter() (func(), error) {
	if !src.typed {
		return src.stacks[0].Internals().Enter()
	}
	return src.ss.Internals().Enter()
}

// typeName is the node type name of packed stack t.
func (src *epochSource) typeName(t int) string {
	return src.ss.Manifest().NodeTypes[src.stacks[t].Internals().NodeTypeIndex()].Name
}

// typeNames names the packed node types, for errors.
func (src *epochSource) typeNames() string {
	names := make([]string, len(src.stacks))
	for t := range src.stacks {
		names[t] = src.typeName(t)
	}
	return strings.Join(names, ", ")
}

// packedType is the index among the packed stacks of node type ntype ("" for the only one).
func (src *epochSource) packedType(ntype string) (int, error) {
	if ntype == "" && len(src.stacks) == 1 {
		return 0, nil
	}
	nt, err := src.ss.Internals().NodeTypeIndex(ntype)
	if err != nil {
		return -1, err
	}
	for t, s := range src.stacks {
		if s.Internals().NodeTypeIndex() == nt {
			return t, nil
		}
	}
	return -1, fmt.Errorf("planned: node type %q has no features, so a plan packs none of its rows (it packs %s): %w", ntype, src.typeNames(), featurestore.ErrNotFound)
}

// batchDraw is one batch's sample, and the nodes of each packed type in it.
type batchDraw struct {
	sample     *topology.Sample           // a Store's plan
	hetero     *topology.HeteroSample     // a Session's plan
	link       *topology.LinkSample       // a Store's link plan (sample is its node sample)
	heteroLink *topology.HeteroLinkSample // a Session's link plan (hetero is its node sample)
	nodes      [][]int64                  // per packed stack
}

// draw samples seeds with the sampling seed seed; seeds are positions of seed edges in a link
// plan.
func (src *epochSource) draw(o *EpochOptions, seed uint64, seeds []int64) (*batchDraw, error) {
	if o.SeedEdges != nil {
		return src.drawEdges(o, seed, seeds)
	}
	smp, err := src.batchSampler(o, seed).Sample(src.ss.Manifest().NodeTypes[src.seedType].Name, seeds)
	if err != nil {
		return nil, err
	}
	if !src.typed {
		one, _ := smp.OneType()
		return src.withNodes(&batchDraw{sample: one}), nil
	}
	return src.withNodes(&batchDraw{hetero: smp}), nil
}

// batchSampler is the plan's sampler drawing a batch with the sampling seed seed on the host:
// its first call is the batch's sample.
func (src *epochSource) batchSampler(o *EpochOptions, seed uint64) *featurestore.Sampler {
	return src.ss.Internals().HostSampler(src.sampler, seed, planSampleWorkers(o.Sample.Workers))
}

// planSampleWorkers is the goroutines that sample one planned batch: the Workers asked for, else
// one, as the planner samples planWorkers batches at once (the same sample either way); a batch
// split over every CPU inside each of several batches at once spends its time waiting.
func planSampleWorkers(asked int) int { return cmp.Or(asked, 1) }

// withNodes sets d.nodes, the nodes of every packed stack, from d's sample and returns d.
func (src *epochSource) withNodes(d *batchDraw) *batchDraw {
	if d.hetero == nil {
		d.nodes = [][]int64{d.sample.Nodes}
		return d
	}
	d.nodes = make([][]int64, len(src.stacks))
	for t, s := range src.stacks {
		d.nodes[t] = d.hetero.Nodes[s.Internals().NodeTypeIndex()]
	}
	return d
}

// recordType is the node type, in a batch's sample record, of packed stack t.
func (src *epochSource) recordType(t int) int {
	if !src.typed {
		return 0
	}
	return src.stacks[t].Internals().NodeTypeIndex()
}

// sourceOf is the source of a plan of o in ss: the tier stack of o.NodeType for one fanout list
// (or none: its check names the fanouts), every node type with features for fanouts per edge
// type. call names the caller in errors.
func sourceOf(ss *featurestore.Session, o *EpochOptions, call string) (*epochSource, error) {
	if len(o.EdgeFanouts) > 0 {
		return sessionSource(ss, o)
	}
	s, err := ss.Stack(o.NodeType)
	if err != nil {
		if len(ss.Manifest().NodeTypes) == 1 && errors.Is(err, dataset.ErrFeatureNotFound) {
			return nil, fmt.Errorf("planned: %s: dataset %s has no node features (it holds topology, labels and splits only): %w", call, ss.Manifest().Dir(), err)
		}
		return nil, err
	}
	return storeSource(s), nil
}

// sessionSource is the source of a session plan of o: every node type with features, sampled by
// the heterogeneous sampler of o's options.
func sessionSource(ss *featurestore.Session, o *EpochOptions) (*epochSource, error) {
	if len(o.Sample.Fanouts) > 0 {
		return nil, &featurestore.OptionError{Option: "fanouts", Value: fmt.Sprint(o.Sample.Fanouts), Want: "fanouts per edge type (EdgeFanouts, src:rel:dst → fanouts) for a plan of a graph session"}
	}
	var nt int
	var err error
	if o.SeedEdges != nil {
		// A link plan's seeds are edges; its seed type is their edge type's src type.
		if o.NodeType != "" {
			return nil, &featurestore.OptionError{Option: "node_type", Value: o.NodeType, Want: "none with seed edges (their edge type, SeedEdges.EdgeType, gives their node types)"}
		}
		e, err := ss.Internals().EdgeTypeIndex(o.SeedEdges.EdgeType)
		if err != nil {
			return nil, fmt.Errorf("planned: plan seed edges: %w", err)
		}
		nt, _ = ss.Internals().EdgeTypeEnds(e)
	} else if nt, err = ss.Internals().NodeTypeIndex(o.NodeType); err != nil {
		return nil, err
	}
	sp, err := ss.NewSampler(featurestore.SampleOptions{Fanouts: o.EdgeFanouts, Replace: o.Sample.Replace, Seed: o.Sample.Seed, Workers: o.Sample.Workers})
	if err != nil {
		return nil, err
	}
	src := &epochSource{ss: ss, seedType: nt, sampler: sp, typed: true, stacks: ss.Internals().Stacks()}
	if len(src.stacks) == 0 {
		return nil, fmt.Errorf("planned: no node type of dataset %s has features: a plan would pack nothing (serve its samples with a Sampler): %w", ss.Manifest().Dir(), dataset.ErrFeatureNotFound)
	}
	return src, nil
}

// NodeTypes names the node types whose rows the plan packs, in the session's order: the store's
// for a Store's plan, every type with features for a Session's.
func (p *Epochs) NodeTypes() []string {
	names := make([]string, len(p.src.stacks))
	for t := range p.src.stacks {
		names[t] = p.src.typeName(t)
	}
	return names
}

// Session is the graph session the plan's stacks belong to.
func (p *Epochs) Session() *featurestore.Session { return p.src.ss }

// Hetero says whether the plan is a Session's (its samples of every type, Gather of each) rather
// than a Store's.
func (p *Epochs) Hetero() bool { return p.src.typed }

// SeedType is the node type of the plan's seeds.
func (p *Epochs) SeedType() string { return p.src.ss.Manifest().NodeTypes[p.src.seedType].Name }

// drawEdges samples around the seed edges at positions pos, with the sampling seed seed: the
// first SampleFromEdges of a Sampler of that seed.
func (src *epochSource) drawEdges(o *EpochOptions, seed uint64, pos []int64) (*batchDraw, error) {
	se := o.SeedEdges
	pick := func(a []int64) []int64 {
		if a == nil {
			return nil
		}
		out := make([]int64, len(pos))
		for i, p := range pos {
			out[i] = a[p]
		}
		return out
	}
	s, d, l := pick(se.Src), pick(se.Dst), pick(se.Labels)
	hl, err := src.batchSampler(o, seed).SampleFromEdges(se.EdgeType, s, d, l, se.Link)
	if err != nil {
		return nil, err
	}
	if !src.typed {
		one, _ := hl.OneType()
		ls := &topology.LinkSample{Sample: *one, LinkLabels: hl.LinkLabels}
		return src.withNodes(&batchDraw{sample: &ls.Sample, link: ls}), nil
	}
	return src.withNodes(&batchDraw{hetero: &hl.HeteroSample, heteroLink: hl}), nil
}

// checkSeedEdges checks a link plan's seed edges, labels and link options (every id, once).
func (src *epochSource) checkSeedEdges(se *SeedEdges) error {
	return src.ss.Internals().CheckSeedEdges(se.EdgeType, se.Src, se.Dst, se.Labels, se.Link)
}

// edgeTypeKey is the key of edge type key ("" for the only one; a Store's plan: its one), or key
// itself when the dataset lacks it.
func (src *epochSource) edgeTypeKey(key string) string {
	if !src.typed {
		if ets := src.ss.Manifest().EdgeTypes; len(ets) == 1 {
			return ets[0].Key()
		}
		return key
	}
	if e, err := src.ss.Internals().EdgeTypeIndex(key); err == nil {
		return src.ss.Manifest().EdgeTypes[e].Key()
	}
	return key
}

// SampleEdges is the link sample of batch b of epoch e of a link plan (nodes, edges, label
// edges and negatives), read from the plan's samples file as Sample reads a sample; it returns
// the positions of the batch's seed edges in EpochOptions.SeedEdges too. A Store's plan's
// sample is of its one type.
func (p *Epochs) SampleEdges(e, b int) ([]int64, *topology.HeteroLinkSample, error) {
	if p.o.SeedEdges == nil {
		return nil, nil, fmt.Errorf("planned: epoch plan %s is not a link plan (node types %s): draw its batches with Sample: %w", p.o.Dir, p.src.typeNames(), errors.ErrUnsupported)
	}
	pos, d, err := p.storedDraw(e, b)
	if err != nil {
		return nil, nil, err
	}
	if !p.src.typed {
		return pos, &topology.HeteroLinkSample{HeteroSample: *d.link.Sample.Typed(), LinkLabels: d.link.LinkLabels}, nil
	}
	return pos, d.heteroLink, nil
}

// Link says whether the plan's batches are of seed edges (SampleEdges).
func (p *Epochs) Link() bool { return p.o.SeedEdges != nil }

// EdgeType is a link plan's seed edge type ("src:rel:dst"), "" for a plan of seed nodes.
func (p *Epochs) EdgeType() string {
	if p.o.SeedEdges == nil {
		return ""
	}
	return p.src.edgeTypeKey(p.o.SeedEdges.EdgeType)
}
