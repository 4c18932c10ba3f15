package ingest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tierfs/tierfs/dataset"
)

// ingestGraphBoltHetero ingests a GraphBolt dataset of named types (isTyped; md, read from
// meta in opt.GraphBolt) with IngestHetero: graph.nodes [{type, num}] become the node types,
// graph.edges [{type: "src:rel:dst", format, path}] the edge types (CSV or .npy edges in src and
// dst local ids), feature_data entries of domain "node" the features of their type (in their
// order; the first is the type's default) and of domain "edge" the features of their edge type
// (type "src:rel:dst"). From the task opt.GraphBoltTask names (the first by default) each set's
// entries of type T give T's train/val/test seeds and its labels (-1 where no set labels a node),
// written into a temporary directory beside opt.Out and removed on return; a link prediction
// task's sets (of type "src:rel:dst") give the edge splits of their edge types
// (graphBoltLinkTask). The dataset's dataset_name is kept (dataset.Manifest.DatasetName).
//
// Out, Replace, DevicePaths, FeaturesInPlace and Progress apply; the options that reshape a
// homogeneous graph (Undirected, DropSelfLoops, Dedup, FeatureDType, NumNodes) are refused, as
// are inputs given beside GraphBolt.
func ingestGraphBoltHetero(opt Options, md *graphBoltMetadata, meta string) (*dataset.Manifest, error) {
	dir := opt.GraphBolt
	if opt.Edges != "" || opt.Features != "" || opt.Labels != "" || opt.SplitsDir != "" || len(opt.NodeFeatures) > 0 || len(opt.EdgeFeatures) > 0 || len(opt.EdgeSplits) > 0 {
		return nil, fmt.Errorf("ingest: GraphBolt dataset %s: GraphBolt names every input itself; do not set Edges, Features, NodeFeatures, EdgeFeatures, Labels, SplitsDir or EdgeSplits beside it (its task gives the splits)", dir)
	}
	for _, o := range []struct {
		set  bool
		name string
	}{{opt.Undirected, "Undirected"}, {opt.DropSelfLoops, "DropSelfLoops"}, {opt.Dedup, "Dedup"},
		{opt.FeatureDType != "", "FeatureDType"}, {opt.NumNodes != 0, "NumNodes"}} {
		if o.set {
			return nil, fmt.Errorf("ingest: %s describes a graph of named types (%d node types, %d edge types); %s applies to a homogeneous one (no type names)", meta, len(md.Graph.Nodes), len(md.Graph.Edges), o.name)
		}
	}
	g := md.Graph
	local := func(p, key string) (string, error) { return graphBoltPath(dir, meta, p, key) }
	hopt := HeteroOptions{Out: opt.Out, Replace: opt.Replace, DevicePaths: opt.DevicePaths, FeaturesInPlace: opt.FeaturesInPlace, StoreDType: opt.StoreDType, Progress: opt.Progress, FS: opt.FS,
		datasetName: md.DatasetName}
	nodeIndex := map[string]int{}
	for i, n := range g.Nodes {
		key := fmt.Sprintf("graph.nodes[%d]", i)
		if n.Type == "" {
			return nil, fmt.Errorf("ingest: %s: %s has no type; a graph of several types names each", meta, key)
		}
		if n.Num <= 0 {
			return nil, fmt.Errorf("ingest: %s: %s (%s) has num %d; want the node count", meta, key, n.Type, n.Num)
		}
		if _, dup := nodeIndex[n.Type]; dup {
			return nil, fmt.Errorf("ingest: %s: node type %q is listed twice in graph.nodes", meta, n.Type)
		}
		nodeIndex[n.Type] = i
		hopt.NodeTypes = append(hopt.NodeTypes, NodeTypeInput{Name: n.Type, NumNodes: n.Num})
	}
	edgeIndex := map[string]int{}
	for i, e := range g.Edges {
		key := fmt.Sprintf("graph.edges[%d]", i)
		parts := strings.Split(e.Type, ":")
		if len(parts) != 3 {
			return nil, fmt.Errorf("ingest: %s: %s has type %q; want \"src:rel:dst\"", meta, key, e.Type)
		}
		path, err := local(e.Path, key)
		if err != nil {
			return nil, err
		}
		switch strings.ToLower(e.Format) {
		case "csv":
			if !isTextEdges(path) {
				return nil, fmt.Errorf("ingest: %s: %s is csv but %s has no .csv name", meta, key, e.Path)
			}
		case "numpy":
		default:
			return nil, fmt.Errorf("ingest: %s: %s has format %q; want csv or numpy", meta, key, e.Format)
		}
		edgeIndex[e.Type] = i
		hopt.EdgeTypes = append(hopt.EdgeTypes, EdgeTypeInput{Src: parts[0], Rel: parts[1], Dst: parts[2], Edges: path})
	}
	features, err := md.features(dir, meta)
	if err != nil {
		return nil, err
	}
	for i, f := range features {
		key := fmt.Sprintf("feature_data[%d] (%s %s %s)", i, f.Domain, f.Type, f.Name)
		if err := graphBoltNumpy(meta, f.Format, key); err != nil {
			return nil, err
		}
		p, err := local(f.Path, key)
		if err != nil {
			return nil, err
		}
		in := FeatureInput{Name: f.Name, Path: p, SamplingGraph: f.inGraph}
		if in.Metadata, err = graphBoltMetadataJSON(f.Extra, meta, key); err != nil {
			return nil, err
		}
		switch f.Domain {
		case "node":
			k, ok := nodeIndex[f.Type]
			if !ok {
				return nil, fmt.Errorf("ingest: %s: %s names node type %q, not in graph.nodes", meta, key, f.Type)
			}
			hopt.NodeTypes[k].Features = append(hopt.NodeTypes[k].Features, in)
		case "edge":
			k, ok := edgeIndex[f.Type]
			if !ok {
				return nil, fmt.Errorf("ingest: %s: %s names edge type %q, not in graph.edges", meta, key, f.Type)
			}
			hopt.EdgeTypes[k].EdgeFeatures = append(hopt.EdgeTypes[k].EdgeFeatures, in)
		default:
			return nil, fmt.Errorf("ingest: %s: %s has domain %q; tierfs holds node and edge features", meta, key, f.Domain)
		}
	}
	ti, err := graphBoltTask(md.Tasks, opt.GraphBoltTask, meta)
	if err != nil {
		return nil, err
	}
	if ti >= 0 {
		if hopt.taskMetadata, err = md.Tasks[ti].metadata(meta, ti); err != nil {
			return nil, err
		}
		tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(opt.Out)), ".tierfs-graphbolt-")
		if err != nil {
			return nil, fmt.Errorf("ingest: %w", err)
		}
		defer os.RemoveAll(tmp)
		edgeType := func(t string) (string, bool) { _, ok := edgeIndex[t]; return t, ok }
		if hopt.EdgeSplits, err = graphBoltLinkTask(md.Tasks[ti], ti, dir, meta, edgeType, tmp); err != nil {
			return nil, err
		}
		if hopt.EdgeSplits == nil {
			if err := graphBoltHeteroTask(&hopt, md.Tasks[ti], ti, dir, meta, nodeIndex, tmp); err != nil {
				return nil, err
			}
		}
	}
	return IngestHetero(hopt)
}

