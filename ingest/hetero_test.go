package ingest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/tierfs/tierfs/dataset"
)

// heteroGraph is the input of a random heterogeneous graph and what it should become.
type heteroGraph struct {
	opt      HeteroOptions
	counts   map[string]int64
	edges    map[string][2][]int64 // edge type key -> src, dst (input order)
	features map[string][]byte     // "type/feature" -> rows as input
	labels   map[string][]int64
	splits   map[string]map[string][]int64 // type -> split -> node ids
}

func randomBytes(rng *rand.Rand, n int64) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	return b
}

// newHeteroGraph writes the inputs of a graph shaped like a small ogbn-mag into dir: node types
// paper (features x and year, labels, splits as ids and a mask), author (feature x: the same
// name on another type) and institution (count given, nothing else); edge types
// paper:cites:paper (a self-relation, .npy (2,E)), author:writes:paper (.npy (E,2), with an
// edge feature), author:reviews:paper (the same two types again, CSV text) and
// author:affiliated_with:institution (Parquet).
func newHeteroGraph(t *testing.T, dir string, rng *rand.Rand) *heteroGraph {
	t.Helper()
	g := &heteroGraph{counts: map[string]int64{}, edges: map[string][2][]int64{}, features: map[string][]byte{},
		labels: map[string][]int64{}, splits: map[string]map[string][]int64{}}
	np, na, ni := 1+rng.Int64N(300), 1+rng.Int64N(200), 1+rng.Int64N(20)
	g.counts = map[string]int64{"paper": np, "author": na, "institution": ni}
	file := func(name string) string { return filepath.Join(dir, name) }
	feature := func(typ, name string, rows, dim int64, descr string, size int64) FeatureInput {
		data := randomBytes(rng, rows*dim*size)
		shape := []int64{rows, dim}
		if dim == 0 {
			data, shape = randomBytes(rng, rows*size), []int64{rows}
		}
		p := file(typ + "." + name + ".npy")
		if err := WriteNpy(p, descr, shape, data); err != nil {
			t.Fatal(err)
		}
		g.features[typ+"/"+name] = data
		return FeatureInput{Name: name, Path: p}
	}
	labels := make([]int64, np)
	for i := range labels {
		labels[i] = rng.Int64N(5) - 1
	}
	g.labels["paper"] = labels
	if err := WriteNpy(file("paper.labels.npy"), "<i8", []int64{np}, intBytes(labels, 'i', 8)); err != nil {
		t.Fatal(err)
	}
	splitDir := file("paper-splits")
	if err := os.Mkdir(splitDir, 0o755); err != nil {
		t.Fatal(err)
	}
	var train []int64
	for range rng.IntN(10) {
		train = append(train, rng.Int64N(np))
	}
	mask := make([]byte, np)
	var val []int64
	for v := range np {
		if rng.IntN(3) == 0 {
			mask[v], val = 1, append(val, v)
		}
	}
	if err := WriteNpy(filepath.Join(splitDir, "train.npy"), "<i4", []int64{int64(len(train))}, intBytes(train, 'i', 4)); err != nil {
		t.Fatal(err)
	}
	if err := WriteNpy(filepath.Join(splitDir, "val.npy"), "|b1", []int64{np}, mask); err != nil {
		t.Fatal(err)
	}
	g.splits["paper"] = map[string][]int64{"train": train, "val": val}
	g.opt.NodeTypes = []NodeTypeInput{
		{Name: "paper", Features: []FeatureInput{feature("paper", "x", np, 4, "<f4", 4), feature("paper", "year", np, 0, "<i8", 8)},
			Labels: file("paper.labels.npy"), Splits: splitDir},
		{Name: "author", Features: []FeatureInput{feature("author", "x", na, 3, "<f2", 2)}},
		{Name: "institution", NumNodes: ni},
	}
	edgeList := func(src, dst string, e int) ([]int64, []int64) {
		var s, d []int64
		for range e {
			s, d = append(s, rng.Int64N(g.counts[src])), append(d, rng.Int64N(g.counts[dst]))
			if rng.IntN(4) == 0 { // a hub
				d[len(d)-1] = 0
			}
		}
		return s, d
	}
	add := func(src, rel, dst string, e int, format string) EdgeTypeInput {
		s, d := edgeList(src, dst, e)
		key := dataset.EdgeTypeKey(src, rel, dst)
		g.edges[key] = [2][]int64{s, d}
		in := EdgeTypeInput{Src: src, Rel: rel, Dst: dst}
		switch format {
		case "npy":
			in.Edges = file(rel + ".npy")
			writeNpyEdges(t, in.Edges, "<i8", s, d, false)
		case "npy-pairs":
			in.Edges = file(rel + ".npy")
			writeNpyEdges(t, in.Edges, "<i4", s, d, true)
		case "csv":
			var b strings.Builder
			b.WriteString("src,dst\n")
			for i := range s {
				fmt.Fprintf(&b, "%d,%d\n", s[i], d[i])
			}
			in.Edges = file(rel + ".csv")
			if err := os.WriteFile(in.Edges, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		case "parquet":
			in.Edges = file(rel + ".parquet")
			sc, recs := edgeRecords(s, d, [2]string{"src", "dst"}, arrow.PrimitiveTypes.Int64, 50)
			writeParquet(t, in.Edges, sc, recs)
		}
		return in
	}
	writes := add("author", "writes", "paper", rng.IntN(1000), "npy-pairs")
	writes.EdgeFeatures = []FeatureInput{feature("author:writes:paper", "w", int64(len(g.edges[writes.Key()][0])), 0, "<f4", 4)}
	g.opt.EdgeTypes = []EdgeTypeInput{
		add("paper", "cites", "paper", rng.IntN(1000), "npy"),
		writes,
		add("author", "reviews", "paper", 1+rng.IntN(300), "csv"), // GraphBolt's CSV reader refuses an empty file
		add("author", "affiliated_with", "institution", rng.IntN(300), "parquet"),
	}
	g.opt.Out = file("out")
	return g
}

// check reads every type of the dataset in dir back and compares it with the input: a plain
// in-memory CSC per edge type (indptr, neighbor lists in input order, so also as multisets),
// edge features by edge id, node features, labels and splits.
func (g *heteroGraph) check(t *testing.T, dir string) {
	t.Helper()
	m := loadVerified(t, dir)
	if m.Version != dataset.Version || len(m.NodeTypes) != 3 || len(m.EdgeTypes) != 4 {
		t.Fatalf("version %d, %d node types, %d edge types", m.Version, len(m.NodeTypes), len(m.EdgeTypes))
	}
	for typ, n := range g.counts {
		nt, err := m.NodeTypeNamed(typ)
		if err != nil {
			t.Fatal(err)
		}
		if nt.Count != n {
			t.Errorf("node type %s: count %d, want %d", typ, nt.Count, n)
		}
		for _, f := range nt.Features {
			if got, want := featureBytes(t, m, &f), g.features[typ+"/"+f.Name]; !bytes.Equal(got, want) {
				t.Errorf("node type %s feature %s differs", typ, f.Name)
			}
		}
		if want, ok := g.labels[typ]; ok != (nt.Labels != nil) || ok && !slices.Equal(readInt64File(t, m.Path(nt.Labels.File), n), want) {
			t.Errorf("node type %s labels differ", typ)
		}
		if len(nt.Splits) != len(g.splits[typ]) {
			t.Errorf("node type %s: splits %v, want %v", typ, nt.Splits, g.splits[typ])
		}
		for name, want := range g.splits[typ] {
			s := nt.Splits[name]
			if got := readInt64File(t, m.Path(s.File), s.Count); !slices.Equal(got, want) {
				t.Errorf("node type %s split %s: %v, want %v", typ, name, got, want)
			}
		}
	}
	if len(m.NodeTypes[0].Features) != 2 || m.NodeTypes[0].Features[0].Name != "x" || !m.NodeTypes[0].Features[1].Scalar {
		t.Errorf("paper features %+v", m.NodeTypes[0].Features)
	}
	for key, e := range g.edges {
		et, err := m.EdgeTypeNamed(key)
		if err != nil {
			t.Fatal(err)
		}
		nd := g.counts[et.Dst]
		indptr := readInt64File(t, m.Path(et.Indptr.File), nd+1)
		want := make([][]int64, nd) // dst -> src in input order
		order := make([][]int64, nd)
		for i := range e[0] {
			want[e[1][i]] = append(want[e[1][i]], e[0][i])
			order[e[1][i]] = append(order[e[1][i]], int64(i))
		}
		if indptr[0] != 0 || indptr[nd] != int64(len(e[0])) || et.Count != int64(len(e[0])) {
			t.Fatalf("%s: indptr runs %d..%d, count %d, want %d edges", key, indptr[0], indptr[nd], et.Count, len(e[0]))
		}
		raw := mustReadFile(t, m.Path(et.Indices.File))
		var w, inputIDs []byte
		for k := range et.Features {
			switch et.Features[k].Name {
			case "w":
				w = featureBytes(t, m, &et.Features[k])
			case InputEdgeIDFeature:
				inputIDs = featureBytes(t, m, &et.Features[k])
			}
		}
		for v := range nd {
			var got []int64
			for p := indptr[v]; p < indptr[v+1]; p++ {
				got = append(got, int64(binary.LittleEndian.Uint32(raw[4*p:])))
				if inputIDs != nil {
					if in := int64(binary.LittleEndian.Uint64(inputIDs[8*p:])); in != order[v][p-indptr[v]] {
						t.Fatalf("%s: edge %d has input position %d, want %d", key, p, in, order[v][p-indptr[v]])
					}
				}
				if w != nil {
					in := g.features[key+"/w"][4*order[v][p-indptr[v]]:][:4]
					if !bytes.Equal(w[4*p:4*p+4], in) {
						t.Fatalf("%s: edge %d has feature %x, want %x (input edge %d)", key, p, w[4*p:4*p+4], in, order[v][p-indptr[v]])
					}
				}
			}
			if !slices.Equal(got, want[v]) {
				t.Fatalf("%s: dst %d: in-neighbors %v, want %v", key, v, got, want[v])
			}
		}
		if et.Indices.DType != dataset.Int32 {
			t.Errorf("%s: indices %s", key, et.Indices.DType)
		}
	}
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestIngestHeteroRoundTrip(t *testing.T) {
	for i := range 4 {
		seed := rand.Uint64()
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Logf("seed %d", seed)
			dir := t.TempDir()
			g := newHeteroGraph(t, dir, rand.New(rand.NewPCG(seed, 0)))
			m, err := IngestHetero(g.opt)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if m.Version != dataset.Version {
				t.Errorf("version %d", m.Version)
			}
			g.check(t, g.opt.Out)
			if t.Failed() {
				t.Logf("seed %d failed", seed)
			}
		})
	}
}

