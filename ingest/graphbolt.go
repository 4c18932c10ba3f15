package ingest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/tierfs/tierfs/dataset"
)

// GraphBolt's on-disk dataset (dgl.graphbolt.OnDiskDataset): a directory with metadata.yaml
// naming the graph's edges (CSV or .npy), its node and edge features (.npy) and the tasks'
// train/validation/test sets (seeds and labels, .npy). Only the raw form is read (the "graph"
// section, before GraphBolt's preprocessing turns it into "graph_topology").

// graphBoltMetadata is the part of metadata.yaml ingest reads.
type graphBoltMetadata struct {
	DatasetName string `yaml:"dataset_name"`
	Graph       *struct {
		Nodes []struct {
			Type string `yaml:"type"`
			Num  int64  `yaml:"num"`
		} `yaml:"nodes"`
		Edges []struct {
			Type   string `yaml:"type"`
			Format string `yaml:"format"`
			Path   string `yaml:"path"`
		} `yaml:"edges"`
		FeatureData []graphBoltFeature `yaml:"feature_data"`
	} `yaml:"graph"`
	GraphTopology any                 `yaml:"graph_topology"`
	FeatureData   []graphBoltFeature  `yaml:"feature_data"`
	Tasks         []graphBoltTaskSpec `yaml:"tasks"`
}

// graphBoltTaskSpec is one entry of metadata.yaml's tasks.
type graphBoltTaskSpec struct {
	Name          string         `yaml:"name"`
	TrainSet      []graphBoltSet `yaml:"train_set"`
	ValidationSet []graphBoltSet `yaml:"validation_set"`
	TestSet       []graphBoltSet `yaml:"test_set"`
	// Extra is every other key (num_classes, a user's), with name GraphBolt's task metadata.
	Extra map[string]any `yaml:",inline"`
}

type graphBoltFeature struct {
	Domain   string `yaml:"domain"`
	Type     string `yaml:"type"`
	Name     string `yaml:"name"`
	Format   string `yaml:"format"`
	Path     string `yaml:"path"`
	InMemory *bool  `yaml:"in_memory"` // GraphBolt's choice of memory or disk; tierfs tiers every feature itself
	// inGraph: listed in graph.feature_data (an attribute of GraphBolt's sampling graph).
	inGraph bool
	// Extra is every other key: GraphBolt's feature metadata (num_categories, a user's keys).
	Extra map[string]any `yaml:",inline"`
}

// graphBoltMetadataJSON is extra (a feature's or task's other keys in meta; what names them) as JSON
// values, kept in the manifest as GraphBolt keeps them (nil for none).
func graphBoltMetadataJSON(extra map[string]any, meta, what string) (map[string]json.RawMessage, error) {
	if len(extra) == 0 {
		return nil, nil
	}
	out := make(map[string]json.RawMessage, len(extra))
	for k, v := range extra {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("ingest: %s: %s: metadata %q cannot be kept (%v); tierfs keeps YAML strings, numbers, booleans, lists and maps of string keys", meta, what, k, err)
		}
		out[k] = b
	}
	return out, nil
}

// metadata is the task's metadata as GraphBolt's OnDiskDataset gives it: name (where set) and
// every other key but the sets.
func (t graphBoltTaskSpec) metadata(meta string, ti int) (map[string]json.RawMessage, error) {
	extra := map[string]any{}
	for k, v := range t.Extra {
		extra[k] = v
	}
	if t.Name != "" {
		extra["name"] = t.Name
	}
	return graphBoltMetadataJSON(extra, meta, fmt.Sprintf("tasks[%d]", ti))
}

