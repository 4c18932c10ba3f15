package dataset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeTestDataset writes count rows of rowBytes random bytes striped over nfiles files plus a
// small topology, and returns the manifest and the rows.
func writeTestDataset(t *testing.T, dir string, count, dim int64, dtype DType, nfiles int, rng *rand.Rand) (*Manifest, []byte) {
	t.Helper()
	spec, err := NewFeatureSpec("x", dtype, dim, count, nfiles, DefaultBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"indptr.bin", "indices.bin", "labels.bin"}
	for k := range spec.Files {
		spec.Files[k] = "features.x." + string(rune('0'+k)) + ".bin"
		files = append(files, spec.Files[k])
	}
	rows := make([]byte, count*spec.RowBytes)
	for i := range rows {
		rows[i] = byte(rng.UintN(256))
	}
	w, err := NewFeatureWriter(nil, dir, &spec)
	if err != nil {
		t.Fatal(err)
	}
	// Uneven chunks exercise rows arriving in any grouping.
	for off := int64(0); off < int64(len(rows)); {
		n := min(int64(len(rows))-off, (rng.Int64N(5)+1)*spec.RowBytes)
		if err := w.WriteRows(rows[off : off+n]); err != nil {
			t.Fatal(err)
		}
		off += n
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	indptr := make([]int64, count+1) // a ring: node v's in-neighbor is v-1
	for v := int64(1); v <= count; v++ {
		indptr[v] = v
	}
	idx, err := CreateMapped(nil, filepath.Join(dir, "indices.bin"), 4*count)
	if err != nil {
		t.Fatal(err)
	}
	for v := int64(0); v < count; v++ {
		u := uint32((v + count - 1) % count)
		copy(idx.Bytes()[4*v:], []byte{byte(u), byte(u >> 8), byte(u >> 16), byte(u >> 24)})
	}
	if err := idx.Close(); err != nil {
		t.Fatal(err)
	}
	labels := make([]int64, count)
	if err := WriteInt64s(nil, filepath.Join(dir, "indptr.bin"), indptr); err != nil {
		t.Fatal(err)
	}
	if err := WriteInt64s(nil, filepath.Join(dir, "labels.bin"), labels); err != nil {
		t.Fatal(err)
	}
	m := &Manifest{
		NodeTypes: []NodeType{{Name: "node", Count: count, Features: []FeatureSpec{spec},
			Labels: &LabelSpec{ArraySpec{"labels.bin", Int64}, 1}}},
		EdgeTypes: []EdgeType{{Src: "node", Rel: "to", Dst: "node", Count: count, Layout: "csc",
			Indptr: ArraySpec{"indptr.bin", Int64}, Indices: ArraySpec{"indices.bin", Int32}}},
	}
	m.SetDir(dir)
	if err := Commit(m, files, "test", nil); err != nil {
		t.Fatal(err)
	}
	return m, rows
}

func TestFeatureLayoutRoundTrip(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, tc := range []struct {
		count, dim int64
		dtype      DType
		nfiles     int
	}{
		{1, 1, Int8, 1}, {1000, 3, Float32, 1}, {5000, 100, Float16, 3}, {300, 1500, Float32, 2},
		{3000, 1024, Float32, 4}, {700, 17, BFloat16, 5}, {0, 8, Float32, 2},
	} {
		dir := t.TempDir()
		m, rows := writeTestDataset(t, dir, tc.count, tc.dim, tc.dtype, tc.nfiles, rng)
		loaded, err := Load(dir)
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		spec, err := loaded.Feature("x")
		if err != nil {
			t.Fatal(err)
		}
		if spec.Count() != tc.count || spec.RowBytes != m.Nodes().Features[0].RowBytes {
			t.Fatalf("%+v: loaded spec %+v", tc, spec)
		}
		contents := make([][]byte, tc.nfiles)
		for k, p := range spec.Files {
			contents[k], err = os.ReadFile(loaded.Path(p))
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(contents[k]))%DefaultBlockSize != 0 {
				t.Fatalf("%s not padded: %d bytes", p, len(contents[k]))
			}
		}
		for r := int64(0); r < tc.count; r++ {
			k, off := spec.Locate(r)
			if spec.RowsPerBlock > 0 && off/DefaultBlockSize != (off+spec.RowBytes-1)/DefaultBlockSize {
				t.Fatalf("%+v: row %d straddles a block at offset %d", tc, r, off)
			}
			got := contents[k][off : off+spec.RowBytes]
			if !bytes.Equal(got, rows[r*spec.RowBytes:(r+1)*spec.RowBytes]) {
				t.Fatalf("%+v: row %d differs (file %d offset %d)", tc, r, k, off)
			}
		}
		problems, err := loaded.Verify(0, nil)
		if err != nil || len(problems) != 0 {
			t.Fatalf("%+v: verify of a fresh dataset: %v %v", tc, problems, err)
		}
	}
}

