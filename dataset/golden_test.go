package dataset

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Golden datasets: tiny datasets of each on-disk format version, kept in testdata/golden/vN and
// opened by every later tierfs (see testdata/golden/README.md). go test -run TestGolden
// -update-golden writes, with the current writer, those of versions that have none yet (delete
// one only to add a version: the point is that old files keep opening).
var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden with the current writer")

// The golden graph: 5 nodes, 6 edges (src -> dst), every value below.
var (
	goldenEdges  = [][2]int64{{0, 1}, {2, 1}, {3, 0}, {4, 4}, {1, 2}, {0, 2}}
	goldenIndptr = []int64{0, 1, 3, 5, 5, 6} // CSC over dst, edges in input order per dst
	// goldenIndices[p] is the source of edge id p; goldenEdgeOf[p] the input edge it came from.
	goldenIndices = []int64{3, 0, 2, 1, 0, 4}
	goldenEdgeOf  = []int64{2, 0, 1, 4, 5, 3}
	goldenLabels  = []int64{0, 1, -1, 2, 1}
	goldenSplits  = map[string][]int64{"train": {0, 3}, "val": {1}, "test": {2, 4}}
	// goldenEdgeSplits (version 6): seed pairs per split, their labels (train: float32, val:
	// int64, test: none) and test's negative destinations, two per seed.
	goldenEdgeSplits  = map[string][][2]int64{"train": {{0, 1}, {2, 1}, {3, 3}}, "val": {{1, 2}, {4, 0}}, "test": {{0, 2}}}
	goldenTrainLabels = []float32{1, 1, 0}
	goldenValLabels   = []int64{1, 0}
	goldenTestNegDst  = []int64{3, 4}
)

const goldenNodes, goldenDim = 5, 3

func goldenX(v, j int64) float32 { return float32(v*10+j) + 0.25 }
func goldenS(v int64) float32    { return float32(v) * 1.5 }
func goldenW(e int64) float32    { return float32(goldenEdgeOf[e]) + 0.5 } // by input edge

