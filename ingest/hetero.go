package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/internal/strictjson"
	"github.com/tierfs/tierfs/internal/wfs"
)

// HeteroOptions says what IngestHetero reads: a graph of several node types and edge types.
// The JSON form (tfs_ingest, `tierfs ingest --spec`) uses the keys in the tags.
type HeteroOptions struct {
	NodeTypes []NodeTypeInput `json:"node_types"`
	EdgeTypes []EdgeTypeInput `json:"edge_types"`
	Out       string          `json:"out"`
	Replace   bool            `json:"force"` // replace what Out holds; else such an Out is refused
	FS        wfs.FS          `json:"-"`     // what every file is written through, as Options.FS
	// EdgeSplits are seed edges of link prediction per edge type and split (format version 6);
	// EdgeType names one of EdgeTypes.
	EdgeSplits []EdgeSplitInput `json:"edge_splits"`

	// DevicePaths stripes every feature over these directories, one file each: stripe k of
	// feature F of type T goes to DevicePaths[k]/<base of Out>.<T>:<F>.<k>.<nonce>.bin (T an
	// edge type's src:rel:dst).
	DevicePaths []string `json:"device_paths"`
	// FeaturesInPlace reads every node type's features from their .npy files where they are, as
	// Options.FeaturesInPlace does for one type (no DevicePaths then).
	FeaturesInPlace bool `json:"features_in_place"`
	// StoreDType stores every type's float32 features at float16 or bfloat16, as
	// Options.StoreDType.
	StoreDType dataset.DType `json:"store_dtype"`

	// Progress, when set, is called now and then with the stage, the work done and the total.
	Progress func(stage string, done, total int64) `json:"-"`

	// taskMetadata is the GraphBolt task's metadata (ingestGraphBoltHetero), kept in the manifest.
	taskMetadata map[string]json.RawMessage
	// datasetName is the GraphBolt dataset's dataset_name (ingestGraphBoltHetero), kept in the
	// manifest.
	datasetName string
}

// NodeTypeInput is one node type of HeteroOptions.
type NodeTypeInput struct {
	Name string `json:"name"` // see dataset.CheckTypeName
	// NumNodes is the type's node count; 0 takes it from the first feature's rows, else from
	// the labels' length. A type has at least one node.
	NumNodes int64          `json:"num_nodes"`
	Features []FeatureInput `json:"features"` // one row per node; the first is the type's default
	Labels   string         `json:"labels"`   // 1-D integer .npy, -1 for unlabelled
	Splits   string         `json:"splits"`   // directory with train.npy, val.npy, test.npy (ids or bool masks)
}

// EdgeTypeInput is one edge type (Src, Rel, Dst) of HeteroOptions: edges from nodes of type Src
// (source ids in Src's local ids) to nodes of type Dst, stored as CSC over the Dst nodes.
type EdgeTypeInput struct {
	Src string `json:"src"`
	Rel string `json:"rel"`
	Dst string `json:"dst"`
	// Edges is the edge list, as Options.Edges: .npy (2,E)/(E,2), CSV/TSV text, Parquet or
	// Arrow IPC; EdgeColumns as Options.EdgeColumns.
	Edges       string    `json:"edges"`
	EdgeColumns [2]string `json:"edge_columns"`
	// EdgeFeatures are .npy files of one row per edge of Edges, in its order.
	EdgeFeatures []FeatureInput `json:"edge_features"`
}

// IsHeteroSpec reports whether a JSON object of ingest options (tfs_ingest's options_json, a
// `tierfs ingest --spec` file) describes a heterogeneous graph: it has "node_types" or
// "edge_types". Its other keys are then HeteroOptions's.
func IsHeteroSpec(keys map[string]json.RawMessage) bool {
	_, nodes := keys["node_types"]
	_, edges := keys["edge_types"]
	return nodes || edges
}

// ParseHeteroSpec decodes the JSON form of HeteroOptions: an object with the keys node_types
// ([{name, num_nodes, features: [{name, path, dtype}], labels, splits}]), edge_types ([{src,
// rel, dst, edges, edge_columns, edge_features: [{name, path, dtype}]}]), out, force,
// device_paths, features_in_place and store_dtype. An unknown key anywhere is an error naming it.
func ParseHeteroSpec(data []byte) (HeteroOptions, error) {
	var opt HeteroOptions
	if err := strictjson.Decode(data, &opt); err != nil {
		return opt, fmt.Errorf("ingest: heterogeneous graph spec: %w (keys: node_types [{name, num_nodes, features [{name, path, dtype}], labels, splits}], edge_types [{src, rel, dst, edges, edge_columns, edge_features}], out, force, device_paths, features_in_place, store_dtype)", err)
	}
	return opt, nil
}