func TestVerifyFindsFlippedByte(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	m, _ := writeTestDataset(t, dir, 10000, 64, Float32, 2, rng)
	f := m.Nodes().Features[0].Files[1]
	path := m.Path(f)
	data, _ := os.ReadFile(path)
	at := rng.IntN(len(data))
	data[at] ^= 1 << rng.UintN(8)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	problems, err := m.Verify(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 || problems[0].File != f || problems[0].Offset != int64(at)/DefaultBlockSize*DefaultBlockSize {
		t.Fatalf("flipped byte %d of %s: problems %v", at, f, problems)
	}
	// The on-the-fly check catches it too, and says it is corruption.
	sums, err := m.LoadChecksums(m.File(f))
	if err != nil {
		t.Fatal(err)
	}
	blk := int64(at) / DefaultBlockSize * DefaultBlockSize
	if err := sums.Check(blk, data[blk:blk+DefaultBlockSize]); !IsCorrupt(err) || !strings.Contains(err.Error(), f) {
		t.Fatalf("Check of the flipped block: %v", err)
	}
	// A truncated file is reported, not read past.
	if err := os.Truncate(m.Path("labels.bin"), 100); err != nil {
		t.Fatal(err)
	}
	problems, _ = m.Verify(0, nil)
	found := false
	for _, p := range problems {
		found = found || (p.File == "labels.bin" && strings.Contains(p.What, "bytes"))
	}
	if !found {
		t.Fatalf("truncated labels.bin not reported: %v", problems)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); !errors.Is(err, ErrNotDataset) {
		t.Fatalf("empty dir: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing dir: %v", err)
	}
	m, _ := writeTestDataset(t, dir, 10, 4, Float32, 1, rand.New(rand.NewPCG(1, 2)))
	raw, _ := os.ReadFile(filepath.Join(dir, ManifestName))
	for _, tc := range []struct {
		from, to, want string
		kind           error // what the error wraps
	}{
		{fmt.Sprintf(`"version": %d`, Version), fmt.Sprintf(`"version": %d`, Version+1), "newer than this tierfs reads", ErrVersionTooNew},
		{fmt.Sprintf(`"version": %d`, Version), `"version": 0`, "not a valid version", ErrCorrupt},
		{`"format": "tierfs-dataset"`, `"format": "other"`, "format", ErrNotDataset},
		{`"block_size": 4096`, `"block_size": 1000`, "block_size", ErrCorrupt},
		{`"dtype": "float32"`, `"dtype": "float33"`, "unknown dtype", ErrCorrupt},
		{`"row_bytes": 16`, `"row_bytes": 12`, "row_bytes", ErrCorrupt},
		{`"count": 10`, `"count": 100000`, "needs", ErrCorrupt},
		{`"checksum": "xxhash64"`, `"checksum": "crc"`, "checksum", ErrCorrupt},
		{`{`, `{ not json`, "not valid JSON", ErrCorrupt},
	} {
		bad := strings.Replace(string(raw), tc.from, tc.to, 1)
		if bad == string(raw) {
			t.Fatalf("test case %q does not apply to %s", tc.from, raw)
		}
		_, err := Parse([]byte(bad))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s -> %s: error %v, want it to mention %q", tc.from, tc.to, err, tc.want)
		}
		if !errors.Is(err, tc.kind) {
			t.Errorf("%s -> %s: error %v does not wrap %v", tc.from, tc.to, err, tc.kind)
		}
		for _, other := range []error{ErrVersionTooNew, ErrCorrupt, ErrNotDataset} {
			if other != tc.kind && errors.Is(err, other) {
				t.Errorf("%s -> %s: error %v wraps %v too", tc.from, tc.to, err, other)
			}
		}
	}
	if _, err := m.Feature("no-such-feature"); !errors.Is(err, ErrFeatureNotFound) || !strings.Contains(err.Error(), `"no-such-feature"`) {
		t.Errorf("Feature of a missing name: %v, want ErrFeatureNotFound naming it", err)
	}
	// A sidecar that does not match the manifest is corruption.
	side := m.Path("indptr.bin" + ChecksumSuffix)
	data, _ := os.ReadFile(side)
	data[0] ^= 0xff
	os.WriteFile(side, data, 0o644)
	if _, err := m.LoadChecksums(m.File("indptr.bin")); !IsCorrupt(err) {
		t.Fatalf("tampered sidecar: %v", err)
	}
}

