package featurestore

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/tierfs/tierfs/topology"
)

// SampleOptions configure a Sampler: Fanouts per edge type key (src:rel:dst) and hop, -1
// taking every neighbor — every edge type of the dataset, each with the same number of hops; the
// key "" stands for the only edge type (a one-type graph: {"": fanouts}). Replace samples with
// repetition; Seed is the seed of the first call; Workers the goroutines choosing positions (0:
// one per CPU). Weight names an edge feature of one value an edge (PyG's weight_attr): the edge
// types that have it draw their neighbors in proportion to it (topology.Weighted, on the host),
// the others uniformly; "" draws every edge type uniformly. Disjoint gives every seed its own
// tree (PyG's disjoint=True, topology.SampleOptions.Disjoint; the samples carry Batch, per node
// type): on the host, and not from edges (SampleFromEdges).
// Time names a node or edge feature of one integer value a row (PyG's time_attr): the sampler
// samples in time (topology.Temporal; node-level or edge-level by which the feature is: an edge
// type in the time of its source type's nodes or of its edges, one without them as it is),
// which makes it Disjoint; its seed times are SampleAt's, by default the seeds' node times.
// TemporalStrategy is "uniform" ("" too) or "last" (PyG's temporal_strategy). Time takes the
// disjoint sampler's limits, and no Weight.
type SampleOptions struct {
	Fanouts          map[string][]int `json:"fanouts"`
	Replace          bool             `json:"replace"`
	Seed             uint64           `json:"seed"`
	Workers          int              `json:"workers"`
	Weight           string           `json:"weight"`
	Disjoint         bool             `json:"disjoint"`
	Time             string           `json:"time"`
	TemporalStrategy string           `json:"temporal_strategy"`
}

// Sampler draws the k-hop neighborhoods of batches of seeds (Sample) or of seed edges
// (SampleFromEdges) with fixed options. Its k-th successful call, counting from 0, draws with seed
// Seed + k, so a loader's consecutive batches differ while a run with the same seed repeats; a
// failed call does not count, and node and link samples count alike. Calls on one Sampler are
// serialized (that is what makes the numbering well defined); use one Sampler per goroutine to
// sample in parallel.
//
// A graph of one node type and one edge type is sampled by topology.SampleNeighbors, on the GPU
// with Options.GPUTopology, its sample given as the one type's arrays; a graph of several types
// by topology.SampleHetero, whose one-type case draws the same.
type Sampler struct {
	ss      *Session
	opt     topology.HeteroSampleOptions // fanouts by edge type index
	fanouts map[string][]int             // as given

	weights [][]float32 // per edge type, its Weight feature by edge id; nil: uniform
	weight  string
	times   *sampleTimes // of a temporal sampler, else nil
	time    string       // Time and TemporalStrategy as given
	tstrat  string

	mu    sync.Mutex
	calls uint64

	onHost bool // draws on the host topology where it is in memory (the epoch planner's: Session.hostSampleGraph)
}

