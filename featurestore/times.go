package featurestore

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/topology"
)

// sampleTimes is what a temporal sampler (SampleOptions.Time) reads once: the time of every
// node of each node type that has the feature, or of every edge of each edge type that has it
// (node or edge: one of them, nil for a type without it), and how it draws among the neighbors
// in time.
type sampleTimes struct {
	node, edge [][]int64
	strategy   topology.TimeStrategy
}

// timeStrategy is the core's strategy of SampleOptions.TemporalStrategy ("" is "uniform").
func timeStrategy(s string) (topology.TimeStrategy, error) {
	switch s {
	case "", "uniform":
		return topology.TimeUniform, nil
	case "last":
		return topology.TimeLast, nil
	}
	return 0, &OptionError{Option: "temporal_strategy", Value: s, Want: `"uniform" or "last" (PyG's temporal_strategy)`}
}

// sampleTimesOf reads opt.Time, a feature of one integer value a node or an edge (PyG's
// time_attr: node features of that name give node-level time, edge features edge-level time),
// for a temporal sampler on the host and not weighted (pyg-lib draws neither); nil for Time "".
// Every refusal is an *OptionError naming the option.
func (ss *Session) sampleTimesOf(opt SampleOptions) (*sampleTimes, error) {
	strategy, err := timeStrategy(opt.TemporalStrategy)
	if err != nil {
		return nil, err
	}
	if opt.Time == "" {
		if strategy != topology.TimeUniform {
			return nil, &OptionError{Option: "temporal_strategy", Value: opt.TemporalStrategy, Want: `"uniform" without "time" (the strategy of a temporal sampler)`}
		}
		return nil, nil
	}
	switch {
	case ss.opt.GPUTopology != "":
		return nil, &OptionError{Option: "time", Value: opt.Time, Want: "a store without gpu_topology (the GPU sampler does not sample in time)"}
	case opt.Weight != "":
		return nil, &OptionError{Option: "time", Value: opt.Time, Want: fmt.Sprintf("no weight (%q): weighted temporal sampling is not implemented, as in pyg-lib", opt.Weight)}
	}
	t := &sampleTimes{node: make([][]int64, len(ss.nodes)), edge: make([][]int64, len(ss.edges)), strategy: strategy}
	var nodeLevel, edgeLevel bool
	for i, ns := range ss.nodes {
		spec := ns.spec
		k := slices.IndexFunc(spec.Features, func(f dataset.FeatureSpec) bool { return f.Name == opt.Time })
		if k < 0 {
			continue
		}
		nodeLevel = true
		raw, err := ss.readWhole(&spec.Features[k], func(ids []int64, dst []byte) error { return ss.Gather(spec.Name, opt.Time, ids, dst) })
		if err == nil {
			t.node[i], err = timesOf(&spec.Features[k], raw)
		}
		if err != nil {
			return nil, &OptionError{Option: "time", Value: opt.Time, Want: fmt.Sprintf("node times of node type %q: %v", spec.Name, err)}
		}
	}
	for e, es := range ss.edges {
		spec := es.spec
		k := slices.IndexFunc(spec.Features, func(f dataset.FeatureSpec) bool { return f.Name == opt.Time })
		if k < 0 {
			continue
		}
		edgeLevel = true
		raw, err := ss.readWhole(&spec.Features[k], func(ids []int64, dst []byte) error { return ss.GatherEdgeFeature(spec.Key(), opt.Time, ids, dst) })
		if err == nil {
			t.edge[e], err = timesOf(&spec.Features[k], raw)
		}
		if err != nil {
			return nil, &OptionError{Option: "time", Value: opt.Time, Want: fmt.Sprintf("edge times of edge type %q: %v", spec.Key(), err)}
		}
	}
	switch {
	case nodeLevel && edgeLevel:
		return nil, &OptionError{Option: "time", Value: opt.Time, Want: "a node feature or an edge feature; the dataset has both of that name (PyG: holds both node-level and edge-level information)"}
	case !nodeLevel && !edgeLevel:
		var names []string
		for _, ns := range ss.nodes {
			for _, f := range ns.spec.Features {
				names = append(names, "node "+f.Name)
			}
		}
		for _, es := range ss.edges {
			for _, f := range es.spec.Features {
				names = append(names, "edge "+f.Name)
			}
		}
		return nil, &OptionError{Option: "time", Value: opt.Time, Want: "a node or edge feature of the dataset (PyG's time_attr): " + orNone(slices.Compact(names))}
	}
	return t, nil
}

// readWhole reads every row of feature spec through gather.
func (ss *Session) readWhole(spec *dataset.FeatureSpec, gather func(ids []int64, dst []byte) error) ([]byte, error) {
	n := spec.Count()
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(i)
	}
	raw := make([]byte, n*spec.RowBytes)
	return raw, gather(ids, raw)
}

// timesOf decodes the little-endian rows raw of feature spec, one integer a row, as int64 times.
func timesOf(spec *dataset.FeatureSpec, raw []byte) ([]int64, error) {
	if spec.Dim != 1 {
		return nil, fmt.Errorf("feature %q has %d values a row; times have one", spec.Name, spec.Dim)
	}
	n := int(spec.Count())
	t := make([]int64, n)
	size := int(spec.RowBytes)
	for i := range t {
		b := raw[i*size : (i+1)*size]
		switch spec.DType {
		case dataset.Int64:
			t[i] = int64(binary.LittleEndian.Uint64(b))
		case dataset.Int32:
			t[i] = int64(int32(binary.LittleEndian.Uint32(b)))
		case dataset.Int16:
			t[i] = int64(int16(binary.LittleEndian.Uint16(b)))
		case dataset.Int8:
			t[i] = int64(int8(b[0]))
		case dataset.Uint8:
			t[i] = int64(b[0])
		default:
			return nil, fmt.Errorf("feature %q is %s; times are integers (pyg-lib samples int64 time)", spec.Name, spec.DType)
		}
	}
	return t, nil
}

// inTime reports whether some edge type of ss draws in time (has edge times, or its source type
// node times); a sampler where none does samples as without time, as pyg-lib.
func (t *sampleTimes) inTime(ss *Session) bool {
	for e, es := range ss.edges {
		if t.edge[e] != nil || t.node[es.src] != nil {
			return true
		}
	}
	return false
}

// graph is edge type e's graph g (from src-type nodes) sampled in the sampler's times: by its
// edge times, or its source type's node times; as it is where it has neither (pyg-lib samples
// such an edge type without a time rule).
func (t *sampleTimes) graph(e, src int, g topology.Graph) topology.Graph {
	switch {
	case t.edge[e] != nil:
		return &topology.Temporal{G: g.(topology.EdgeIndexer), EdgeTime: t.edge[e], Strategy: t.strategy}
	case t.node[src] != nil:
		return &topology.Temporal{G: g.(topology.EdgeIndexer), NodeTime: t.node[src], Strategy: t.strategy}
	}
	return g
}
