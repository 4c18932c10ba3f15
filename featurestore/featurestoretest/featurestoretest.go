// Package featurestoretest holds the test datasets and helpers that featurestore's tests and the
// packages above it (planned) share: datasets written for a test with the plain in-memory copy
// they are checked against, seeded randomness that prints its seed, fault injectors, the IO
// backends to test, and GPU helpers. It imports no featurestore code, so featurestore's own
// tests can use it.
package featurestoretest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/ingest"
	"github.com/tierfs/tierfs/topology"
)

// Data is a dataset written for a test plus the plain in-memory copy it is checked against.
type Data struct {
	Dir      string
	Rows     []byte // count * rowBytes
	RowBytes int64
	Count    int64
	Indptr   []int64
	Indices  []int32
	Labels   []int64
	Train    []int64 // the "train" split, when written (WriteSplitDataset)
}

// WriteDataset writes count nodes with random rows of dim float32 (striped over nfiles) and a
// random skewed graph of about avgDeg in-edges per node.
func WriteDataset(t testing.TB, count, dim int64, nfiles int, avgDeg int, rng *rand.Rand) *Data {
	return WriteTypedDataset(t, dataset.Float32, count, dim, nfiles, avgDeg, rng)
}

// WriteTypedDataset is WriteDataset with rows of dim elements of dtype.
func WriteTypedDataset(t testing.TB, dtype dataset.DType, count, dim int64, nfiles int, avgDeg int, rng *rand.Rand) *Data {
	t.Helper()
	return WriteDatasetOf(t, dtype, count, dim, nfiles, avgDeg, false, rng)
}

// WriteSplitDataset is WriteDataset with a "train" split of about a third of the nodes.
func WriteSplitDataset(t testing.TB, count, dim int64, nfiles int, avgDeg int, rng *rand.Rand) *Data {
	t.Helper()
	return WriteDatasetOf(t, dataset.Float32, count, dim, nfiles, avgDeg, true, rng)
}

