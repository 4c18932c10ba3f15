// Package ingest builds tierfs datasets (see package dataset) from user files, and synthesizes
// power-law graphs for benchmarks.
//
// Inputs: edges as .npy of shape (2, E) or (E, 2), a CSV/TSV/whitespace text edge list, Parquet,
// or Arrow IPC (file or stream) with integer columns src and dst (or chosen by EdgeColumns); features as a 2-D .npy or a Parquet / Arrow IPC file with one
// fixed_size_list column or one numeric column per dimension; labels as a 1-D integer .npy;
// splits as train.npy / val.npy / test.npy holding node ids or bool masks; more named node
// features (NodeFeatures, as features, or 1-D for one value a row) and edge features
// (EdgeFeatures: .npy with one row per input edge, written in edge id order through a temporary
// mapped file of one int64 per edge that records each edge id's input edge).
//
// Memory: ingest never holds the edge list, the features or the labels. The topology is built in
// two streaming passes over the edges (count in-degrees, then fill each node's list in place in a
// memory-mapped indices.bin), which costs one int64 per node: the degree counts turn into the fill
// cursors and then into indptr. Add fixed buffers (64 MiB of feature rows, a few MiB of edge
// chunks and Arrow batches) and the Arrow batch sizes the input files were written with. The
// budget to plan for is about 16 bytes per node (8 when the node count is given or comes from
// the features or labels; up to 16 while a count derived from edge ids grows) plus ~100 MiB.
// Synth has the same bound.
//
// Heterogeneous graphs (IngestHetero): several node types and edge types (src, rel, dst), each
// type's inputs as above, written by the same code as Ingest's one type (typeWriter) into the
// type's directory of a format version 5 dataset. Ids are local to each type; the topology of
// (src, rel, dst) is CSC over the dst nodes with src ids as indices. The memory bound is per
// type: one int64 per node of the edge type's destination type while it is built.
//
// Crash safety: Ingest and Synth check the inputs' headers first, then call dataset.Begin, which
// refuses an output directory that holds anything unless Replace, and writes every data file
// into a staging directory beside it; dataset.Commit syncs the files, writes checksums and the
// manifest, and Writing.Publish swaps the staging directory into place, removing a replaced
// dataset. A run that fails leaves the output as it was (and removes its staging directory); a
// killed one leaves at most a hidden .NAME.tierfs-new-* directory beside it. Stores open on a
// replaced dataset keep reading its files. A full disk surfaces as the failing write's error
// (the mapped indices file is preallocated, so it never faults).
package ingest

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/internal/wfs"
)

// nodeTypeName is the single node type of a version 1 dataset.
const nodeTypeName = "node"

