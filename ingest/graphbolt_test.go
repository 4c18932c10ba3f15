package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
)

// writeGraphBolt writes a GraphBolt on-disk dataset (raw form) in dir: edges as CSV or .npy, node
// features feat (float32) and pos (1-D int32), edge feature weight, and a node classification task.
func writeGraphBolt(t *testing.T, dir string, rng *rand.Rand, n, e int, csv bool) (src, dst []int64, feat, pos, weight []byte, labels []int64, sets map[string][]int64) {
	t.Helper()
	for _, d := range []string{"edges", "data", "set"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	src, dst = testGraph(rng, n, e)
	edgesEntry := "      format: numpy\n      path: edges/cites.npy\n"
	if csv {
		var b strings.Builder
		for i := range src {
			fmt.Fprintf(&b, "%d,%d\n", src[i], dst[i])
		}
		os.WriteFile(filepath.Join(dir, "edges", "cites.csv"), []byte(b.String()), 0o644)
		edgesEntry = "      format: csv\n      path: edges/cites.csv\n"
	} else {
		writeNpyEdges(t, filepath.Join(dir, "edges", "cites.npy"), "<i8", src, dst, false)
	}
	feat, pos, weight = randomRows(rng, int64(n), 16), randomRows(rng, int64(n), 4), randomRows(rng, int64(e), 4)
	WriteNpy(filepath.Join(dir, "data", "feat.npy"), "<f4", []int64{int64(n), 4}, feat)
	WriteNpy(filepath.Join(dir, "data", "pos.npy"), "<i4", []int64{int64(n)}, pos)
	WriteNpy(filepath.Join(dir, "data", "weight.npy"), "<f4", []int64{int64(e)}, weight)
	perm := rng.Perm(n)
	sets = map[string][]int64{}
	labels = make([]int64, n)
	for i := range labels {
		labels[i] = -1
	}
	cut := []int{0, n / 2, n/2 + n/5, n/2 + 2*n/5}
	var tasks strings.Builder
	for k, name := range []string{"train", "val", "test"} {
		var seeds, ys []int64
		for _, v := range perm[cut[k]:cut[k+1]] {
			seeds = append(seeds, int64(v))
			ys = append(ys, int64(v%7))
			labels[v] = int64(v % 7)
		}
		sets[name] = seeds
		WriteNpy(filepath.Join(dir, "set", name+"-seeds.npy"), "<i8", []int64{int64(len(seeds))}, dataset.BytesOf(seeds))
		WriteNpy(filepath.Join(dir, "set", name+"-labels.npy"), "<i8", []int64{int64(len(ys))}, dataset.BytesOf(ys))
		key := map[string]string{"train": "train_set", "val": "validation_set", "test": "test_set"}[name]
		fmt.Fprintf(&tasks, "    %s:\n      - data:\n          - name: seeds\n            format: numpy\n            in_memory: true\n            path: set/%s-seeds.npy\n          - name: labels\n            format: numpy\n            path: set/%s-labels.npy\n", key, name, name)
	}
	md := fmt.Sprintf(`dataset_name: test
graph:
  nodes:
    - num: %d
  edges:
    -
%sfeature_data:
  - domain: node
    name: feat
    format: numpy
    in_memory: false
    path: data/feat.npy
  - domain: node
    name: pos
    format: numpy
    path: data/pos.npy
  - domain: edge
    name: weight
    format: numpy
    path: data/weight.npy
tasks:
  - name: node_classification
    num_classes: 7
%s`, n, strings.Replace(edgesEntry, "      format", "      format", 1), tasks.String())
	md = strings.Replace(md, "    -\n      format", "    - format", 1)
	if err := os.WriteFile(filepath.Join(dir, GraphBoltMetadata), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	return
}

func TestGraphBoltRoundTrip(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, csv := range []bool{true, false} {
		gb := t.TempDir()
		n, e := 200, 1500
		src, dst, feat, pos, weight, labels, sets := writeGraphBolt(t, gb, rng, n, e, csv)
		// metadata.yaml's dataset_name is kept; the csv one has none (GraphBolt's None), and so
		// the manifest none.
		name := "test"
		if csv {
			name = ""
			md := filepath.Join(gb, GraphBoltMetadata)
			os.WriteFile(md, []byte(strings.Replace(string(mustReadFile(t, md)), "dataset_name: test\n", "", 1)), 0o644)
		}
		parent := t.TempDir()
		out := filepath.Join(parent, "ds")
		if _, err := Ingest(Options{GraphBolt: gb, Out: out}); err != nil {
			t.Fatalf("csv=%v: %v", csv, err)
		}
		m := loadVerified(t, out)
		if m.DatasetName != name || bytes.Contains(mustReadFile(t, filepath.Join(out, dataset.ManifestName)), []byte("dataset_name")) != (name != "") {
			t.Fatalf("csv=%v: dataset_name %q, want %q (the key written only for a name)", csv, m.DatasetName, name)
		}
		if f, _ := m.Feature(""); f.Name != "feat" {
			t.Fatalf("default feature %q, want feat (GraphBolt's first node feature)", f.Name)
		}
		for _, c := range []struct {
			name string
			want []byte
		}{{"feat", feat}, {"pos", pos}} {
			spec, _, err := m.AnyFeature(c.name)
			if err != nil || !bytes.Equal(featureBytes(t, m, spec), c.want) {
				t.Fatalf("csv=%v: node feature %s differs (%v)", csv, c.name, err)
			}
		}
		spec, isEdge, err := m.AnyFeature("weight")
		_, want := referenceEdgeRows(int64(n), src, dst, weight, 4, false, false)
		if err != nil || !isEdge || !bytes.Equal(featureBytes(t, m, spec), want) {
			t.Fatalf("csv=%v: edge feature weight differs (%v)", csv, err)
		}
		checkLists(t, neighborLists(t, m), referenceLists(int64(n), src, dst, false, false, false))
		if got := readInt64File(t, m.Path(m.Nodes().Labels.File), int64(n)); !slices.Equal(got, labels) {
			t.Fatalf("csv=%v: labels differ", csv)
		}
		for name, seeds := range sets {
			s := m.Nodes().Splits[name]
			if got := readInt64File(t, m.Path(s.File), s.Count); !slices.Equal(got, seeds) {
				t.Fatalf("csv=%v: split %s differs", csv, name)
			}
		}
		if entries, _ := os.ReadDir(parent); len(entries) != 1 {
			t.Fatalf("left %d entries beside the dataset (the temporary labels and splits?)", len(entries))
		}
	}
}

func TestGraphBoltRefusals(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name string
		edit func(md string) string
		want string
	}{
		{"preprocessed", func(md string) string {
			return "graph_topology:\n  type: FusedCSCSamplingGraph\n  path: preprocessed/fused.pt\n" + md[strings.Index(md, "feature_data:"):]
		}, "graph_topology (preprocessed by GraphBolt) but no graph section"},
		{"two node types, one unnamed", func(md string) string { // a second type makes it heterogeneous
			return strings.Replace(md, "  nodes:\n", "  nodes:\n    - type: author\n      num: 3\n", 1)
		}, "graph.nodes[1] has no type; a graph of several types names each"},
		{"torch features", func(md string) string {
			return strings.Replace(md, "    name: feat\n    format: numpy", "    name: feat\n    format: torch", 1)
		}, `feature_data[0] (feat) has format "torch"`},
		{"graph feature", func(md string) string { return strings.Replace(md, "domain: edge", "domain: graph", 1) }, `has domain "graph"`},
		{"link prediction of 1-D pairs", func(md string) string { return strings.Replace(md, "name: seeds", "name: node_pairs", 1) }, "; want (2, n) or (n, 2)"},
		{"bad yaml", func(md string) string { return md + "\n  - : [" }, "is not valid YAML"},
		{"missing file", func(md string) string { return strings.Replace(md, "data/pos.npy", "data/nope.npy", 1) }, "nope.npy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gb := t.TempDir()
			writeGraphBolt(t, gb, rng, 40, 100, true)
			md, _ := os.ReadFile(filepath.Join(gb, GraphBoltMetadata))
			os.WriteFile(filepath.Join(gb, GraphBoltMetadata), []byte(tc.edit(string(md))), 0o644)
			parent := t.TempDir()
			_, err := Ingest(Options{GraphBolt: gb, Out: filepath.Join(parent, "ds")})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 0 {
				t.Fatalf("a refused GraphBolt ingest left %d entries", len(entries))
			}
		})
	}
	// A seed outside the nodes, and a label a node gets differently in two sets.
	gb := t.TempDir()
	_, _, _, _, _, _, sets := writeGraphBolt(t, gb, rng, 40, 100, false)
	bad := append(slices.Clone(sets["test"]), 40)
	WriteNpy(filepath.Join(gb, "set", "test-seeds.npy"), "<i8", []int64{int64(len(bad))}, dataset.BytesOf(bad))
	ys := make([]int64, len(bad))
	WriteNpy(filepath.Join(gb, "set", "test-labels.npy"), "<i8", []int64{int64(len(ys))}, dataset.BytesOf(ys))
	if _, err := Ingest(Options{GraphBolt: gb, Out: filepath.Join(t.TempDir(), "ds")}); err == nil || !strings.Contains(err.Error(), "seed 40 (") {
		t.Fatalf("seed outside the nodes: %v", err)
	}
	dup := append(slices.Clone(sets["test"]), sets["train"][0])
	WriteNpy(filepath.Join(gb, "set", "test-seeds.npy"), "<i8", []int64{int64(len(dup))}, dataset.BytesOf(dup))
	ys = make([]int64, len(dup))
	ys[len(ys)-1] = (sets["train"][0]%7 + 1) % 7
	WriteNpy(filepath.Join(gb, "set", "test-labels.npy"), "<i8", []int64{int64(len(ys))}, dataset.BytesOf(ys))
	if _, err := Ingest(Options{GraphBolt: gb, Out: filepath.Join(t.TempDir(), "ds")}); err == nil || !strings.Contains(err.Error(), "in another set") {
		t.Fatalf("conflicting labels: %v", err)
	}
	if _, err := Ingest(Options{GraphBolt: gb, Edges: "x.npy", Out: filepath.Join(t.TempDir(), "ds")}); err == nil || !strings.Contains(err.Error(), "do not set Edges") {
		t.Fatalf("GraphBolt beside other inputs: %v", err)
	}
}