// readGraphBolt reads and parses dir's metadata.yaml (its path is meta), refusing one without a
// raw graph section.
func readGraphBolt(dir string) (md *graphBoltMetadata, meta string, err error) {
	meta = filepath.Join(dir, GraphBoltMetadata)
	raw, err := os.ReadFile(meta)
	if err != nil {
		return nil, meta, fmt.Errorf("ingest: GraphBolt dataset %s: %w", dir, err)
	}
	md = new(graphBoltMetadata)
	if err := yaml.Unmarshal(raw, md); err != nil {
		return nil, meta, fmt.Errorf("ingest: GraphBolt dataset %s: %s is not valid YAML: %v", dir, GraphBoltMetadata, err)
	}
	if md.Graph == nil {
		if md.GraphTopology != nil {
			return nil, meta, fmt.Errorf("ingest: %s has graph_topology (preprocessed by GraphBolt) but no graph section; ingest the original dataset, whose metadata.yaml names the edges", meta)
		}
		return nil, meta, fmt.Errorf("ingest: %s has no graph section", meta)
	}
	return md, meta, nil
}

// isTyped reports whether the graph's types are named, as GraphBolt tells a heterogeneous graph
// (its first node type has a type): several node or edge types, or one named node type. A typed
// graph of one type stays typed (dataset.Manifest.Typed), its names kept.
func (md *graphBoltMetadata) isTyped() bool {
	g := md.Graph
	return len(g.Nodes) > 1 || len(g.Edges) > 1 || (len(g.Nodes) == 1 && g.Nodes[0].Type != "")
}

// features are the graph section's feature_data (marked inGraph) then the top-level
// feature_data, each feature once: GraphBolt's own layout may list a feature in both (a graph
// attribute of the sampling graph and a feature of the feature store); an entry with the domain,
// type, name and file of one before it is left out. The same domain, type and name for two
// files is an error: tierfs holds one feature of a name for each node or edge type.
func (md *graphBoltMetadata) features(dir, meta string) ([]graphBoltFeature, error) {
	type key struct{ domain, typ, name string }
	seen := map[key]string{}
	var out []graphBoltFeature
	for i, f := range append(slices.Clone(md.Graph.FeatureData), md.FeatureData...) {
		where := fmt.Sprintf("feature_data[%d]", i-len(md.Graph.FeatureData))
		if i < len(md.Graph.FeatureData) {
			where = fmt.Sprintf("graph.feature_data[%d]", i)
		}
		p, err := graphBoltPath(dir, meta, f.Path, fmt.Sprintf("%s (%s)", where, f.Name))
		if err != nil {
			return nil, err
		}
		k := key{f.Domain, f.Type, f.Name}
		if prev, dup := seen[k]; dup {
			if prev == filepath.Clean(p) {
				continue
			}
			return nil, fmt.Errorf("ingest: %s: %s feature %q%s is listed twice with different files, %s and %s; tierfs holds one %s feature of a name a type", meta, f.Domain, f.Name, graphBoltOfType(f.Type), prev, p, f.Domain)
		}
		seen[k] = filepath.Clean(p)
		f.inGraph = i < len(md.Graph.FeatureData)
		out = append(out, f)
	}
	return out, nil
}

func graphBoltOfType(t string) string {
	if t == "" {
		return ""
	}
	return fmt.Sprintf(" of type %q", t)
}

// graphBoltPath is p (key's path in meta) relative to the dataset directory dir.
func graphBoltPath(dir, meta, p, key string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("ingest: %s: %s has no path", meta, key)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return p, nil
}

func graphBoltNumpy(meta, format, key string) error {
	if f := strings.ToLower(format); f != "numpy" {
		return fmt.Errorf("ingest: %s: %s has format %q; tierfs reads numpy (.npy) files (save torch tensors with np.save)", meta, key, format)
	}
	return nil
}

