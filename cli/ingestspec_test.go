package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/ingest"
)

// writeHeteroSpec writes the inputs of a tiny graph of two node types (paper, author) and two
// edge types, and the spec naming them (its "out" left out); it returns the spec's path.
func writeHeteroSpec(t *testing.T, dir string) string {
	t.Helper()
	write := func(name, descr string, shape []int64, data []byte) string {
		p := filepath.Join(dir, name)
		if err := ingest.WriteNpy(p, descr, shape, data); err != nil {
			t.Fatal(err)
		}
		return p
	}
	px := write("paper.npy", "<f4", []int64{3, 2}, make([]byte, 24))
	labels := write("labels.npy", "<i8", []int64{3}, int64sAsBytes([]int64{0, 1, -1}))
	cites := write("cites.npy", "<i8", []int64{2, 2}, int64sAsBytes([]int64{0, 1, 2, 2}))
	writes := write("writes.npy", "<i8", []int64{2, 3}, int64sAsBytes([]int64{0, 1, 1, 0, 0, 2}))
	spec := `{"node_types": [
		{"name": "paper", "features": [{"name": "x", "path": "` + px + `"}], "labels": "` + labels + `"},
		{"name": "author", "num_nodes": 2}],
	 "edge_types": [
		{"src": "paper", "rel": "cites", "dst": "paper", "edges": "` + cites + `"},
		{"src": "author", "rel": "writes", "dst": "paper", "edges": "` + writes + `"}]}`
	p := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(p, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestIngestSpec(t *testing.T) {
	spec := writeHeteroSpec(t, t.TempDir())
	out := filepath.Join(t.TempDir(), "g")
	if err := execute([]string{"ingest", "--spec", spec, out}); err != nil {
		t.Fatal(err)
	}
	m, err := dataset.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != dataset.Version || len(m.NodeTypes) != 2 || len(m.EdgeTypes) != 2 {
		t.Fatalf("version %d, %d node types, %d edge types", m.Version, len(m.NodeTypes), len(m.EdgeTypes))
	}
	if et, err := m.EdgeTypeNamed("author:writes:paper"); err != nil || et.Count != 3 {
		t.Errorf("writes: %+v %v", et, err)
	}
	if err := execute([]string{"ingest", "--spec", spec, out}); err == nil || !strings.Contains(err.Error(), "already holds a dataset") {
		t.Errorf("again without --force: %v", err)
	}
	if err := execute([]string{"ingest", "--spec", spec, "--force", out}); err != nil {
		t.Errorf("again with --force: %v", err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--spec", spec, "--edges", spec, out}, "--edges with --spec"},
		{[]string{"--spec", spec}, "no output directory"},
		{[]string{"--spec", spec, "--out", out, out + "2"}, "give one"},
		{[]string{out}, "goes with --spec"},
	} {
		if err := commandLine("ingest")(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestIngestSpecEdgeSplits: a spec's edge_splits and --edge-split beside --spec both become
// edge splits of the edge type they name; an edge split of an edge type the spec lacks is
// refused, naming it, and nothing is written.
func TestIngestSpecEdgeSplits(t *testing.T) {
	dir := t.TempDir()
	spec := writeHeteroSpec(t, dir)
	train := filepath.Join(dir, "train.npy") // author -> paper pairs, (n, 2)
	if err := ingest.WriteNpy(train, "<i8", []int64{3, 2}, int64sAsBytes([]int64{0, 2, 1, 0, 1, 1})); err != nil {
		t.Fatal(err)
	}
	test := filepath.Join(dir, "test.npy")
	if err := ingest.WriteNpy(test, "<i8", []int64{2, 1}, int64sAsBytes([]int64{2, 0})); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(spec)
	withSplits := strings.Replace(string(data), `"edge_types": [`, `"edge_splits": [{"edge_type": "author:writes:paper", "split": "train", "seeds": "`+train+`"}], "edge_types": [`, 1)
	if err := os.WriteFile(spec, []byte(withSplits), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "g")
	if err := execute([]string{"ingest", "--spec", spec, "--edge-split", "test=" + test + ",edge_type=paper:cites:paper", out}); err != nil {
		t.Fatal(err)
	}
	m, err := dataset.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	writes, _ := m.EdgeTypeNamed("author:writes:paper")
	cites, _ := m.EdgeTypeNamed("paper:cites:paper")
	if m.Version != dataset.Version || writes.Splits["train"].Seeds.Count != 3 || cites.Splits["test"].Seeds.Count != 1 || len(writes.Splits) != 1 || len(cites.Splits) != 1 {
		t.Fatalf("version %d, writes splits %v, cites splits %v", m.Version, writes.SplitNames(), cites.SplitNames())
	}
	bad := filepath.Join(t.TempDir(), "bad")
	err = execute([]string{"ingest", "--spec", spec, "--edge-split", "test=" + test + ",edge_type=paper:cited_by:paper", bad})
	if err == nil || !strings.Contains(err.Error(), `edge type "paper:cited_by:paper" edge split "test": the graph has no such edge type`) {
		t.Fatalf("unknown edge type: %v", err)
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("%s written after a refused ingest (%v)", bad, err)
	}
}

// TestIngestStoreDType: --store-dtype stores the float32 features at half precision, with
// --features and with --spec (where the spec's store_dtype and the flag must agree).
func TestIngestStoreDType(t *testing.T) {
	dir := t.TempDir()
	spec := writeHeteroSpec(t, dir)
	out := filepath.Join(t.TempDir(), "g")
	if err := execute([]string{"ingest", "--spec", spec, "--store-dtype", "bf16", out}); err != nil {
		t.Fatal(err)
	}
	m, err := dataset.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if f := m.NodeTypes[0].Features[0]; f.DType != dataset.BFloat16 || f.RowBytes != 4 {
		t.Errorf("paper x with --store-dtype bf16: %s, %d B rows", f.DType, f.RowBytes)
	}
	x := filepath.Join(dir, "paper.npy")
	edges := filepath.Join(dir, "cites.npy")
	out2 := filepath.Join(t.TempDir(), "h")
	if err := execute([]string{"ingest", "--edges", edges, "--features", x, "--store-dtype", "float16", "--out", out2}); err != nil {
		t.Fatal(err)
	}
	if m, err = dataset.Load(out2); err != nil || m.NodeTypes[0].Features[0].DType != dataset.Float16 {
		t.Fatalf("--store-dtype float16: %v", err)
	}
	if !strings.Contains(strings.Join(m.Created.Args, " "), "store-dtype=float16") {
		t.Errorf("the manifest's args %v do not record the store dtype", m.Created.Args)
	}
	data, _ := os.ReadFile(spec)
	os.WriteFile(spec, []byte(strings.Replace(string(data), `{"node_types"`, `{"store_dtype": "float16", "node_types"`, 1)), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--spec", spec, "--store-dtype", "bfloat16", filepath.Join(t.TempDir(), "g")}, "store dtype is named twice"},
		{[]string{"--edges", edges, "--features", x, "--store-dtype", "int8", "--out", filepath.Join(t.TempDir(), "g")}, "float16 or bfloat16"},
		{[]string{"--edges", edges, "--features", x, "--store-dtype", "float8", "--out", filepath.Join(t.TempDir(), "g")}, "--store-dtype"},
	} {
		if err := commandLine("ingest")(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