// Options says what Ingest reads and how it transforms the graph.
type Options struct {
	Edges string // edge list: .npy (2,E)/(E,2), CSV/TSV text, Parquet or Arrow IPC; "" for no topology
	// EdgeColumns names the source and destination columns of a table edge list (CSV header
	// names, Parquet/Arrow field names, or 0-based indexes); default src and dst, or source and
	// target, else the first two.
	EdgeColumns [2]string
	Features    string // node features ("x"): 2-D .npy, Parquet or Arrow IPC; "" for none
	// NodeFeatures are more node features, beside Features, one row per node; the first node
	// feature (Features, else NodeFeatures[0]) is the dataset's default.
	NodeFeatures []FeatureInput
	// EdgeFeatures are edge features (edge_attr, edge weights): .npy files with one row per
	// edge of Edges, in its order; the dataset stores them in edge id (CSC) order, the order of
	// the edge ids samplers report. Not with Dedup.
	EdgeFeatures []FeatureInput
	Labels       string // 1-D integer .npy, one class id per node, -1 for unlabelled; "" for none
	SplitsDir    string // directory with train.npy, val.npy, test.npy (ids or bool masks); "" for none
	Out          string // dataset directory to write
	// GraphBolt is a GraphBolt on-disk dataset (a directory with metadata.yaml, raw form) to
	// ingest instead of the inputs above: its edges, node and edge features (by their names; the
	// first node feature is the default), and from one task (see GraphBoltTask) the labels and
	// the train/validation/test seeds. Its files are copied into the dataset. A graph of several
	// node or edge types becomes a heterogeneous dataset (IngestHetero; see
	// ingestGraphBoltHetero for the options that apply).
	GraphBolt string
	// GraphBoltTask picks the task of GraphBolt whose labels and seeds are ingested: a task name,
	// else an index into metadata.yaml's tasks; "" takes the first. An unknown one is an error
	// listing the tasks.
	GraphBoltTask string
	Replace       bool // replace what Out holds (a dataset or other files); else such an Out is refused
	// FS is what every file of the dataset is written through (nil: the operating system's;
	// tests pass a wfs.Faulty).
	FS wfs.FS

	// EdgeSplits are seed edges of link prediction (format version 6) of the graph's one edge
	// type (EdgeType "" or "node:to:node"): ids are node ids, checked against the node count.
	EdgeSplits []EdgeSplitInput

	// FeaturesInPlace uses the node features' .npy files (Features and NodeFeatures; C-order,
	// little-endian, 2-D or 1-D) where they are instead of copying them into the dataset: the
	// manifest names each by its absolute path, ingest checksums it as it is, and a store
	// refuses it once its size or modification time changed. tierfs never writes, moves or
	// removes such a file; it must stay outside Out. Rows are not block-aligned there (a row can
	// cost two block reads). Edge features are copied all the same (they are reordered into
	// edge id order). Not with DevicePaths.
	FeaturesInPlace bool

	// DevicePaths, when set, stripes the features over these directories, one file each:
	// stripe k goes to DevicePaths[k]/<base name of Out>.x.<k>.bin.
	DevicePaths []string

	// NumNodes is the node count. 0 takes it from the features' rows, else from the labels'
	// length, else from the largest edge id + 1.
	NumNodes int64

	Undirected    bool // add the reverse of every edge (a self loop is added once)
	DropSelfLoops bool // drop edges v -> v
	Dedup         bool // sort each neighbor list and remove repeated neighbors

	// FeatureDType names feature values whose input dtype does not: raw void values ('<V2' as
	// ml_dtypes saves bfloat16) or 2-byte integers holding float16/bfloat16 bits.
	FeatureDType dataset.DType

	// StoreDType, float16 or bfloat16, stores the float32 features at that dtype: half the
	// bytes on disk, in every read and in every cached row (see storeAs for what converts, how
	// it rounds and what it refuses). "" stores every feature as its input holds it.
	StoreDType dataset.DType

	// Progress, when set, is called now and then with the stage, the work done and the total
	// (0 when not known up front).
	Progress func(stage string, done, total int64)

	// taskMetadata is the GraphBolt task's metadata (fromGraphBolt), kept in the manifest.
	taskMetadata map[string]json.RawMessage
	// datasetName is the GraphBolt dataset's dataset_name (fromGraphBolt), kept in the manifest.
	datasetName string
}

