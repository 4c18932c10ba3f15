package dataset

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeHetero commits a version 5 dataset: node types paper (4 nodes, feature x, labels,
// split train) and author (2 nodes, feature x: the same name on another type), edge types
// author:writes:paper (with an edge feature) and paper:cites:paper.
func writeHetero(t *testing.T, dir string) *Manifest {
	t.Helper()
	var files []string
	file := func(path string, vals []int64) string {
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := WriteInt64s(nil, full, vals); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
		return path
	}
	feature := func(typeDir string, count int64) FeatureSpec {
		sp, err := NewFeatureSpec("x", Float32, 2, count, 1, 512)
		if err != nil {
			t.Fatal(err)
		}
		sp.Files[0] = typeDir + "/features.x.0.bin"
		if err := os.MkdirAll(filepath.Join(dir, typeDir), 0o755); err != nil {
			t.Fatal(err)
		}
		fw, err := NewFeatureWriter(nil, dir, &sp)
		if err != nil {
			t.Fatal(err)
		}
		if err := fw.WriteRows(float32Bytes(make([]float32, 2*count))); err != nil {
			t.Fatal(err)
		}
		if err := fw.Close(); err != nil {
			t.Fatal(err)
		}
		files = append(files, sp.Files[0])
		return sp
	}
	pd, ad := NodeTypeDir("paper"), NodeTypeDir("author")
	wd, cd := EdgeTypeDir("author", "writes", "paper"), EdgeTypeDir("paper", "cites", "paper")
	m := &Manifest{BlockSize: 512,
		NodeTypes: []NodeType{
			{Name: "paper", Count: 4, Features: []FeatureSpec{feature(pd, 4)},
				Labels: &LabelSpec{ArraySpec{file(pd+"/labels.bin", []int64{0, 1, 0, 1}), Int64}, 2},
				Splits: map[string]IDsSpec{"train": {ArraySpec{file(pd+"/train.ids", []int64{0, 2}), Int64}, 2}}},
			{Name: "author", Count: 2, Features: []FeatureSpec{feature(ad, 2)}},
		},
		EdgeTypes: []EdgeType{
			{Src: "author", Rel: "writes", Dst: "paper", Count: 3, Layout: "csc",
				Indptr: ArraySpec{file(wd+"/indptr.bin", []int64{0, 1, 2, 3, 3}), Int64}, Indices: ArraySpec{file(wd+"/indices.bin", []int64{0, 1, 1}), Int64}},
			{Src: "paper", Rel: "cites", Dst: "paper", Count: 1, Layout: "csc",
				Indptr: ArraySpec{file(cd+"/indptr.bin", []int64{0, 0, 1, 1, 1}), Int64}, Indices: ArraySpec{file(cd+"/indices.bin", []int64{3}), Int64}},
		},
	}
	w, err := NewFeatureSpec("w", Float32, 1, 3, 1, 512)
	if err != nil {
		t.Fatal(err)
	}
	w.Scalar, w.Files[0] = true, wd+"/features.w.0.bin"
	fw, err := NewFeatureWriter(nil, dir, &w)
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.WriteRows(float32Bytes([]float32{1, 2, 3})); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	files = append(files, w.Files[0])
	m.EdgeTypes[0].Features = []FeatureSpec{w}
	m.SetDir(dir)
	if err := Commit(m, files, "test", nil); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestHeteroManifest(t *testing.T) {
	dir := t.TempDir()
	writeHetero(t, dir)
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != Version {
		t.Fatalf("version %d, want %d", m.Version, Version)
	}
	if problems, err := m.Verify(0, nil); err != nil || len(problems) > 0 {
		t.Fatalf("Verify: %v %v", problems, err)
	}
	if len(m.Files) != 9 {
		t.Errorf("%d files listed, want 9", len(m.Files))
	}
	author, err := m.NodeTypeNamed("author")
	if err != nil || author.Count != 2 {
		t.Fatalf("author: %+v %v", author, err)
	}
	_, err = m.NodeTypeNamed("venue")
	if !errors.Is(err, ErrTypeNotFound) || !strings.Contains(err.Error(), "node types: paper, author") {
		t.Errorf("NodeTypeNamed(venue): %v", err)
	}
	et, err := m.EdgeTypeNamed("author:writes:paper")
	if err != nil || et.Count != 3 || et.Key() != "author:writes:paper" {
		t.Fatalf("writes: %+v %v", et, err)
	}
	_, err = m.EdgeTypeNamed("paper:writes:author")
	if !errors.Is(err, ErrTypeNotFound) || !strings.Contains(err.Error(), "edge types: author:writes:paper, paper:cites:paper") {
		t.Errorf("EdgeTypeNamed: %v", err)
	}
	if m.Nodes().Name != "paper" || m.Edges().Key() != "author:writes:paper" {
		t.Errorf("Nodes %q Edges %q: want the first of each", m.Nodes().Name, m.Edges().Key())
	}

	// A flipped bit in a typed file is found by Verify.
	victim := EdgeTypeDir("paper", "cites", "paper") + "/indices.bin"
	data := mustRead(t, filepath.Join(dir, victim))
	data[0] ^= 0x10
	if err := os.WriteFile(filepath.Join(dir, victim), data, 0o644); err != nil {
		t.Fatal(err)
	}
	problems, err := m.Verify(0, nil)
	if err != nil || len(problems) != 1 || problems[0].File != victim || problems[0].Offset != 0 {
		t.Errorf("Verify after a flipped bit in %s: %v %v", victim, problems, err)
	}
}

func TestHeteroManifestEdits(t *testing.T) {
	dir := t.TempDir()
	writeHetero(t, dir)
	orig := mustRead(t, filepath.Join(dir, ManifestName))
	// Every edit is caught: by the manifest hash, or first by Validate.
	edits := []struct{ from, to string }{
		{`"count": 4`, `"count": 5`},
		{`"rel": "cites"`, `"rel": "quotes"`},
		{`"src": "author"`, `"src": "paper"`},
		{`"name": "author"`, `"name": "writer"`},
	}
	for _, e := range edits {
		if !strings.Contains(string(orig), e.from) {
			t.Fatalf("manifest lacks %s", e.from)
		}
		edited := strings.Replace(string(orig), e.from, e.to, 1)
		if _, err := Parse([]byte(edited)); !IsCorrupt(err) {
			t.Errorf("%s -> %s: %v", e.from, e.to, err)
		}
	}
}

// TestHeteroValidate checks the rules of version 5 on manifests built in memory, each broken
// in one way (the hash is recomputed so Validate is what refuses).
func TestHeteroValidate(t *testing.T) {
	dir := t.TempDir()
	good := writeHetero(t, dir)
	clone := func() *Manifest {
		data, err := json.Marshal(good)
		if err != nil {
			t.Fatal(err)
		}
		var m Manifest
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		return &m
	}
	cases := []struct {
		name string
		edit func(m *Manifest)
		want string
	}{
		{"duplicate node type", func(m *Manifest) { m.NodeTypes[1].Name = "paper" }, `two node types "paper"`},
		{"node type with ':'", func(m *Manifest) { m.NodeTypes[1].Name = "a:b" }, `holds ':'`},
		{"node type '..'", func(m *Manifest) { m.NodeTypes[1].Name = ".." }, `".." is not allowed`},
		{"long name", func(m *Manifest) { m.NodeTypes[1].Name = strings.Repeat("a", 256) }, "want 1 to 255 bytes"},
		{"relation with '/'", func(m *Manifest) { m.EdgeTypes[1].Rel = "a/b" }, `relation name "a/b"`},
		{"empty relation", func(m *Manifest) { m.EdgeTypes[1].Rel = "" }, `relation name ""`},
		{"no nodes", func(m *Manifest) { m.NodeTypes[1].Count = 0 }, "invalid count 0"},
		{"no node types", func(m *Manifest) { m.NodeTypes = nil }, "no node type"},
		{"unknown dst", func(m *Manifest) { m.EdgeTypes[1].Dst = "venue" }, "unknown node types"},
		{"duplicate edge type", func(m *Manifest) { m.EdgeTypes[1] = m.EdgeTypes[0] }, `two edge types "author:writes:paper"`},
		{"indptr too short for dst", func(m *Manifest) {
			m.NodeTypes[1].Features, m.NodeTypes[1].Count, m.EdgeTypes[1].Dst = nil, 10, "author"
		}, `edge type "paper:cites:author" indptr`},
		{"feature rows", func(m *Manifest) { m.NodeTypes[1].Count = 1000 }, `node type "author" feature "x" stripe 0`},
		{"several types in version 4", func(m *Manifest) { m.Version, m.DatasetID = 4, "" }, "format versions 1 to 4 hold exactly one node type"},
	}
	for _, c := range cases {
		m := clone()
		c.edit(m)
		err := m.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	if err := clone().Validate(); err != nil {
		t.Errorf("unchanged: %v", err)
	}
}

func TestParseEdgeTypeKey(t *testing.T) {
	src, rel, dst, err := ParseEdgeTypeKey("paper:cites:paper")
	if err != nil || src != "paper" || rel != "cites" || dst != "paper" {
		t.Errorf("got %q %q %q %v", src, rel, dst, err)
	}
	for _, bad := range []string{"", "a:b", "a:b:c:d", "a::c", "a:./:c", "a:..:c"} {
		if _, _, _, err := ParseEdgeTypeKey(bad); err == nil {
			t.Errorf("ParseEdgeTypeKey(%q) accepted", bad)
		}
	}
}
