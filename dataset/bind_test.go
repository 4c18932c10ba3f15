package dataset

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBoundChecksumsCatchMovedData: with checksums bound to their place (version 7), data that
// is intact but in the wrong place fails Verify like a flipped bit: two feature stripes swapped
// (data and sidecars together, so each file still matches its own sums), two blocks of a file
// swapped, and a file copied from another dataset with the same contents (the moved files also
// refused by Load) — while the datasets as written verify clean.
func TestBoundChecksumsCatchMovedData(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	write := func(dir string) *Manifest {
		m, _ := writeTestDataset(t, dir, 131072, 4, Float32, 2, rand.New(rand.NewPCG(seed, 0))) // two stripes of 1 MiB
		return m
	}
	a, b := t.TempDir(), t.TempDir()
	ma, mb := write(a), write(b) // the same contents, two datasets
	if ma.DatasetID == mb.DatasetID || ma.Version != Version {
		t.Fatalf("dataset ids %q and %q, version %d: want two ids and version %d", ma.DatasetID, mb.DatasetID, ma.Version, Version)
	}
	// Load checks the first and last block of every file and refuses a file failing both (a
	// whole file moved); Verify checks every block.
	verify := func(what string, dir string, wantProblems, wantRefused bool) {
		t.Helper()
		if _, err := Load(dir); (err != nil) != wantRefused || err != nil && !IsCorrupt(err) {
			t.Fatalf("%s: Load: %v, want it refused as corruption: %v", what, err, wantRefused)
		}
		m, err := Parse(mustRead(t, filepath.Join(dir, ManifestName)))
		if err != nil {
			t.Fatal(err)
		}
		m.SetDir(dir)
		problems, err := m.Verify(0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if (len(problems) > 0) != wantProblems {
			t.Fatalf("%s: Verify found %v, want problems: %v", what, problems, wantProblems)
		}
	}
	verify("as written", a, false, false)
	swap := func(p, q string) {
		t.Helper()
		pb, _ := os.ReadFile(p)
		qb, _ := os.ReadFile(q)
		if err := os.WriteFile(p, qb, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(q, pb, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Two stripes of equal size, each with its own sidecar: every sum matches its bytes, not
	// its place. (The manifest's sidecar hashes would catch a sidecar swap alone; here the
	// manifest's per-file sidecar hashes are swapped too, as a hand-edited manifest would.)
	s0, s1 := ma.Nodes().Features[0].Files[0], ma.Nodes().Features[0].Files[1]
	if st0, _ := os.Stat(filepath.Join(a, s0)); st0 != nil {
		if st1, _ := os.Stat(filepath.Join(a, s1)); st1 == nil || st1.Size() != st0.Size() {
			t.Skip("the test dataset's stripes differ in size")
		}
	}
	swap(filepath.Join(a, s0), filepath.Join(a, s1))
	swap(filepath.Join(a, s0+ChecksumSuffix), filepath.Join(a, s1+ChecksumSuffix))
	raw, err := os.ReadFile(filepath.Join(a, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := Parse(raw)
	f0, f1 := m.File(s0), m.File(s1)
	f0.ChecksumsHash, f1.ChecksumsHash = f1.ChecksumsHash, f0.ChecksumsHash
	data, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(a, ManifestName), rehashed(t, string(data)), 0o644); err != nil {
		t.Fatal(err)
	}
	verify("two stripes swapped", a, true, true)

	// Two blocks of one file swapped, its sidecar's two sums swapped with them.
	c := t.TempDir()
	mc := write(c)
	p := filepath.Join(c, mc.Nodes().Features[0].Files[0])
	buf, _ := os.ReadFile(p)
	bs := int(mc.BlockSize)
	if len(buf) < 2*bs {
		t.Fatalf("%s has %d bytes, want two blocks", p, len(buf))
	}
	tmp := append([]byte(nil), buf[:bs]...)
	copy(buf[:bs], buf[bs:2*bs])
	copy(buf[bs:2*bs], tmp)
	os.WriteFile(p, buf, 0o644)
	side, _ := os.ReadFile(p + ChecksumSuffix)
	tmp = append([]byte(nil), side[:8]...)
	copy(side[:8], side[8:16])
	copy(side[8:16], tmp)
	os.WriteFile(p+ChecksumSuffix, side, 0o644)
	raw, _ = os.ReadFile(filepath.Join(c, ManifestName))
	m, _ = Parse(raw)
	m.File(mc.Nodes().Features[0].Files[0]).ChecksumsHash = hashHex(side)
	data, _ = json.Marshal(m)
	os.WriteFile(filepath.Join(c, ManifestName), rehashed(t, string(data)), 0o644)
	verify("two blocks swapped", c, true, false)

	// labels.bin and its sidecar from dataset b (the same contents): not this dataset's.
	d := t.TempDir()
	md := write(d)
	lf := md.Nodes().Labels
	if lf == nil {
		t.Skip("the test dataset has no labels")
	}
	for _, name := range []string{lf.File, lf.File + ChecksumSuffix} {
		raw, _ := os.ReadFile(filepath.Join(b, name))
		os.WriteFile(filepath.Join(d, name), raw, 0o644)
	}
	raw, _ = os.ReadFile(filepath.Join(d, ManifestName))
	m, _ = Parse(raw)
	m.File(lf.File).ChecksumsHash = mb.File(lf.File).ChecksumsHash
	data, _ = json.Marshal(m)
	os.WriteFile(filepath.Join(d, ManifestName), rehashed(t, string(data)), 0o644)
	verify("labels from another dataset", d, true, true)
}

// layoutAttacks are edits of what decides how a file's bytes are read (issue 43), each applied
// to a manifest of the golden graph: the file whose check must fail and the value it must name.
var layoutAttacks = []struct {
	what       string
	edit       func(m *Manifest)
	file, want string
}{
	{"feature dtype float32 to int32 (same row bytes)", func(m *Manifest) { m.Nodes().Features[0].DType = Int32 },
		"features.x.0.bin", "dtype=int32"},
	{"feature dim 3 to 2", func(m *Manifest) {
		x := &m.Nodes().Features[0]
		x.Dim, x.RowBytes = 2, 8
		x.RowsPerBlock = int64(m.BlockSize) / x.RowBytes
		x.StripeRows = x.RowsPerBlock * 1024
	}, "features.x.0.bin", "dim=2"},
	{"node count 5 to 4 (every row count of the type)", func(m *Manifest) { m.Nodes().Count = 4 },
		"", "nodes=4"},
	{"edge split count 3 to 2 (a seed edge dropped)", func(m *Manifest) {
		s := m.Edges().Splits["train"]
		s.Seeds.Count--
		m.Edges().Splits["train"] = s
	}, "edge_split.train.", "count=2"},
	{"a row shape given to a feature of dim 3 written without one", func(m *Manifest) { m.Nodes().Features[0].Shape = []int64{3, 1} },
		"features.x.0.bin", "shape=3x1"},
	{"num_classes 3 to 2, below the largest label", func(m *Manifest) { m.Nodes().Labels.NumClasses = 2 },
		"labels.bin", "num_classes=2"},
	{"version 9 edited down to 8, which binds no layout", func(m *Manifest) { m.Version = 8 },
		"", "edited down"},
}

// TestLayoutBound: from version 9 a file's checksums are bound to how it is read. Each of
// layoutAttacks, made to a dataset as the writer writes it with the manifest's hash recomputed,
// is refused by Load as ErrCorrupt naming the file and the value, and Verify of the edited
// manifest finds the file's blocks bad; the dataset as written, and Upgrade's output, open.
func TestLayoutBound(t *testing.T) {
	fresh := t.TempDir()
	writeGolden(t, fresh, Version)
	upgraded := t.TempDir()
	copyDir(t, filepath.Join("testdata", "golden", "v6"), upgraded)
	if _, err := Upgrade(upgraded, nil); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{fresh, upgraded} {
		if m, err := Load(src); err != nil || m.Version != Version {
			t.Fatalf("as written: %v", err)
		}
		for _, a := range layoutAttacks {
			dir := t.TempDir()
			copyDir(t, src, dir)
			path := filepath.Join(dir, ManifestName)
			m, err := Parse(mustRead(t, path))
			if err != nil {
				t.Fatal(err)
			}
			a.edit(m)
			data, _ := json.Marshal(m)
			os.WriteFile(path, rehashed(t, string(data)), 0o644)
			edited, err := Parse(mustRead(t, path))
			if err != nil {
				t.Fatalf("%s: the edited manifest does not parse, so the attack tests nothing: %v", a.what, err)
			}
			_, err = Load(dir)
			if !IsCorrupt(err) || !strings.Contains(err.Error(), a.want) || !strings.Contains(err.Error(), " of "+a.file) {
				t.Fatalf("%s: Load said %v, want ErrCorrupt naming %s… and %q", a.what, err, a.file, a.want)
			}
			edited.SetDir(dir)
			problems, err := edited.Verify(1, nil)
			if err != nil || len(problems) == 0 || !strings.HasPrefix(problems[0].File, a.file) {
				t.Fatalf("%s: Verify found %v %v, want %s… bad", a.what, problems, err, a.file)
			}
		}
	}
}

// TestLayoutBoundManyBlocks: Load checks the first and the last block of every file. A dtype
// edit fails both and is refused, naming them; a bit flipped in the first block alone is damage,
// left to the reads that touch it (Verify names that block).
func TestLayoutBoundManyBlocks(t *testing.T) {
	dir := t.TempDir()
	m, _ := writeTestDataset(t, dir, 20000, 4, Float32, 1, testRand(t)) // 79 blocks of x
	x := m.Nodes().Features[0].Files[0]
	last := m.File(x).Blocks(int64(m.BlockSize)) - 1
	path := filepath.Join(dir, ManifestName)
	raw := mustRead(t, path)
	edited, _ := Parse(raw)
	edited.Nodes().Features[0].DType = Int32
	data, _ := json.Marshal(edited)
	os.WriteFile(path, rehashed(t, string(data)), 0o644)
	if _, err := Load(dir); !IsCorrupt(err) || !strings.Contains(err.Error(), fmt.Sprintf("blocks 0 and %d of %s", last, x)) || !strings.Contains(err.Error(), "dtype=int32") {
		t.Fatalf("Load of a manifest whose feature dtype was edited: %v", err)
	}
	os.WriteFile(path, raw, 0o644)
	b := mustRead(t, filepath.Join(dir, x))
	b[100] ^= 4
	os.WriteFile(filepath.Join(dir, x), b, 0o644)
	m, err := Load(dir)
	if err != nil {
		t.Fatalf("Load with block 0 of %s damaged (its last block intact): %v", x, err)
	}
	if problems, err := m.Verify(0, nil); err != nil || len(problems) != 1 || problems[0].File != x || problems[0].Offset != 0 {
		t.Fatalf("Verify: %v %v, want block 0 of %s", problems, err, x)
	}
}
