package ingest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/tierfs/tierfs/dataset"
)

// ---- input writers ----

// testGraph is a random edge list with self loops and repeated edges.
func testGraph(rng *rand.Rand, nodes, edges int) (src, dst []int64) {
	for range edges {
		s, d := rng.Int64N(int64(nodes)), rng.Int64N(int64(nodes))
		if rng.IntN(4) == 0 { // a hub, to get long lists with repeats
			d = rng.Int64N(3)
		}
		if rng.IntN(20) == 0 {
			d = s
		}
		src, dst = append(src, s), append(dst, d)
	}
	return src, dst
}

// intBytes encodes vals in a little-endian integer dtype (npy kind 'i' or 'u').
func intBytes(vals []int64, kind byte, size int) []byte {
	out := make([]byte, len(vals)*size)
	for i, v := range vals {
		switch size {
		case 1:
			out[i] = byte(v)
		case 2:
			binary.LittleEndian.PutUint16(out[2*i:], uint16(v))
		case 4:
			binary.LittleEndian.PutUint32(out[4*i:], uint32(v))
		case 8:
			binary.LittleEndian.PutUint64(out[8*i:], uint64(v))
		}
	}
	return out
}

// writeNpyEdges writes src/dst as (2, E) (pairs false) or (E, 2) (pairs true).
func writeNpyEdges(t *testing.T, path, descr string, src, dst []int64, pairs bool) {
	t.Helper()
	kind, size, err := parseDescr(descr)
	if err != nil {
		t.Fatal(err)
	}
	var vals []int64
	shape := []int64{2, int64(len(src))}
	if pairs {
		for i := range src {
			vals = append(vals, src[i], dst[i])
		}
		shape = []int64{int64(len(src)), 2}
	} else {
		vals = append(slices.Clone(src), dst...)
	}
	if err := WriteNpy(path, descr, shape, intBytes(vals, kind, size)); err != nil {
		t.Fatal(err)
	}
}

var mem = memory.NewGoAllocator()

// edgeRecords splits src/dst into Arrow record batches of at most batch rows with the given
// column names and type (Int32, Int64 or Uint16), plus an extra "weight" column.
func edgeRecords(src, dst []int64, names [2]string, typ arrow.DataType, batch int) (*arrow.Schema, []arrow.RecordBatch) {
	sc := arrow.NewSchema([]arrow.Field{{Name: names[0], Type: typ}, {Name: "weight", Type: arrow.PrimitiveTypes.Float32}, {Name: names[1], Type: typ}}, nil)
	var recs []arrow.RecordBatch
	for off := 0; off < len(src) || (off == 0 && len(src) == 0); off += batch {
		end := min(len(src), off+batch)
		b := array.NewRecordBuilder(mem, sc)
		for i := off; i < end; i++ {
			for c, v := range map[int]int64{0: src[i], 2: dst[i]} {
				switch fb := b.Field(c).(type) {
				case *array.Int32Builder:
					fb.Append(int32(v))
				case *array.Int64Builder:
					fb.Append(v)
				case *array.Uint16Builder:
					fb.Append(uint16(v))
				case *array.Float64Builder:
					fb.Append(float64(v))
				}
			}
			b.Field(1).(*array.Float32Builder).Append(1)
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
		if len(src) == 0 {
			break
		}
	}
	return sc, recs
}

func writeParquet(t *testing.T, path string, sc *arrow.Schema, recs []arrow.RecordBatch) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(700), parquet.WithDictionaryDefault(false))
	w, err := pqarrow.NewFileWriter(sc, f, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeArrowIPC(t *testing.T, path string, sc *arrow.Schema, recs []arrow.RecordBatch, stream bool) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type writer interface {
		Write(arrow.RecordBatch) error
		Close() error
	}
	var w writer
	if stream {
		w = ipc.NewWriter(f, ipc.WithSchema(sc))
	} else if w, err = ipc.NewFileWriter(f, ipc.WithSchema(sc)); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// ---- dataset readers ----

// loadVerified loads dir and checks every block against its checksum.
func loadVerified(t *testing.T, dir string) *dataset.Manifest {
	t.Helper()
	m, err := dataset.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	problems, err := m.Verify(0, nil)
	if err != nil || len(problems) > 0 {
		t.Fatalf("Verify: %v %v", problems, err)
	}
	return m
}

func readInt64File(t *testing.T, path string, n int64) []int64 {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(raw)) < 8*n {
		t.Fatalf("%s holds %d bytes, want at least %d", path, len(raw), 8*n)
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
	}
	return out
}