// TestIngestHeteroFiles checks the file names: every type's files in its directory, and a
// flipped bit in one of them found by Verify.
func TestIngestHeteroFiles(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	dir := t.TempDir()
	g := newHeteroGraph(t, dir, rand.New(rand.NewPCG(seed, 0)))
	m, err := IngestHetero(g.opt)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range m.Files {
		if path.Base(f.Path) != "features."+InputEdgeIDFeature+".0.bin" { // where edge ids differ from input positions (checked by check)
			paths = append(paths, f.Path)
		}
	}
	slices.Sort(paths)
	want := []string{
		"edges/author/affiliated_with/institution/indices.bin", "edges/author/affiliated_with/institution/indptr.bin",
		"edges/author/reviews/paper/indices.bin", "edges/author/reviews/paper/indptr.bin",
		"edges/author/writes/paper/features.w.0.bin", "edges/author/writes/paper/indices.bin", "edges/author/writes/paper/indptr.bin",
		"edges/paper/cites/paper/indices.bin", "edges/paper/cites/paper/indptr.bin",
		"nodes/author/features.x.0.bin",
		"nodes/paper/features.x.0.bin", "nodes/paper/features.year.0.bin", "nodes/paper/labels.bin",
		"nodes/paper/train.ids", "nodes/paper/val.ids",
	}
	if !slices.Equal(paths, want) {
		t.Errorf("files:\n%s\nwant\n%s", strings.Join(paths, "\n"), strings.Join(want, "\n"))
	}
	victim := filepath.Join(g.opt.Out, "nodes/author/features.x.0.bin")
	data := mustReadFile(t, victim)
	data[5] ^= 1
	if err := os.WriteFile(victim, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// The file's only block: Load (which checks the first and last block of every file) refuses it,
	// and Verify names it.
	if _, err := dataset.Load(g.opt.Out); !dataset.IsCorrupt(err) || !strings.Contains(err.Error(), "nodes/author/features.x.0.bin") {
		t.Errorf("Load after a flipped bit: %v", err)
	}
	if problems, err := parseForVerify(t, g.opt.Out).Verify(0, nil); err != nil || len(problems) != 1 || problems[0].File != "nodes/author/features.x.0.bin" {
		t.Errorf("Verify after a flipped bit: %v %v", problems, err)
	}
}

// parseForVerify is the manifest of the dataset in dir, parsed but not loaded: none of its files
// is read (Load checks the first and last block of each), so Verify finds what there is to find.
func parseForVerify(t *testing.T, dir string) *dataset.Manifest {
	t.Helper()
	raw, err := dataset.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := dataset.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	m.SetDir(dir)
	return m
}

func loadForVerify(t *testing.T, dir string) *dataset.Manifest {
	m, err := dataset.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestIngestHeteroRefusals checks every input IngestHetero refuses: the error names the type
// and the input, and nothing is published (Out does not exist, no staging directory is left).
func TestIngestHeteroRefusals(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(seed, 0))
	g := newHeteroGraph(t, dir, rng)
	na, np := g.counts["author"], g.counts["paper"]
	bad := func(name string, src, dst []int64) string {
		p := filepath.Join(dir, name+".npy")
		writeNpyEdges(t, p, "<i8", src, dst, false)
		return p
	}
	short := filepath.Join(dir, "short.npy")
	if err := WriteNpy(short, "<f4", []int64{na + 1, 2}, make([]byte, 8*(na+1))); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.npy")
	if err := WriteNpy(empty, "<f4", []int64{0, 2}, nil); err != nil {
		t.Fatal(err)
	}
	labels := filepath.Join(dir, "labels-short.npy")
	if err := WriteNpy(labels, "<i8", []int64{np + 2}, make([]byte, 8*(np+2))); err != nil {
		t.Fatal(err)
	}
	maskDir := filepath.Join(dir, "bad-mask")
	os.Mkdir(maskDir, 0o755)
	if err := WriteNpy(filepath.Join(maskDir, "test.npy"), "|b1", []int64{np + 1}, make([]byte, np+1)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		edit func(o *HeteroOptions)
		want []string
	}{
		{"source past its type", func(o *HeteroOptions) {
			o.EdgeTypes[1].Edges = bad("src-past", []int64{0, 1, 0, na}, []int64{0, 0, 0, 0})
			o.EdgeTypes[1].EdgeFeatures = nil
		}, []string{`edge type "author:writes:paper"`, "edge 3 has source id " + fmt.Sprint(na), fmt.Sprintf(`outside the %d nodes of type "author"`, na)}},
		{"destination past its type", func(o *HeteroOptions) {
			o.EdgeTypes[3].Edges = bad("dst-past", []int64{0, 0}, []int64{0, g.counts["institution"] + 7})
		}, []string{`edge type "author:affiliated_with:institution"`, "edge 1 has destination id " + fmt.Sprint(g.counts["institution"]+7), `nodes of type "institution"`}},
		{"negative id", func(o *HeteroOptions) {
			o.EdgeTypes[0].Edges = bad("neg", []int64{0, -1}, []int64{0, 0})
		}, []string{`edge type "paper:cites:paper"`, "edge 1 has negative source id -1"}},
		{"no nodes", func(o *HeteroOptions) { o.NodeTypes[2].NumNodes = 0 }, []string{`node type "institution"`, "no node count"}},
		{"feature of no rows", func(o *HeteroOptions) { o.NodeTypes[1].Features[0].Path = empty }, []string{`node type "author"`, "has no nodes"}},
		{"unknown node type", func(o *HeteroOptions) { o.EdgeTypes[2].Dst = "venue" }, []string{`edge type "author:reviews:venue"`, `node type "venue"`, "not among the node types"}},
		{"duplicate node type", func(o *HeteroOptions) { o.NodeTypes[2].Name = "author" }, []string{`node type "author" is given twice`}},
		{"duplicate edge type", func(o *HeteroOptions) { o.EdgeTypes[2].Rel = "writes" }, []string{`edge type "author:writes:paper" is given twice`}},
		{"':' in a node type", func(o *HeteroOptions) { o.NodeTypes[0].Name = "pa:per" }, []string{`name "pa:per"`, "':'"}},
		{"'..' as a relation", func(o *HeteroOptions) { o.EdgeTypes[0].Rel = ".." }, []string{`relation name ".."`}},
		{"empty relation", func(o *HeteroOptions) { o.EdgeTypes[0].Rel = "" }, []string{`relation name ""`}},
		{"feature rows", func(o *HeteroOptions) {
			o.NodeTypes[1].Features = append(o.NodeTypes[1].Features, FeatureInput{Name: "y", Path: short})
		}, []string{`node type "author"`, `feature "y"`, short, fmt.Sprintf("%d rows, but the type has %d nodes", na+1, na)}},
		{"feature rows against num_nodes", func(o *HeteroOptions) { o.NodeTypes[1].NumNodes = na + 3 }, []string{`node type "author"`, fmt.Sprintf("%d rows, but the type has %d nodes (from num_nodes)", na, na+3)}},
		{"label rows", func(o *HeteroOptions) { o.NodeTypes[0].Labels = labels }, []string{`node type "paper"`, labels, fmt.Sprintf("%d labels", np+2)}},
		{"split mask", func(o *HeteroOptions) { o.NodeTypes[0].Splits = maskDir }, []string{`node type "paper"`, "bool mask"}},
		{"edge feature rows", func(o *HeteroOptions) { o.EdgeTypes[1].EdgeFeatures[0].Path = short }, []string{`edge type "author:writes:paper"`, `edge feature "w"`}},
		{"duplicate feature", func(o *HeteroOptions) {
			o.NodeTypes[0].Features = append(o.NodeTypes[0].Features, o.NodeTypes[0].Features[0])
		}, []string{`node type "paper"`, `"x" is used twice`}},
		{"no node types", func(o *HeteroOptions) { o.NodeTypes = nil }, []string{"no node types"}},
	}
	for _, c := range cases {
		opt := g.opt
		opt.NodeTypes = cloneNodeInputs(g.opt.NodeTypes)
		opt.EdgeTypes = cloneEdgeInputs(g.opt.EdgeTypes)
		c.edit(&opt)
		_, err := IngestHetero(opt)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		t.Logf("%s: %v", c.name, err)
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want it to mention %q", c.name, err, w)
			}
		}
		if _, serr := os.Stat(opt.Out); !errors.Is(serr, os.ErrNotExist) {
			t.Errorf("%s: %s exists after a refused ingest", c.name, opt.Out)
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				t.Errorf("%s: %s left behind", c.name, e.Name())
			}
		}
	}
}