// hostIsLittleEndian guards the in-place views of mapped little-endian files.
var hostIsLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// Ingest converts the inputs of opt into a dataset in opt.Out and returns its manifest. Errors
// name the input and the problem; on error the directory holds no valid dataset (an older one
// there survives only when the error came from checking the inputs, before anything is written).
func Ingest(opt Options) (*dataset.Manifest, error) {
	if !hostIsLittleEndian {
		return nil, errors.New("ingest: big-endian hosts are not supported")
	}
	if opt.Out == "" {
		return nil, errors.New("ingest: no output directory (Options.Out)")
	}
	if opt.GraphBoltTask != "" && opt.GraphBolt == "" {
		return nil, fmt.Errorf("ingest: GraphBoltTask %q without GraphBolt: a task is chosen from a GraphBolt dataset", opt.GraphBoltTask)
	}
	if opt.GraphBolt != "" {
		if md, meta, err := readGraphBolt(opt.GraphBolt); err != nil {
			return nil, err
		} else if md.isTyped() {
			return ingestGraphBoltHetero(opt, md, meta)
		}
		cleanup, err := fromGraphBolt(&opt)
		defer cleanup()
		if err != nil {
			return nil, err
		}
	}
	if opt.Edges == "" && opt.Features == "" && opt.Labels == "" && len(opt.NodeFeatures) == 0 {
		return nil, errors.New("ingest: nothing to ingest: set Edges, Features, NodeFeatures or Labels")
	}
	if opt.NumNodes < 0 {
		return nil, fmt.Errorf("ingest: NumNodes %d is negative", opt.NumNodes)
	}

	in, err := openInputs(&opt)
	if err != nil {
		return nil, err
	}
	d := datasetWrite{fs: opt.FS, out: opt.Out, replace: opt.Replace, devicePaths: opt.DevicePaths, progress: opt.Progress, by: "tierfs ingest", args: opt.args(),
		checksumProgress: func(done, total int64) { report(opt.Progress, "checksum in-place features", done, total) }}
	return writeDataset(d, func(tw *typeWriter, m *dataset.Manifest) error {
		if in.edges != nil {
			topt := topologyOptions{undirected: opt.Undirected, dropSelfLoops: opt.DropSelfLoops, dedup: opt.Dedup, progress: opt.Progress, inputEdgeIDs: true,
				nodeFeatureNames: map[string]bool{}}
			for _, f := range in.nodeFeatures {
				topt.nodeFeatureNames[f.in.Name] = true
			}
			if in.features != nil {
				topt.nodeFeatureNames[featureName] = true
			}
			et, n, err := tw.edgeType(in.edges, opt.Edges, in.numNodes, topt, in.edgeFeatures, "")
			if err != nil {
				return err
			}
			in.numNodes = n
			if err := tw.edgeSplits(&et, "", in.edgeSplits, in.numNodes, in.numNodes); err != nil {
				return err
			}
			m.EdgeTypes = []dataset.EdgeType{et}
		}
		m.TaskMetadata, m.DatasetName = opt.taskMetadata, opt.datasetName
		nt := dataset.NodeType{Name: nodeTypeName, Count: in.numNodes}
		nodes := nodeInputs{features: in.nodeFeatures, labels: opt.Labels, splits: in.splits, inPlace: in.inPlace}
		if in.features != nil {
			x := namedSource{FeatureInput{Name: featureName, Path: opt.Features, DType: opt.FeatureDType}, in.features}
			nodes.features = append([]namedSource{x}, in.nodeFeatures...)
		}
		if err := tw.nodeType(&nt, "", "", nodes); err != nil {
			return err
		}
		m.NodeTypes = []dataset.NodeType{nt}
		return nil
	})
}

// openedInputs are Ingest's inputs, their headers opened and checked against each other.
type openedInputs struct {
	edges                      edgeSource // nil: no topology
	features                   *featureSource
	nodeFeatures, edgeFeatures []namedSource
	splits                     map[string]splitInput
	edgeSplits                 []openedEdgeSplit
	numNodes                   int64                          // -1: from the edges
	inPlace                    map[string]dataset.FeatureSpec // FeaturesInPlace: the node features, by name
}