// neighborLists reads the CSC of m as one in-neighbor list per node.
func neighborLists(t *testing.T, m *dataset.Manifest) [][]int64 {
	t.Helper()
	et := m.Edges()
	n := m.Nodes().Count
	indptr := readInt64File(t, m.Path(et.Indptr.File), n+1)
	raw, err := os.ReadFile(m.Path(et.Indices.File))
	if err != nil {
		t.Fatal(err)
	}
	if indptr[0] != 0 || indptr[n] != et.Count {
		t.Fatalf("indptr runs %d..%d, edge count %d", indptr[0], indptr[n], et.Count)
	}
	lists := make([][]int64, n)
	for v := range n {
		for i := indptr[v]; i < indptr[v+1]; i++ {
			if et.Indices.DType == dataset.Int32 {
				lists[v] = append(lists[v], int64(int32(binary.LittleEndian.Uint32(raw[4*i:]))))
			} else {
				lists[v] = append(lists[v], int64(binary.LittleEndian.Uint64(raw[8*i:])))
			}
		}
	}
	return lists
}

// referenceLists is the plain in-memory CSC of the edges with the options applied.
func referenceLists(n int64, src, dst []int64, undirected, dropSelfLoops, dedup bool) [][]int64 {
	lists := make([][]int64, n)
	for i := range src {
		s, d := src[i], dst[i]
		if dropSelfLoops && s == d {
			continue
		}
		lists[d] = append(lists[d], s)
		if undirected && s != d {
			lists[s] = append(lists[s], d)
		}
	}
	if dedup {
		for v := range lists {
			slices.Sort(lists[v])
			lists[v] = slices.Compact(lists[v])
		}
	}
	return lists
}

// checkLists compares per-node neighbor multisets (sets when dedup).
func checkLists(t *testing.T, got, want [][]int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d nodes, want %d", len(got), len(want))
	}
	for v := range got {
		g, w := slices.Clone(got[v]), slices.Clone(want[v])
		slices.Sort(g)
		slices.Sort(w)
		if !slices.Equal(g, w) {
			t.Fatalf("node %d: in-neighbors %v, want %v", v, got[v], want[v])
		}
	}
}

// featureRow reads row of the feature through Locate.
func featureRow(t *testing.T, m *dataset.Manifest, spec *dataset.FeatureSpec, row int64) []byte {
	t.Helper()
	k, off := spec.Locate(row)
	f, err := os.Open(m.Path(spec.Files[k]))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, spec.RowBytes)
	if _, err := f.ReadAt(buf, off); err != nil {
		t.Fatalf("row %d in file %d at %d: %v", row, k, off, err)
	}
	return buf
}

// featureFile reads every row of the feature (one open per stripe file).
func featureBytes(t *testing.T, m *dataset.Manifest, spec *dataset.FeatureSpec) []byte {
	t.Helper()
	files := make([][]byte, len(spec.Files))
	for k, p := range spec.Files {
		var err error
		if files[k], err = os.ReadFile(m.Path(p)); err != nil {
			t.Fatal(err)
		}
	}
	out := make([]byte, 0, spec.Count()*spec.RowBytes)
	for row := range spec.Count() {
		k, off := spec.Locate(row)
		out = append(out, files[k][off:off+spec.RowBytes]...)
	}
	return out
}

// ---- round trips ----