// NewSampler checks opt against the dataset — a fanout list for every edge type ("" for the only
// one) and none for a type the dataset lacks, all of one length, each fanout -1 or more, Workers
// >= 0 — and makes a sampler of it. Bad options are an *OptionError naming them. A dataset
// without edge types takes no fanouts: its samples are their seeds alone (zero hops), as PyG
// samples a HeteroData without edges.
func (ss *Session) NewSampler(opt SampleOptions) (*Sampler, error) {
	if opt.Workers < 0 {
		return nil, &OptionError{Option: "workers", Value: opt.Workers, Want: "goroutines >= 0 (0: one per CPU)"}
	}
	if opt.Disjoint && ss.opt.GPUTopology != "" {
		return nil, &OptionError{Option: "disjoint", Value: true, Want: "a store without gpu_topology (the GPU sampler does not draw disjoint trees)"}
	}
	t := topology.HeteroSampleOptions{Fanouts: make([][]int, len(ss.edges)), Replace: opt.Replace, Seed: opt.Seed, Workers: opt.Workers, MaxEdges: ss.opt.sampleBound(0), Disjoint: opt.Disjoint}
	given := make([]string, len(ss.edges)) // the key each edge type's fanouts were given by
	for _, key := range slices.Sorted(maps.Keys(opt.Fanouts)) {
		e, err := ss.edgeTypeOf(key)
		if err != nil && key == "" {
			return nil, &OptionError{Option: "fanouts", Value: fmt.Sprint(opt.Fanouts[key]), Want: fmt.Sprintf("fanouts per edge type: the dataset has %d (%s), and one list stands for the only one", len(ss.edges), ss.edgeTypeList())}
		}
		if err != nil {
			return nil, &OptionError{Option: "fanouts", Value: key, Want: "fanouts keyed by edge types of the dataset: " + ss.edgeTypeList()}
		}
		if t.Fanouts[e] != nil {
			return nil, &OptionError{Option: "fanouts", Value: fmt.Sprintf("%q and %q", given[e], key), Want: fmt.Sprintf("one fanout list for edge type %q", ss.edges[e].spec.Key())}
		}
		f := opt.Fanouts[key]
		if err := checkFanouts(key, f); err != nil {
			return nil, err
		}
		t.Fanouts[e], given[e] = slices.Clone(f), key
	}
	hops := -1
	for e, es := range ss.edges {
		key := es.spec.Key()
		f := t.Fanouts[e]
		if f == nil {
			return nil, &OptionError{Option: "fanouts", Value: fmt.Sprint(slices.Sorted(maps.Keys(opt.Fanouts))), Want: fmt.Sprintf("a fanout list for every edge type; %q has none (the dataset has %s)", key, ss.edgeTypeList())}
		}
		if hops >= 0 && len(f) != hops {
			return nil, &OptionError{Option: fmt.Sprintf("fanouts[%q]", given[e]), Value: fmt.Sprint(f), Want: fmt.Sprintf("%d hops, as every other edge type", hops)}
		}
		hops = len(f)
	}
	fanouts := make(map[string][]int, len(opt.Fanouts))
	for k, f := range opt.Fanouts {
		fanouts[k] = slices.Clone(f)
	}
	weights, err := ss.edgeWeights(opt.Weight)
	if err != nil {
		return nil, err
	}
	times, err := ss.sampleTimesOf(opt)
	if err != nil {
		return nil, err
	}
	t.Disjoint = t.Disjoint || times != nil // temporal implies disjoint, as in PyG
	return &Sampler{ss: ss, opt: t, fanouts: fanouts, weights: weights, weight: opt.Weight, times: times, time: opt.Time, tstrat: opt.TemporalStrategy}, nil
}

// checkFanouts checks the fanouts of edge type key ("" for the only one); its errors are
// *OptionError naming fanouts[i] (fanouts["key"][i] for a named type).
func checkFanouts(key string, f []int) error {
	name := "fanouts"
	if key != "" {
		name = fmt.Sprintf("fanouts[%q]", key)
	}
	for i, v := range f {
		if v < -1 {
			return &OptionError{Option: fmt.Sprintf("%s[%d]", name, i), Value: v, Want: "-1 (every neighbor) or a count >= 0"}
		}
	}
	return nil
}

// Sample draws the neighborhood of seeds, ids of node type seedType ("" for the only one), with
// seed Seed + Calls(). An unknown type is dataset.ErrTypeNotFound naming the types, a seed
// outside its type's range ErrIDOutOfRange. It is SampleAt without seed times.
func (sp *Sampler) Sample(seedType string, seeds []int64) (*topology.HeteroSample, error) {
	return sp.SampleAt(seedType, seeds, nil)
}

