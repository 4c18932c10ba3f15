package featurestore

import (
	"fmt"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/tiers/ssd"
	"github.com/tierfs/tierfs/topology"
)

// Session is one opened dataset, the graph session of ARCHITECTURE.md's "Types": the manifest,
// one set of files and IO stacks over every file of the dataset (each opened once), the fault
// injector, the options and budgets, the topology of every edge type, every node type's labels
// and splits, and the tier stacks: one Store per node type that has features, serving that
// type's feature Options.Feature (its first feature when it has none of that name) through the
// memory tiers. Other features are read from disk through the same IO stacks. A one-type dataset
// is a session with one stack.
//
// The memory budgets (GPUCacheBytes, HostCacheBytes) are the session's: each stack gets a share
// in proportion to its feature's bytes (rows × row bytes), what the unified policy gives rows of
// equal hotness; a single stack gets all of it. TopologyMemoryBytes bounds the topology of every
// edge type and the labels of every node type together.
//
// Its methods are safe for concurrent use. Close closes every stack, then the files.
type Session struct {
	m      *dataset.Manifest
	opt    Options
	files  *ssd.Files
	faults gpuio.Injector // Options.Faults: injected into every IO stack's reads; nil: none
	nodes  []nodeState    // per node type, in manifest order
	edges  []edgeState    // per edge type, in manifest order
	// features are the SSD tiers of every feature, by featureKey: what GatherFeature reads.
	features map[string]*ssd.Tier
	guard    callGuard // the session's own calls (topology and label reads); Close waits for them
	// gpuEdges holds, per edge type, its GPU copy for Options.GPUTopology when no stack holds
	// it (loadGPUTopologies); nil without one. gpuTopoErr says why there is none.
	gpuEdges   []*gpuTopology
	gpuDev     int
	gpuTopoErr error
	// releaseStaging gives the session's IO staging back to the process's budget (Close).
	releaseStaging func()
}

// nodeState is what a session holds for one node type.
type nodeState struct {
	spec   *dataset.NodeType
	labels []int64 // in memory when they fit TopologyMemoryBytes, else nil
	stack  *Store  // its tier stack; nil for a type without features
}

// edgeState is what a session holds for one edge type.
type edgeState struct {
	spec     *dataset.EdgeType
	src, dst int            // node type indexes
	graph    topology.Graph // CSC over the dst type's nodes, src-type ids as neighbors
}

// featureKey names a feature in Session.features: "node:<type>:<name>" or "edge:<src:rel:dst>:<name>".
func featureKey(edge bool, typ, name string) string {
	if edge {
		return "edge:" + typ + ":" + name
	}
	return "node:" + typ + ":" + name
}

// OpenSession opens the dataset in dir: its files and IO stacks, every edge type's topology,
// every node type's labels, and a tier stack per node type with features, each placed.
func OpenSession(dir string, opt Options) (_ *Session, err error) {
	if err := opt.EnsureDefaults().Validate(); err != nil {
		return nil, err
	}
	m, err := dataset.Load(dir)
	if err != nil {
		return nil, err
	}
	releaseStaging, err := processStaging.reserve(&opt, memAvailable)
	if err != nil {
		return nil, err
	}
	ss := &Session{m: m, opt: opt, features: map[string]*ssd.Tier{}, releaseStaging: releaseStaging}
	defer func() {
		if err != nil {
			ss.Close()
		}
	}()
	served, err := ss.servedFeatures()
	if err != nil {
		return nil, err
	}
	// Options.Faults sits under every IO stack of the session; planned epochs' packed files get
	// the same injector (rules pick files by path=).
	ss.faults = opt.Faults
	if ss.files, err = ssd.OpenFiles(m, ss.filePaths(served), ssd.Options{Backend: opt.IOBackend, QueueDepth: opt.QueueDepth, Stacks: opt.MaxConcurrentIO, VerifyReads: !opt.UnverifiedReads,
		CoalesceGap: opt.CoalesceGap, ReadAlign: opt.ReadAlign, Faults: ss.faults}); err != nil {
		return nil, fmt.Errorf("featurestore: %w", err)
	}
	ss.openFeatureTiers()
	if err := ss.openEdgeTypes(); err != nil {
		return nil, err
	}
	if err := ss.loadLabels(); err != nil {
		return nil, err
	}
	if n := ss.stacksServed(served); n > 1 && (opt.Hotness != nil || opt.Placement != nil) {
		return nil, &OptionError{Option: "hotness", Value: fmt.Sprintf("%d stacks", n),
			Want: "no hotness or saved placement for a graph of several node types with features (they rank one type); place it by a profile (PlaceProfiled)"}
	}
	shares := budgetShares(served, m, opt.GPUCacheBytes, opt.HostCacheBytes)
	for i, spec := range served {
		if spec == nil {
			continue
		}
		o := opt
		o.GPUCacheBytes, o.HostCacheBytes = shares[i].gpu, shares[i].host
		if ss.nodes[i].stack, err = ss.openStack(i, spec, o); err != nil {
			return nil, err
		}
	}
	if err := ss.loadGPUTopologies(); err != nil {
		return nil, err
	}
	return ss, nil
}

// stacksServed is the number of node types served holds a feature for.
func (ss *Session) stacksServed(served []*dataset.FeatureSpec) int {
	n := 0
	for _, spec := range served {
		if spec != nil {
			n++
		}
	}
	return n
}