func TestEdgesRoundTrip(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	const nodes = 300
	src, dst := testGraph(rng, nodes, 5000)
	in := t.TempDir()

	type input struct {
		name string
		make func(path string)
	}
	var inputs []input
	for _, descr := range []string{"<i4", "<i8", "<u2", "|u1"} {
		for _, pairs := range []bool{false, true} {
			if descr == "|u1" {
				continue // ids do not fit
			}
			inputs = append(inputs, input{fmt.Sprintf("npy %s pairs=%v", descr, pairs), func(p string) { writeNpyEdges(t, p, descr, src, dst, pairs) }})
		}
	}
	inputs = append(inputs, input{"npy fortran (E,2)", func(p string) {
		// A Fortran-order (E, 2) array is laid out like a C-order (2, E) one.
		data := intBytes(append(slices.Clone(src), dst...), 'i', 8)
		hdr := fmt.Sprintf("{'descr': '<i8', 'fortran_order': True, 'shape': (%d, 2), }", len(src))
		hdr += strings.Repeat(" ", 63-(10+len(hdr))%64) + "\n"
		os.WriteFile(p, rawNpy(1, hdr, data), 0o644)
	}})
	for _, typ := range []arrow.DataType{arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Uint16} {
		for _, format := range []string{"parquet", "arrow-file", "arrow-stream"} {
			inputs = append(inputs, input{format + " " + typ.String(), func(p string) {
				sc, recs := edgeRecords(src, dst, [2]string{"src", "dst"}, typ, 1234)
				switch format {
				case "parquet":
					writeParquet(t, p, sc, recs)
				case "arrow-file":
					writeArrowIPC(t, p, sc, recs, false)
				default:
					writeArrowIPC(t, p, sc, recs, true)
				}
			}})
		}
	}
	// Columns named dst before src, and unnamed columns (the first two are used).
	inputs = append(inputs, input{"parquet dst,src order", func(p string) {
		sc, recs := edgeRecords(dst, src, [2]string{"dst", "src"}, arrow.PrimitiveTypes.Int64, 999)
		writeParquet(t, p, sc, recs)
	}})
	inputs = append(inputs, input{"arrow-file unnamed", func(p string) {
		sc := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.PrimitiveTypes.Int64}}, nil)
		b := array.NewRecordBuilder(mem, sc)
		b.Field(0).(*array.Int64Builder).AppendValues(src, nil)
		b.Field(1).(*array.Int64Builder).AppendValues(dst, nil)
		writeArrowIPC(t, p, sc, []arrow.RecordBatch{b.NewRecordBatch()}, false)
	}})

	for i, inp := range inputs {
		path := filepath.Join(in, fmt.Sprintf("edges%d", i))
		inp.make(path)
		for _, variant := range []struct{ undirected, selfLoops, dedup bool }{{}, {true, true, true}, {false, true, false}, {true, false, false}, {false, false, true}} {
			if i > 0 && variant != (struct{ undirected, selfLoops, dedup bool }{}) && i%3 != 0 {
				continue // every input plain; the transformations on a few
			}
			out := filepath.Join(t.TempDir(), "ds")
			m, err := Ingest(Options{Edges: path, Out: out, NumNodes: nodes, Undirected: variant.undirected, DropSelfLoops: variant.selfLoops, Dedup: variant.dedup})
			if err != nil {
				t.Fatalf("%s %+v: %v", inp.name, variant, err)
			}
			m = loadVerified(t, out)
			got := neighborLists(t, m)
			want := referenceLists(nodes, src, dst, variant.undirected, variant.selfLoops, variant.dedup)
			checkLists(t, got, want)
			if m.Edges().Indices.DType != dataset.Int32 || m.Nodes().Count != nodes {
				t.Errorf("%s: indices %s, %d nodes", inp.name, m.Edges().Indices.DType, m.Nodes().Count)
			}
			for v, l := range got {
				if variant.dedup && !slices.IsSorted(l) {
					t.Fatalf("%s: node %d list not sorted after dedup: %v", inp.name, v, l)
				}
				if variant.selfLoops && slices.Contains(l, int64(v)) {
					t.Fatalf("%s: node %d keeps a self loop", inp.name, v)
				}
				if !variant.dedup && !slices.Equal(l, want[v]) {
					t.Fatalf("%s: node %d list %v is not in input order %v", inp.name, v, l, want[v])
				}
			}
		}
	}
}

func TestNumNodesFromEdges(t *testing.T) {
	in := t.TempDir()
	src, dst := []int64{0, 5, 9, 3}, []int64{1, 1, 9, 0}
	p := filepath.Join(in, "e.npy")
	writeNpyEdges(t, p, "<i8", src, dst, false)
	out := filepath.Join(t.TempDir(), "ds")
	// The self loop on 9 is dropped but node 9 still exists.
	if _, err := Ingest(Options{Edges: p, Out: out, DropSelfLoops: true}); err != nil {
		t.Fatal(err)
	}
	m := loadVerified(t, out)
	if m.Nodes().Count != 10 || m.Edges().Count != 3 {
		t.Fatalf("%d nodes %d edges, want 10 and 3", m.Nodes().Count, m.Edges().Count)
	}
	checkLists(t, neighborLists(t, m), referenceLists(10, src, dst, false, true, false))

	// No edges at all.
	writeNpyEdges(t, p, "<i8", nil, nil, false)
	out = filepath.Join(t.TempDir(), "ds")
	if _, err := Ingest(Options{Edges: p, Out: out, NumNodes: 4}); err != nil {
		t.Fatal(err)
	}
	m = loadVerified(t, out)
	if m.Nodes().Count != 4 || m.Edges().Count != 0 {
		t.Fatalf("%d nodes %d edges, want 4 and 0", m.Nodes().Count, m.Edges().Count)
	}
}

