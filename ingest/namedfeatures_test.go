package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
)

// randomRows is rows*rowBytes random bytes.
func randomRows(rng *rand.Rand, rows, rowBytes int64) []byte {
	b := make([]byte, rows*rowBytes)
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	return b
}

// referenceEdgeRows is the plain reference of an edge feature in edge id order: the edges of
// each destination in input order (the order ingest fills a list), each row that of its input
// edge; a reverse edge (undirected) carries its input edge's row.
func referenceEdgeRows(n int64, src, dst []int64, rows []byte, rb int64, undirected, dropSelfLoops bool) (lists [][]int64, out []byte) {
	type ref struct{ nb, edge int64 }
	per := make([][]ref, n)
	for i := range src {
		s, d := src[i], dst[i]
		if dropSelfLoops && s == d {
			continue
		}
		per[d] = append(per[d], ref{s, int64(i)})
		if undirected && s != d {
			per[s] = append(per[s], ref{d, int64(i)})
		}
	}
	lists = make([][]int64, n)
	for v, l := range per {
		for _, r := range l {
			lists[v] = append(lists[v], r.nb)
			out = append(out, rows[r.edge*rb:(r.edge+1)*rb]...)
		}
	}
	return lists, out
}

func TestNamedNodeAndEdgeFeatures(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, tc := range []struct {
		nodes, edges             int
		undirected, dropSelfLoop bool
		devices                  int
	}{{50, 400, false, false, 0}, {200, 3000, true, false, 2}, {120, 900, true, true, 0}, {30, 0, false, false, 0}} {
		in := t.TempDir()
		src, dst := testGraph(rng, tc.nodes, tc.edges)
		writeNpyEdges(t, filepath.Join(in, "edges.npy"), "<i8", src, dst, rng.IntN(2) == 0)
		n, e := int64(tc.nodes), int64(tc.edges)
		x := randomRows(rng, n, 12)
		WriteNpy(filepath.Join(in, "x.npy"), "<f4", []int64{n, 3}, x)
		h := randomRows(rng, n, 2*5)
		WriteNpy(filepath.Join(in, "h.npy"), "<f2", []int64{n, 5}, h)
		w := randomRows(rng, e, 4)
		WriteNpy(filepath.Join(in, "w.npy"), "<f4", []int64{e}, w)
		ea := randomRows(rng, e, 7)
		WriteNpy(filepath.Join(in, "ea.npy"), "|i1", []int64{e, 7}, ea)
		var devs []string
		for range tc.devices {
			devs = append(devs, t.TempDir())
		}
		out := filepath.Join(t.TempDir(), "ds")
		_, err := Ingest(Options{
			Edges: filepath.Join(in, "edges.npy"), Features: filepath.Join(in, "x.npy"), Out: out, NumNodes: n,
			NodeFeatures: []FeatureInput{{Name: "h", Path: filepath.Join(in, "h.npy")}},
			EdgeFeatures: []FeatureInput{{Name: "edge_weight", Path: filepath.Join(in, "w.npy")}, {Name: "edge_attr", Path: filepath.Join(in, "ea.npy")}},
			Undirected:   tc.undirected, DropSelfLoops: tc.dropSelfLoop, DevicePaths: devs,
		})
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		m := loadVerified(t, out)
		if m.Version != dataset.Version {
			t.Fatalf("%+v: version %d, want %d (every new dataset)", tc, m.Version, dataset.Version)
		}
		if f, _ := m.Feature(""); f.Name != "x" {
			t.Fatalf("default feature %q, want x", f.Name)
		}
		hs, isEdge, err := m.AnyFeature("h")
		if err != nil || isEdge || hs.DType != dataset.Float16 || hs.Dim != 5 {
			t.Fatalf("feature h: %+v edge %v %v", hs, isEdge, err)
		}
		if got := featureBytes(t, m, hs); !bytes.Equal(got, h) {
			t.Fatalf("%+v: node feature h differs", tc)
		}
		lists := neighborLists(t, m)
		for _, ef := range []struct {
			name   string
			rows   []byte
			rb     int64
			scalar bool
		}{{"edge_weight", w, 4, true}, {"edge_attr", ea, 7, false}} {
			spec, isEdge, err := m.AnyFeature(ef.name)
			if err != nil || !isEdge || spec.Scalar != ef.scalar || spec.Count() != m.Edges().Count {
				t.Fatalf("%+v: %s: %+v edge %v %v", tc, ef.name, spec, isEdge, err)
			}
			wantLists, want := referenceEdgeRows(n, src, dst, ef.rows, ef.rb, tc.undirected, tc.dropSelfLoop)
			for v := range lists { // same lists in the same order, so row p matches edge id p
				if len(lists[v]) != len(wantLists[v]) || (len(lists[v]) > 0 && !slicesEqual(lists[v], wantLists[v])) {
					t.Fatalf("%+v: node %d list %v, want %v", tc, v, lists[v], wantLists[v])
				}
			}
			if got := featureBytes(t, m, spec); !bytes.Equal(got, want) {
				t.Fatalf("%+v: edge feature %s differs from the reference", tc, ef.name)
			}
		}
		if _, err := os.Stat(filepath.Join(out, ".edge-order.tmp")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the edge order file was left: %v", err)
		}
	}
}