// TestReplaceIsRefusedOrSwapped: Begin refuses a destination that holds anything unless asked to
// replace it; the old dataset stays whole until Publish, Abort leaves it as it was, and Publish
// swaps the new one in and removes the old.
func TestReplaceIsRefusedOrSwapped(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	dir := filepath.Join(t.TempDir(), "ds")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestDataset(t, dir, 100, 4, Float32, 1, rng)
	if _, err := Begin(nil, dir, false); !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "already holds a dataset") {
		t.Fatalf("Begin over a dataset without replace: %v", err)
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644)
	if _, err := Begin(nil, other, false); !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "1 entries") {
		t.Fatalf("Begin over a directory with a file: %v", err)
	}
	w, err := Begin(nil, dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err != nil {
		t.Fatalf("the old dataset must stay whole while the new one is written: %v", err)
	}
	w.Abort(nil)
	if _, err := os.Stat(w.Dir); !os.IsNotExist(err) {
		t.Fatalf("Abort left the staging directory %s", w.Dir)
	}
	if _, err := Load(dir); err != nil {
		t.Fatalf("after Abort: %v", err)
	}
	w, err = Begin(nil, dir, true)
	if err != nil {
		t.Fatal(err)
	}
	_, want := writeTestDataset(t, w.Dir, 50, 2, Float32, 1, rng)
	m, err := Load(w.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Publish(m); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil || got.NodeTypes[0].Count != 50 {
		t.Fatalf("after Publish: %v, %+v", err, got)
	}
	_ = want
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Fatalf("Publish left %d entries beside the dataset, want only it: %v", len(entries), entries)
	}
}

func FuzzParse(f *testing.F) {
	dir := f.TempDir()
	// Seed with a real manifest.
	f.Add([]byte(`{"format":"tierfs-dataset","version":1}`))
	f.Add([]byte(`{}`))
	if err := seedManifest(dir); err == nil {
		if raw, err := os.ReadFile(filepath.Join(dir, ManifestName)); err == nil {
			f.Add(raw)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err == nil {
			// Anything that parses must answer layout questions without panicking.
			for i := range m.Nodes().Features {
				fs := &m.Nodes().Features[i]
				for k := range fs.Files {
					fs.RowsInFile(k)
				}
				if fs.Count() > 0 {
					fs.Locate(fs.Count() - 1)
				}
			}
		}
	})
}

func seedManifest(dir string) error {
	spec, err := NewFeatureSpec("x", Float32, 4, 2, 1, DefaultBlockSize)
	if err != nil {
		return err
	}
	spec.Files[0] = "f.bin"
	w, err := NewFeatureWriter(nil, dir, &spec)
	if err != nil {
		return err
	}
	w.WriteRows(make([]byte, 32))
	if err := w.Close(); err != nil {
		return err
	}
	m := &Manifest{NodeTypes: []NodeType{{Name: "node", Count: 2, Features: []FeatureSpec{spec}}}}
	m.SetDir(dir)
	return Commit(m, []string{"f.bin"}, "test", nil)
}

