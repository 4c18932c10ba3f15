package featurestore

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/placement"
	"github.com/tierfs/tierfs/tiers"
)

// The typed calls of a session: node types by name, edge types by their src:rel:dst key, ids
// local to their type (see ARCHITECTURE.md, "Types"). A one-type dataset answers them too: its
// node type is "node" (or what the manifest names it) and "" stands for the only type.

// NodeTypeInfo describes one node type.
type NodeTypeInfo struct {
	Name       string           `json:"name"`
	Count      int64            `json:"count"`
	Features   []FeatureInfo    `json:"features"` // Default marks the feature its tier stack serves
	Labels     bool             `json:"labels"`
	NumClasses int64            `json:"num_classes"`
	Splits     map[string]int64 `json:"splits"` // split name → ids in it
}

// EdgeTypeInfo describes one edge type: CSC over the Dst type, neighbors of the Src type.
type EdgeTypeInfo struct {
	Key      string        `json:"key"` // src:rel:dst
	Src      string        `json:"src"`
	Rel      string        `json:"rel"`
	Dst      string        `json:"dst"`
	Count    int64         `json:"count"`
	Features []FeatureInfo `json:"features"`
}

// Typed reports whether the session's types are named by its dataset's maker
// (dataset.Manifest.IsTyped): several types, or one typed type. Front ends present an untyped
// session as a homogeneous graph.
func (ss *Session) Typed() bool { return ss.m.IsTyped() }

// TaskMetadata is the metadata of the task whose splits the dataset holds, as its maker gave it
// (dataset.Manifest.TaskMetadata; nil for none).
func (ss *Session) TaskMetadata() map[string]json.RawMessage { return ss.m.TaskMetadata }

// DatasetName is the name the dataset's maker gave it (dataset.Manifest.DatasetName, GraphBolt's
// dataset_name; "" for none).
func (ss *Session) DatasetName() string { return ss.m.DatasetName }

// NodeTypes describes every node type, in the manifest's order.
func (ss *Session) NodeTypes() []NodeTypeInfo {
	out := make([]NodeTypeInfo, len(ss.nodes))
	for i, n := range ss.nodes {
		nt := n.spec
		info := NodeTypeInfo{Name: nt.Name, Count: nt.Count, Features: []FeatureInfo{}, Labels: nt.Labels != nil, Splits: map[string]int64{}}
		if nt.Labels != nil {
			info.NumClasses = nt.Labels.NumClasses
		}
		for name, sp := range nt.Splits {
			info.Splits[name] = sp.Count
		}
		for k := range nt.Features {
			f := featureInfo(&nt.Features[k], false)
			f.Default = n.stack != nil && n.stack.spec == &nt.Features[k]
			info.Features = append(info.Features, f)
		}
		out[i] = info
	}
	return out
}

// EdgeTypes describes every edge type, in the manifest's order.
func (ss *Session) EdgeTypes() []EdgeTypeInfo {
	out := make([]EdgeTypeInfo, len(ss.edges))
	for i, e := range ss.edges {
		et := e.spec
		info := EdgeTypeInfo{Key: et.Key(), Src: et.Src, Rel: et.Rel, Dst: et.Dst, Count: et.Count, Features: []FeatureInfo{}}
		for k := range et.Features {
			info.Features = append(info.Features, featureInfo(&et.Features[k], true))
		}
		out[i] = info
	}
	return out
}

// enterType enters ss (leave ends the call) for the node or edge type name ("" for the only
// one): its index by of (nodeTypeOf or edgeTypeOf), or of's error.
func (ss *Session) enterType(name string, of func(string) (int, error)) (t int, leave func(), err error) {
	if leave, err = ss.enter(); err != nil {
		return 0, nil, err
	}
	if t, err = of(name); err != nil {
		leave()
		return 0, nil, err
	}
	return t, leave, nil
}

// nodeTypeOf is the index of node type name; "" is the only node type of a one-type dataset, and
// ErrInvalidOption naming the types in a dataset of several.
func (ss *Session) nodeTypeOf(name string) (int, error) {
	if name == "" && len(ss.nodes) == 1 {
		return 0, nil
	}
	if i := ss.nodeTypeIndex(name); i >= 0 {
		return i, nil
	}
	names := make([]string, len(ss.nodes))
	for i, n := range ss.nodes {
		names[i] = n.spec.Name
	}
	if name == "" { // a bad argument, not a missing type: the caller named none of several
		return -1, fmt.Errorf("featurestore: dataset %s has %d node types (%s): name one: %w", ss.m.Dir(), len(names), strings.Join(names, ", "), ErrInvalidOption)
	}
	return -1, fmt.Errorf("featurestore: dataset %s has no node type %q (it has %s): %w", ss.m.Dir(), name, strings.Join(names, ", "), dataset.ErrTypeNotFound)
}