// A node feature and an edge feature may share a name (GraphBolt's feat of both, issue 42): each
// is stored apart, the edge feature's files under edges/, and the dataset verifies; the name
// alone is the node feature's (AnyFeature).
func TestNodeAndEdgeFeatureShareAName(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	in := t.TempDir()
	p := func(name string) string { return filepath.Join(in, name) }
	writeNpyEdges(t, p("edges.npy"), "<i8", []int64{0, 1, 2, 3, 1}, []int64{1, 2, 3, 0, 0}, false)
	x, w, xs := randomRows(rng, 4, 8), randomRows(rng, 5, 12), randomRows(rng, 4, 8)
	WriteNpy(p("x.npy"), "<f4", []int64{4, 2}, xs)
	WriteNpy(p("feat.npy"), "<f4", []int64{4, 2}, x)
	WriteNpy(p("efeat.npy"), "<f4", []int64{5, 3}, w)
	WriteNpy(p("ex.npy"), "<f4", []int64{5}, randomRows(rng, 5, 4))
	out := filepath.Join(t.TempDir(), "ds")
	_, err := Ingest(Options{Edges: p("edges.npy"), Features: p("x.npy"), Out: out,
		NodeFeatures: []FeatureInput{{Name: "feat", Path: p("feat.npy")}},
		EdgeFeatures: []FeatureInput{{Name: "feat", Path: p("efeat.npy")}, {Name: "x", Path: p("ex.npy")}}})
	if err != nil {
		t.Fatal(err)
	}
	m := loadVerified(t, out)
	if spec, isEdge, err := m.AnyFeature("feat"); err != nil || isEdge || !bytes.Equal(featureBytes(t, m, spec), x) {
		t.Fatalf("feat alone: edge %v %v, want the node feature's rows", isEdge, err)
	}
	et := m.Edges()
	for _, f := range et.Features {
		if (f.Name == "feat" || f.Name == "x") && !strings.HasPrefix(f.Files[0], sharedNameDir+"/") {
			t.Fatalf("edge feature %s in %s, want it under %s/ apart from the node feature's", f.Name, f.Files[0], sharedNameDir)
		}
	}
	k := slices.IndexFunc(et.Features, func(f dataset.FeatureSpec) bool { return f.Name == "feat" })
	if k < 0 || et.Features[k].Dim != 3 || len(featureBytes(t, m, &et.Features[k])) != len(w) {
		t.Fatalf("edge feature feat: %+v, want 5 rows of dim 3", et.Features)
	}
}