// openInputs opens every input of opt and checks its header, and their counts against each
// other, before anything is written.
func openInputs(opt *Options) (*openedInputs, error) {
	var edges edgeSource
	var features *featureSource
	var labelCount int64
	var splits map[string]splitInput
	var err error
	if opt.Edges != "" {
		if edges, err = openEdges(opt.Edges, opt.EdgeColumns); err != nil {
			return nil, err
		}
	}
	if opt.Features != "" {
		if features, err = openFeatures(opt.Features, opt.FeatureDType, false); err != nil {
			return nil, err
		}
	} else if opt.FeatureDType != "" && opt.FeatureDType.Size() == 0 {
		return nil, fmt.Errorf("ingest: FeatureDType %q is not a known dtype", opt.FeatureDType)
	}
	nodeFeatures, edgeFeatures, err := openNamedFeatures(opt)
	if err != nil {
		return nil, err
	}
	if err := checkStoreDType(opt.StoreDType, opt.FeaturesInPlace); err != nil {
		return nil, err
	}
	node := nodeFeatures
	if features != nil {
		node = append([]namedSource{{FeatureInput{Name: featureName, Path: opt.Features}, features}}, nodeFeatures...)
	}
	if err := storeFeaturesAs(opt.StoreDType, node, edgeFeatures); err != nil {
		return nil, err
	}
	if opt.Labels != "" {
		if labelCount, err = openLabels(opt.Labels); err != nil {
			return nil, err
		}
	}
	if opt.SplitsDir != "" {
		if splits, err = splitInputs(opt.SplitsDir); err != nil {
			return nil, err
		}
	}

	var edgeTypes []string
	if edges != nil {
		edgeTypes = []string{dataset.EdgeTypeKey(nodeTypeName, "to", nodeTypeName)}
	}
	edgeSplits, err := openEdgeSplits(opt.EdgeSplits, edgeTypes)
	if err != nil {
		return nil, err
	}

	numNodes, source := int64(-1), ""
	switch {
	case opt.NumNodes > 0:
		numNodes, source = opt.NumNodes, "--num-nodes"
	case features != nil:
		numNodes, source = features.rows, "features file "+features.path
	case len(nodeFeatures) > 0:
		numNodes, source = nodeFeatures[0].src.rows, fmt.Sprintf("node feature %q file %s", nodeFeatures[0].in.Name, nodeFeatures[0].in.Path)
	case opt.Labels != "":
		numNodes, source = labelCount, "labels file "+opt.Labels
	}
	for _, nf := range nodeFeatures {
		if nf.src.rows != numNodes {
			return nil, fmt.Errorf("ingest: node feature %q: file %s has %d rows, but the graph has %d nodes (from %s)", nf.in.Name, nf.in.Path, nf.src.rows, numNodes, source)
		}
	}
	if len(edgeFeatures) > 0 && edges.count() >= 0 { // edge features imply edges
		if err := checkEdgeRows(edgeFeatures, edges.count(), opt.Edges); err != nil {
			return nil, err
		}
	}
	if features != nil && features.rows != numNodes {
		return nil, fmt.Errorf("ingest: features file %s has %d rows, but the graph has %d nodes (from %s)", features.path, features.rows, numNodes, source)
	}
	if opt.Labels != "" && numNodes >= 0 && labelCount != numNodes {
		return nil, fmt.Errorf("ingest: labels file %s has %d labels, but the graph has %d nodes (from %s)", opt.Labels, labelCount, numNodes, source)
	}
	if numNodes >= 0 {
		for _, name := range splitNames {
			if in, ok := splits[name]; ok {
				if err := in.checkMask(numNodes); err != nil {
					return nil, err
				}
			}
		}
	}
	if numNodes >= 0 { // before anything is written
		if err := checkNodes(numNodes, "the node count from "+source); err != nil {
			return nil, err
		}
	}
	// In-place node features: described (and checked) before anything is written.
	var inPlace map[string]dataset.FeatureSpec
	if opt.FeaturesInPlace {
		if inPlace, err = inPlaceSpecs(opt, features, nodeFeatures, numNodes); err != nil {
			return nil, err
		}
	}
	return &openedInputs{edges: edges, features: features, nodeFeatures: nodeFeatures, edgeFeatures: edgeFeatures, splits: splits,
		edgeSplits: edgeSplits, numNodes: numNodes, inPlace: inPlace}, nil
}