// Edge features and scalar features (format version 3): names unique across node and edge
// features, scalar means dim 1, and neither appears in a manifest of an older version.
func TestEdgeFeaturesValidate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	m, _ := writeTestDataset(t, dir, 100, 4, Float32, 1, rng)
	if m.Version != Version {
		t.Fatalf("a new dataset is written as version %d, want %d (its checksums bound to their place and layout)", m.Version, Version)
	}
	withEdge := func(name string, dim int64, scalar bool, version int) *Manifest {
		c := *m
		c.Version = version
		if version < VersionBound {
			c.DatasetID = ""
		}
		c.NodeTypes = slices.Clone(m.NodeTypes)
		c.EdgeTypes = slices.Clone(m.EdgeTypes)
		c.Files = slices.Clone(m.Files)
		spec, err := NewFeatureSpec(name, Float32, dim, c.EdgeTypes[0].Count, 1, c.BlockSize)
		if err != nil {
			t.Fatal(err)
		}
		spec.Scalar = scalar
		spec.Files[0] = "edge." + name + ".bin"
		content := spec.ContentBytesOfFile(0)
		c.Files = append(c.Files, File{Path: spec.Files[0], Bytes: RoundUp(content, int64(c.BlockSize)), ContentBytes: content, Checksums: spec.Files[0] + ChecksumSuffix})
		c.EdgeTypes[0].Features = []FeatureSpec{spec}
		return &c
	}
	if err := withEdge("w", 1, true, 3).Validate(); err != nil {
		t.Fatalf("a scalar edge feature: %v", err)
	}
	if v := withEdge("w", 1, true, 3).minVersion(); v != 3 {
		t.Fatalf("minVersion %d with an edge feature, want 3", v)
	}
	for _, tc := range []struct {
		m    *Manifest
		want string
	}{
		{withEdge("x", 2, false, 8), `names two features "x" (a node and an edge feature)`},
		{withEdge("w", 2, true, 3), `scalar needs dim 1`},
		{withEdge("w", 1, false, 2), `manifest version 2 has edge features`},
		{withEdge("", 1, false, 3), `edge feature 0 has no name`},
	} {
		if err := tc.m.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate: %v, want an error containing %q", err, tc.want)
		}
	}
	// From version 9 a one-type dataset's node and edge feature may share a name; the node
	// feature answers for the name alone.
	shared := withEdge("x", 2, false, Version)
	if err := shared.Validate(); err != nil {
		t.Fatalf("a node and an edge feature x in version %d: %v", Version, err)
	}
	if f, isEdge, err := shared.AnyFeature("x"); err != nil || isEdge || f != &shared.NodeTypes[0].Features[0] {
		t.Fatalf("AnyFeature(x) of a shared name: edge %v %v, want the node feature", isEdge, err)
	}
	if _, isEdge, err := withEdge("w", 1, true, 3).AnyFeature("w"); err != nil || !isEdge {
		t.Fatalf("AnyFeature(w): edge %v %v", isEdge, err)
	}
	if _, err := withEdge("w", 1, true, 3).Feature("w"); err == nil || !strings.Contains(err.Error(), "is an edge feature") {
		t.Fatalf("Feature(w) of an edge feature: %v", err)
	}
}

// TestFeatureShapeAndMetadataValidate: a feature's optional row shape has two or more positive
// sizes of product dim on a feature that is not scalar, and a shape or metadata needs version 9.
func TestFeatureShapeAndMetadataValidate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	m, _ := writeTestDataset(t, dir, 100, 6, Float32, 1, rng)
	with := func(version int, edit func(f *FeatureSpec)) *Manifest {
		c := *m
		c.Version = version
		c.NodeTypes = slices.Clone(m.NodeTypes)
		c.NodeTypes[0].Features = slices.Clone(m.NodeTypes[0].Features)
		edit(&c.NodeTypes[0].Features[0])
		return &c
	}
	if err := with(Version, func(f *FeatureSpec) { f.Shape = []int64{2, 3} }).Validate(); err != nil {
		t.Fatalf("shape (2, 3) of dim 6: %v", err)
	}
	meta := map[string]json.RawMessage{"num_categories": json.RawMessage("10")}
	if err := with(Version, func(f *FeatureSpec) { f.Metadata = meta }).Validate(); err != nil {
		t.Fatalf("metadata: %v", err)
	}
	for _, tc := range []struct {
		m    *Manifest
		want string
	}{
		{with(Version, func(f *FeatureSpec) { f.Shape = []int64{2, 2} }), `shape [2 2] does not fit dim 6`},
		{with(Version, func(f *FeatureSpec) { f.Shape = []int64{6} }), `shape [6] does not fit dim 6`},
		{with(Version, func(f *FeatureSpec) { f.Shape = []int64{-2, -3} }), `shape [-2 -3] does not fit dim 6`},
		{with(Version, func(f *FeatureSpec) { f.Metadata = map[string]json.RawMessage{"": json.RawMessage("1")} }), `metadata has an empty key`},
		{with(8, func(f *FeatureSpec) { f.Shape = []int64{2, 3} }), `has a shape, metadata or sampling_graph, which format version 9 introduced (version 8)`},
		{with(8, func(f *FeatureSpec) { f.SamplingGraph = true }), `has a shape, metadata or sampling_graph, which format version 9`},
		{func() *Manifest { c := with(8, func(*FeatureSpec) {}); c.TaskMetadata = meta; return c }(), `has task_metadata, which format version 9 introduced (version 8)`},
	} {
		if err := tc.m.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate: %v, want an error containing %q", err, tc.want)
		}
	}
}