// Inputs lists every input path of opt with what it is, for checking that they exist.
func (opt *HeteroOptions) Inputs() [][2]string {
	var out [][2]string
	for _, n := range opt.NodeTypes {
		for _, f := range n.Features {
			out = append(out, [2]string{fmt.Sprintf("node type %q feature %q", n.Name, f.Name), f.Path})
		}
		if n.Labels != "" {
			out = append(out, [2]string{fmt.Sprintf("node type %q labels", n.Name), n.Labels})
		}
		if n.Splits != "" {
			out = append(out, [2]string{fmt.Sprintf("node type %q splits", n.Name), n.Splits})
		}
	}
	for _, e := range opt.EdgeTypes {
		out = append(out, [2]string{fmt.Sprintf("edge type %q edges", e.Key()), e.Edges})
		for _, f := range e.EdgeFeatures {
			out = append(out, [2]string{fmt.Sprintf("edge type %q edge feature %q", e.Key(), f.Name), f.Path})
		}
	}
	return append(out, EdgeSplitPaths(opt.EdgeSplits)...)
}

// Key is the edge type's "src:rel:dst".
func (e *EdgeTypeInput) Key() string { return dataset.EdgeTypeKey(e.Src, e.Rel, e.Dst) }

// openedNodeType and openedEdgeType are the inputs of one type, their headers checked.
type openedNodeType struct {
	in    NodeTypeInput
	count int64
	nodeInputs
}

type openedEdgeType struct {
	in       EdgeTypeInput
	edges    edgeSource
	features []namedSource
}

// IngestHetero converts a graph of named types into a dataset in opt.Out (format version 5 when
// it has more than one node type or edge type, else version 8: a typed dataset of one type) and
// returns its manifest. Each type is written
// as Ingest writes its one type, into its own directory (dataset.NodeTypeDir, EdgeTypeDir), with
// the same streaming two-pass topology build and memory bound per type (one int64 per node of
// the destination type), the same checks and the same crash safety: every input's header is
// checked before the output is touched, and nothing is published unless every type was written.
// Errors name the type and the input.
func IngestHetero(opt HeteroOptions) (*dataset.Manifest, error) {
	if !hostIsLittleEndian {
		return nil, errors.New("ingest: big-endian hosts are not supported")
	}
	if opt.Out == "" {
		return nil, errors.New("ingest: no output directory (HeteroOptions.Out)")
	}
	nodes, edges, err := openHetero(&opt)
	if err != nil {
		return nil, err
	}
	if err := checkStoreDType(opt.StoreDType, opt.FeaturesInPlace); err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if err := storeFeaturesAs(opt.StoreDType, n.features, nil); err != nil {
			return nil, typed(fmt.Sprintf("node type %q", n.in.Name), err)
		}
	}
	for _, e := range edges {
		if err := storeFeaturesAs(opt.StoreDType, nil, e.features); err != nil {
			return nil, typed(fmt.Sprintf("edge type %q", e.in.Key()), err)
		}
	}
	if opt.FeaturesInPlace {
		if err := inPlaceNodeTypes(&opt, nodes); err != nil {
			return nil, err
		}
	}
	var keys []string
	for _, e := range edges {
		keys = append(keys, e.in.Key())
	}
	splits, err := openEdgeSplits(opt.EdgeSplits, keys)
	if err != nil {
		return nil, err
	}
	d := datasetWrite{fs: opt.FS, out: opt.Out, replace: opt.Replace, devicePaths: opt.DevicePaths, progress: opt.Progress, by: "tierfs ingest", args: opt.args()}
	return writeDataset(d, func(tw *typeWriter, m *dataset.Manifest) error {
		// Its types are named by the caller: a graph of one node type and at most one edge type is
		// a typed dataset of one type (dataset.Manifest.Typed), not a homogeneous graph.
		m.Typed = len(nodes) == 1 && len(edges) <= 1
		m.TaskMetadata, m.DatasetName = opt.taskMetadata, opt.datasetName
		count := map[string]int64{}
		for _, n := range nodes {
			nt := dataset.NodeType{Name: n.in.Name, Count: n.count}
			if err := tw.nodeType(&nt, dataset.NodeTypeDir(n.in.Name), n.in.Name+":", n.nodeInputs); err != nil {
				return typed(fmt.Sprintf("node type %q", n.in.Name), err)
			}
			m.NodeTypes = append(m.NodeTypes, nt)
			count[nt.Name] = nt.Count
		}
		for _, e := range edges {
			in := e.in
			topt := topologyOptions{progress: opt.Progress, numSrc: count[in.Src], src: in.Src, rel: in.Rel, dst: in.Dst,
				typeDir: dataset.EdgeTypeDir(in.Src, in.Rel, in.Dst), inputEdgeIDs: true}
			et, _, err := tw.edgeType(e.edges, in.Edges, count[in.Dst], topt, e.features, in.Key()+":")
			if err != nil {
				return typed(fmt.Sprintf("edge type %q", in.Key()), err)
			}
			if err := tw.edgeSplits(&et, topt.typeDir, splits, count[in.Src], count[in.Dst]); err != nil {
				return err
			}
			m.EdgeTypes = append(m.EdgeTypes, et)
		}
		return nil
	})
}

