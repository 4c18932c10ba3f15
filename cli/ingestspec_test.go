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
	if err := runIngest([]string{"--spec", spec, out}); err != nil {
		t.Fatal(err)
	}
	m, err := dataset.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != 5 || len(m.NodeTypes) != 2 || len(m.EdgeTypes) != 2 {
		t.Fatalf("version %d, %d node types, %d edge types", m.Version, len(m.NodeTypes), len(m.EdgeTypes))
	}
	if et, err := m.EdgeTypeNamed("author:writes:paper"); err != nil || et.Count != 3 {
		t.Errorf("writes: %+v %v", et, err)
	}
	if err := runIngest([]string{"--spec", spec, out}); err == nil || !strings.Contains(err.Error(), "already holds a dataset") {
		t.Errorf("again without --force: %v", err)
	}
	if err := runIngest([]string{"--spec", spec, "--force", out}); err != nil {
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
		if err := runIngest(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