func TestFeaturesNpyAllDTypes(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	in := t.TempDir()
	type tc struct {
		descr    string
		override dataset.DType
		want     dataset.DType
		dim      int64
	}
	cases := []tc{
		{"<f4", "", dataset.Float32, 3}, {"<f4", "", dataset.Float32, 1500}, {"<f4", "", dataset.Float32, 1024},
		{"<f2", "", dataset.Float16, 7}, {"<f8", "", dataset.Float64, 5}, {"|i1", "", dataset.Int8, 33},
		{"|u1", "", dataset.Uint8, 4096}, {"<i2", "", dataset.Int16, 9}, {"<i4", "", dataset.Int32, 2},
		{"<i8", "", dataset.Int64, 1}, {"<V2", dataset.BFloat16, dataset.BFloat16, 100},
		{"<u2", dataset.BFloat16, dataset.BFloat16, 8}, {"<f4", dataset.Float32, dataset.Float32, 3},
	}
	for _, c := range cases {
		for _, devices := range []int{0, 1, 3} {
			if devices == 3 && c.dim != 3 && c.dim != 1500 {
				continue
			}
			_, size, _ := parseDescr(c.descr)
			rowBytes := c.dim * int64(size)
			// Enough rows for several stripes per file when striping.
			rows := int64(50) + rng.Int64N(50)
			if devices == 3 {
				spec, _ := dataset.NewFeatureSpec("x", c.want, c.dim, 1, 3, dataset.DefaultBlockSize)
				rows = 3*spec.StripeRows + spec.StripeRows/2 + 7
			}
			data := make([]byte, rows*rowBytes)
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			p := filepath.Join(in, "x.npy")
			if err := WriteNpy(p, c.descr, []int64{rows, c.dim}, data); err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			out := filepath.Join(root, "ds")
			var devs []string
			for k := range devices {
				devs = append(devs, filepath.Join(root, fmt.Sprintf("nvme%d", k)))
				os.Mkdir(devs[k], 0o755)
			}
			_, err := Ingest(Options{Features: p, Out: out, DevicePaths: devs, FeatureDType: c.override})
			if err != nil {
				t.Fatalf("%s dim %d devices %d: %v", c.descr, c.dim, devices, err)
			}
			m := loadVerified(t, out)
			spec, err := m.Feature("x")
			if err != nil {
				t.Fatal(err)
			}
			if spec.DType != c.want || spec.Dim != c.dim || spec.Count() != rows || m.Nodes().Count != rows || m.Edges() != nil {
				t.Fatalf("%s: spec %+v count %d", c.descr, spec, spec.Count())
			}
			for k, f := range spec.Files {
				if devices == 0 && f != "features.x.0.bin" {
					t.Errorf("stripe %d at %s, want features.x.0.bin", k, f)
				}
				if devices > 0 && !stripeName(devs[k], "ds", k).MatchString(f) {
					t.Errorf("stripe %d at %s, want %s", k, f, stripeName(devs[k], "ds", k))
				}
			}
			if got := featureBytes(t, m, spec); !bytes.Equal(got, data) {
				t.Fatalf("%s dim %d devices %d: feature bytes differ", c.descr, c.dim, devices)
			}
			for _, row := range []int64{0, rows / 2, rows - 1} {
				if got := featureRow(t, m, spec, row); !bytes.Equal(got, data[row*rowBytes:(row+1)*rowBytes]) {
					t.Fatalf("%s: row %d differs", c.descr, row)
				}
			}
		}
	}
}