// graphBoltHeteroTask writes the seeds of every set of task (per node type, tmp/<type>/splits/<set>.npy)
// and each labelled type's labels (tmp/<type>/labels.npy), and points hopt's node types at them.
func graphBoltHeteroTask(hopt *HeteroOptions, task graphBoltTaskSpec, ti int, dir, meta string, nodeIndex map[string]int, tmp string) error {
	labels := map[string][]int64{}
	for _, set := range graphBoltSplits(task) {
		seen := map[string]bool{}
		for si, s := range set.sets {
			where := fmt.Sprintf("tasks[%d] (%s) %s[%d]", ti, task.Name, set.key, si)
			k, ok := nodeIndex[s.Type]
			if !ok {
				return fmt.Errorf("ingest: %s: %s has type %q, not a node type of graph.nodes", meta, where, s.Type)
			}
			if seen[s.Type] {
				return fmt.Errorf("ingest: %s: %s lists node type %q twice", meta, set.key, s.Type)
			}
			seen[s.Type] = true
			lab := labels[s.Type]
			seeds, _, err := graphBoltNodeSet(s, where, dir, meta, s.Type, hopt.NodeTypes[k].NumNodes, &lab)
			if err != nil {
				return err
			}
			if lab != nil {
				labels[s.Type] = lab
			}
			tdir := filepath.Join(tmp, s.Type, "splits")
			if err := os.MkdirAll(tdir, 0o755); err != nil {
				return fmt.Errorf("ingest: %w", err)
			}
			if err := writeNpy(hopt.FS, filepath.Join(tdir, set.name+".npy"), "<i8", []int64{int64(len(seeds))}, dataset.BytesOf(seeds)); err != nil {
				return fmt.Errorf("ingest: %w", err)
			}
			hopt.NodeTypes[k].Splits = tdir
		}
	}
	for t, lab := range labels {
		p := filepath.Join(tmp, t, "labels.npy")
		if err := writeNpy(hopt.FS, p, "<i8", []int64{int64(len(lab))}, dataset.BytesOf(lab)); err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
		hopt.NodeTypes[nodeIndex[t]].Labels = p
	}
	return nil
}