func slicesEqual(a, b []int64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func TestNamedFeatureBadInputs(t *testing.T) {
	in := t.TempDir()
	p := func(name string) string { return filepath.Join(in, name) }
	writeNpyEdges(t, p("edges.npy"), "<i8", []int64{0, 1, 2, 3}, []int64{1, 2, 3, 0}, false)
	WriteNpy(p("x4.npy"), "<f4", []int64{4, 2}, make([]byte, 32))
	WriteNpy(p("x5.npy"), "<f4", []int64{5, 2}, make([]byte, 40))
	WriteNpy(p("w4.npy"), "<f4", []int64{4}, make([]byte, 16))
	WriteNpy(p("w3.npy"), "<f4", []int64{3}, make([]byte, 12))
	WriteNpy(p("w3d.npy"), "<f4", []int64{4, 0, 2}, nil)
	WriteNpy(p("c.npy"), "<c8", []int64{4}, make([]byte, 32))
	os.WriteFile(p("w.csv"), []byte("1\n2\n3\n4\n"), 0o644)
	base := Options{Edges: p("edges.npy"), Features: p("x4.npy")}
	for _, tc := range []struct {
		name string
		mod  func(o *Options)
		want string
	}{
		{"duplicate node names", func(o *Options) {
			o.NodeFeatures = []FeatureInput{{Name: "h", Path: p("x4.npy")}, {Name: "h", Path: p("x4.npy")}}
		}, `node feature name "h" is used twice`},
		{"node name x beside Features", func(o *Options) { o.NodeFeatures = []FeatureInput{{Name: "x", Path: p("x4.npy")}} }, `"x" is used twice (also the features input`},
		{"two edge features share a name", func(o *Options) {
			o.EdgeFeatures = []FeatureInput{{Name: "w", Path: p("w4.npy")}, {Name: "w", Path: p("w4.npy")}}
		}, `edge feature name "w" is used twice`},
		{"bad name", func(o *Options) { o.NodeFeatures = []FeatureInput{{Name: "a/b", Path: p("x4.npy")}} }, `'/' is not allowed`},
		{"dot name", func(o *Options) { o.NodeFeatures = []FeatureInput{{Name: ".h", Path: p("x4.npy")}} }, `not starting with '.'`},
		{"node rows", func(o *Options) { o.NodeFeatures = []FeatureInput{{Name: "h", Path: p("x5.npy")}} }, `node feature "h": file ` + p("x5.npy") + ` has 5 rows, but the graph has 4 nodes`},
		{"edge rows", func(o *Options) { o.EdgeFeatures = []FeatureInput{{Name: "w", Path: p("w3.npy")}} }, `edge feature "w": file ` + p("w3.npy") + ` has 3 rows, but the edges file`},
		{"edge 3-D of an empty row", func(o *Options) { o.EdgeFeatures = []FeatureInput{{Name: "w", Path: p("w3d.npy")}} }, `has shape (4, 0, 2); each size of a row must be positive`},
		{"edge dtype", func(o *Options) { o.EdgeFeatures = []FeatureInput{{Name: "w", Path: p("c.npy")}} }, `edge feature "w"`},
		{"edge not npy", func(o *Options) { o.EdgeFeatures = []FeatureInput{{Name: "w", Path: p("w.csv")}} }, `edge feature "w"`},
		{"edge without edges", func(o *Options) { o.Edges = ""; o.EdgeFeatures = []FeatureInput{{Name: "w", Path: p("w4.npy")}} }, `edge feature "w" without edges`},
		{"edge with dedup", func(o *Options) { o.Dedup = true; o.EdgeFeatures = []FeatureInput{{Name: "w", Path: p("w4.npy")}} }, `with Dedup`},
		{"no file", func(o *Options) { o.NodeFeatures = []FeatureInput{{Name: "h"}} }, `node feature "h" has no file`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			o.Out = filepath.Join(t.TempDir(), "ds")
			tc.mod(&o)
			_, err := Ingest(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if entries, _ := os.ReadDir(filepath.Dir(o.Out)); len(entries) != 0 {
				t.Fatalf("a refused ingest left %d entries beside the output", len(entries))
			}
		})
	}
}

// A text edge list's length is known only after reading it: edge features of another length
// are refused then, and nothing is left behind.
func TestEdgeFeatureRowsCheckedAfterTextEdges(t *testing.T) {
	in := t.TempDir()
	os.WriteFile(filepath.Join(in, "e.csv"), []byte("src,dst\n0,1\n1,2\n2,0\n"), 0o644)
	WriteNpy(filepath.Join(in, "w.npy"), "<f4", []int64{4}, make([]byte, 16))
	parent := t.TempDir()
	_, err := Ingest(Options{Edges: filepath.Join(in, "e.csv"), Out: filepath.Join(parent, "ds"),
		EdgeFeatures: []FeatureInput{{Name: "w", Path: filepath.Join(in, "w.npy")}}})
	if err == nil || !strings.Contains(err.Error(), "has 4 rows, but the edges file") || !strings.Contains(err.Error(), "has 3 edges") {
		t.Fatalf("error %v", err)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Fatalf("left %d entries", len(entries))
	}
}

// Verify covers edge features: a flipped byte in one is reported, naming its file.
func TestVerifyCoversEdgeFeatures(t *testing.T) {
	in := t.TempDir()
	writeNpyEdges(t, filepath.Join(in, "edges.npy"), "<i8", []int64{0, 1, 2, 3}, []int64{1, 2, 3, 0}, false)
	WriteNpy(filepath.Join(in, "ea.npy"), "<f4", []int64{4, 3}, make([]byte, 48))
	out := filepath.Join(t.TempDir(), "ds")
	m, err := Ingest(Options{Edges: filepath.Join(in, "edges.npy"), Out: out,
		EdgeFeatures: []FeatureInput{{Name: "edge_attr", Path: filepath.Join(in, "ea.npy")}}})
	if err != nil {
		t.Fatal(err)
	}
	spec, _, _ := m.AnyFeature("edge_attr")
	path := m.Path(spec.Files[0])
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xff}, 5)
	f.Close()
	problems, err := parseForVerify(t, out).Verify(0, nil) // the file's one block: Load refuses it
	if err != nil || len(problems) != 1 || problems[0].File != spec.Files[0] {
		t.Fatalf("Verify after flipping a byte of %s: %v %v", spec.Files[0], problems, err)
	}
}