func cloneNodeInputs(in []NodeTypeInput) []NodeTypeInput {
	out := slices.Clone(in)
	for i := range out {
		out[i].Features = slices.Clone(out[i].Features)
	}
	return out
}

func cloneEdgeInputs(in []EdgeTypeInput) []EdgeTypeInput {
	out := slices.Clone(in)
	for i := range out {
		out[i].EdgeFeatures = slices.Clone(out[i].EdgeFeatures)
	}
	return out
}

// TestIngestHeteroDevicePaths: with device paths every feature of every type is striped over
// them, its stripes named by type and feature, and the dataset reads back as without.
func TestIngestHeteroDevicePaths(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	dir := t.TempDir()
	g := newHeteroGraph(t, dir, rand.New(rand.NewPCG(seed, 0)))
	devs := []string{t.TempDir(), t.TempDir()}
	g.opt.DevicePaths = devs
	if _, err := IngestHetero(g.opt); err != nil {
		t.Fatal(err)
	}
	g.check(t, g.opt.Out)
	m := loadForVerify(t, g.opt.Out)
	var stripes []string
	for _, f := range m.Files {
		if filepath.IsAbs(f.Path) {
			stripes = append(stripes, filepath.Base(f.Path))
		}
	}
	// paper x and year, author x, and writes' w: two stripes each.
	if len(stripes) != 8 {
		t.Fatalf("stripes %v, want 8", stripes)
	}
	for _, want := range []string{"out.paper:x.0.", "out.paper:year.1.", "out.author:x.1.", "out.author:writes:paper:w.0."} {
		if !slices.ContainsFunc(stripes, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("no stripe named %s* among %v", want, stripes)
		}
	}
}

// TestParseHeteroSpecRefusesDuplicateKeys: a spec that names a key twice is refused, naming the
// key and where it stands, not read with the last value.
func TestParseHeteroSpecRefusesDuplicateKeys(t *testing.T) {
	for in, want := range map[string]string{
		`{"out": "a", "out": "b"}`:                                        `key "out" appears twice in the object at $`,
		`{"node_types": [{"name": "p", "num_nodes": 3, "num_nodes": 4}]}`: `key "num_nodes" appears twice in the object at $.node_types[0]`,
	} {
		if _, err := ParseHeteroSpec([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseHeteroSpec(%s) = %v, want %q", in, err, want)
		}
	}
}
