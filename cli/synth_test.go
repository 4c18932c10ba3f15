package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
)

// TestSynthPresetFlags: a preset sets its values, the flags given override them, and the rest
// keep the preset's (not the flags' defaults).
func TestSynthPresetFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ds")
	stdout := os.Stdout
	os.Stdout, _ = os.Open(os.DevNull)
	err := execute([]string{"synth", "--preset", "igb-small", "--scale", "0.002", "--dim", "0", "--degree-exponent", "3", "--out", out})
	os.Stdout = stdout
	if err != nil {
		t.Fatal(err)
	}
	m, err := dataset.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"nodes=2000", "avg-degree=12.07", "dim=0", "classes=19", "train-frac=0.6", "degree-exponent=3", "locality=0.5", "community-size=1024", "seed=1"} {
		if !slices.Contains(m.Created.Args, want) {
			t.Errorf("args %v lack %s", m.Created.Args, want)
		}
	}
	if m.Nodes().Count != 2000 || m.Edges().Count != 24140 || len(m.Nodes().Features) != 0 {
		t.Errorf("%d nodes, %d edges, features %v", m.Nodes().Count, m.Edges().Count, m.Nodes().Features)
	}
}

func TestSynthFlagErrors(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ds")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--locality", "2"}, "locality 2 is out of range"},
		{[]string{"--degree-exponent", "1"}, "degree-exponent 1 is out of range"},
		{[]string{"--preset", "products"}, `unknown preset "products" (presets: igb-medium, igb-small, ogbn-papers100M, ogbn-products)`},
		{[]string{"--scale", "0.5"}, "--scale 0.5 needs --preset"},
		{[]string{"--preset", "igb-small", "--scale", "0.5", "--nodes", "10"}, "--scale 0.5 and --nodes 10 both set the node count"},
		{[]string{"--preset", "igb-small", "--scale", "-1"}, "scale -1 is out of range"},
	} {
		// Options are checked before anything is written.
		err := commandLine("synth")(append(c.args, "--dim", "0", "--out", out))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one containing %q", c.args, err, c.want)
		}
	}
}

// TestSynthHeteroPreset: a heterogeneous preset makes every type; flags that set one type's
// values are refused.
func TestSynthHeteroPreset(t *testing.T) {
	out := filepath.Join(t.TempDir(), "mag")
	stdout := os.Stdout
	os.Stdout, _ = os.Open(os.DevNull)
	err := execute([]string{"synth", "--preset", "ogbn-mag", "--scale", "0.001", "--seed", "3", "--out", out})
	os.Stdout = stdout
	if err != nil {
		t.Fatal(err)
	}
	m, err := dataset.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != dataset.Version || len(m.NodeTypes) != 4 || len(m.EdgeTypes) != 4 {
		t.Fatalf("version %d, %d node types, %d edge types", m.Version, len(m.NodeTypes), len(m.EdgeTypes))
	}
	if p, err := m.NodeTypeNamed("paper"); err != nil || p.Count != 736 || p.Features[0].Dim != 128 {
		t.Errorf("paper: %+v %v", p, err)
	}
	err = execute([]string{"synth", "--preset", "ogbn-mag", "--dim", "4", "--out", out + "2"})
	if err == nil || !strings.Contains(err.Error(), "--dim with the heterogeneous preset ogbn-mag") {
		t.Errorf("--dim with a heterogeneous preset: %v", err)
	}
}

// TestSynthSpec: `tierfs synth --spec FILE` makes the graph the file describes; unknown keys,
// --scale and a preset beside it are refused.
func TestSynthSpec(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.json")
	body := `{"node_types": [{"name": "paper", "nodes": 500, "dim": 8, "classes": 3}, {"name": "author", "nodes": 900, "dim": 4, "dtype": "float16"}],
	 "edge_types": [{"src": "author", "rel": "writes", "dst": "paper", "avg_degree": 3}, {"src": "paper", "rel": "cites", "dst": "paper", "avg_degree": 5}]}`
	if err := os.WriteFile(spec, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "g")
	if err := execute([]string{"synth", "--spec", spec, "--seed", "2", "--out", out}); err != nil {
		t.Fatal(err)
	}
	m, err := dataset.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	a, err := m.NodeTypeNamed("author")
	if err != nil || a.Count != 900 || a.Features[0].DType != dataset.Float16 || len(m.EdgeTypes) != 2 || m.EdgeTypes[0].Count != 1500 {
		t.Fatalf("author %+v, %v; edge types %+v", a, err, m.EdgeTypes)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"node_types": [{"name": "p", "nodes": 5, "dims": 3}]}`), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--spec", bad, "--out", out + "2"}, `unknown field "dims"`},
		{[]string{"--spec", spec, "--scale", "2", "--out", out + "3"}, "--scale with --spec"},
		{[]string{"--spec", spec, "--preset", "ogbn-mag", "--out", out + "4"}, "give one"},
	} {
		if err := commandLine("synth")(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v; want %q", c.args, err, c.want)
		}
	}
}