func float32Bytes(vals []float32) []byte {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// writeGolden writes the golden dataset of version (1, 2 or 3) into dir with the current
// writer: version 3 adds the scalar node feature "s" and the edge feature "w"; version 1 is a
// version 2 manifest with the version set to 1 and no manifest hash (what older writers wrote).
func writeGolden(t *testing.T, dir string, version int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const bs = 512
	var files []string
	feature := func(name string, dim, count int64, scalar bool, rows []float32) FeatureSpec {
		sp, err := NewFeatureSpec(name, Float32, dim, count, 1, bs)
		if err != nil {
			t.Fatal(err)
		}
		sp.Scalar = scalar
		sp.Files[0] = "features." + name + ".0.bin"
		fw, err := NewFeatureWriter(nil, dir, &sp)
		if err != nil {
			t.Fatal(err)
		}
		if err := fw.WriteRows(float32Bytes(rows)); err != nil {
			t.Fatal(err)
		}
		if err := fw.Close(); err != nil {
			t.Fatal(err)
		}
		files = append(files, sp.Files[0])
		return sp
	}
	int64s := func(name string, vals []int64) string {
		if err := WriteInt64s(nil, filepath.Join(dir, name), vals); err != nil {
			t.Fatal(err)
		}
		files = append(files, name)
		return name
	}
	var x []float32
	for v := int64(0); v < goldenNodes; v++ {
		for j := int64(0); j < goldenDim; j++ {
			x = append(x, goldenX(v, j))
		}
	}
	nt := NodeType{Name: "node", Count: goldenNodes, Features: []FeatureSpec{feature("x", goldenDim, goldenNodes, false, x)},
		Labels: &LabelSpec{ArraySpec{int64s("labels.bin", goldenLabels), Int64}, 3}, Splits: map[string]IDsSpec{}}
	for name, ids := range goldenSplits {
		nt.Splits[name] = IDsSpec{ArraySpec{int64s(name+".ids", ids), Int64}, int64(len(ids))}
	}
	idx := make([]byte, 4*len(goldenIndices))
	for i, s := range goldenIndices {
		binary.LittleEndian.PutUint32(idx[4*i:], uint32(s))
	}
	if err := os.WriteFile(filepath.Join(dir, "indices.bin"), idx, 0o644); err != nil {
		t.Fatal(err)
	}
	files = append(files, "indices.bin")
	et := EdgeType{Src: "node", Rel: "to", Dst: "node", Count: int64(len(goldenIndices)), Layout: "csc",
		Indptr: ArraySpec{int64s("indptr.bin", goldenIndptr), Int64}, Indices: ArraySpec{"indices.bin", Int32}}
	if version >= 6 {
		et.Splits = map[string]EdgeSplit{}
		for name, pairs := range goldenEdgeSplits {
			seeds, labels, neg := EdgeSplitFiles("", name)
			flat := make([]int64, 2*len(pairs))
			for i, p := range pairs {
				flat[i], flat[len(pairs)+i] = p[0], p[1]
			}
			sp := EdgeSplit{Seeds: IDsSpec{ArraySpec{int64s(seeds, flat), Int64}, int64(len(pairs))}}
			switch name {
			case "train":
				if err := os.WriteFile(filepath.Join(dir, labels), float32Bytes(goldenTrainLabels), 0o644); err != nil {
					t.Fatal(err)
				}
				files = append(files, labels)
				sp.Labels = &ArraySpec{labels, Float32}
			case "val":
				sp.Labels = &ArraySpec{int64s(labels, goldenValLabels), Int64}
			case "test":
				sp.NegDst = &NegativesSpec{ArraySpec{int64s(neg, goldenTestNegDst), Int64}, 2}
			}
			et.Splits[name] = sp
		}
	}
	if version >= 3 {
		var s, w []float32
		for v := int64(0); v < goldenNodes; v++ {
			s = append(s, goldenS(v))
		}
		for e := range goldenIndices {
			w = append(w, goldenW(int64(e)))
		}
		nt.Features = append(nt.Features, feature("s", 1, goldenNodes, true, s))
		et.Features = []FeatureSpec{feature("w", 1, et.Count, true, w)}
	}
	m := &Manifest{BlockSize: bs, NodeTypes: []NodeType{nt}, EdgeTypes: []EdgeType{et}, Typed: version == 8}
	m.SetDir(dir)
	if err := Commit(m, files, "golden_test.go", nil); err != nil {
		t.Fatal(err)
	}
	if m.Version != max(version, 2) && !(version == 6 && m.Version == 6) {
		t.Fatalf("the writer wrote version %d for golden v%d", m.Version, version)
	}
	if version == 1 {
		path := filepath.Join(dir, ManifestName)
		var raw map[string]any
		if err := json.Unmarshal(mustRead(t, path), &raw); err != nil {
			t.Fatal(err)
		}
		raw["version"] = 1
		delete(raw, "manifest_hash")
		data, err := json.MarshalIndent(raw, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// goldenVersions are the format versions with a golden dataset. Version 4 has none: its one
// new part, an in-place feature, is named by an absolute path, which a checked-in dataset
// cannot hold.
var goldenVersions = []int{1, 2, 3, 6, 7, 8, 9}

func TestGolden(t *testing.T) {
	for _, v := range goldenVersions {
		dir := filepath.Join("testdata", "golden", fmt.Sprint("v", v))
		if _, err := os.Stat(dir); *updateGolden && os.IsNotExist(err) {
			writeGolden(t, dir, v) // only a version without one: old files stay what they were
		}
		t.Run(filepath.Base(dir), func(t *testing.T) { checkGolden(t, dir, v) })
	}
}

// checkGolden opens the golden dataset of version and compares every value with the golden
// graph.
func checkGolden(t *testing.T, dir string, version int) {
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != version || m.IsTyped() != (version == 8) {
		t.Fatalf("version %d (typed %v), want %d", m.Version, m.IsTyped(), version)
	}
	problems, err := m.Verify(0, nil)
	if err != nil || len(problems) > 0 {
		t.Fatalf("Verify: %v %v", problems, err)
	}
	int64s := func(file string) []int64 {
		b := mustRead(t, m.Path(file))
		f := m.File(file)
		out := make([]int64, f.ContentBytes/8)
		for i := range out {
			out[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
		}
		return out
	}
	row := func(f *FeatureSpec, r int64) []float32 {
		k, off := f.Locate(r)
		b := mustRead(t, m.Path(f.Files[k]))[off : off+f.RowBytes]
		out := make([]float32, f.Dim)
		for j := range out {
			out[j] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*j:]))
		}
		return out
	}
	nt, et := m.Nodes(), m.Edges()
	if nt.Name != "node" || nt.Count != goldenNodes || et == nil || et.Key() != "node:to:node" {
		t.Fatalf("types: node type %q (%d), edge type %+v", nt.Name, nt.Count, et)
	}
	x, err := m.Feature("")
	if err != nil {
		t.Fatal(err)
	}
	for v := int64(0); v < goldenNodes; v++ {
		want := []float32{goldenX(v, 0), goldenX(v, 1), goldenX(v, 2)}
		if got := row(x, v); !slices.Equal(got, want) {
			t.Errorf("x[%d] = %v, want %v", v, got, want)
		}
	}
	if got := int64s(et.Indptr.File); !slices.Equal(got, goldenIndptr) {
		t.Errorf("indptr %v, want %v", got, goldenIndptr)
	}
	idx := mustRead(t, m.Path(et.Indices.File))
	for p, want := range goldenIndices {
		if got := int64(binary.LittleEndian.Uint32(idx[4*p:])); got != want || et.Indices.DType != Int32 {
			t.Errorf("indices[%d] = %d (%s), want %d", p, got, et.Indices.DType, want)
		}
	}
	if got := int64s(nt.Labels.File); !slices.Equal(got, goldenLabels) || nt.Labels.NumClasses != 3 {
		t.Errorf("labels %v (%d classes), want %v", got, nt.Labels.NumClasses, goldenLabels)
	}
	if len(nt.Splits) != len(goldenSplits) {
		t.Errorf("splits %v", nt.Splits)
	}
	for name, want := range goldenSplits {
		if got := int64s(nt.Splits[name].File); !slices.Equal(got, want) || nt.Splits[name].Count != int64(len(want)) {
			t.Errorf("split %s = %v, want %v", name, got, want)
		}
	}
	if version < 6 && len(et.Splits) != 0 {
		t.Errorf("version %d has edge splits %v", version, et.SplitNames())
	}
	if version >= 6 {
		checkGoldenEdgeSplits(t, m, int64s)
	}
	if version < 3 {
		if len(nt.Features) != 1 || len(et.Features) != 0 {
			t.Errorf("version %d has features %d node, %d edge", version, len(nt.Features), len(et.Features))
		}
		return
	}
	s, isEdge, err := m.AnyFeature("s")
	if err != nil || isEdge || !s.Scalar {
		t.Fatalf("feature s: %+v edge %v: %v", s, isEdge, err)
	}
	for v := int64(0); v < goldenNodes; v++ {
		if got := row(s, v); got[0] != goldenS(v) {
			t.Errorf("s[%d] = %v, want %v", v, got[0], goldenS(v))
		}
	}
	w, isEdge, err := m.AnyFeature("w")
	if err != nil || !isEdge || !w.Scalar {
		t.Fatalf("feature w: %+v edge %v: %v", w, isEdge, err)
	}
	for e := range goldenIndices {
		if got := row(w, int64(e)); got[0] != goldenW(int64(e)) {
			t.Errorf("w[%d] = %v, want %v", e, got[0], goldenW(int64(e)))
		}
	}
}

// checkGoldenEdgeSplits compares the edge splits of the golden v6 dataset with the golden graph's.
func checkGoldenEdgeSplits(t *testing.T, m *Manifest, int64s func(string) []int64) {
	t.Helper()
	et := m.Edges()
	if got := et.SplitNames(); !slices.Equal(got, []string{"test", "train", "val"}) {
		t.Fatalf("edge splits %v", got)
	}
	for name, pairs := range goldenEdgeSplits {
		sp := et.Splits[name]
		seeds := int64s(sp.Seeds.File)
		if sp.Seeds.Count != int64(len(pairs)) || len(seeds) != 2*len(pairs) {
			t.Fatalf("edge split %s: count %d, %d ids", name, sp.Seeds.Count, len(seeds))
		}
		for i, p := range pairs {
			if seeds[i] != p[0] || seeds[len(pairs)+i] != p[1] {
				t.Errorf("edge split %s seed %d = (%d, %d), want %v", name, i, seeds[i], seeds[len(pairs)+i], p)
			}
		}
	}
	train, val, test := et.Splits["train"], et.Splits["val"], et.Splits["test"]
	if train.Labels == nil || train.Labels.DType != Float32 || train.NegDst != nil {
		t.Fatalf("train split %+v", train)
	}
	b := mustRead(t, m.Path(train.Labels.File))
	for i, want := range goldenTrainLabels {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])); got != want {
			t.Errorf("train label %d = %v, want %v", i, got, want)
		}
	}
	if val.Labels == nil || val.Labels.DType != Int64 || !slices.Equal(int64s(val.Labels.File), goldenValLabels) {
		t.Errorf("val labels %+v", val.Labels)
	}
	if test.Labels != nil || test.NegDst == nil || test.NegDst.PerSeed != 2 || !slices.Equal(int64s(test.NegDst.File), goldenTestNegDst) {
		t.Errorf("test split %+v", test)
	}
}