// WriteDatasetOf writes the dataset of WriteTypedDataset, with a "train" split when split.
func WriteDatasetOf(t testing.TB, dtype dataset.DType, count, dim int64, nfiles int, avgDeg int, split bool, rng *rand.Rand) *Data {
	t.Helper()
	dir := t.TempDir()
	spec, err := dataset.NewFeatureSpec("x", dtype, dim, count, nfiles, dataset.DefaultBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"indptr.bin", "indices.bin", "labels.bin"}
	for k := range spec.Files {
		spec.Files[k] = fmt.Sprintf("features.x.%d.bin", k)
		files = append(files, spec.Files[k])
	}
	d := &Data{Dir: dir, RowBytes: spec.RowBytes, Count: count, Rows: make([]byte, count*spec.RowBytes)}
	for i := range d.Rows {
		d.Rows[i] = byte(rng.UintN(256))
	}
	w, err := dataset.NewFeatureWriter(nil, dir, &spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRows(d.Rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// In-degree skewed towards small ids: node v gets about avgDeg*2*(count-v)/count in-edges.
	d.Indptr = make([]int64, count+1)
	for v := range count {
		deg := int64(0)
		if avgDeg > 0 {
			deg = rng.Int64N(int64(2*avgDeg)*(count-v)/count + 1)
		}
		d.Indptr[v+1] = d.Indptr[v] + deg
		for range deg {
			d.Indices = append(d.Indices, int32(rng.Int64N(count)))
		}
	}
	if err := dataset.WriteInt64s(nil, filepath.Join(dir, "indptr.bin"), d.Indptr); err != nil {
		t.Fatal(err)
	}
	labels := make([]int64, count)
	for v := range labels {
		labels[v] = int64(v%7) - 1 // -1 marks unlabelled
	}
	if err := dataset.WriteInt64s(nil, filepath.Join(dir, "labels.bin"), labels); err != nil {
		t.Fatal(err)
	}
	d.Labels = labels
	var splits map[string]dataset.IDsSpec
	if split {
		for v := range count {
			if rng.IntN(3) == 0 {
				d.Train = append(d.Train, v)
			}
		}
		if err := dataset.WriteInt64s(nil, filepath.Join(dir, "train.ids"), d.Train); err != nil {
			t.Fatal(err)
		}
		files = append(files, "train.ids")
		splits = map[string]dataset.IDsSpec{"train": {ArraySpec: dataset.ArraySpec{File: "train.ids", DType: dataset.Int64}, Count: int64(len(d.Train))}}
	}
	raw := make([]byte, 4*len(d.Indices))
	for i, u := range d.Indices {
		binary.LittleEndian.PutUint32(raw[4*i:], uint32(u))
	}
	if err := os.WriteFile(filepath.Join(dir, "indices.bin"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	m := &dataset.Manifest{
		NodeTypes: []dataset.NodeType{{Name: "node", Count: count, Features: []dataset.FeatureSpec{spec},
			Labels: &dataset.LabelSpec{ArraySpec: dataset.ArraySpec{File: "labels.bin", DType: dataset.Int64}, NumClasses: 6},
			Splits: splits}},
		EdgeTypes: []dataset.EdgeType{{Src: "node", Rel: "to", Dst: "node", Count: int64(len(d.Indices)), Layout: "csc",
			Indptr: dataset.ArraySpec{File: "indptr.bin", DType: dataset.Int64}, Indices: dataset.ArraySpec{File: "indices.bin", DType: dataset.Int32}}},
	}
	m.SetDir(dir)
	if err := dataset.Commit(m, files, "test", nil); err != nil {
		t.Fatal(err)
	}
	return d
}

// Want is the rows of ids in the plain copy, in order: what a gather of ids must return.
func (d *Data) Want(ids []int64) []byte {
	out := make([]byte, 0, int64(len(ids))*d.RowBytes)
	for _, id := range ids {
		out = append(out, d.Rows[id*d.RowBytes:(id+1)*d.RowBytes]...)
	}
	return out
}

// NewRand is a generator of a random seed, logged so that a failure can be replayed: with
// TIERFS_TEST_SEED set, every test's generator starts from that seed instead.
func NewRand(t testing.TB) *rand.Rand {
	seed := rand.Uint64()
	if v := os.Getenv("TIERFS_TEST_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("TIERFS_TEST_SEED=%q: want a seed the tests logged (an unsigned integer): %v", v, err)
		}
		seed = s
	}
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 0))
}

// Backends are the IO backends to test here: io_uring and pread, or pread alone where io_uring
// is unavailable.
func Backends(t *testing.T) []gpuio.Backend {
	if err := gpuio.Probe(); err != nil {
		t.Logf("io_uring unavailable, testing pread only: %v", err)
		return []gpuio.Backend{gpuio.BackendPread}
	}
	return []gpuio.Backend{gpuio.BackendIOUring, gpuio.BackendPread}
}

// ParseFaults is the injector of spec (gpuio.ParseFaults), a fresh one for every store.
func ParseFaults(t *testing.T, spec string) gpuio.Injector {
	t.Helper()
	f, err := gpuio.ParseFaults(spec)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// HeteroData is a synthetic heterogeneous dataset and its contents read back plainly (whole
// files, no IO stacks): the reference the session's typed calls are compared with.
type HeteroData struct {
	Dir      string
	Manifest *dataset.Manifest
	Rows     map[string][]byte // node type → its feature "x", row-major
	RowBytes map[string]int64
	Labels   map[string][]int64
	CSC      []*topology.CSC // per edge type, in manifest order
}

// WriteHetero synthesizes a dataset of three node types (paper, author and institution, the last
// without features) and four edge types, and reads it back plainly.
func WriteHetero(t *testing.T, rng *rand.Rand) *HeteroData {
	t.Helper()
	dir := t.TempDir() + "/hetero"
	opt := ingest.SynthHeteroOptions{
		NodeTypes: []ingest.SynthNodeType{
			{Name: "paper", Nodes: 1500 + rng.Int64N(500), Dim: 24, Classes: 5},
			{Name: "author", Nodes: 3000 + rng.Int64N(500), Dim: 7, DType: dataset.Float16},
			{Name: "institution", Nodes: 40}, // no features
		},
		EdgeTypes: []ingest.SynthEdgeType{
			{Src: "paper", Rel: "cites", Dst: "paper", AvgDegree: 6},
			{Src: "author", Rel: "writes", Dst: "paper", AvgDegree: 3},
			{Src: "paper", Rel: "written_by", Dst: "author", AvgDegree: 1.5},
			{Src: "author", Rel: "affiliated_with", Dst: "institution", AvgDegree: 20},
		},
		Seed: rng.Uint64(),
		Out:  dir,
	}
	m, err := ingest.SynthHetero(opt)
	if err != nil {
		t.Fatal(err)
	}
	d := &HeteroData{Dir: dir, Manifest: m, Rows: map[string][]byte{}, RowBytes: map[string]int64{}, Labels: map[string][]int64{}}
	read := func(p string) []byte {
		data, err := os.ReadFile(m.Path(p))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	for _, nt := range m.NodeTypes {
		if l := nt.Labels; l != nil {
			d.Labels[nt.Name] = slices.Clone(Int64s(read(l.File))[:nt.Count])
		}
		if len(nt.Features) == 0 {
			continue
		}
		spec := &nt.Features[0]
		files := make([][]byte, len(spec.Files))
		for k, p := range spec.Files {
			files[k] = read(p)
		}
		rb := spec.RowBytes
		d.RowBytes[nt.Name] = rb
		rows := make([]byte, nt.Count*rb)
		for v := range nt.Count {
			f, off := spec.Locate(v)
			copy(rows[v*rb:(v+1)*rb], files[f][off:off+rb])
		}
		d.Rows[nt.Name] = rows
	}
	for _, et := range m.EdgeTypes {
		src, _ := m.NodeTypeNamed(et.Src)
		dst, _ := m.NodeTypeNamed(et.Dst)
		indptr := slices.Clone(Int64s(read(et.Indptr.File))[:dst.Count+1])
		raw := read(et.Indices.File)
		var g *topology.CSC
		if et.Indices.DType == dataset.Int32 {
			idx := make([]int32, et.Count)
			copy(dataset.BytesOf(idx), raw)
			g, err = topology.NewBipartiteCSC(src.Count, indptr, idx, nil)
		} else {
			g, err = topology.NewBipartiteCSC(src.Count, indptr, nil, slices.Clone(Int64s(raw)[:et.Count]))
		}
		if err != nil {
			t.Fatal(err)
		}
		d.CSC = append(d.CSC, g)
	}
	return d
}

// Int64s is b read as little-endian int64s.
func Int64s(b []byte) []int64 {
	out := make([]int64, len(b)/8)
	copy(dataset.BytesOf(out), b)
	return out
}

// RandomSeedEdges draws n seed edges of edge type e of d: half of them edges of the graph (so
// exclusion has something to drop), half random pairs of its node types.
func RandomSeedEdges(d *HeteroData, e int, n int, rng *rand.Rand) (src, dst []int64) {
	c := d.CSC[e]
	nSrc := d.Manifest.NodeTypes[slices.IndexFunc(d.Manifest.NodeTypes, func(t dataset.NodeType) bool { return t.Name == d.Manifest.EdgeTypes[e].Src })].Count
	nDst := int64(len(c.Indptr) - 1)
	for len(src) < n {
		v := rng.Int64N(nDst)
		if deg := c.Indptr[v+1] - c.Indptr[v]; deg > 0 && rng.IntN(2) == 0 {
			p := c.Indptr[v] + rng.Int64N(deg)
			u := int64(0)
			if c.Indices64 != nil {
				u = c.Indices64[p]
			} else {
				u = int64(c.Indices32[p])
			}
			src, dst = append(src, u), append(dst, v)
			continue
		}
		src, dst = append(src, rng.Int64N(nSrc)), append(dst, v)
	}
	return src, dst
}

// Permutation is p as int64 ids.
func Permutation(p []int) []int64 {
	ids := make([]int64, len(p))
	for i, v := range p {
		ids[i] = int64(v)
	}
	return ids
}

// RequireGPU skips the test unless the CUDA shim loads.
func RequireGPU(t *testing.T) {
	t.Helper()
	if err := cuda.Load(); err != nil {
		t.Skipf("skipping GPU test: %v", err)
	}
}

// GPUPresent reports whether the CUDA shim loads and sees a GPU.
func GPUPresent() bool {
	if cuda.Load() != nil {
		return false
	}
	_, err := cuda.Info(0)
	return err == nil
}

// DeviceRows runs gather into fresh device memory for n rows (0xA5 bytes before) on a stream of
// its own, and copies the rows back ordered by that stream alone: no host-side wait in between.
func DeviceRows(t *testing.T, rowBytes int64, n int, gather func(dst, stream uintptr) error) []byte {
	t.Helper()
	size := uint64(int64(n) * rowBytes)
	dst, err := cuda.Malloc(0, max(size, 16))
	if err != nil {
		t.Fatal(err)
	}
	defer cuda.Free(0, dst)
	if err := cuda.Memset(0, dst, 0xA5, max(size, 16), 0); err != nil {
		t.Fatal(err)
	}
	stream, err := cuda.NewStream(0)
	if err != nil {
		t.Fatal(err)
	}
	defer cuda.DestroyStream(0, stream)
	if err := cuda.SyncStream(0, 0); err != nil {
		t.Fatal(err)
	}
	if err := gather(dst, uintptr(stream)); err != nil {
		t.Fatal(err)
	}
	hostAddr, host, err := cuda.HostAlloc(0, max(size, 16))
	if err != nil {
		t.Fatal(err)
	}
	defer cuda.HostFree(0, hostAddr)
	if err := cuda.Memcpy(0, hostAddr, dst, size, stream); err != nil {
		t.Fatal(err)
	}
	if err := cuda.SyncStream(0, stream); err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(host[:size])
}

// FirstDiff is the first index where a and b differ, or the shorter length.
func FirstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// writeNpyPadded writes a C-order .npy of rows (count x rowBytes of descr, shape) whose header
// is padded by pad extra spaces, so the data starts at an arbitrary offset; it returns that
// offset.
func writeNpyPadded(t *testing.T, path, descr string, shape string, rows []byte, pad int) int64 {
	t.Helper()
	header := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape) + strings.Repeat(" ", pad) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(header)))
	b.WriteString(header)
	off := int64(b.Len())
	b.Write(rows)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return off
}

