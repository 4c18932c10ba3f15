package featurestore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/topology"
)

// epochSource is what a plan packs and how it draws a batch: the tier stacks of the node types
// whose rows it packs, in the session's node type order, and the sampler of its batches. A
// Store's plan packs its one stack and samples with Store.Sample; a Session's plan packs every
// node type with features and samples with topology.SampleHetero.
type epochSource struct {
	ss       *Session
	seedType int      // the seeds' node type, an index into ss.nodes
	stacks   []*Store // the stacks packed
	// hetero holds a session plan's sampling options (Seed set per batch); nil for a Store's.
	hetero *topology.HeteroSampleOptions
}

// storeSource is the source of a plan of the one stack s.
func (s *Store) epochSource() *epochSource {
	return &epochSource{ss: s.sess, seedType: s.nt, stacks: []*Store{s}}
}

// enter guards a plan's call: the store's guard for a Store's plan, the session's for a
// Session's (each stack's own calls guard themselves).
func (src *epochSource) enter() (func(), error) {
	if src.hetero == nil {
		return src.stacks[0].enter()
	}
	return src.ss.enter()
}

// typeName is the node type name of packed stack t.
func (src *epochSource) typeName(t int) string { return src.ss.nodes[src.stacks[t].nt].spec.Name }

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
	nt, err := src.ss.nodeTypeOf(ntype)
	if err != nil {
		return -1, err
	}
	for t, s := range src.stacks {
		if s.nt == nt {
			return t, nil
		}
	}
	return -1, fmt.Errorf("featurestore: node type %q has no features, so a plan packs none of its rows (it packs %s): %w", ntype, src.typeNames(), ErrNotFound)
}

// batchDraw is one batch's sample, and the nodes of each packed type in it.
type batchDraw struct {
	sample *topology.Sample       // a Store's plan
	hetero *topology.HeteroSample // a Session's plan
	nodes  [][]int64              // per packed stack
}

// draw samples seeds with the sampling seed seed.
func (src *epochSource) draw(o *EpochOptions, seed uint64, seeds []int64) (*batchDraw, error) {
	if src.hetero == nil {
		opt := o.Sample
		opt.Seed = seed
		smp, err := src.stacks[0].Sample(seeds, opt)
		if err != nil {
			return nil, err
		}
		return &batchDraw{sample: smp, nodes: [][]int64{smp.Nodes}}, nil
	}
	opt := *src.hetero
	opt.Seed = seed
	smp, err := src.ss.sampleHetero(src.seedType, seeds, opt)
	if err != nil {
		return nil, err
	}
	d := &batchDraw{hetero: smp, nodes: make([][]int64, len(src.stacks))}
	for t, s := range src.stacks {
		d.nodes[t] = smp.Nodes[s.nt]
	}
	return d, nil
}

// PlanEpochs is Store.PlanEpochs for a graph of several types: the batches are seeds of
// o.NodeType sampled with fanouts per edge type (o.EdgeFanouts, as NewHeteroSampler; Sample.Seed
// and Sample.Replace as a HeteroSampler's), and each batch packs, per node type with features,
// the rows of its sampled nodes of that type that the type's memory tiers miss. Batch b of
// planned epoch e draws with seed BatchSampleSeed(Sample.Seed, e, b): the first draw of a
// HeteroSampler of that seed. PlaceTiers places every type's stack by the planned batches.
func (ss *Session) PlanEpochs(o EpochOptions) (*EpochPlanReport, error) {
	src, err := ss.epochSource(&o)
	if err != nil {
		return nil, err
	}
	return src.plan(o)
}

// OpenEpochs is Store.OpenEpochs of a plan made by Session.PlanEpochs; its batches are served
// by SampleHetero, GatherType and LoadHetero.
func (ss *Session) OpenEpochs(o EpochOptions) (*Epochs, *EpochPlanReport, error) {
	src, err := ss.epochSource(&o)
	if err != nil {
		return nil, nil, err
	}
	return src.open(o)
}

// epochSource is the source of a session plan of o: every node type with features, sampled by
// the heterogeneous sampler of o's options.
func (ss *Session) epochSource(o *EpochOptions) (*epochSource, error) {
	if len(o.Sample.Fanouts) > 0 {
		return nil, &OptionError{Option: "fanouts", Value: fmt.Sprint(o.Sample.Fanouts), Want: "fanouts per edge type (EdgeFanouts, src:rel:dst → fanouts) for a plan of a graph session"}
	}
	nt, err := ss.nodeTypeOf(o.NodeType)
	if err != nil {
		return nil, err
	}
	sp, err := ss.NewHeteroSampler(HeteroSampleOptions{Fanouts: o.EdgeFanouts, Replace: o.Sample.Replace, Seed: o.Sample.Seed, Workers: o.Sample.Workers})
	if err != nil {
		return nil, err
	}
	src := &epochSource{ss: ss, seedType: nt, hetero: &sp.opt}
	for _, n := range ss.nodes {
		if n.stack != nil {
			src.stacks = append(src.stacks, n.stack)
		}
	}
	if len(src.stacks) == 0 {
		return nil, fmt.Errorf("featurestore: no node type of dataset %s has features: a plan would pack nothing (serve its samples with a HeteroSampler): %w", ss.m.Dir(), dataset.ErrFeatureNotFound)
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

// SampleHetero draws the sample of batch b of epoch e of a Session's plan again and checks every
// packed type's nodes against the plan; it returns the batch's seeds too.
func (p *Epochs) SampleHetero(e, b int) ([]int64, *topology.HeteroSample, error) {
	if p.src.hetero == nil {
		return nil, nil, fmt.Errorf("featurestore: epoch plan %s is of one node type: draw its batches with Sample: %w", p.o.Dir, errors.ErrUnsupported)
	}
	seeds, d, err := p.draw(e, b)
	if err != nil {
		return nil, nil, err
	}
	return seeds, d.hetero, nil
}

// PlannedHeteroBatch is one served batch of a Session's plan.
type PlannedHeteroBatch struct {
	Seeds  []int64
	Sample *topology.HeteroSample
	Rows   map[string][]byte // per packed node type: the rows of its Sample.Nodes, in order
	IO     BatchIO           // summed over the types
}

// LoadHetero is SampleHetero then GatherType of every packed node type of batch b of epoch e,
// into new memory.
func (p *Epochs) LoadHetero(e, b int) (*PlannedHeteroBatch, error) {
	seeds, smp, err := p.SampleHetero(e, b)
	if err != nil {
		return nil, err
	}
	out := &PlannedHeteroBatch{Seeds: seeds, Sample: smp, Rows: map[string][]byte{}}
	for t, s := range p.src.stacks {
		nodes := smp.Nodes[s.nt]
		rows := make([]byte, int64(len(nodes))*s.spec.RowBytes)
		io, err := p.GatherType(e, b, p.src.typeName(t), nodes, rows)
		if err != nil {
			return nil, err
		}
		out.Rows[p.src.typeName(t)] = rows
		out.IO.Rows += io.Rows
		out.IO.Bytes += io.Bytes
		out.IO.Reads += io.Reads
	}
	return out, nil
}

// Session is the graph session the plan's stacks belong to.
func (p *Epochs) Session() *Session { return p.src.ss }

// Hetero says whether the plan is a Session's (SampleHetero, GatherType) rather than a Store's.
func (p *Epochs) Hetero() bool { return p.src.hetero != nil }

// SeedType is the node type of the plan's seeds.
func (p *Epochs) SeedType() string { return p.src.ss.nodes[p.src.seedType].spec.Name }
