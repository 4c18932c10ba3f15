package dataset

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestBoundChecksumsCatchMovedData: with checksums bound to their place (version 7), data that
// is intact but in the wrong place fails Verify like a flipped bit: two feature stripes swapped
// (data and sidecars together, so each file still matches its own sums), two blocks of a file
// swapped, and a file copied from another dataset with the same contents — while the datasets as
// written verify clean.
func TestBoundChecksumsCatchMovedData(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	write := func(dir string) *Manifest {
		m, _ := writeTestDataset(t, dir, 131072, 4, Float32, 2, rand.New(rand.NewPCG(seed, 0))) // two stripes of 1 MiB
		return m
	}
	a, b := t.TempDir(), t.TempDir()
	ma, mb := write(a), write(b) // the same contents, two datasets
	if ma.DatasetID == mb.DatasetID || ma.Version != VersionBound {
		t.Fatalf("dataset ids %q and %q, version %d: want two ids and version %d", ma.DatasetID, mb.DatasetID, ma.Version, VersionBound)
	}
	verify := func(what string, dir string, wantProblems bool) {
		t.Helper()
		m, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		problems, err := m.Verify(0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if (len(problems) > 0) != wantProblems {
			t.Fatalf("%s: Verify found %v, want problems: %v", what, problems, wantProblems)
		}
	}
	verify("as written", a, false)
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
	verify("two stripes swapped", a, true)

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
	verify("two blocks swapped", c, true)

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
	verify("labels from another dataset", d, true)
}