// graphBoltTask is the index in tasks of the task named (or, where no task has that name,
// numbered from 0) by want: 0 for want "" (-1 when there are no tasks). An unknown task is an
// error listing the tasks of meta.
func graphBoltTask(tasks []graphBoltTaskSpec, want, meta string) (int, error) {
	if want == "" {
		if len(tasks) == 0 {
			return -1, nil
		}
		return 0, nil
	}
	names := make([]string, len(tasks))
	for i, t := range tasks {
		if t.Name == want {
			return i, nil
		}
		names[i] = fmt.Sprintf("%d: %q", i, t.Name)
	}
	if i, err := strconv.Atoi(want); err == nil && i >= 0 && i < len(tasks) {
		return i, nil
	}
	if len(tasks) == 0 {
		return -1, fmt.Errorf("ingest: %s has no tasks; GraphBoltTask %q names none", meta, want)
	}
	return -1, fmt.Errorf("ingest: %s has no task %q; its tasks are %s (choose one by name or index)", meta, want, strings.Join(names, ", "))
}

type graphBoltSet struct {
	Type string `yaml:"type"`
	Data []struct {
		Name   string `yaml:"name"`
		Format string `yaml:"format"`
		Path   string `yaml:"path"`
	} `yaml:"data"`
}

// graphBoltColumn is the name ingest reads the i-th column of a set by: its name, or for an
// unnamed one (GraphBolt accepts them: the item set's name is None) "seeds" when it is the first
// column, "" (not read) otherwise.
func graphBoltColumn(i int, name string) string {
	if name == "" && i == 0 {
		return "seeds"
	}
	return name
}

// GraphBoltMetadata is the name of a GraphBolt dataset's metadata file.
const GraphBoltMetadata = "metadata.yaml"

// fromGraphBolt fills opt's inputs from the GraphBolt dataset in opt.GraphBolt: the edges file,
// every node feature (NodeFeatures, by their names; the first is the default), every edge feature
// (EdgeFeatures), and from the task opt.GraphBoltTask names (graphBoltTask; by default the first)
// the labels (one per node, -1 where no set labels it) and the train/val/test seeds — or, for a
// link prediction task, its edge splits (graphBoltLinkTask) — which it writes into a temporary
// directory beside opt.Out;
// cleanup removes it. Features and edges are read from their files (copied into the dataset);
// the dataset's dataset_name is kept (dataset.Manifest.DatasetName).
// addGraphBoltFeatures names a one-type GraphBolt dataset's features as the node and edge
// feature inputs of opt.
func (opt *Options) addGraphBoltFeatures(features []graphBoltFeature, dir, meta string) error {
	for i, f := range features {
		key := fmt.Sprintf("feature_data[%d] (%s)", i, f.Name)
		if err := graphBoltNumpy(meta, f.Format, key); err != nil {
			return err
		}
		p, err := graphBoltPath(dir, meta, f.Path, key)
		if err != nil {
			return err
		}
		in := FeatureInput{Name: f.Name, Path: p, SamplingGraph: f.inGraph}
		if in.Metadata, err = graphBoltMetadataJSON(f.Extra, meta, key); err != nil {
			return err
		}
		switch f.Domain {
		case "node":
			opt.NodeFeatures = append(opt.NodeFeatures, in)
		case "edge":
			opt.EdgeFeatures = append(opt.EdgeFeatures, in)
		default:
			return fmt.Errorf("ingest: %s: %s has domain %q; tierfs holds node and edge features", meta, key, f.Domain)
		}
	}
	return nil
}