// TestDatasetName: the optional dataset_name (version 9). The golden version 9 dataset, written
// before it, has none, no "dataset_name" key, and loads and verifies as ever; given a name with
// its hash recomputed (as a writer writes it) it loads with that name and its files check as
// before (a name decides nothing of how a file is read, so no checksum binds it); a name edited,
// added or removed without the hash recomputed is ErrCorrupt, and a version 8 manifest with one
// is refused as claiming a version older than what it holds.
func TestDatasetName(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "golden", "v9"), dir)
	path := filepath.Join(dir, ManifestName)
	plain := mustRead(t, path)
	load := func(what string) *Manifest {
		t.Helper()
		m, err := Load(dir)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if problems, err := m.Verify(0, nil); err != nil || len(problems) != 0 {
			t.Fatalf("%s: Verify: %v %v", what, problems, err)
		}
		return m
	}
	if m := load("without a name"); m.DatasetName != "" || bytes.Contains(plain, []byte(`"dataset_name"`)) {
		t.Fatalf("golden v9: name %q, manifest has the key: %v", m.DatasetName, bytes.Contains(plain, []byte(`"dataset_name"`)))
	}
	m, err := Parse(plain)
	if err != nil {
		t.Fatal(err)
	}
	m.DatasetName = "ogbn-arxiv (a user's)"
	data, _ := json.Marshal(m)
	named := rehashed(t, string(data))
	os.WriteFile(path, named, 0o644)
	if got := load("with a name").DatasetName; got != m.DatasetName {
		t.Fatalf("dataset_name read back as %q, want %q", got, m.DatasetName)
	}
	// edited is manifest text with its dataset_name set to name ("": removed), hash kept.
	edited := func(text []byte, name string) []byte {
		var raw map[string]any
		if err := json.Unmarshal(text, &raw); err != nil {
			t.Fatal(err)
		}
		if raw["dataset_name"] = name; name == "" {
			delete(raw, "dataset_name")
		}
		out, _ := json.Marshal(raw)
		return out
	}
	for _, edit := range []struct {
		what string
		text []byte
	}{
		{"name edited", edited(named, "ogbn-products")},
		{"name removed", edited(named, "")},
		{"name added", edited(plain, "x")},
	} {
		os.WriteFile(path, edit.text, 0o644)
		if _, err := Load(dir); !IsCorrupt(err) || !strings.Contains(err.Error(), "edited after it was written") {
			t.Fatalf("%s without the hash recomputed: Load said %v, want ErrCorrupt (edited after it was written)", edit.what, err)
		}
	}
	old, err := Parse(mustRead(t, filepath.Join("testdata", "golden", "v8", ManifestName)))
	if err != nil {
		t.Fatal(err)
	}
	old.DatasetName = "x"
	data, _ = json.Marshal(old)
	if _, err := Parse(rehashed(t, string(data))); !IsCorrupt(err) || !strings.Contains(err.Error(), `dataset_name "x", which format version 9 introduced (version 8)`) {
		t.Fatalf("a version 8 manifest with a dataset_name: %v", err)
	}
}

