package featurestore

import (
	"fmt"
	"strings"

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
