package ingest

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
)

// float32Npy writes vals as a (rows, dim) float32 .npy in dir and returns its path.
func float32Npy(t *testing.T, dir, name string, vals []float32, dim int64) string {
	t.Helper()
	data := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
	}
	p := filepath.Join(dir, name+".npy")
	if err := WriteNpy(p, "<f4", []int64{int64(len(vals)) / dim, dim}, data); err != nil {
		t.Fatal(err)
	}
	return p
}

// halfBytes is vals converted by the reference conversion of store.
func halfBytes(vals []float32, store dataset.DType) []byte {
	out := make([]byte, 2*len(vals))
	encodeValues(out, vals, store)
	return out
}

// TestStoreDType ingests float32 node and edge features at float16 and bfloat16, over one and
// several devices: the manifest says the stored dtype and half the row bytes, every row holds
// its values rounded to nearest even, integer features other than the default are kept.
func TestStoreDType(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 44))
	in := t.TempDir()
	const rows, dim = 300, 17
	vals := make([]float32, rows*dim)
	for i := range vals {
		vals[i] = float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(40)-25)))
	}
	vals[5], vals[6], vals[7] = float32(math.Inf(1)), float32(math.NaN()), -65504
	x := float32Npy(t, in, "x", vals, dim)
	src, dst := testGraph(rng, rows, 900)
	edges := filepath.Join(in, "edges.npy")
	writeNpyEdges(t, edges, "<i8", src, dst, false)
	w := make([]float32, len(src))
	for i := range w {
		w[i] = float32(i) + 0.3
	}
	weight := float32Npy(t, in, "w", w, 1)
	years := make([]int64, rows)
	for i := range years {
		years[i] = 1990 + int64(i%30)
	}
	year := filepath.Join(in, "year.npy")
	if err := WriteNpy(year, "<i8", []int64{rows}, intBytes(years, 'i', 8)); err != nil {
		t.Fatal(err)
	}
	for _, store := range []dataset.DType{dataset.Float16, dataset.BFloat16} {
		for _, devices := range []int{0, 2} {
			root := t.TempDir()
			var devs []string
			for k := range devices {
				devs = append(devs, filepath.Join(root, "nvme"+string(rune('0'+k))))
				if err := os.Mkdir(devs[k], 0o755); err != nil {
					t.Fatal(err)
				}
			}
			out := filepath.Join(root, "ds")
			_, err := Ingest(Options{Edges: edges, Features: x, Out: out, StoreDType: store, DevicePaths: devs,
				NodeFeatures: []FeatureInput{{Name: "year", Path: year}}, EdgeFeatures: []FeatureInput{{Name: "w", Path: weight}}})
			if err != nil {
				t.Fatalf("%s devices %d: %v", store, devices, err)
			}
			m := loadVerified(t, out)
			spec, err := m.Feature("x")
			if err != nil {
				t.Fatal(err)
			}
			if spec.DType != store || spec.RowBytes != 2*dim {
				t.Errorf("%s: x stored as %s, %d B rows; want %s, %d B", store, spec.DType, spec.RowBytes, store, 2*dim)
			}
			if got, want := featureBytes(t, m, spec), halfBytes(vals, store); string(got) != string(want) {
				t.Errorf("%s devices %d: x's rows differ from the float32 values rounded to %s", store, devices, store)
			}
			ys, _ := m.Feature("year")
			if ys.DType != dataset.Int64 {
				t.Errorf("%s: the int64 feature year is stored as %s; integer features other than the default are kept", store, ys.DType)
			}
			et := m.EdgeTypes[0]
			ws := et.Features[0]
			if ws.Name != "w" || ws.DType != store {
				t.Fatalf("%s: edge feature %s stored as %s", store, ws.Name, ws.DType)
			}
			order := featureBytes(t, m, &et.Features[1]) // input_edge_id: the input row of each edge id
			got := featureBytes(t, m, &ws)
			for p := range et.Count {
				r := int64(binary.LittleEndian.Uint64(order[8*p:]))
				if want := halfBytes(w[r:r+1], store); string(got[2*p:2*p+2]) != string(want) {
					t.Fatalf("%s: edge id %d (input row %d) holds %x, want %x", store, p, r, got[2*p:2*p+2], want)
				}
			}
		}
	}
}