// edgeTypeOf is the index of the edge type of key src:rel:dst; "" is the only edge type of a
// dataset that has one, and ErrInvalidOption naming the types in a dataset of several.
func (ss *Session) edgeTypeOf(key string) (int, error) {
	if key == "" && len(ss.edges) == 1 {
		return 0, nil
	}
	for i, e := range ss.edges {
		if e.spec.Key() == key {
			return i, nil
		}
	}
	if key == "" && len(ss.edges) > 1 { // a bad argument, not a missing type: the caller named none of several
		return -1, fmt.Errorf("featurestore: dataset %s has %d edge types (%s): name one: %w", ss.m.Dir(), len(ss.edges), ss.edgeTypeList(), ErrInvalidOption)
	}
	return -1, fmt.Errorf("featurestore: dataset %s has no edge type %q (it has %s): %w", ss.m.Dir(), key, ss.edgeTypeList(), dataset.ErrTypeNotFound)
}

// edgeTypeList names every edge type, for errors.
func (ss *Session) edgeTypeList() string {
	if len(ss.edges) == 0 {
		return "none"
	}
	keys := make([]string, len(ss.edges))
	for i, e := range ss.edges {
		keys[i] = e.spec.Key()
	}
	return strings.Join(keys, ", ")
}

// Stack is the tier stack of node type ntype ("" for the only one): the Store serving its default
// feature through the memory tiers. A type without features has none (ErrNotFound).
func (ss *Session) Stack(ntype string) (*Store, error) {
	nt, err := ss.nodeTypeOf(ntype)
	if err != nil {
		return nil, err
	}
	if s := ss.nodes[nt].stack; s != nil {
		return s, nil
	}
	return nil, fmt.Errorf("featurestore: node type %q of dataset %s has no features: %w", ss.nodes[nt].spec.Name, ss.m.Dir(), dataset.ErrFeatureNotFound)
}

// Gather writes the rows of ids (ids of node type ntype) of its feature name ("" for the type's
// default) into dst (len(ids) × its row bytes): through the type's tier stack when it serves the
// feature, else from disk through the IO stacks.
func (ss *Session) Gather(ntype, feature string, ids []int64, dst []byte) error {
	nt, err := ss.nodeTypeOf(ntype)
	if err != nil {
		return err
	}
	if s := ss.nodes[nt].stack; s != nil && (feature == "" || feature == s.spec.Name) {
		return s.Gather(ids, dst)
	}
	spec := ss.nodes[nt].spec
	if feature == "" {
		return fmt.Errorf("featurestore: Gather: node type %q of dataset %s has no node features (it holds topology, labels and splits only): %w", spec.Name, ss.m.Dir(), dataset.ErrFeatureNotFound)
	}
	k := slices.IndexFunc(spec.Features, func(f dataset.FeatureSpec) bool { return f.Name == feature })
	if k < 0 {
		names := make([]string, len(spec.Features))
		for i, f := range spec.Features {
			names[i] = f.Name
		}
		return fmt.Errorf("featurestore: node type %q of dataset %s has no feature %q (it has %s): %w", spec.Name, ss.m.Dir(), feature, orNone(names), dataset.ErrFeatureNotFound)
	}
	return ss.gatherFromDisk(featureKey(false, spec.Name, feature), featureInfo(&spec.Features[k], false), ids, dst)
}