func fromGraphBolt(opt *Options) (cleanup func(), err error) {
	cleanup = func() {}
	dir := opt.GraphBolt
	what := "GraphBolt dataset " + dir
	if opt.Edges != "" || opt.Features != "" || opt.Labels != "" || opt.SplitsDir != "" || len(opt.NodeFeatures) > 0 || len(opt.EdgeFeatures) > 0 || len(opt.EdgeSplits) > 0 {
		return cleanup, fmt.Errorf("ingest: %s: GraphBolt names every input itself; do not set Edges, Features, NodeFeatures, EdgeFeatures, Labels, SplitsDir or EdgeSplits beside it (its task gives the splits)", what)
	}
	md, meta, err := readGraphBolt(dir)
	if err != nil {
		return cleanup, err
	}
	g := md.Graph
	if len(g.Nodes) != 1 || len(g.Edges) != 1 {
		return cleanup, fmt.Errorf("ingest: %s has %d node types and %d edge types; tierfs ingests one of each (a homogeneous graph)", meta, len(g.Nodes), len(g.Edges))
	}
	if g.Nodes[0].Num <= 0 {
		return cleanup, fmt.Errorf("ingest: %s: graph.nodes[0].num is %d; want the node count", meta, g.Nodes[0].Num)
	}
	local := func(p, key string) (string, error) { return graphBoltPath(dir, meta, p, key) }
	e := g.Edges[0]
	if opt.Edges, err = local(e.Path, "graph.edges[0]"); err != nil {
		return cleanup, err
	}
	switch strings.ToLower(e.Format) {
	case "csv":
		if !isTextEdges(opt.Edges) {
			return cleanup, fmt.Errorf("ingest: %s: graph.edges[0] is csv but %s has no .csv name", meta, e.Path)
		}
	case "numpy":
	default:
		return cleanup, fmt.Errorf("ingest: %s: graph.edges[0] has format %q; want csv or numpy", meta, e.Format)
	}
	opt.NumNodes = g.Nodes[0].Num
	opt.datasetName = md.DatasetName
	features, err := md.features(dir, meta)
	if err != nil {
		return cleanup, err
	}
	if err := opt.addGraphBoltFeatures(features, dir, meta); err != nil {
		return cleanup, err
	}
	ti, err := graphBoltTask(md.Tasks, opt.GraphBoltTask, meta)
	if err != nil || ti < 0 {
		return cleanup, err
	}
	task := md.Tasks[ti]
	if opt.taskMetadata, err = task.metadata(meta, ti); err != nil {
		return cleanup, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(opt.Out)), ".tierfs-graphbolt-")
	if err != nil {
		return cleanup, fmt.Errorf("ingest: %w", err)
	}
	cleanup = func() { os.RemoveAll(tmp) }
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	key := dataset.EdgeTypeKey(nodeTypeName, "to", nodeTypeName)
	edgeType := func(t string) (string, bool) { return key, t == "" || t == key || t == g.Edges[0].Type }
	if opt.EdgeSplits, err = graphBoltLinkTask(task, ti, dir, meta, edgeType, tmp); err != nil || opt.EdgeSplits != nil {
		return cleanup, err
	}
	n := opt.NumNodes
	labels := make([]int64, n)
	for i := range labels {
		labels[i] = -1
	}
	labelled := false
	opt.SplitsDir = filepath.Join(tmp, "splits")
	if err := os.Mkdir(opt.SplitsDir, 0o755); err != nil {
		return cleanup, fmt.Errorf("ingest: %w", err)
	}
	for _, set := range graphBoltSplits(task) {
		if len(set.sets) == 0 {
			continue
		}
		where := fmt.Sprintf("tasks[%d] (%s) %s", ti, task.Name, set.key)
		if len(set.sets) != 1 {
			return cleanup, fmt.Errorf("ingest: %s: %s has %d node types; tierfs ingests one", meta, where, len(set.sets))
		}
		seeds, setLabelled, err := graphBoltNodeSet(set.sets[0], where, dir, meta, "", n, &labels)
		if err != nil {
			return cleanup, err
		}
		labelled = labelled || setLabelled
		if err := writeNpy(opt.FS, filepath.Join(opt.SplitsDir, set.name+".npy"), "<i8", []int64{int64(len(seeds))}, dataset.BytesOf(seeds)); err != nil {
			return cleanup, fmt.Errorf("ingest: %w", err)
		}
	}
	if entries, _ := os.ReadDir(opt.SplitsDir); len(entries) == 0 {
		opt.SplitsDir = ""
	}
	if labelled {
		opt.Labels = filepath.Join(tmp, "labels.npy")
		if err := writeNpy(opt.FS, opt.Labels, "<i8", []int64{n}, dataset.BytesOf(labels)); err != nil {
			return cleanup, fmt.Errorf("ingest: %w", err)
		}
	}
	return cleanup, nil
}