// TestInputEdgeIDs checks InputEdgeIDFeature against the plain reference: edge id p holds the
// input position of its edge (a reverse edge its input edge's), written only where edge ids and
// input positions differ and the input order is known.
func TestInputEdgeIDs(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, tc := range []struct {
		nodes, edges                    int
		undirected, dropSelfLoops, text bool
	}{{50, 400, false, false, false}, {80, 700, true, false, false}, {60, 500, false, true, true}, {40, 300, true, true, true}} {
		in := t.TempDir()
		src, dst := testGraph(rng, tc.nodes, tc.edges)
		edges := filepath.Join(in, "edges.npy")
		if tc.text {
			edges = filepath.Join(in, "edges.csv")
			var b strings.Builder
			for i := range src {
				fmt.Fprintf(&b, "%d,%d\n", src[i], dst[i])
			}
			if err := os.WriteFile(edges, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			writeNpyEdges(t, edges, "<i8", src, dst, false)
		}
		out := filepath.Join(t.TempDir(), "ds")
		n := int64(tc.nodes)
		if _, err := Ingest(Options{Edges: edges, Out: out, NumNodes: n, Undirected: tc.undirected, DropSelfLoops: tc.dropSelfLoops}); err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		m := loadVerified(t, out)
		spec, isEdge, err := m.AnyFeature(InputEdgeIDFeature)
		if err != nil || !isEdge || !spec.Scalar || spec.DType != dataset.Int64 || spec.Count() != m.Edges().Count {
			t.Fatalf("%+v: %s: %+v edge %v %v", tc, InputEdgeIDFeature, spec, isEdge, err)
		}
		positions := make([]int64, len(src))
		for i := range positions {
			positions[i] = int64(i)
		}
		_, want := referenceEdgeRows(n, src, dst, intBytes(positions, 'i', 8), 8, tc.undirected, tc.dropSelfLoops)
		if got := featureBytes(t, m, spec); !bytes.Equal(got, want) {
			t.Fatalf("%+v: %s differs from the reference", tc, InputEdgeIDFeature)
		}
	}

	// Sorted by destination (edge ids are input positions), dedup (input order lost): none.
	src, dst := testGraph(rng, 30, 200)
	idx := make([]int, len(src))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return int(dst[a] - dst[b]) })
	var ss, sd []int64
	for _, i := range idx {
		ss, sd = append(ss, src[i]), append(sd, dst[i])
	}
	for _, tc := range []struct {
		src, dst []int64
		dedup    bool
	}{{ss, sd, false}, {src, dst, true}} {
		in := t.TempDir()
		writeNpyEdges(t, filepath.Join(in, "edges.npy"), "<i8", tc.src, tc.dst, false)
		out := filepath.Join(t.TempDir(), "ds")
		if _, err := Ingest(Options{Edges: filepath.Join(in, "edges.npy"), Out: out, NumNodes: 30, Dedup: tc.dedup}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := loadVerified(t, out).AnyFeature(InputEdgeIDFeature); err == nil {
			t.Fatalf("dedup %v: %s written where edge ids are input positions or the order is lost", tc.dedup, InputEdgeIDFeature)
		}
	}

	// The name is reserved.
	in := t.TempDir()
	writeNpyEdges(t, filepath.Join(in, "edges.npy"), "<i8", src, dst, false)
	WriteNpy(filepath.Join(in, "w.npy"), "<f4", []int64{int64(len(src))}, randomRows(rng, int64(len(src)), 4))
	_, err := Ingest(Options{Edges: filepath.Join(in, "edges.npy"), Out: filepath.Join(t.TempDir(), "ds"), NumNodes: 30,
		EdgeFeatures: []FeatureInput{{Name: InputEdgeIDFeature, Path: filepath.Join(in, "w.npy")}}})
	if err == nil || !strings.Contains(err.Error(), "reserved") || !strings.Contains(err.Error(), InputEdgeIDFeature) {
		t.Fatalf("an edge feature named %s: %v, want an error naming it reserved", InputEdgeIDFeature, err)
	}
}