// GatherEdgeFeature writes the rows of edge ids (of edge type etype, "" for the only one) of its
// edge feature name into dst, from disk through the IO stacks.
func (ss *Session) GatherEdgeFeature(etype, feature string, ids []int64, dst []byte) error {
	e, err := ss.edgeTypeOf(etype)
	if err != nil {
		return err
	}
	et := ss.edges[e].spec
	k := slices.IndexFunc(et.Features, func(f dataset.FeatureSpec) bool { return f.Name == feature })
	if k < 0 {
		names := make([]string, len(et.Features))
		for i, f := range et.Features {
			names[i] = f.Name
		}
		return fmt.Errorf("featurestore: edge type %q of dataset %s has no feature %q (it has %s): %w", et.Key(), ss.m.Dir(), feature, orNone(names), dataset.ErrFeatureNotFound)
	}
	return ss.gatherFromDisk(featureKey(true, et.Key(), feature), featureInfo(&et.Features[k], true), ids, dst)
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// gatherFromDisk reads rows ids of the feature key (described by info) into dst, checking both.
func (ss *Session) gatherFromDisk(key string, info FeatureInfo, ids []int64, dst []byte) error {
	leave, err := ss.enter()
	if err != nil {
		return err
	}
	defer leave()
	rb := info.RowBytes
	if int64(len(dst)) != int64(len(ids))*rb {
		return fmt.Errorf("featurestore: gather of %d rows of feature %q needs a %d-byte destination (%d bytes per row), got %d bytes", len(ids), info.Name, int64(len(ids))*rb, rb, len(dst))
	}
	for i, id := range ids {
		if uint64(id) >= uint64(info.Rows) {
			return fmt.Errorf("featurestore: ids[%d] = %d is out of range [0, %d) (%s ids of %s feature %q): %w", i, id, info.Rows, info.Of, info.Of, info.Name, ErrIDOutOfRange)
		}
	}
	if err := ss.features[key].ReadRows(ids, dst); err != nil { // consecutive rows, a bounded chunk of reads at a time
		return fmt.Errorf("featurestore: gather feature %q: %w", info.Name, err)
	}
	return nil
}

// checkTypedIDs rejects ids outside node type nt's range, naming the first bad one and the type.
func (ss *Session) checkTypedIDs(nt int, what string, ids []int64) error {
	n := ss.nodes[nt].spec.Count
	for i, id := range ids {
		if uint64(id) >= uint64(n) {
			return fmt.Errorf("featurestore: %s[%d] = %d is out of range [0, %d) of node type %q: %w", what, i, id, n, ss.nodes[nt].spec.Name, ErrIDOutOfRange)
		}
	}
	return nil
}

// Labels sets out[i] to the label of ids[i], ids of node type ntype ("" for the only one), -1
// where unlabelled, reading only the blocks those labels are in. len(out) == len(ids).
func (ss *Session) Labels(ntype string, ids []int64, out []int64) error {
	nt, leave, err := ss.enterType(ntype, ss.nodeTypeOf)
	if err != nil {
		return err
	}
	defer leave()
	return ss.labelsOf(nt, ids, out, func(ids []int64) error { return ss.checkTypedIDs(nt, "ids", ids) })
}

// NumClasses is the number of label classes of node type ntype ("" for the only one), 0 when it
// has no labels.
func (ss *Session) NumClasses(ntype string) (int64, error) {
	nt, err := ss.nodeTypeOf(ntype)
	if err != nil {
		return 0, err
	}
	if l := ss.nodes[nt].spec.Labels; l != nil {
		return l.NumClasses, nil
	}
	return 0, nil
}

// ReadSplit copies the first min(len(out), size) node ids of the split name of node type ntype
// ("" for the only one) into out and returns the split's size; it reads only the ids it copies,
// so an empty out asks the size. A split the type lacks is ErrNotFound.
func (ss *Session) ReadSplit(ntype, name string, out []int64) (int64, error) {
	nt, leave, err := ss.enterType(ntype, ss.nodeTypeOf)
	if err != nil {
		return 0, err
	}
	defer leave()
	return ss.readSplit(nt, name, out)
}

// Split returns the node ids of the split name ("train", "val", "test") of node type ntype.
func (ss *Session) Split(ntype, name string) ([]int64, error) {
	n, err := ss.ReadSplit(ntype, name, nil)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, n)
	if _, err := ss.ReadSplit(ntype, name, ids); err != nil {
		return nil, err
	}
	return ids, nil
}

// SplitNames lists the splits of node type ntype ("" for the only one), sorted.
func (ss *Session) SplitNames(ntype string) ([]string, error) {
	nt, err := ss.nodeTypeOf(ntype)
	if err != nil {
		return nil, err
	}
	return ss.splitNames(nt), nil
}

// PlaceReport is what PlaceProfiled did, per node type with a tier stack.
type PlaceReport struct {
	Batches   int                        `json:"batches"`
	Seconds   float64                    `json:"seconds"`
	NodeTypes map[string]PlaceTypeReport `json:"node_types"`
}

// PlaceTypeReport is one node type's part of a PlaceReport.
type PlaceTypeReport struct {
	RowsReached  int64 `json:"rows_reached"`      // distinct rows the profiled batches reached
	MemoryRows   int64 `json:"memory_rows"`       // rows the type's memory tiers hold
	ReachedInMem int64 `json:"reached_in_memory"` // of those reached, rows now in the memory tiers
	GPUBytes     int64 `json:"gpu_bytes"`         // the type's share of the GPU budget
	HostBytes    int64 `json:"host_bytes"`        // the type's share of the host budget
}