// SampleAt is Sample at seedTimes, one a seed (PyG's seed_time: seed i's tree draws neighbors of
// time at most seedTimes[i]), for a temporal sampler (Time); nil takes the seeds' node times (an
// edge-level time needs them). A sampler that is not temporal takes no seed times.
func (sp *Sampler) SampleAt(seedType string, seeds, seedTimes []int64) (*topology.HeteroSample, error) {
	if seedTimes != nil && sp.times == nil {
		return nil, &OptionError{Option: "seed_times", Value: fmt.Sprintf("%d times", len(seedTimes)), Want: "none: the sampler is not temporal (create it with \"time\")"}
	}
	if seedTimes != nil && len(seedTimes) != len(seeds) {
		return nil, &OptionError{Option: "seed_times", Value: fmt.Sprintf("%d times", len(seedTimes)), Want: fmt.Sprintf("one a seed (%d seeds)", len(seeds))}
	}
	ss := sp.ss
	nt, leave, err := ss.enterType(seedType, ss.nodeTypeOf)
	if err != nil {
		return nil, err
	}
	defer leave()
	if sp.times != nil && !sp.times.inTime(ss) {
		seedTimes = nil // no edge type draws in time: nothing reads them
	} else if sp.times != nil && seedTimes == nil && sp.times.node[nt] == nil {
		return nil, &OptionError{Option: "seed_times", Value: "none", Want: fmt.Sprintf("one a seed: the seeds (node type %q) have no time %q of their own (an edge feature, or none of their type: PyG's input_time)", ss.nodes[nt].spec.Name, sp.time)}
	}
	if err := ss.checkTypedIDs(nt, "seeds", seeds); err != nil {
		return nil, err
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	opt := sp.opt
	opt.Seed += sp.calls
	out, err := ss.sample(sp.graph(), nt, seeds, seedTimes, opt)
	if err != nil {
		return nil, err
	}
	sp.calls++
	return out, nil
}

// graph is the graph of each edge type the sampler draws from, drawn by its weights where it has
// them.
func (sp *Sampler) graph() func(e int) topology.Graph {
	g := sp.ss.sampleGraph
	if sp.onHost {
		g = sp.ss.hostSampleGraph
	}
	if sp.times != nil {
		return func(e int) topology.Graph { return sp.times.graph(e, sp.ss.edges[e].src, g(e)) }
	}
	if sp.weights == nil {
		return g
	}
	return func(e int) topology.Graph {
		if w := sp.weights[e]; w != nil {
			return &topology.Weighted{G: g(e).(topology.EdgeIndexer), W: w}
		}
		return g(e)
	}
}

// Options are the sampler's options as given; Seed is its first call's.
func (sp *Sampler) Options() SampleOptions {
	f := make(map[string][]int, len(sp.fanouts))
	for k, v := range sp.fanouts {
		f[k] = slices.Clone(v)
	}
	return SampleOptions{Fanouts: f, Replace: sp.opt.Replace, Seed: sp.opt.Seed, Workers: sp.opt.Workers, Weight: sp.weight, Disjoint: sp.opt.Disjoint, Time: sp.time, TemporalStrategy: sp.tstrat}
}

// Session is the session the sampler draws from.
func (sp *Sampler) Session() *Session { return sp.ss }

// Calls is the number of successful Sample and SampleFromEdges calls so far.
func (sp *Sampler) Calls() uint64 {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.calls
}

// sample samples seeds of node type nt (at seedTimes, a temporal sample's; nil: none or the
// default) with opt (checked) from the graphs that graph returns, by
// edge type, under the session's guard: a graph of one type by the homogeneous engine
// (topology.SampleNeighbors: the GPU's HopDrawer or the host's draws, the arrays given as the one
// type's), else by topology.SampleHetero. It counts the sample in the seed type's stack's stats.
func (ss *Session) sample(graph func(e int) topology.Graph, nt int, seeds, seedTimes []int64, opt topology.HeteroSampleOptions) (*topology.HeteroSample, error) {
	leave, err := ss.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	var out *topology.HeteroSample
	if len(ss.nodes) == 1 && len(ss.edges) == 1 {
		s, err := topology.SampleNeighbors(graph(0), seeds, topology.SampleOptions{
			Fanouts: opt.Fanouts[0], Replace: opt.Replace, Seed: opt.Seed, Workers: opt.Workers, NodesOnly: opt.NodesOnly, MaxEdges: opt.MaxEdges, Disjoint: opt.Disjoint, SeedTimes: seedTimes})
		if err != nil {
			return nil, sampleTooLarge(fmt.Errorf("featurestore: %w", err))
		}
		out = s.Typed()
	} else {
		numNodes, edges := ss.typedGraphs(graph)
		opt.SeedTimes = seedTimes
		if out, err = topology.SampleHetero(numNodes, edges, nt, seeds, opt); err != nil {
			return nil, sampleTooLarge(fmt.Errorf("featurestore: %w", err))
		}
	}
	ss.countSample(nt)
	return out, nil
}

// countSample counts a sample of seeds of node type nt in its stack's stats.
func (ss *Session) countSample(nt int) {
	if st := ss.nodes[nt].stack; st != nil {
		st.stats.samples.Add(1)
	}
}

// typedGraphs is the session's graph as the core's typed sampling takes it: the node count of
// every node type and every edge type's graph, as graph gives it (sampleGraph or hostSampleGraph).
func (ss *Session) typedGraphs(graph func(e int) topology.Graph) ([]int64, []topology.EdgeGraph) {
	numNodes := make([]int64, len(ss.nodes))
	for i, n := range ss.nodes {
		numNodes[i] = n.spec.Count
	}
	edges := make([]topology.EdgeGraph, len(ss.edges))
	for e, es := range ss.edges {
		edges[e] = topology.EdgeGraph{Src: es.src, Dst: es.dst, G: graph(e)}
	}
	return numNodes, edges
}

// hostSampleGraph is the topology in host memory where it is there, else sampleGraph.
func (s *Store) hostSampleGraph() topology.Graph {
	if csc, ok := s.graph.(*topology.CSC); ok {
		return csc
	}
	return s.sampleGraph()
}