// graphBoltNodeSet reads one set of a node task (where names it in meta, dir holds its files):
// its seeds, each below n, and its labels, written into *labels (made of n -1s, none yet, when
// nil and the set has labels; a node labelled twice must agree). ntype is the seeds' node type
// ("" for a homogeneous graph's: the errors name no type). labelled says whether it had labels.
func graphBoltNodeSet(set graphBoltSet, where, dir, meta, ntype string, n int64, labels *[]int64) (seeds []int64, labelled bool, err error) {
	ofType := graphBoltOfType(ntype)
	var ys []int64
	var seedsPath, labelsPath string
	for i, d := range set.Data {
		name := graphBoltColumn(i, d.Name)
		key := where + " " + name
		// readInts reads the numpy file of d into *v, its path into *path.
		readInts := func(path *string, v *[]int64) error {
			if err := graphBoltNumpy(meta, d.Format, key); err != nil {
				return err
			}
			var err error
			if *path, err = graphBoltPath(dir, meta, d.Path, key); err != nil {
				return err
			}
			if *v, err = ReadNpyInt64s(*path); err != nil {
				return fmt.Errorf("ingest: %s: %s: %w", meta, key, unwrapIngest(err))
			}
			return nil
		}
		switch name {
		case "seeds", "seed_nodes":
			if err := readInts(&seedsPath, &seeds); err != nil {
				return nil, false, err
			}
		case "labels":
			if err := readInts(&labelsPath, &ys); err != nil {
				return nil, false, err
			}
		}
	}
	if seedsPath == "" {
		return nil, false, fmt.Errorf("ingest: %s: %s has no seeds", meta, where)
	}
	if ys != nil && len(ys) != len(seeds) {
		return nil, false, fmt.Errorf("ingest: %s: %s: %s has %d labels for the %d seeds of %s", meta, where, labelsPath, len(ys), len(seeds), seedsPath)
	}
	if ys != nil && *labels == nil {
		*labels = make([]int64, n)
		for i := range *labels {
			(*labels)[i] = -1
		}
	}
	lab := *labels
	for i, v := range seeds {
		if v < 0 || v >= n {
			return nil, false, fmt.Errorf("ingest: %s: %s: seed %d (%s[%d]) is outside the %d nodes%s", meta, where, v, seedsPath, i, n, ofType)
		}
		if ys == nil {
			continue
		}
		if ys[i] < -1 {
			return nil, false, fmt.Errorf("ingest: %s: %s: %s[%d] is label %d; labels are class ids >= 0, or -1 for unlabelled", meta, where, labelsPath, i, ys[i])
		}
		if lab[v] >= 0 && lab[v] != ys[i] {
			return nil, false, fmt.Errorf("ingest: %s: %s: node %d%s has label %d here and %d in another set", meta, where, v, ofType, ys[i], lab[v])
		}
		lab[v] = ys[i]
		labelled = true
	}
	return seeds, labelled, nil
}

// graphBoltSplit is one split of a node task: its name in tierfs, its key in GraphBolt's
// metadata and its sets.
type graphBoltSplit struct {
	name, key string
	sets      []graphBoltSet
}

// graphBoltSplits are task's train, validation and test splits.
func graphBoltSplits(task graphBoltTaskSpec) []graphBoltSplit {
	return []graphBoltSplit{{"train", "train_set", task.TrainSet}, {"val", "validation_set", task.ValidationSet}, {"test", "test_set", task.TestSet}}
}