// ProfileReads samples batches of batchSize seeds of seedType ("" for the only node type) as a
// loader visits them — the first epoch in the order given, every later one in a fresh
// permutation (placement.ShuffleEpoch), the last batch of an epoch shorter — batches batches in
// all (0: one epoch), batch b with the sampling seed placement.BatchSeed(opt.Seed, b), with the
// sampler of opt (nodes only), and returns per node type (the session's order) how many batches
// reached each row; nil for a type without a tier stack. On a graph of one type the counts are
// placement.Profile's feature counts. It places nothing (PlaceProfiled does;
// tierfs.distributed sums every rank's counts). Memory: 4 bytes a node of every type with a
// stack, and a copy of seeds.
func (ss *Session) ProfileReads(seedType string, seeds []int64, opt SampleOptions, batchSize, batches int) ([][]uint32, error) {
	if batchSize < 1 || batches < 0 || len(seeds) == 0 {
		return nil, &OptionError{Option: "batches", Value: fmt.Sprintf("%d batches of %d of %d seeds", batches, batchSize, len(seeds)), Want: "a batch size of at least one, batches >= 0 (0: one epoch) and at least one seed"}
	}
	sp, err := ss.NewSampler(opt)
	if err != nil {
		return nil, err
	}
	sp.opt.NodesOnly = true
	nt, err := ss.nodeTypeOf(seedType)
	if err != nil {
		return nil, err
	}
	if err := ss.checkTypedIDs(nt, "seeds", seeds); err != nil {
		return nil, err
	}
	perEpoch := max(1, (len(seeds)+batchSize-1)/batchSize)
	if batches == 0 {
		batches = perEpoch
	}
	counts := make([][]uint32, len(ss.nodes))
	for i, n := range ss.nodes {
		if n.stack != nil {
			counts[i] = make([]uint32, n.spec.Count)
		}
	}
	order := slices.Clone(seeds)
	for e, first := 0, 0; first < batches; e, first = e+1, first+perEpoch {
		if e > 0 {
			placement.ShuffleEpoch(order, opt.Seed, e)
		}
		if err := ss.profileEpoch(sp, nt, order, batchSize, first, min(perEpoch, batches-first), counts); err != nil {
			return nil, err
		}
	}
	return counts, nil
}

// profileEpoch samples batches [0, count) of order (batch b numbered first+b over the profile) on
// parallel goroutines and adds to counts, per node type, the batches that reached each row.
func (ss *Session) profileEpoch(sp *Sampler, nt int, order []int64, batchSize, first, count int, counts [][]uint32) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for range min(runtime.GOMAXPROCS(0), count) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				b := int(next.Add(1)) - 1
				if b >= count {
					return
				}
				o := sp.opt
				o.Seed = placement.BatchSeed(sp.opt.Seed, first+b)
				o.Workers = 1
				smp, err := ss.sample(ss.sampleGraph, nt, order[b*batchSize:min((b+1)*batchSize, len(order))], nil, o)
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
				for t, ids := range smp.Nodes {
					if c := counts[t]; c != nil {
						for _, v := range ids {
							atomic.AddUint32(&c[v], 1)
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// PlaceProfiled fills every type's memory tiers with the rows batches read most: it profiles
// batches batches of batchSize seeds of seedType as ProfileReads does, counting per (type, row)
// the batches that reach it, splits the session's budgets
// over the types by one ranking of every (type, row) (rankedShares: disk reads saved per byte),
// resizes each type's tiers to its share, and places each stack by its counts (Store.Place:
// hottest first, GPU tier then host tier). Memory: 4 bytes a node of every type with a stack
// while it runs.
func (ss *Session) PlaceProfiled(seedType string, seeds []int64, opt SampleOptions, batchSize, batches int) (*PlaceReport, error) {
	start := time.Now()
	counts, err := ss.ProfileReads(seedType, seeds, opt, batchSize, batches)
	if err != nil {
		return nil, err
	}
	if ss.stacks() > 1 {
		if err := ss.resizeStacks(ss.rankedShares(counts)); err != nil {
			return nil, err
		}
	}
	rep := &PlaceReport{Batches: batches, NodeTypes: map[string]PlaceTypeReport{}}
	for t, n := range ss.nodes {
		if n.stack == nil {
			continue
		}
		if err := n.stack.Place(counts[t]); err != nil {
			return nil, err
		}
		r := PlaceTypeReport{GPUBytes: n.stack.opt.GPUCacheBytes, HostBytes: n.stack.opt.HostCacheBytes}
		for _, c := range counts[t] {
			if c > 0 {
				r.RowsReached++
			}
		}
		n.stack.place.RLock()
		for _, tier := range n.stack.tierList() {
			if tier.Kind() == tiers.SSD {
				continue
			}
			r.MemoryRows += tier.Rows()
			tier.Ranges(func(first, count int64) bool {
				for v := first; v < first+count; v++ {
					if counts[t][v] > 0 {
						r.ReachedInMem++
					}
				}
				return true
			})
		}
		n.stack.place.RUnlock()
		rep.NodeTypes[n.spec.Name] = r
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}