// featureRecords builds Arrow batches of float32/float16/int8/float64 features, as one
// fixed_size_list column, a list column, or one column per dimension. It returns the
// little-endian row bytes too.
func featureRecords(rng *rand.Rand, typ arrow.DataType, rows, dim, batch int, layout string) (*arrow.Schema, []arrow.RecordBatch, []byte) {
	var fields []arrow.Field
	switch layout {
	case "fixed":
		fields = []arrow.Field{{Name: "x", Type: arrow.FixedSizeListOf(int32(dim), typ)}}
	case "list":
		fields = []arrow.Field{{Name: "x", Type: arrow.ListOf(typ)}}
	default:
		for j := range dim {
			fields = append(fields, arrow.Field{Name: fmt.Sprintf("x%d", j), Type: typ})
		}
	}
	sc := arrow.NewSchema(fields, nil)
	var want []byte
	var recs []arrow.RecordBatch
	appendValue := func(b array.Builder) {
		switch vb := b.(type) {
		case *array.Float32Builder:
			v := float32(rng.NormFloat64())
			vb.Append(v)
			want = binary.LittleEndian.AppendUint32(want, math.Float32bits(v))
		case *array.Float64Builder:
			v := rng.NormFloat64()
			vb.Append(v)
			want = binary.LittleEndian.AppendUint64(want, math.Float64bits(v))
		case *array.Float16Builder:
			v := float16.New(float32(rng.NormFloat64()))
			vb.Append(v)
			want = binary.LittleEndian.AppendUint16(want, v.Uint16())
		case *array.Int8Builder:
			v := int8(rng.IntN(256) - 128)
			vb.Append(v)
			want = append(want, byte(v))
		default:
			panic(fmt.Sprintf("no builder %T", b))
		}
	}
	for off := 0; off < rows; off += batch {
		b := array.NewRecordBuilder(mem, sc)
		for range min(batch, rows-off) {
			switch layout {
			case "fixed":
				lb := b.Field(0).(*array.FixedSizeListBuilder)
				lb.Append(true)
				for range dim {
					appendValue(lb.ValueBuilder())
				}
			case "list":
				lb := b.Field(0).(*array.ListBuilder)
				lb.Append(true)
				for range dim {
					appendValue(lb.ValueBuilder())
				}
			default:
				for j := range dim {
					appendValue(b.Field(j))
				}
			}
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	return sc, recs, want
}

func TestFeaturesArrow(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	in := t.TempDir()
	cases := []struct {
		typ    arrow.DataType
		want   dataset.DType
		dim    int
		layout string
		format string
	}{
		{arrow.PrimitiveTypes.Float32, dataset.Float32, 3, "fixed", "parquet"},
		{arrow.PrimitiveTypes.Float32, dataset.Float32, 1500, "fixed", "parquet"},
		{arrow.PrimitiveTypes.Float32, dataset.Float32, 3, "columns", "parquet"},
		{arrow.PrimitiveTypes.Float64, dataset.Float64, 5, "columns", "parquet"},
		{arrow.PrimitiveTypes.Int8, dataset.Int8, 17, "fixed", "parquet"},
		{arrow.FixedWidthTypes.Float16, dataset.Float16, 6, "fixed", "parquet"},
		{arrow.PrimitiveTypes.Float32, dataset.Float32, 12, "list", "parquet"},
		{arrow.PrimitiveTypes.Float32, dataset.Float32, 3, "fixed", "arrow-file"},
		{arrow.PrimitiveTypes.Float32, dataset.Float32, 4, "columns", "arrow-stream"},
	}
	for _, c := range cases {
		for _, devices := range []int{0, 3} {
			rows := 400 + rng.IntN(200)
			sc, recs, want := featureRecords(rng, c.typ, rows, c.dim, 150, c.layout)
			p := filepath.Join(in, "x."+c.format)
			switch c.format {
			case "parquet":
				writeParquet(t, p, sc, recs)
			case "arrow-file":
				writeArrowIPC(t, p, sc, recs, false)
			default:
				writeArrowIPC(t, p, sc, recs, true)
			}
			root := t.TempDir()
			var devs []string
			for k := range devices {
				devs = append(devs, filepath.Join(root, fmt.Sprintf("d%d", k)))
				os.Mkdir(devs[k], 0o755)
			}
			out := filepath.Join(root, "ds")
			if _, err := Ingest(Options{Features: p, Out: out, DevicePaths: devs}); err != nil {
				t.Fatalf("%s %s %s dim %d: %v", c.format, c.layout, c.typ, c.dim, err)
			}
			m := loadVerified(t, out)
			spec, _ := m.Feature("")
			if spec.DType != c.want || spec.Dim != int64(c.dim) || spec.Count() != int64(rows) {
				t.Fatalf("%s %s: spec %+v", c.format, c.layout, spec)
			}
			if got := featureBytes(t, m, spec); !bytes.Equal(got, want) {
				t.Fatalf("%s %s %s dim %d devices %d: feature bytes differ", c.format, c.layout, c.typ, c.dim, devices)
			}
		}
	}
}

func TestLabelsAndSplits(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 4))
	in := t.TempDir()
	const nodes = 1000
	src, dst := testGraph(rng, nodes, 3000)
	edges := filepath.Join(in, "e.npy")
	writeNpyEdges(t, edges, "<i4", src, dst, false)
	feats := filepath.Join(in, "x.npy")
	WriteNpy(feats, "<f4", []int64{nodes, 2}, make([]byte, nodes*8))
	labels := make([]int64, nodes)
	for i := range labels {
		labels[i] = rng.Int64N(7) - 1 // -1 .. 5
	}
	labels[10] = 6
	labelsPath := filepath.Join(in, "y.npy")
	WriteNpy(labelsPath, "<i2", []int64{nodes}, intBytes(labels, 'i', 2))

	for _, asMask := range []bool{false, true} {
		splitDir := filepath.Join(in, fmt.Sprintf("splits-%v", asMask))
		os.Mkdir(splitDir, 0o755)
		want := map[string][]int64{}
		perm := rng.Perm(nodes)
		for i, name := range []string{"train", "test"} { // no val: any subset may be present
			ids := make([]int64, 0)
			for _, v := range perm[i*300 : i*300+100+i*50] {
				ids = append(ids, int64(v))
			}
			p := filepath.Join(splitDir, name+".npy")
			if asMask {
				mask := make([]byte, nodes)
				for _, v := range ids {
					mask[v] = 1
				}
				WriteNpy(p, "|b1", []int64{nodes}, mask)
				slices.Sort(ids)
			} else {
				WriteNpy(p, "<i8", []int64{int64(len(ids))}, intBytes(ids, 'i', 8))
			}
			want[name] = ids
		}
		out := filepath.Join(t.TempDir(), "ds")
		var stages []string
		_, err := Ingest(Options{Edges: edges, Features: feats, Labels: labelsPath, SplitsDir: splitDir, Out: out,
			Progress: func(stage string, done, total int64) {
				if len(stages) == 0 || stages[len(stages)-1] != stage {
					stages = append(stages, stage)
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("progress stages: %v", stages)
		m := loadVerified(t, out)
		nt := m.Nodes()
		if nt.Labels == nil || nt.Labels.NumClasses != 7 {
			t.Fatalf("labels %+v, want 7 classes", nt.Labels)
		}
		if got := readInt64File(t, m.Path(nt.Labels.File), nodes); !slices.Equal(got, labels) {
			t.Fatal("labels differ")
		}
		if len(nt.Splits) != 2 {
			t.Fatalf("splits %v, want train and test", nt.Splits)
		}
		for name, ids := range want {
			s := nt.Splits[name]
			if got := readInt64File(t, m.Path(s.File), s.Count); !slices.Equal(got, ids) || s.Count != int64(len(ids)) {
				t.Fatalf("split %s (mask %v): %d ids differ from the %d written", name, asMask, s.Count, len(ids))
			}
		}
		if !slices.Contains(stages, "edges: count") || !slices.Contains(stages, "features") || stages[len(stages)-1] != "commit" {
			t.Errorf("progress stages %v", stages)
		}
		if !slices.Contains(m.Created.Args, "labels="+labelsPath) {
			t.Errorf("created args %v", m.Created.Args)
		}
	}
}

// ---- bad inputs ----

func TestBadInputs(t *testing.T) {
	in := t.TempDir()
	p := func(name string) string { return filepath.Join(in, name) }
	src, dst := []int64{0, 1, 2, 3, 4, 5, 6, 7}, []int64{1, 2, 3, 4, 5, 6, 7, 0}
	writeNpyEdges(t, p("good.npy"), "<i8", src, dst, false)
	WriteNpy(p("shape3.npy"), "<i8", []int64{3, 4}, make([]byte, 96))
	WriteNpy(p("shape1d.npy"), "<i8", []int64{8}, make([]byte, 64))
	WriteNpy(p("float.npy"), "<f4", []int64{2, 4}, make([]byte, 32))
	writeNpyEdges(t, p("big.npy"), "<i8", src, []int64{1, 2, 3, 4, 5, 6, 7, 100}, false)
	writeNpyEdges(t, p("neg.npy"), "<i4", []int64{0, 1, 2, -1}, []int64{1, 2, 3, 0}, true)
	writeNpyEdges(t, p("trunc.npy"), "<i8", src, dst, false)
	os.Truncate(p("trunc.npy"), 128+8*16-5)
	WriteNpy(p("x12.npy"), "<f4", []int64{12, 3}, make([]byte, 12*12))
	WriteNpy(p("x8.npy"), "<f4", []int64{8, 3}, make([]byte, 8*12))
	os.WriteFile(p("complex.npy"), rawNpy(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (8, 3), }\n", make([]byte, 8*24)), 0o644)
	WriteNpy(p("void.npy"), "<V2", []int64{8, 3}, make([]byte, 8*6))
	WriteNpy(p("u16.npy"), "<u2", []int64{8, 3}, make([]byte, 8*6))
	WriteNpy(p("x1d.npy"), "<f4", []int64{8}, make([]byte, 32))
	os.WriteFile(p("fortran.npy"), rawNpy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (8, 3), }\n", make([]byte, 96)), 0o644)
	os.WriteFile(p("bigendian.npy"), rawNpy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (8, 3), }\n", make([]byte, 96)), 0o644)
	WriteNpy(p("y7.npy"), "<i8", []int64{7}, make([]byte, 56))
	WriteNpy(p("yfloat.npy"), "<f4", []int64{8}, make([]byte, 32))
	WriteNpy(p("yneg.npy"), "<i8", []int64{8}, intBytes([]int64{0, 1, -2, 0, 0, 0, 0, 0}, 'i', 8))
	os.WriteFile(p("garbage.parquet"), []byte("PAR1 this is not parquet at all"), 0o644)
	os.WriteFile(p("garbage.bin"), []byte("hello, I am not an arrow stream"), 0o644)
	sc, recs := edgeRecords(src, dst, [2]string{"src", "dst"}, arrow.PrimitiveTypes.Float64, 100)
	writeParquet(t, p("float.parquet"), sc, recs)
	for _, name := range []string{"badsplit", "badmask", "nosplits"} {
		os.Mkdir(p(name), 0o755)
	}
	WriteNpy(p("badsplit/train.npy"), "<i8", []int64{2}, intBytes([]int64{3, 8}, 'i', 8))
	WriteNpy(p("badmask/val.npy"), "|b1", []int64{5}, make([]byte, 5))

	cases := []struct {
		name string
		opt  Options
		want []string // substrings of the error
	}{
		{"missing edges", Options{Edges: p("nope.npy")}, []string{"nope.npy", "no such file"}},
		{"edges shape", Options{Edges: p("shape3.npy")}, []string{"shape3.npy", "(3, 4)", "want (2, E) or (E, 2)"}},
		{"edges 1-D", Options{Edges: p("shape1d.npy")}, []string{"shape1d.npy", "(8,)"}},
		{"float edges npy", Options{Edges: p("float.npy")}, []string{"float.npy", "<f4", "must be integers"}},
		{"float edges parquet", Options{Edges: p("float.parquet")}, []string{"float.parquet", "float64", "must be integers"}},
		{"out of range", Options{Edges: p("big.npy"), NumNodes: 8}, []string{"big.npy", "edge 7", "destination id 100", "8 nodes"}},
		{"out of range via features", Options{Edges: p("big.npy"), Features: p("x8.npy")}, []string{"big.npy", "edge 7", "100"}},
		{"negative", Options{Edges: p("neg.npy")}, []string{"neg.npy", "edge 3", "negative source id -1"}},
		{"truncated edges", Options{Edges: p("trunc.npy")}, []string{"trunc.npy", "truncated"}},
		{"truncated features", Options{Features: p("trunc.npy")}, []string{"trunc.npy", "truncated"}},
		{"feature rows", Options{Edges: p("good.npy"), Features: p("x12.npy"), NumNodes: 8}, []string{"x12.npy", "12 rows", "8 nodes"}},
		{"feature rows vs labels", Options{Features: p("x12.npy"), Labels: p("y7.npy")}, []string{"y7.npy", "7 labels", "12 nodes"}},
		{"complex features", Options{Features: p("complex.npy")}, []string{"complex.npy", "<c8", "not supported"}},
		{"void without dtype", Options{Features: p("void.npy")}, []string{"void.npy", "<V2", "FeatureDType"}},
		{"unknown FeatureDType", Options{Features: p("void.npy"), FeatureDType: "float8"}, []string{"void.npy", "float8", "not a known dtype"}},
		{"mismatched FeatureDType", Options{Features: p("x8.npy"), FeatureDType: dataset.BFloat16}, []string{"x8.npy", "bfloat16", "<f4"}},
		{"uint16 features", Options{Features: p("u16.npy")}, []string{"u16.npy", "<u2", "not a supported feature dtype"}},
		{"1-D features", Options{Features: p("x1d.npy")}, []string{"x1d.npy", "(8,)", "2-D"}},
		{"fortran features", Options{Features: p("fortran.npy")}, []string{"fortran.npy", "Fortran"}},
		{"big-endian features", Options{Features: p("bigendian.npy")}, []string{"bigendian.npy", "big-endian"}},
		{"labels count", Options{Edges: p("good.npy"), Labels: p("y7.npy"), NumNodes: 8}, []string{"y7.npy", "7 labels", "8 nodes"}},
		{"labels dtype", Options{Edges: p("good.npy"), Labels: p("yfloat.npy")}, []string{"yfloat.npy", "<f4"}},
		{"labels negative", Options{Edges: p("good.npy"), NumNodes: 8, Labels: p("yneg.npy")}, []string{"yneg.npy", "node 2", "-2"}},
		{"split id", Options{Edges: p("good.npy"), SplitsDir: p("badsplit")}, []string{"train.npy", "entry 1", "node id 8"}},
		{"split mask", Options{Edges: p("good.npy"), SplitsDir: p("badmask")}, []string{"val.npy", "5 entries", "(8)"}},
		{"no splits", Options{Edges: p("good.npy"), SplitsDir: p("nosplits")}, []string{"nosplits", "none of"}},
		{"garbage parquet", Options{Edges: p("garbage.parquet")}, []string{"garbage.parquet", "Parquet"}},
		{"garbage file", Options{Edges: p("garbage.bin")}, []string{"garbage.bin", "not .npy, Parquet or Arrow IPC"}},
		{"missing device", Options{Features: p("x8.npy"), DevicePaths: []string{p("no-such-device")}}, []string{"no-such-device"}},
		{"nothing", Options{}, []string{"nothing to ingest"}},
	}
	for _, c := range cases {
		c.opt.Out = filepath.Join(t.TempDir(), "ds")
		t0 := time.Now()
		_, err := Ingest(c.opt)
		t.Logf("%s (%v): %v", c.name, time.Since(t0).Round(time.Microsecond), err)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "ingest: ") {
			t.Errorf("%s: error %q lacks the ingest: prefix", c.name, msg)
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: error %q does not mention %q", c.name, msg, w)
			}
		}
		if _, err := dataset.Load(c.opt.Out); err == nil {
			t.Errorf("%s: a failed ingest left a loadable dataset", c.name)
		}
	}
}

// TestFailedIngestUnpublishesOldDataset: an ingest that fails after it started writing leaves
// no dataset, not the old manifest over new files.
// stripeName matches the path of stripe k of dataset base on device directory dev: the write's
// nonce keeps a replaced dataset's stripes apart from the new ones.
func stripeName(dev, base string, k int) *regexp.Regexp {
	return regexp.MustCompile("^" + regexp.QuoteMeta(filepath.Join(dev, fmt.Sprintf("%s.x.%d.", base, k))) + "[0-9a-f]{12}[.]bin$")
}

// TestFailedIngestKeepsOldDataset: an ingest over a dataset is refused unless Replace, and one
// that fails after it started writing leaves the old dataset as it was.
func TestFailedIngestKeepsOldDataset(t *testing.T) {
	in := t.TempDir()
	edges := filepath.Join(in, "e.npy")
	writeNpyEdges(t, edges, "<i8", []int64{0, 1}, []int64{1, 2}, false)
	out := filepath.Join(t.TempDir(), "ds")
	if _, err := Ingest(Options{Edges: edges, Out: out}); err != nil {
		t.Fatal(err)
	}
	loadVerified(t, out)
	splits := filepath.Join(in, "s")
	os.Mkdir(splits, 0o755)
	WriteNpy(filepath.Join(splits, "train.npy"), "<i8", []int64{1}, intBytes([]int64{99}, 'i', 8))
	if _, err := Ingest(Options{Edges: edges, Out: out}); !errors.Is(err, dataset.ErrExists) {
		t.Fatalf("ingest over a dataset without Replace: %v, want ErrExists", err)
	}
	if _, err := Ingest(Options{Edges: edges, Out: out, SplitsDir: splits, Replace: true}); err == nil {
		t.Fatal("split id 99 of 3 nodes accepted")
	}
	loadVerified(t, out)
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".ds.tierfs-*")); len(left) != 0 {
		t.Fatalf("a failed ingest left %v", left)
	}
}

// TestWriteErrorSurfaces runs an ingest under a file size limit (as a stand-in for a full disk)
// in a child process: the write error comes back as an error, not a crash.
func TestWriteErrorSurfaces(t *testing.T) {
	if os.Getenv("TIERFS_INGEST_FSIZE_CHILD") != "" {
		fsizeChild(t)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	cmd := testCommand(exe, "-test.run=^TestWriteErrorSurfaces$", "-test.v")
	cmd.Env = append(os.Environ(), "TIERFS_INGEST_FSIZE_CHILD="+dir)
	outb, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(outb, []byte("CHILD-OK")) {
		t.Fatalf("child: %v\n%s", err, outb)
	}
}

// TestMappedFaultBecomesError: an IO fault writing through the indices mapping (here: the file
// shrank under it) is an error naming the file, not a crash.
func TestMappedFaultBecomesError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "indices.bin")
	mf, err := dataset.CreateMapped(nil, path, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	err = faultsAsErrors(path, func() error {
		mf.Bytes()[1<<15] = 1
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "indices.bin") {
		t.Fatalf("write past the end of a mapped file: %v", err)
	}
	t.Log(err)
}

func TestArrowNullsAndRaggedLists(t *testing.T) {
	in := t.TempDir()
	sc := arrow.NewSchema([]arrow.Field{{Name: "src", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "dst", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	b := array.NewRecordBuilder(mem, sc)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{0, 1, 2}, nil)
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{1, 2, 0}, []bool{true, false, true})
	p := filepath.Join(in, "nulls.parquet")
	writeParquet(t, p, sc, []arrow.RecordBatch{b.NewRecordBatch()})
	_, err := Ingest(Options{Edges: p, Out: filepath.Join(t.TempDir(), "ds")})
	if err == nil || !strings.Contains(err.Error(), "null") || !strings.Contains(err.Error(), p) {
		t.Errorf("edges with a null: %v", err)
	}

	sc = arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32)}}, nil)
	b = array.NewRecordBuilder(mem, sc)
	lb := b.Field(0).(*array.ListBuilder)
	for _, n := range []int{3, 3, 2} {
		lb.Append(true)
		for range n {
			lb.ValueBuilder().(*array.Float32Builder).Append(1)
		}
	}
	p = filepath.Join(in, "ragged.arrow")
	writeArrowIPC(t, p, sc, []arrow.RecordBatch{b.NewRecordBatch()}, false)
	_, err = Ingest(Options{Features: p, Out: filepath.Join(t.TempDir(), "ds")})
	if err == nil || !strings.Contains(err.Error(), "row 2 has 2 values, want 3") {
		t.Errorf("ragged list features: %v", err)
	}
}