// inPlaceNodeTypes describes every node type's features as in-place features of its nodes
// (HeteroOptions.FeaturesInPlace), refusing what cannot be, as inPlaceSpecs does for one type.
func inPlaceNodeTypes(opt *HeteroOptions, nodes []openedNodeType) error {
	var specs []*dataset.FeatureSpec
	for i := range nodes {
		n := &nodes[i]
		inPlace, of, err := inPlaceOfType(opt.DevicePaths, n.features, n.count)
		if err != nil {
			return typed(fmt.Sprintf("node type %q", n.in.Name), err)
		}
		n.inPlace, specs = inPlace, append(specs, of...)
	}
	if len(specs) == 0 {
		return errors.New("ingest: FeaturesInPlace without node features to use in place")
	}
	return checkInPlace(opt.Out, specs)
}

// typed names the type (what) in err, an "ingest: ..." error, unless it does already; the
// result wraps err.
func typed(what string, err error) error {
	msg := unwrapIngest(err).Error()
	if strings.HasPrefix(msg, what) {
		return err
	}
	return &typedError{"ingest: " + what + ": " + msg, err}
}

type typedError struct {
	msg string
	err error
}

func (e *typedError) Error() string { return e.msg }
func (e *typedError) Unwrap() error { return e.err }

// openHetero checks the names and opens every input's header of opt, refusing (before anything
// is written) bad or repeated names, an edge type naming an unknown node type, a node type
// without nodes and inputs whose rows differ from their type's count.
func openHetero(opt *HeteroOptions) ([]openedNodeType, []openedEdgeType, error) {
	if len(opt.NodeTypes) == 0 {
		return nil, nil, errors.New("ingest: no node types (HeteroOptions.NodeTypes): a graph has at least one")
	}
	var nodes []openedNodeType
	count := map[string]int64{}
	for i, in := range opt.NodeTypes {
		if err := dataset.CheckTypeName(fmt.Sprintf("ingest: node type %d:", i), in.Name); err != nil {
			return nil, nil, err
		}
		if _, dup := count[in.Name]; dup {
			return nil, nil, fmt.Errorf("ingest: node type %q is given twice; node type names must be unique", in.Name)
		}
		n, err := openNodeType(in)
		if err != nil {
			return nil, nil, typed(fmt.Sprintf("node type %q", in.Name), err)
		}
		nodes = append(nodes, n)
		count[in.Name] = n.count
	}
	var edges []openedEdgeType
	seen := map[string]bool{}
	for i, in := range opt.EdgeTypes {
		for _, n := range []struct{ what, name string }{{"source node type", in.Src}, {"relation", in.Rel}, {"destination node type", in.Dst}} {
			if err := dataset.CheckTypeName(fmt.Sprintf("ingest: edge type %d (%q): %s", i, in.Key(), n.what), n.name); err != nil {
				return nil, nil, err
			}
		}
		key := in.Key()
		if seen[key] {
			return nil, nil, fmt.Errorf("ingest: edge type %q is given twice; (src, rel, dst) must be unique", key)
		}
		seen[key] = true
		for _, end := range []string{in.Src, in.Dst} {
			if _, ok := count[end]; !ok {
				return nil, nil, fmt.Errorf("ingest: edge type %q names node type %q, which is not among the node types (%s)", key, end, nodeTypeNames(opt.NodeTypes))
			}
		}
		if in.Edges == "" {
			return nil, nil, fmt.Errorf("ingest: edge type %q has no edges file", key)
		}
		e := openedEdgeType{in: in}
		var err error
		if e.edges, err = openEdges(in.Edges, in.EdgeColumns); err != nil {
			return nil, nil, typed(fmt.Sprintf("edge type %q", key), err)
		}
		names := map[string]bool{}
		for _, f := range in.EdgeFeatures {
			if names[f.Name] {
				return nil, nil, fmt.Errorf("ingest: edge type %q: edge feature name %q is used twice; feature names must be unique within a type", key, f.Name)
			}
			names[f.Name] = true
			ns, err := openFeatureInput("edge", f)
			if err != nil {
				return nil, nil, typed(fmt.Sprintf("edge type %q", key), err)
			}
			e.features = append(e.features, ns)
		}
		if e.edges.count() >= 0 {
			if err := checkEdgeRows(e.features, e.edges.count(), in.Edges); err != nil {
				return nil, nil, typed(fmt.Sprintf("edge type %q", key), err)
			}
		}
		edges = append(edges, e)
	}
	return nodes, edges, nil
}

