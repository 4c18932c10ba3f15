package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/ingest"
)

// TestIngestHeteroJSON: tfs_ingest's options with "node_types" and "edge_types" build a
// heterogeneous dataset; unknown keys and missing files are named.
func TestIngestHeteroJSON(t *testing.T) {
	dir := t.TempDir()
	x := filepath.Join(dir, "x.npy")
	if err := ingest.WriteNpy(x, "<f4", []int64{3, 1}, make([]byte, 12)); err != nil {
		t.Fatal(err)
	}
	edges := filepath.Join(dir, "e.csv")
	if err := os.WriteFile(edges, []byte("src,dst\n0,2\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	opts := map[string]any{
		"node_types": []any{map[string]any{"name": "user", "num_nodes": 2}, map[string]any{"name": "item", "features": []any{map[string]any{"name": "x", "path": x}}}},
		"edge_types": []any{map[string]any{"src": "user", "rel": "buys", "dst": "item", "edges": edges}},
		"out":        out,
	}
	js, err := json.Marshal(opts)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(js, &obj); err != nil || !ingest.IsHeteroSpec(obj) {
		t.Fatalf("IsHeteroSpec: %v", err)
	}
	if err := ingestHetero(string(js), nil); err != nil {
		t.Fatal(err)
	}
	m, err := dataset.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if et, err := m.EdgeTypeNamed("user:buys:item"); err != nil || et.Count != 2 || m.Version != dataset.Version {
		t.Fatalf("%+v %v (version %d)", et, err, m.Version)
	}
	bad := strings.Replace(string(js), `"num_nodes"`, `"nodes"`, 1)
	if err := ingestHetero(bad, nil); err == nil || !strings.Contains(err.Error(), `unknown field "nodes"`) {
		t.Errorf("unknown key: %v", err)
	}
	missing := strings.Replace(string(js), edges, edges+".gone", 1)
	if err := ingestHetero(missing, nil); err == nil || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), `edge type "user:buys:item" edges`) {
		t.Errorf("missing edges file: %v", err)
	}
}