// TestGraphBoltTask ingests each task of a GraphBolt dataset with two, by name and by index,
// and refuses an unknown task with an error listing the tasks.
func TestGraphBoltTask(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	gb := t.TempDir()
	n := 120
	_, _, _, _, _, labels, sets := writeGraphBolt(t, gb, rng, n, 400, false)
	// The second task: its own train seeds (a random subset) labelled v % 3, no val or test.
	var other, otherYs []int64
	otherLabels := make([]int64, n)
	for v := range n {
		otherLabels[v] = -1
		if rng.IntN(3) == 0 {
			other, otherYs = append(other, int64(v)), append(otherYs, int64(v%3))
			otherLabels[v] = int64(v % 3)
		}
	}
	WriteNpy(filepath.Join(gb, "set", "other-seeds.npy"), "<i8", []int64{int64(len(other))}, dataset.BytesOf(other))
	WriteNpy(filepath.Join(gb, "set", "other-labels.npy"), "<i8", []int64{int64(len(otherYs))}, dataset.BytesOf(otherYs))
	f, err := os.OpenFile(filepath.Join(gb, GraphBoltMetadata), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`  - name: other_task
    num_classes: 3
    train_set:
      - data:
          - name: seeds
            format: numpy
            path: set/other-seeds.npy
          - name: labels
            format: numpy
            path: set/other-labels.npy
`)
	f.Close()
	for _, tc := range []struct {
		task   string
		labels []int64
		splits map[string][]int64
	}{
		{"", labels, sets},
		{"node_classification", labels, sets},
		{"0", labels, sets},
		{"other_task", otherLabels, map[string][]int64{"train": other}},
		{"1", otherLabels, map[string][]int64{"train": other}},
	} {
		out := filepath.Join(t.TempDir(), "ds")
		m, err := Ingest(Options{GraphBolt: gb, GraphBoltTask: tc.task, Out: out})
		if err != nil {
			t.Fatalf("task %q: %v", tc.task, err)
		}
		m = loadVerified(t, out)
		if got := readInt64File(t, m.Path(m.Nodes().Labels.File), int64(n)); !slices.Equal(got, tc.labels) {
			t.Fatalf("task %q: labels differ", tc.task)
		}
		if len(m.Nodes().Splits) != len(tc.splits) {
			t.Fatalf("task %q: %d splits, want %d", tc.task, len(m.Nodes().Splits), len(tc.splits))
		}
		for name, seeds := range tc.splits {
			s := m.Nodes().Splits[name]
			if got := readInt64File(t, m.Path(s.File), s.Count); !slices.Equal(got, seeds) {
				t.Fatalf("task %q: split %s differs", tc.task, name)
			}
		}
	}
	for _, bad := range []string{"nope", "2", "-1"} {
		parent := t.TempDir()
		_, err := Ingest(Options{GraphBolt: gb, GraphBoltTask: bad, Out: filepath.Join(parent, "ds")})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("no task %q", bad)) || !strings.Contains(err.Error(), `0: "node_classification", 1: "other_task"`) {
			t.Fatalf("task %q: error %v, want one naming it and listing the tasks", bad, err)
		}
		if entries, _ := os.ReadDir(parent); len(entries) != 0 {
			t.Fatalf("task %q: a refused ingest left %d entries", bad, len(entries))
		}
	}
	if _, err := Ingest(Options{Features: "x.npy", GraphBoltTask: "0", Out: filepath.Join(t.TempDir(), "ds")}); err == nil || !strings.Contains(err.Error(), "without GraphBolt") {
		t.Fatalf("GraphBoltTask without GraphBolt: %v", err)
	}
}