// TestInPlaceManifest commits a dataset whose feature is read in place from a file outside it
// (rows from byte 10, a partial last block) and checks what Validate refuses around it.
func TestInPlaceManifest(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	user := filepath.Join(t.TempDir(), "x.npy")
	const rows, rb = 1000, 12
	raw := make([]byte, 10+rows*rb)
	for i := range raw {
		raw[i] = byte(rng.Uint32())
	}
	if err := os.WriteFile(user, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	spec, err := NewInPlaceFeatureSpec("x", Float32, 3, rows, user, 10, DefaultBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	m := &Manifest{NodeTypes: []NodeType{{Name: "node", Count: rows, Features: []FeatureSpec{spec}}}}
	m.SetDir(dir)
	if err := Commit(m, []string{user}, "test", nil); err != nil {
		t.Fatal(err)
	}
	m, err = Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != Version || !m.Files[0].InPlace || m.Files[0].Bytes != int64(len(raw)) || m.Files[0].Checksums != InPlaceSidecar("x") {
		t.Fatalf("version %d, files %+v", m.Version, m.Files)
	}
	f := m.Nodes().Features[0]
	for _, row := range []int64{0, 1, rows / 2, rows - 1} {
		if k, off := f.Locate(row); k != 0 || off != 10+row*rb {
			t.Fatalf("Locate(%d) = %d, %d; want 0, %d", row, k, off, 10+row*rb)
		}
	}
	if problems, err := m.Verify(0, nil); err != nil || len(problems) != 0 {
		t.Fatalf("Verify: %v %v", problems, err)
	}
	for _, tc := range []struct {
		name string
		edit func(m *Manifest)
		want string
	}{
		{"version 3", func(m *Manifest) { m.Version, m.DatasetID = 3, "" }, "format version 4"},
		{"file not marked", func(m *Manifest) { m.Files[0].InPlace = false }, "not content padded"},
		{"feature not marked", func(m *Manifest) {
			m.NodeTypes[0].Features[0].InPlace = false
			m.NodeTypes[0].Features[0].DataOffset = 0
		}, "rows_per_block 0, want 341"},
		{"offset without in place", func(m *Manifest) { m.NodeTypes[0].Features[0].InPlace = false }, "only it a data offset"},
		{"relative", func(m *Manifest) {
			m.Files[0].Path = "x.npy"
			m.NodeTypes[0].Features[0].Files[0] = "x.npy"
		}, "an absolute path"},
		{"short", func(m *Manifest) { m.Files[0].Bytes--; m.Files[0].ContentBytes-- }, "needs"},
	} {
		c, _ := Parse(mustRead(t, filepath.Join(dir, ManifestName)))
		tc.edit(c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTypedOneType checks the typed mark of a one-type dataset (version 8): Validate asks version
// 8 of it, refuses it beside several types, and applies the typed rules (checked type names) to
// it; an untyped one-type dataset keeps the one-type rules.
func TestTypedOneType(t *testing.T) {
	m, _ := writeTestDataset(t, t.TempDir(), 100, 4, Float32, 1, rand.New(rand.NewPCG(1, 2)))
	if m.IsTyped() || m.minVersion() != Version {
		t.Fatalf("an ingested one-type dataset: IsTyped %v, minVersion %d; want false, %d", m.IsTyped(), m.minVersion(), Version)
	}
	typed := func(version int, edit func(*Manifest)) *Manifest {
		c := *m
		c.NodeTypes = slices.Clone(m.NodeTypes)
		c.EdgeTypes = slices.Clone(m.EdgeTypes)
		c.Typed, c.Version = true, version
		if edit != nil {
			edit(&c)
		}
		return &c
	}
	if c := typed(8, nil); c.Validate() != nil || !c.IsTyped() || c.minVersion() != Version {
		t.Fatalf("typed at version 8: Validate %v, IsTyped %v, minVersion %d", c.Validate(), c.IsTyped(), c.minVersion())
	}
	rename := func(name string) func(*Manifest) {
		return func(c *Manifest) {
			c.NodeTypes[0].Name = name
			c.EdgeTypes[0].Src, c.EdgeTypes[0].Dst = name, name
		}
	}
	if err := typed(8, rename("paper")).Validate(); err != nil {
		t.Fatalf("typed, node type paper: %v", err)
	}
	for _, tc := range []struct {
		what string
		m    *Manifest
		want string
	}{
		{"at version 7", typed(7, nil), "manifest version 7 with 1 node types and 1 edge types is marked typed"},
		{"with two node types", typed(8, func(c *Manifest) { c.NodeTypes = append(c.NodeTypes, NodeType{Name: "b", Count: 1}) }), "is marked typed"},
		{"a bad type name", typed(8, rename("a:b")), `node type name "a:b"`},
	} {
		if err := tc.m.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("typed %s: Validate %v, want an error containing %q", tc.what, err, tc.want)
		}
	}
	untyped := *m
	untyped.NodeTypes = slices.Clone(m.NodeTypes)
	untyped.EdgeTypes = slices.Clone(m.EdgeTypes)
	rename("a:b")(&untyped)
	if err := untyped.Validate(); err != nil {
		t.Fatalf("an untyped one-type dataset keeps the one-type rules (no name check): %v", err)
	}
}