// graphBoltLinkTask reads task (tasks[ti] of meta) as a link prediction task when it is one: a
// set holds node_pairs or negative_dsts (GraphBolt 1.x) or 2-D seeds ((N, 2) pairs, GraphBolt
// 2.x). Each set then becomes the edge split of its type (edgeType maps the set's type, "" for a
// homogeneous graph's, to an edge type key, or says it is none): seeds or node_pairs its seed
// pairs, labels its labels, negative_dsts its negative destinations (N, k). GraphBolt's indexes
// (which seeds form one ranking query) are not stored. A (2, 2) pairs file is transposed into
// tmp, as ingest would read it as (2, n). It returns nil, nil for a node task.
func graphBoltLinkTask(task graphBoltTaskSpec, ti int, dir, meta string, edgeType func(setType string) (string, bool), tmp string) ([]EdgeSplitInput, error) {
	sets := []struct {
		name, key string
		sets      []graphBoltSet
	}{{"train", "train_set", task.TrainSet}, {"val", "validation_set", task.ValidationSet}, {"test", "test_set", task.TestSet}}
	link := false
	for _, set := range sets {
		for _, s := range set.sets {
			for i, d := range s.Data {
				switch graphBoltColumn(i, d.Name) {
				case "node_pairs", "negative_dsts":
					link = true
				case "seeds":
					if p, err := graphBoltPath(dir, meta, d.Path, "seeds"); err == nil {
						if a, err := OpenNpy(p); err == nil {
							link = link || len(a.Shape) == 2
							a.Close()
						}
					}
				}
			}
		}
	}
	if !link {
		return nil, nil
	}
	var out []EdgeSplitInput
	for _, set := range sets {
		for si, s := range set.sets {
			where := fmt.Sprintf("tasks[%d] (%s) %s[%d]", ti, task.Name, set.key, si)
			key, ok := edgeType(s.Type)
			if !ok {
				return nil, fmt.Errorf("ingest: %s: %s of a link prediction task has type %q, not an edge type of graph.edges", meta, where, s.Type)
			}
			in := EdgeSplitInput{EdgeType: key, Split: set.name}
			for i, d := range s.Data {
				name := graphBoltColumn(i, d.Name)
				k := where + " " + name
				var dst *string
				switch name {
				case "seeds", "node_pairs":
					dst = &in.Seeds
				case "labels":
					dst = &in.Labels
				case "negative_dsts":
					dst = &in.NegDst
				default:
					continue // indexes (the ranking queries) and unnamed columns after the first: not stored
				}
				if err := graphBoltNumpy(meta, d.Format, k); err != nil {
					return nil, err
				}
				p, err := graphBoltPath(dir, meta, d.Path, k)
				if err != nil {
					return nil, err
				}
				*dst = p
			}
			if in.Seeds == "" {
				return nil, fmt.Errorf("ingest: %s: %s has no seeds or node_pairs", meta, where)
			}
			if a, err := OpenNpy(in.Seeds); err == nil {
				square := slices.Equal(a.Shape, []int64{2, 2}) && !a.FortranOrder
				a.Close()
				if square { // GraphBolt's (N, 2) with N = 2: store it as (2, N)
					v, err := readNpyInts(in.Seeds)
					if err != nil {
						return nil, fmt.Errorf("ingest: %s: %s: %w", meta, where, unwrapIngest(err))
					}
					in.Seeds = filepath.Join(tmp, fmt.Sprintf("%s-%d-seeds.npy", set.name, si))
					if err := WriteNpy(in.Seeds, "<i8", []int64{2, 2}, dataset.BytesOf([]int64{v[0], v[2], v[1], v[3]})); err != nil {
						return nil, fmt.Errorf("ingest: %w", err)
					}
				}
			}
			out = append(out, in)
		}
	}
	return out, nil
}

// readNpyInts reads an integer .npy of any shape as its int64 elements in file order.
func readNpyInts(path string) ([]int64, error) {
	var out []int64
	err := eachInt(path, func(_, v int64) error { out = append(out, v); return nil })
	return out, err
}