// writeGraphBoltHetero writes metadata.yaml of a GraphBolt dataset in gb over the graph of
// newHeteroGraph: every edge type as GraphBolt's (2, E) .npy but author:reviews:paper as
// headerless CSV, the node and edge features where newHeteroGraph wrote them, and a task whose
// train and validation sets are paper's splits with their labels. It changes g to what the
// ingested dataset should hold: paper's labels are those of the seeds, -1 elsewhere.
func writeGraphBoltHetero(t *testing.T, gb string, g *heteroGraph) {
	t.Helper()
	var md strings.Builder
	md.WriteString("dataset_name: hetero\ngraph:\n  nodes:\n")
	for _, n := range []string{"paper", "author", "institution"} {
		fmt.Fprintf(&md, "    - type: %s\n      num: %d\n", n, g.counts[n])
	}
	md.WriteString("  edges:\n")
	for i, in := range g.opt.EdgeTypes {
		e := g.edges[in.Key()]
		if in.Rel == "reviews" {
			var b strings.Builder
			for k := range e[0] {
				fmt.Fprintf(&b, "%d,%d\n", e[0][k], e[1][k])
			}
			if err := os.WriteFile(filepath.Join(gb, "reviews.csv"), []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&md, "    - type: %s\n      format: csv\n      path: reviews.csv\n", in.Key())
			continue
		}
		name := fmt.Sprintf("edges%d.npy", i)
		writeNpyEdges(t, filepath.Join(gb, name), "<i8", e[0], e[1], false)
		fmt.Fprintf(&md, "    - type: %s\n      format: numpy\n      path: %s\n", in.Key(), name)
	}
	md.WriteString("  feature_data:\n")
	for _, n := range g.opt.NodeTypes {
		for _, f := range n.Features {
			fmt.Fprintf(&md, "    - domain: node\n      type: %s\n      name: %s\n      format: numpy\n      in_memory: false\n      path: %s\n", n.Name, f.Name, f.Path)
		}
	}
	for _, e := range g.opt.EdgeTypes {
		for _, f := range e.EdgeFeatures {
			fmt.Fprintf(&md, "    - domain: edge\n      type: %s\n      name: %s\n      format: numpy\n      path: %s\n", e.Key(), f.Name, f.Path)
		}
	}
	md.WriteString("tasks:\n  - name: venue\n    num_classes: 4\n")
	labels := make([]int64, g.counts["paper"])
	for i := range labels {
		labels[i] = -1
	}
	for _, set := range []struct{ name, key string }{{"train", "train_set"}, {"val", "validation_set"}} {
		seeds := g.splits["paper"][set.name]
		ys := make([]int64, len(seeds))
		for i, v := range seeds {
			ys[i] = g.labels["paper"][v]
			labels[v] = ys[i]
		}
		WriteNpy(filepath.Join(gb, set.name+"-seeds.npy"), "<i8", []int64{int64(len(seeds))}, dataset.BytesOf(seeds))
		WriteNpy(filepath.Join(gb, set.name+"-labels.npy"), "<i8", []int64{int64(len(ys))}, dataset.BytesOf(ys))
		fmt.Fprintf(&md, "    %s:\n      - type: paper\n        data:\n          - name: seed_nodes\n            format: numpy\n            path: %s-seeds.npy\n          - name: labels\n            format: numpy\n            path: %s-labels.npy\n", set.key, set.name, set.name)
	}
	g.labels["paper"] = labels
	if err := os.WriteFile(filepath.Join(gb, GraphBoltMetadata), []byte(md.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGraphBoltHetero ingests a GraphBolt dataset of three node types and four edge types and
// reads every type back (heteroGraph.check: CSC per edge type, features, edge features by edge
// id, labels, splits); nothing is left beside the dataset.
func TestGraphBoltHetero(t *testing.T) {
	for i := range 3 {
		seed := rand.Uint64()
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Logf("seed %d", seed)
			dir := t.TempDir()
			g := newHeteroGraph(t, dir, rand.New(rand.NewPCG(seed, 0)))
			gb := filepath.Join(dir, "gb")
			if err := os.Mkdir(gb, 0o755); err != nil {
				t.Fatal(err)
			}
			writeGraphBoltHetero(t, gb, g)
			parent := t.TempDir()
			out := filepath.Join(parent, "ds")
			m, err := Ingest(Options{GraphBolt: gb, Out: out})
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if m.Version != dataset.Version {
				t.Errorf("version %d", m.Version)
			}
			g.check(t, out)
			loaded, err := dataset.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			if loaded.DatasetName != "hetero" {
				t.Errorf("dataset_name %q, want metadata.yaml's \"hetero\"", loaded.DatasetName)
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 1 {
				t.Errorf("left %d entries beside the dataset (the temporary labels and splits?)", len(entries))
			}
		})
	}
}

// TestGraphBoltHeteroRefusals: options of a homogeneous graph, and metadata naming types that are
// not there, are refused with the key at fault.
func TestGraphBoltHeteroRefusals(t *testing.T) {
	dir := t.TempDir()
	g := newHeteroGraph(t, dir, rand.New(rand.NewPCG(1, 2)))
	gb := filepath.Join(dir, "gb")
	os.Mkdir(gb, 0o755)
	writeGraphBoltHetero(t, gb, g)
	out := filepath.Join(t.TempDir(), "ds")
	if _, err := Ingest(Options{GraphBolt: gb, Out: out, Undirected: true}); err == nil || !strings.Contains(err.Error(), "Undirected applies to a homogeneous") {
		t.Errorf("Undirected: %v", err)
	}
	meta := filepath.Join(gb, GraphBoltMetadata)
	orig := string(mustReadFile(t, meta))
	for _, c := range []struct{ from, to, want string }{
		{"domain: node\n      type: author", "domain: node\n      type: venue", `names node type "venue", not in graph.nodes`},
		{"domain: edge\n      type: author:writes:paper", "domain: edge\n      type: author:wrote:paper", `names edge type "author:wrote:paper"`},
		{"- type: paper\n        data", "- type: journal\n        data", `has type "journal", not a node type`},
		{"type: paper:cites:paper", "type: paper-cites-paper", `want "src:rel:dst"`},
	} {
		if !strings.Contains(orig, c.from) {
			t.Fatalf("metadata has no %q", c.from)
		}
		os.WriteFile(meta, []byte(strings.Replace(orig, c.from, c.to, 1)), 0o644)
		if _, err := Ingest(Options{GraphBolt: gb, Out: out}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.to, err, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: published a dataset", c.to)
		}
	}
}

// TestGraphBoltOneNamedType ingests a GraphBolt dataset of one node type and one edge type that
// name their types (GraphBolt's heterogeneous form): the dataset is typed (Typed, from version 8), its type
// names kept, every node and edge feature and the task's labels and seeds under its type. The
// same graph without names is a homogeneous (untyped) dataset.
func TestGraphBoltOneNamedType(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	gb := t.TempDir()
	n, e := 120, 700
	src, dst, feat, pos, weight, labels, sets := writeGraphBolt(t, gb, rng, n, e, false)
	plain := filepath.Join(t.TempDir(), "plain")
	if _, err := Ingest(Options{GraphBolt: gb, Out: plain}); err != nil {
		t.Fatal(err)
	}
	if m := loadVerified(t, plain); m.IsTyped() || m.Version != dataset.Version {
		t.Fatalf("GraphBolt without type names: typed %v, version %d; want a homogeneous dataset", m.IsTyped(), m.Version)
	}
	path := filepath.Join(gb, GraphBoltMetadata)
	md := string(mustReadFile(t, path))
	for _, r := range [][2]string{
		{"    - num: ", "    - type: paper\n      num: "},
		{"    - format: numpy\n      path: edges", "    - type: paper:cites:paper\n      format: numpy\n      path: edges"},
		{"  - domain: node\n", "  - domain: node\n    type: paper\n"},
		{"  - domain: edge\n", "  - domain: edge\n    type: paper:cites:paper\n"},
		{"      - data:", "      - type: paper\n        data:"},
	} {
		if !strings.Contains(md, r[0]) {
			t.Fatalf("metadata.yaml has no %q", r[0])
		}
		md = strings.ReplaceAll(md, r[0], r[1])
	}
	if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "typed")
	if _, err := Ingest(Options{GraphBolt: gb, Out: out}); err != nil {
		t.Fatal(err)
	}
	m := loadVerified(t, out)
	if !m.IsTyped() || !m.Typed || m.Version != dataset.Version || m.NodeTypes[0].Name != "paper" || len(m.EdgeTypes) != 1 || m.EdgeTypes[0].Key() != "paper:cites:paper" {
		t.Fatalf("typed %v, version %d, node type %q, %d edge types; want a typed dataset of the current version of paper and paper:cites:paper", m.IsTyped(), m.Version, m.NodeTypes[0].Name, len(m.EdgeTypes))
	}
	nt, et := &m.NodeTypes[0], &m.EdgeTypes[0]
	for i, c := range []struct {
		name string
		want []byte
	}{{"feat", feat}, {"pos", pos}} {
		if len(nt.Features) != 2 || nt.Features[i].Name != c.name || !bytes.Equal(featureBytes(t, m, &nt.Features[i]), c.want) {
			t.Fatalf("node feature %d: want %s with its rows (have %d features)", i, c.name, len(nt.Features))
		}
	}
	_, want := referenceEdgeRows(int64(n), src, dst, weight, 4, false, false)
	w := slices.IndexFunc(et.Features, func(f dataset.FeatureSpec) bool { return f.Name == "weight" })
	if w < 0 || !bytes.Equal(featureBytes(t, m, &et.Features[w]), want) {
		t.Fatalf("edge feature weight (at %d of %d) missing or its rows differ by edge id", w, len(et.Features))
	}
	if got := readInt64File(t, m.Path(nt.Labels.File), int64(n)); !slices.Equal(got, labels) {
		t.Fatalf("labels differ")
	}
	for name, seeds := range sets {
		s := nt.Splits[name]
		if got := readInt64File(t, m.Path(s.File), s.Count); !slices.Equal(got, seeds) {
			t.Fatalf("split %s differs", name)
		}
	}
	// FeaturesInPlace reads the node features where they are, as for an untyped graph.
	inPlace := filepath.Join(t.TempDir(), "in-place")
	if _, err := Ingest(Options{GraphBolt: gb, Out: inPlace, FeaturesInPlace: true}); err != nil {
		t.Fatal(err)
	}
	m = loadVerified(t, inPlace)
	for i, want := range [][]byte{feat, pos} {
		f := &m.NodeTypes[0].Features[i]
		if !m.Typed || !f.InPlace || !bytes.Equal(featureBytes(t, m, f), want) {
			t.Fatalf("in place: typed %v, feature %s in place %v, or its rows differ", m.Typed, f.Name, f.InPlace)
		}
	}
}

// GraphBolt accepts set columns without a name (DGL 2.1.0's
// test_OnDiskDataset_TVTSet_ItemSet_names: names ("seed_nodes", "labels", None), and Case 2 of
// test_OnDiskDataset_TVTSet_ItemSet_id_label: one unnamed column). ingest reads an unnamed first
// column as the seeds and leaves later unnamed ones out.
func TestGraphBoltUnnamedColumns(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	gb := t.TempDir()
	n := 80
	_, _, _, _, _, labels, sets := writeGraphBolt(t, gb, rng, n, 300, false)
	path := filepath.Join(gb, GraphBoltMetadata)
	raw, _ := os.ReadFile(path)
	md := string(raw)
	// train: a third column, unnamed (the labels again); test: its seeds unnamed.
	md = strings.Replace(md, "            path: set/train-labels.npy\n", "            path: set/train-labels.npy\n          - format: numpy\n            path: set/train-labels.npy\n", 1)
	md = strings.Replace(md, "          - name: seeds\n            format: numpy\n            in_memory: true\n            path: set/test-seeds.npy", "          - format: numpy\n            path: set/test-seeds.npy", 1)
	if md == string(raw) || strings.Count(md, "name: seeds") != 2 {
		t.Fatalf("the metadata edit did not apply:\n%s", md)
	}
	os.WriteFile(path, []byte(md), 0o644)
	out := filepath.Join(t.TempDir(), "ds")
	if _, err := Ingest(Options{GraphBolt: gb, Out: out}); err != nil {
		t.Fatal(err)
	}
	m := loadVerified(t, out)
	for name, seeds := range sets {
		s := m.Nodes().Splits[name]
		if got := readInt64File(t, m.Path(s.File), s.Count); !slices.Equal(got, seeds) {
			t.Fatalf("split %s differs", name)
		}
	}
	if got := readInt64File(t, m.Path(m.Nodes().Labels.File), int64(n)); !slices.Equal(got, labels) {
		t.Fatal("labels differ")
	}
}

// GraphBolt's own layout may list a feature both in graph.feature_data (an attribute of its
// sampling graph) and in the top-level feature_data (its feature store): ingest takes it once.
// The same name for two files is refused.
func TestGraphBoltFeatureInGraphSectionAndFeatureList(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct{ name, path, want string }{
		{"same file", "data/feat.npy", ""},
		{"other file", "data/other.npy", `node feature "feat" is listed twice with different files`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gb := t.TempDir()
			_, _, feat, _, _, _, _ := writeGraphBolt(t, gb, rng, 40, 100, false)
			WriteNpy(filepath.Join(gb, "data", "other.npy"), "<f4", []int64{40, 4}, feat)
			path := filepath.Join(gb, GraphBoltMetadata)
			raw, _ := os.ReadFile(path)
			graph := fmt.Sprintf("  feature_data:\n    - domain: node\n      name: feat\n      format: numpy\n      path: %s\nfeature_data:\n", tc.path)
			os.WriteFile(path, []byte(strings.Replace(string(raw), "feature_data:\n", graph, 1)), 0o644)
			out := filepath.Join(t.TempDir(), "ds")
			_, err := Ingest(Options{GraphBolt: gb, Out: out})
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want one containing %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := loadVerified(t, out)
			var names []string
			for _, f := range m.Nodes().Features {
				names = append(names, f.Name)
			}
			if !slices.Equal(names, []string{"feat", "pos"}) {
				t.Fatalf("node features %v, want [feat pos]", names)
			}
			if spec, _, err := m.AnyFeature("feat"); err != nil || !bytes.Equal(featureBytes(t, m, spec), feat) {
				t.Fatalf("feat differs (%v)", err)
			}
			// The graph section's feature is an attribute of the sampling graph; the others are not.
			for _, f := range append(slices.Clone(m.Nodes().Features), m.Edges().Features...) {
				if f.SamplingGraph != (f.Name == "feat") {
					t.Fatalf("feature %s: sampling_graph %v, want it on feat alone (graph.feature_data)", f.Name, f.SamplingGraph)
				}
			}
		})
	}
}