// InPlaceData is a test dataset whose feature x (d.Rows) and second feature y (YRows) are .npy
// files read in place, outside the dataset directory.
type InPlaceData struct {
	*Data
	XPath string
	YRows []byte
	YRB   int64
}

// WriteInPlaceDataset writes WriteDatasetOf's dataset, then commits it again with x and a
// second feature y (float32 x 3) read in place from .npy files with random header lengths.
func WriteInPlaceDataset(t *testing.T, dtype dataset.DType, count, dim int64, rng *rand.Rand) *InPlaceData {
	t.Helper()
	d := WriteDatasetOf(t, dtype, count, dim, 1, 6, true, rng)
	in := t.TempDir()
	descr := map[dataset.DType]string{dataset.Float32: "<f4", dataset.Float16: "<f2", dataset.Float64: "<f8", dataset.Int8: "|i1",
		dataset.Uint8: "|u1", dataset.Int16: "<i2", dataset.Int32: "<i4", dataset.Int64: "<i8"}[dtype]
	p := &InPlaceData{Data: d, XPath: filepath.Join(in, "x.npy"), YRB: 12}
	xOff := writeNpyPadded(t, p.XPath, descr, fmt.Sprintf("(%d, %d)", count, dim), d.Rows, rng.IntN(200))
	p.YRows = make([]byte, count*p.YRB)
	for i := range p.YRows {
		p.YRows[i] = byte(rng.Uint32())
	}
	yPath := filepath.Join(in, "y.npy")
	yOff := writeNpyPadded(t, yPath, "<f4", fmt.Sprintf("(%d, 3)", count), p.YRows, rng.IntN(200))
	m, err := dataset.Load(d.Dir)
	if err != nil {
		t.Fatal(err)
	}
	x, err := dataset.NewInPlaceFeatureSpec("x", dtype, dim, count, p.XPath, xOff, m.BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	y, err := dataset.NewInPlaceFeatureSpec("y", dataset.Float32, 3, count, yPath, yOff, m.BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	old := m.Nodes().Features[0].Files[0]
	m.NodeTypes[0].Features = []dataset.FeatureSpec{x, y}
	var files []string
	for _, f := range m.Files {
		if f.Path != old {
			files = append(files, f.Path)
		}
	}
	os.Remove(m.Path(old))
	os.Remove(m.Path(old) + dataset.ChecksumSuffix)
	if err := dataset.Commit(m, append(files, p.XPath, yPath), "test-in-place", nil); err != nil {
		t.Fatal(err)
	}
	return p
}

// FeaturelessData is a random graph with labels and an edge feature w, ingested twice: without
// node features (Bare: PyG's Data without x) and with a node feature x of zeros (WithX).
type FeaturelessData struct {
	Bare, WithX string
	Labels      []int64 // per node, in [0, 5)
}

// WriteFeatureless ingests n nodes and e random edges as FeaturelessData.
func WriteFeatureless(t *testing.T, rng *rand.Rand, n, e int64) *FeaturelessData {
	t.Helper()
	in := t.TempDir()
	i64 := func(vals []int64) []byte {
		b := make([]byte, 8*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
		}
		return b
	}
	pairs, labels, w := make([]int64, 2*e), make([]int64, n), make([]byte, 4*e)
	for i := range pairs {
		pairs[i] = rng.Int64N(n)
	}
	for i := range labels {
		labels[i] = rng.Int64N(5)
	}
	for i := range w {
		w[i] = byte(rng.UintN(256))
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ingest.WriteNpy(filepath.Join(in, "edges.npy"), "<i8", []int64{2, e}, i64(pairs)))
	must(ingest.WriteNpy(filepath.Join(in, "y.npy"), "<i8", []int64{n}, i64(labels)))
	must(ingest.WriteNpy(filepath.Join(in, "x.npy"), "<f4", []int64{n, 3}, make([]byte, 12*n)))
	must(ingest.WriteNpy(filepath.Join(in, "w.npy"), "<f4", []int64{e}, w))
	d := &FeaturelessData{Bare: filepath.Join(t.TempDir(), "bare"), WithX: filepath.Join(t.TempDir(), "x"), Labels: labels}
	for _, o := range []ingest.Options{{Out: d.Bare}, {Out: d.WithX, Features: filepath.Join(in, "x.npy")}} {
		o.Edges, o.Labels = filepath.Join(in, "edges.npy"), filepath.Join(in, "y.npy")
		o.EdgeFeatures = []ingest.FeatureInput{{Name: "w", Path: filepath.Join(in, "w.npy")}}
		_, err := ingest.Ingest(o)
		must(err)
	}
	return d
}

// EditManifest rewrites the manifest of the dataset in dir with edit applied and its
// manifest_hash recomputed, as a tamperer who knows the format would: only what the data files
// and their checksums bind can catch the edit.
func EditManifest(t testing.TB, dir string, edit func(m *dataset.Manifest)) {
	t.Helper()
	path := filepath.Join(dir, dataset.ManifestName)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := dataset.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	edit(m)
	m.ManifestHash = "" // the hash is of the content with this field empty
	content, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	m.ManifestHash = fmt.Sprintf("%016x", xxhash.Sum64(content))
	if content, err = json.MarshalIndent(m, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
}