// servedFeatures picks, per node type, the feature its stack serves (nil: none): Options.Feature
// where the type has it, else its first feature. A one-type dataset must have the feature asked
// for (none asked for: a dataset without node features serves none); a several-type one must
// have it in some type.
func (ss *Session) servedFeatures() ([]*dataset.FeatureSpec, error) {
	m := ss.m
	if len(m.NodeTypes) == 1 && ss.opt.Feature == "" && len(m.NodeTypes[0].Features) == 0 {
		return []*dataset.FeatureSpec{nil}, nil
	}
	if len(m.NodeTypes) == 1 {
		spec, err := m.Feature(ss.opt.Feature)
		if err != nil {
			return nil, err
		}
		return []*dataset.FeatureSpec{spec}, nil
	}
	served := make([]*dataset.FeatureSpec, len(m.NodeTypes))
	found := ss.opt.Feature == ""
	for i := range m.NodeTypes {
		fs := m.NodeTypes[i].Features
		for k := range fs {
			if fs[k].Name == ss.opt.Feature {
				served[i], found = &fs[k], true
			}
		}
		if served[i] == nil && len(fs) > 0 {
			served[i] = &fs[0]
		}
	}
	if !found {
		return nil, fmt.Errorf("featurestore: no node type of dataset %s has a feature %q (it has %s): %w", m.Dir(), ss.opt.Feature, ss.featureList(), dataset.ErrFeatureNotFound)
	}
	return served, nil
}

// featureList names every node feature as type.name, for errors.
func (ss *Session) featureList() string {
	var s string
	for _, nt := range ss.m.NodeTypes {
		for _, f := range nt.Features {
			if s != "" {
				s += ", "
			}
			s += nt.Name + "." + f.Name
		}
	}
	if s == "" {
		return "none"
	}
	return s
}

// filePaths is every file the dataset has, each once: the stripes of the first served feature
// first (the disk probe of CoalesceGap -1 measures its first stripe), then the manifest's
// files in order.
func (ss *Session) filePaths(served []*dataset.FeatureSpec) []string {
	var paths []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	for _, spec := range served {
		if spec != nil {
			for _, p := range spec.Files {
				add(p)
			}
			break
		}
	}
	for _, f := range ss.m.Files {
		add(f.Path)
	}
	return paths
}

// openFeatureTiers makes the SSD tier of every node and edge feature.
func (ss *Session) openFeatureTiers() {
	for i := range ss.m.NodeTypes {
		nt := &ss.m.NodeTypes[i]
		for k := range nt.Features {
			ss.features[featureKey(false, nt.Name, nt.Features[k].Name)] = ssd.NewTier(&nt.Features[k], nt.Count, ss.files)
		}
	}
	for i := range ss.m.EdgeTypes {
		et := &ss.m.EdgeTypes[i]
		for k := range et.Features {
			ss.features[featureKey(true, et.Key(), et.Features[k].Name)] = ssd.NewTier(&et.Features[k], et.Count, ss.files)
		}
	}
}

// nodeTypeIndex is the index of the node type name, or -1.
func (ss *Session) nodeTypeIndex(name string) int {
	for i := range ss.m.NodeTypes {
		if ss.m.NodeTypes[i].Name == name {
			return i
		}
	}
	return -1
}

type budgetShare struct{ gpu, host int64 }

// budgetShares splits the GPU and host budgets over the served features in proportion to their
// bytes (rows × row bytes); a single one gets the whole budgets.
func budgetShares(served []*dataset.FeatureSpec, m *dataset.Manifest, gpu, host int64) []budgetShare {
	shares := make([]budgetShare, len(served))
	var total float64
	var count int
	for i, spec := range served {
		if spec != nil {
			total += float64(m.NodeTypes[i].Count) * float64(spec.RowBytes)
			count++
		}
	}
	for i, spec := range served {
		switch {
		case spec == nil:
		case count == 1:
			shares[i] = budgetShare{gpu: gpu, host: host}
		default:
			frac := float64(m.NodeTypes[i].Count) * float64(spec.RowBytes) / total
			shares[i] = budgetShare{gpu: int64(frac * float64(gpu)), host: int64(frac * float64(host))}
		}
	}
	return shares
}

// stacks is the number of tier stacks.
func (ss *Session) stacks() int {
	n := 0
	for _, nd := range ss.nodes {
		if nd.stack != nil {
			n++
		}
	}
	return n
}

// Manifest is the dataset's manifest.
func (ss *Session) Manifest() *dataset.Manifest { return ss.m }

// Close waits for the session's running calls (a Sampler's draws among them), closes every tier stack (each
// waiting for its own calls), then the GPU topologies and the files.
// Later calls get ErrClosed.
func (ss *Session) Close() error {
	// The session's calls first: a Sampler's draw holds only the session's guard but may read a
	// stack's GPU topology, which closing the stack frees.
	if !ss.guard.close() {
		return nil
	}
	defer ss.guard.released()
	for _, n := range ss.nodes {
		if n.stack != nil {
			n.stack.closeStack()
		}
	}
	ss.freeGPUTopologies()
	if ss.files != nil {
		ss.files.Close()
	}
	ss.releaseStaging()
	return nil
}

// enter guards a session call against a concurrent Close; the returned func ends the call.
func (ss *Session) enter() (func(), error) {
	if !ss.guard.enter() {
		return nil, ErrClosed
	}
	return ss.guard.leave, nil
}