// GraphBolt's feature metadata (num_categories, a user's keys: every key but domain, type, name,
// format, path and in_memory) and its task's (name and every key but the sets) are kept in the
// manifest as given; a feature of (N, a, b) rows is stored flat, of dim a*b, with its row shape.
func TestGraphBoltMetadataAndRowShape(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	gb := t.TempDir()
	writeGraphBolt(t, gb, rng, 40, 100, false)
	cube := randomRows(rng, 40, 2*3*4)
	WriteNpy(filepath.Join(gb, "data", "cube.npy"), "<f4", []int64{40, 2, 3}, cube)
	path := filepath.Join(gb, GraphBoltMetadata)
	raw, _ := os.ReadFile(path)
	md := strings.Replace(string(raw), "    path: data/feat.npy\n", "    path: data/feat.npy\n    num_categories: 10\n    note: {by: a user, tags: [a, b]}\n", 1)
	md = strings.Replace(md, "feature_data:\n", "feature_data:\n  - domain: node\n    name: cube\n    format: numpy\n    path: data/cube.npy\n", 1)
	md = strings.Replace(md, "    num_classes: 7\n", "    num_classes: 7\n    note: a user's key\n", 1)
	os.WriteFile(path, []byte(md), 0o644)
	out := filepath.Join(t.TempDir(), "ds")
	if _, err := Ingest(Options{GraphBolt: gb, Out: out}); err != nil {
		t.Fatal(err)
	}
	m := loadVerified(t, out)
	asJSON := func(v map[string]json.RawMessage) string { b, _ := json.Marshal(v); return string(b) }
	feat, _, err := m.AnyFeature("feat")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := asJSON(feat.Metadata), `{"note":{"by":"a user","tags":["a","b"]},"num_categories":10}`; got != want {
		t.Fatalf("feat's metadata %s, want %s (in_memory is GraphBolt's, not metadata)", got, want)
	}
	if pos, _, _ := m.AnyFeature("pos"); pos.Metadata != nil {
		t.Fatalf("pos has metadata %s, want none", asJSON(pos.Metadata))
	}
	if got, want := asJSON(m.TaskMetadata), `{"name":"node_classification","note":"a user's key","num_classes":7}`; got != want {
		t.Fatalf("task metadata %s, want %s", got, want)
	}
	spec, _, err := m.AnyFeature("cube")
	if err != nil {
		t.Fatal(err)
	}
	if spec.Dim != 6 || !slices.Equal(spec.Shape, []int64{2, 3}) || !bytes.Equal(featureBytes(t, m, spec), cube) {
		t.Fatalf("cube: dim %d shape %v (bytes equal %v), want dim 6, shape [2 3] and the input's rows", spec.Dim, spec.Shape, bytes.Equal(featureBytes(t, m, spec), cube))
	}
}