// openNodeType opens the inputs of one node type and settles its count.
func openNodeType(in NodeTypeInput) (openedNodeType, error) {
	n := openedNodeType{in: in}
	if in.NumNodes < 0 {
		return n, fmt.Errorf("ingest: NumNodes %d is negative", in.NumNodes)
	}
	names := map[string]bool{}
	for _, f := range in.Features {
		if names[f.Name] {
			return n, fmt.Errorf("ingest: feature name %q is used twice; feature names must be unique within a type", f.Name)
		}
		names[f.Name] = true
		ns, err := openFeatureInput("node", f)
		if err != nil {
			return n, err
		}
		n.features = append(n.features, ns)
	}
	var labelCount int64
	var err error
	if in.Labels != "" {
		if labelCount, err = openLabels(in.Labels); err != nil {
			return n, err
		}
		n.labels = in.Labels
	}
	if in.Splits != "" {
		if n.splits, err = splitInputs(in.Splits); err != nil {
			return n, err
		}
	}
	source := ""
	switch {
	case in.NumNodes > 0:
		n.count, source = in.NumNodes, "num_nodes"
	case len(n.features) > 0:
		n.count, source = n.features[0].src.rows, fmt.Sprintf("feature %q file %s", n.features[0].in.Name, n.features[0].in.Path)
	case in.Labels != "":
		n.count, source = labelCount, "labels file "+in.Labels
	default:
		return n, errors.New("ingest: no node count: set num_nodes, or give features or labels")
	}
	if n.count == 0 {
		return n, fmt.Errorf("ingest: has no nodes (count 0 from %s); a node type has at least one", source)
	}
	for _, f := range n.features {
		if f.src.rows != n.count {
			return n, fmt.Errorf("ingest: feature %q: file %s has %d rows, but the type has %d nodes (from %s)", f.in.Name, f.in.Path, f.src.rows, n.count, source)
		}
	}
	if in.Labels != "" && labelCount != n.count {
		return n, fmt.Errorf("ingest: labels file %s has %d labels, but the type has %d nodes (from %s)", in.Labels, labelCount, n.count, source)
	}
	for _, name := range splitNames {
		if s, ok := n.splits[name]; ok {
			if err := s.checkMask(n.count); err != nil {
				return n, err
			}
		}
	}
	return n, checkNodes(n.count, "the node count from "+source)
}

func nodeTypeNames(list []NodeTypeInput) string {
	names := make([]string, len(list))
	for i, n := range list {
		names[i] = n.Name
	}
	return strings.Join(names, ", ")
}

// args records the options in the manifest's Created.Args, as key=value.
func (opt HeteroOptions) args() []string {
	var a []string
	for _, n := range opt.NodeTypes {
		a = append(a, "node-type="+n.Name)
		for _, f := range n.Features {
			a = append(a, fmt.Sprintf("node-feature=%s:%s=%s", n.Name, f.Name, absPath(f.Path)))
		}
		if n.Labels != "" {
			a = append(a, fmt.Sprintf("labels=%s:%s", n.Name, absPath(n.Labels)))
		}
		if n.Splits != "" {
			a = append(a, fmt.Sprintf("splits=%s:%s", n.Name, absPath(n.Splits)))
		}
		if n.NumNodes > 0 {
			a = append(a, fmt.Sprintf("num-nodes=%s:%d", n.Name, n.NumNodes))
		}
	}
	for _, e := range opt.EdgeTypes {
		a = append(a, fmt.Sprintf("edges=%s=%s", e.Key(), absPath(e.Edges)))
		for _, f := range e.EdgeFeatures {
			a = append(a, fmt.Sprintf("edge-feature=%s:%s=%s", e.Key(), f.Name, absPath(f.Path)))
		}
	}
	for _, sp := range opt.EdgeSplits {
		a = append(a, "edge-split="+sp.arg())
	}
	for _, p := range opt.DevicePaths {
		a = append(a, "device-path="+p)
	}
	if opt.StoreDType != "" {
		a = append(a, "store-dtype="+string(opt.StoreDType))
	}
	return a
}