// inPlaceSpecs describes the node features of opt (features, "x", and nodeFeatures) as in-place
// features of numNodes rows, by name (Options.FeaturesInPlace), refusing what cannot be.
func inPlaceSpecs(opt *Options, features *featureSource, nodeFeatures []namedSource, numNodes int64) (map[string]dataset.FeatureSpec, error) {
	if features != nil {
		x := namedSource{FeatureInput{Name: featureName, Path: opt.Features}, features}
		nodeFeatures = append([]namedSource{x}, nodeFeatures...)
	}
	if len(nodeFeatures) == 0 && len(opt.DevicePaths) == 0 {
		return nil, errors.New("ingest: FeaturesInPlace without node features (Features or NodeFeatures) to use in place")
	}
	out, specs, err := inPlaceOfType(opt.DevicePaths, nodeFeatures, numNodes)
	if err != nil {
		return nil, err
	}
	return out, checkInPlace(opt.Out, specs)
}

// inPlaceOfType describes one type's node features (of count rows) as in-place features, by
// name, refusing them beside devicePaths (an in-place feature stays in its one file). The
// caller checks the files of every type together (checkInPlace).
func inPlaceOfType(devicePaths []string, features []namedSource, count int64) (map[string]dataset.FeatureSpec, []*dataset.FeatureSpec, error) {
	if len(devicePaths) > 0 {
		return nil, nil, fmt.Errorf("ingest: FeaturesInPlace with DevicePaths: an in-place feature stays in its one file, which cannot be striped over %s", strings.Join(devicePaths, ", "))
	}
	out := map[string]dataset.FeatureSpec{}
	var specs []*dataset.FeatureSpec
	for _, f := range features {
		sp, err := newInPlaceSpec(f.in.Name, f.src, count)
		if err != nil {
			return nil, nil, err
		}
		sp.Metadata, sp.SamplingGraph = f.in.Metadata, f.in.SamplingGraph
		out[f.in.Name] = sp
		specs = append(specs, &sp)
	}
	return out, specs, nil
}

// args records the options in the manifest's Created.Args, as key=value.
func (opt Options) args() []string {
	var a []string
	add := func(k, v string) {
		if v != "" {
			a = append(a, k+"="+v)
		}
	}
	abs := absPath
	if opt.GraphBolt != "" {
		add("graphbolt", abs(opt.GraphBolt))
		add("graphbolt-task", opt.GraphBoltTask)
		if opt.FeaturesInPlace {
			add("features-in-place", "true")
		}
		add("store-dtype", string(opt.StoreDType))
		return a // the rest was read from its metadata
	}
	add("edges", abs(opt.Edges))
	if opt.EdgeColumns != ([2]string{}) {
		add("edge-columns", opt.EdgeColumns[0]+","+opt.EdgeColumns[1])
	}
	add("features", abs(opt.Features))
	for _, f := range opt.NodeFeatures {
		add("node-feature", f.Name+"="+abs(f.Path))
	}
	for _, f := range opt.EdgeFeatures {
		add("edge-feature", f.Name+"="+abs(f.Path))
	}
	add("labels", abs(opt.Labels))
	add("splits", abs(opt.SplitsDir))
	for _, s := range opt.EdgeSplits {
		add("edge-split", s.arg())
	}
	if len(opt.DevicePaths) > 0 {
		add("device-paths", strings.Join(opt.DevicePaths, ","))
	}
	if opt.FeaturesInPlace {
		add("features-in-place", "true")
	}
	if opt.NumNodes > 0 {
		add("num-nodes", fmt.Sprint(opt.NumNodes))
	}
	for _, f := range []struct {
		name string
		on   bool
	}{{"undirected", opt.Undirected}, {"drop-self-loops", opt.DropSelfLoops}, {"dedup", opt.Dedup}} {
		if f.on {
			add(f.name, "true")
		}
	}
	add("feature-dtype", string(opt.FeatureDType))
	add("store-dtype", string(opt.StoreDType))
	return a
}

// absPath is p made absolute, for the manifest's record of the inputs ("" stays "").
func absPath(p string) string {
	if p == "" {
		return ""
	}
	if ap, err := filepath.Abs(p); err == nil {
		return ap
	}
	return p
}