// TestStoreDTypeRefusals: a value float16 holds only as Inf is named by row, column and value;
// features that are not float32 are refused unless kept (integers beside the default); store
// dtypes other than the half ones, and in-place features, are refused.
func TestStoreDTypeRefusals(t *testing.T) {
	in := t.TempDir()
	vals := make([]float32, 40*4)
	vals[4*33+2] = 65520 // rounds to Inf in float16; 65519 rounds to 65504
	vals[4*10+1] = 65519
	x := float32Npy(t, in, "x", vals, 4)
	ints := filepath.Join(in, "ints.npy")
	if err := WriteNpy(ints, "<i4", []int64{40, 4}, make([]byte, 40*4*4)); err != nil {
		t.Fatal(err)
	}
	f64 := filepath.Join(in, "f64.npy")
	if err := WriteNpy(f64, "<f8", []int64{40, 4}, make([]byte, 40*4*8)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		opt  Options
		want []string
	}{
		{Options{Features: x, StoreDType: dataset.Float16}, []string{`feature "x"`, "row 33, column 2", "65520", "float16's finite range", "65504", "bfloat16"}},
		{Options{Features: ints, StoreDType: dataset.Float16}, []string{`feature "x"`, "int32", "float32 features only", "default feature"}},
		{Options{Features: x, NodeFeatures: []FeatureInput{{Name: "d", Path: f64}}, StoreDType: dataset.BFloat16}, []string{`node feature "d"`, "float64", "float32 features only"}},
		{Options{Features: x, StoreDType: dataset.Int8}, []string{`StoreDType "int8"`, "float16 or bfloat16"}},
		{Options{Features: x, StoreDType: dataset.Float16, FeaturesInPlace: true}, []string{"FeaturesInPlace", "in-place"}},
	} {
		c.opt.Out = filepath.Join(t.TempDir(), "ds")
		_, err := Ingest(c.opt)
		if err == nil {
			t.Errorf("%+v: no error", c.opt)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not say %q", err, w)
			}
		}
	}
	// bfloat16 holds 65520; float32 (as none) stores it as it is.
	for _, store := range []dataset.DType{dataset.BFloat16, dataset.Float32} {
		out := filepath.Join(t.TempDir(), "ds")
		m, err := Ingest(Options{Features: x, Out: out, StoreDType: store})
		if err != nil {
			t.Fatalf("%s: %v", store, err)
		}
		if d := m.NodeTypes[0].Features[0].DType; d != store {
			t.Errorf("StoreDType %s stored %s", store, d)
		}
	}
}

// TestStoreDTypeHetero: every type's float32 features are stored at the store dtype; an error
// names the type.
func TestStoreDTypeHetero(t *testing.T) {
	in := t.TempDir()
	a := float32Npy(t, in, "a", []float32{1, 2, 3, 4, 5, 6}, 2)
	b := float32Npy(t, in, "b", []float32{1e5, 0.5}, 1)
	src, dst := []int64{0, 1, 2}, []int64{0, 1, 1}
	edges := filepath.Join(in, "e.npy")
	writeNpyEdges(t, edges, "<i8", src, dst, false)
	opt := HeteroOptions{NodeTypes: []NodeTypeInput{{Name: "paper", Features: []FeatureInput{{Name: "x", Path: a}}}, {Name: "author", Features: []FeatureInput{{Name: "x", Path: b}}}},
		EdgeTypes: []EdgeTypeInput{{Src: "paper", Rel: "cites", Dst: "author", Edges: edges}}, StoreDType: dataset.BFloat16, Out: filepath.Join(t.TempDir(), "ds")}
	m, err := IngestHetero(opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, nt := range m.NodeTypes {
		if nt.Features[0].DType != dataset.BFloat16 {
			t.Errorf("node type %s: x stored as %s", nt.Name, nt.Features[0].DType)
		}
	}
	opt.StoreDType, opt.Out = dataset.Float16, filepath.Join(t.TempDir(), "ds")
	if _, err := IngestHetero(opt); err == nil || !strings.Contains(err.Error(), `node type "author"`) || !strings.Contains(err.Error(), "row 0, column 0 holds 100000") {
		t.Errorf("float16 of 1e5 in author's x: %v", err)
	}
	spec := `{"node_types": [{"name": "paper", "features": [{"name": "x", "path": "` + a + `"}]}], "store_dtype": "float16", "out": "o"}`
	if opt, err := ParseHeteroSpec([]byte(spec)); err != nil || opt.StoreDType != dataset.Float16 {
		t.Errorf("spec's store_dtype: %v %q", err, opt.StoreDType)
	}
}

// TestSynthDTypeIsStoreDType: synth's float16/bfloat16 features are its float32 ones rounded by
// the same conversion, so a half-precision synth stands for ingest --store-dtype of the float32
// one (benchmarks/h200-next/issue44_half.sh synthesizes both).
func TestSynthDTypeIsStoreDType(t *testing.T) {
	var f32 []float32
	for _, dt := range []dataset.DType{dataset.Float32, dataset.Float16, dataset.BFloat16} {
		out := filepath.Join(t.TempDir(), "ds")
		m, err := Synth(SynthOptions{Nodes: 700, AvgDegree: 3, Dim: 33, DType: dt, Seed: 9, Out: out})
		if err != nil {
			t.Fatal(err)
		}
		spec := &m.NodeTypes[0].Features[0]
		raw := featureBytes(t, m, spec)
		if dt == dataset.Float32 {
			for i := 0; i < len(raw); i += 4 {
				f32 = append(f32, math.Float32frombits(binary.LittleEndian.Uint32(raw[i:])))
			}
			continue
		}
		if string(raw) != string(halfBytes(f32, dt)) {
			t.Errorf("synth --dtype %s is not synth's float32 features rounded to %s", dt, dt)
		}
	}
}
