package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/tierfs/tierfs/dataset"
)

// inPlaceShapes are (dtype, dim) pairs whose rows are 4 B, 100 B, odd sizes and over 4 KiB.
var inPlaceShapes = []struct {
	dtype dataset.DType
	dim   int64
}{
	{dataset.Float32, 1}, {dataset.Int8, 100}, {dataset.Float32, 25}, {dataset.Int16, 51}, {dataset.Uint8, 7},
	{dataset.Float64, 3}, {dataset.Float16, 33}, {dataset.Float32, 1100}, {dataset.Int64, 700},
}

// TestFeaturesInPlace ingests .npy features in place for random dtypes and dims: the manifest
// names the user's file with its header offset, rows read through Locate match the file, Verify
// passes, and the file's bytes are untouched.
func TestFeaturesInPlace(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	for _, sh := range inPlaceShapes {
		t.Run(fmt.Sprintf("%s_x%d", sh.dtype, sh.dim), func(t *testing.T) {
			in := t.TempDir()
			rows := int64(1 + rng.IntN(300))
			rb := sh.dim * int64(sh.dtype.Size())
			x := randomRows(rng, rows, rb)
			path := filepath.Join(in, "x.npy")
			if err := WriteNpy(path, NpyDescr(sh.dtype), []int64{rows, sh.dim}, x); err != nil {
				t.Fatal(err)
			}
			pos := randomRows(rng, rows, 4)
			posPath := filepath.Join(in, "pos.npy")
			WriteNpy(posPath, "<i4", []int64{rows}, pos)
			before, _ := os.ReadFile(path)
			out := filepath.Join(t.TempDir(), "ds")
			if _, err := Ingest(Options{Features: path, NodeFeatures: []FeatureInput{{Name: "pos", Path: posPath}}, FeaturesInPlace: true, Out: out}); err != nil {
				t.Fatal(err)
			}
			m := loadVerified(t, out)
			if m.Version != dataset.Version {
				t.Fatalf("format version %d, want %d (every new dataset)", m.Version, dataset.Version)
			}
			spec, err := m.Feature("")
			if err != nil {
				t.Fatal(err)
			}
			a, err := OpenNpy(path)
			if err != nil {
				t.Fatal(err)
			}
			a.Close()
			if !spec.InPlace || spec.Files[0] != path || spec.DataOffset != a.DataOffset || spec.RowsPerBlock != 0 {
				t.Fatalf("spec %+v: want in place at %s from byte %d", spec, path, a.DataOffset)
			}
			if f := m.File(path); f == nil || !f.InPlace || f.Bytes != int64(len(before)) {
				t.Fatalf("files entry %+v: want in place, %d bytes", f, len(before))
			}
			if got := featureBytes(t, m, spec); !bytes.Equal(got, x) {
				t.Fatal("rows read through Locate differ from the file's")
			}
			ps, _, _ := m.AnyFeature("pos")
			if got := featureBytes(t, m, ps); !ps.InPlace || !ps.Scalar || !bytes.Equal(got, pos) {
				t.Fatalf("1-D node feature pos: in place %v, scalar %v, or rows differ", ps.InPlace, ps.Scalar)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
				t.Fatal("ingest changed the in-place file")
			}
			if entries, _ := os.ReadDir(in); len(entries) != 2 {
				t.Fatalf("ingest left %d entries beside the input files (a sidecar?)", len(entries))
			}
		})
	}
}

// TestFeaturesInPlaceChanged: a changed in-place file is refused at open naming the file; a
// flipped byte with size and time restored is found by Verify.
func TestFeaturesInPlaceChanged(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	in := t.TempDir()
	path := filepath.Join(in, "x.npy")
	x := randomRows(rng, 500, 100)
	WriteNpy(path, "|i1", []int64{500, 100}, x)
	out := filepath.Join(t.TempDir(), "ds")
	if _, err := Ingest(Options{Features: path, FeaturesInPlace: true, Out: out}); err != nil {
		t.Fatal(err)
	}
	m := loadVerified(t, out)
	st, _ := os.Stat(path)
	// A flipped byte, size and modification time restored: only the checksums see it.
	raw, _ := os.ReadFile(path)
	raw[len(raw)-3] ^= 0x40 // in the partial last block
	os.WriteFile(path, raw, 0o644)
	os.Chtimes(path, st.ModTime(), st.ModTime())
	problems, err := m.Verify(0, nil)
	last := (int64(len(raw)) - 3) / 4096 * 4096
	if err != nil || len(problems) != 1 || problems[0].File != path || problems[0].Offset != last {
		t.Fatalf("Verify of a flipped byte at %d: %v %v, want one problem in the block at %d", len(raw)-3, problems, err, last)
	}
	// A newer modification time: refused at open, naming the file.
	os.Chtimes(path, st.ModTime(), st.ModTime().Add(time.Second))
	fd, _, err := m.OpenFD(path, 0)
	if err == nil || !errors.Is(err, dataset.ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "changed after ingest") {
		t.Fatalf("open of a changed in-place file: fd %d, %v", fd, err)
	}
	problems, _ = m.Verify(0, nil)
	if len(problems) != 1 || !strings.Contains(problems[0].What, "changed after ingest") {
		t.Fatalf("Verify of a changed in-place file: %v", problems)
	}
}

// TestFeaturesInPlaceSwappedDuringIngest replaces the .npy, with another dtype and dim of the
// same size, after ingest has read its header and before it checksums it: ingest must refuse,
// naming the file, rather than describe the new bytes with the old header.
func TestFeaturesInPlaceSwappedDuringIngest(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	path := filepath.Join(t.TempDir(), "x.npy")
	WriteNpy(path, "<f4", []int64{100, 4}, randomRows(rng, 100, 16))
	out := filepath.Join(t.TempDir(), "ds")
	swapped := false
	_, err := Ingest(Options{Features: path, FeaturesInPlace: true, Out: out, Progress: func(stage string, done, total int64) {
		if stage == "commit" && !swapped {
			swapped = true
			time.Sleep(10 * time.Millisecond) // a later modification time than the header's read
			WriteNpy(path, "<f2", []int64{100, 8}, randomRows(rng, 100, 16))
		}
	}})
	if !swapped {
		t.Fatal("ingest reported no commit stage to swap the file in")
	}
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "changed after its header was read") {
		t.Fatalf("ingest of a file swapped after its header was read: %v; want a refusal naming %s", err, path)
	}
	if _, err := os.Stat(filepath.Join(out, dataset.ManifestName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused ingest left a manifest (stat: %v)", err)
	}
}

// TestFeaturesInPlaceNotOwned: replacing (Replace) or cleaning a dataset never removes its
// in-place file, nor does a failed ingest; a file inside the output, a striped or non-.npy
// feature, and a Fortran-order, big-endian or object .npy are refused naming the file.
func TestFeaturesInPlaceNotOwned(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	in := t.TempDir()
	path := filepath.Join(in, "x.npy")
	x := randomRows(rng, 64, 12)
	WriteNpy(path, "<f4", []int64{64, 3}, x)
	before, _ := os.ReadFile(path)
	parent := t.TempDir()
	out := filepath.Join(parent, "ds")
	if _, err := Ingest(Options{Features: path, FeaturesInPlace: true, Out: out}); err != nil {
		t.Fatal(err)
	}
	// Replaced by a copied dataset, then by an in-place one again, then a failed replace.
	if _, err := Ingest(Options{Features: path, Out: out, Replace: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := Ingest(Options{Features: path, FeaturesInPlace: true, Out: out, Replace: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := Ingest(Options{Features: path, FeaturesInPlace: true, Labels: filepath.Join(in, "nope.npy"), Out: out, Replace: true}); err == nil {
		t.Fatal("ingest with a missing labels file succeeded")
	}
	if _, err := dataset.CleanStale(out); err != nil {
		t.Fatal(err)
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("the in-place file after replaces and cleanup: %v (changed: %v)", err, !bytes.Equal(after, before))
	}
	loadVerified(t, out)
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Fatalf("%d entries beside the dataset", len(entries))
	}

	// Inside the output directory (which a replace removes).
	inside := filepath.Join(out, "mine.npy")
	WriteNpy(inside, "<f4", []int64{64, 3}, x)
	if _, err := Ingest(Options{Features: inside, FeaturesInPlace: true, Out: out, Replace: true}); err == nil || !strings.Contains(err.Error(), "inside the output directory") {
		t.Fatalf("in-place file inside Out: %v", err)
	}
	if _, err := os.Stat(inside); err != nil {
		t.Fatalf("the refused ingest removed the file inside Out: %v", err)
	}
	for _, tc := range []struct {
		name string
		opt  func(o *Options)
		file func(p string)
		want string
	}{
		{"striped", func(o *Options) { o.DevicePaths = []string{t.TempDir()} }, nil, "with DevicePaths"},
		{"same file twice", func(o *Options) { o.NodeFeatures = []FeatureInput{{Name: "y", Path: o.Features}} }, nil, "both name the in-place file"},
		{"fortran", nil, func(p string) {
			os.WriteFile(p, rawNpy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (4, 3), }", make([]byte, 48)), 0o644)
		}, "Fortran order"},
		{"big-endian", nil, func(p string) {
			os.WriteFile(p, rawNpy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (4, 3), }", make([]byte, 48)), 0o644)
		}, "big-endian"},
		{"object", nil, func(p string) {
			os.WriteFile(p, rawNpy(1, "{'descr': '|O', 'fortran_order': False, 'shape': (4, 3), }", make([]byte, 96)), 0o644)
		}, "not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f.npy")
			WriteNpy(p, "<f4", []int64{64, 3}, x)
			if tc.file != nil {
				tc.file(p)
			}
			o := Options{Features: p, FeaturesInPlace: true, Out: filepath.Join(t.TempDir(), "ds")}
			if tc.opt != nil {
				tc.opt(&o)
			}
			_, err := Ingest(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.file != nil && !strings.Contains(err.Error(), p)) {
				t.Fatalf("error %v, want one naming %s and containing %q", err, p, tc.want)
			}
		})
	}
	pq := filepath.Join(t.TempDir(), "x.parquet")
	sc, recs, _ := featureRecords(rng, arrow.PrimitiveTypes.Float32, 8, 3, 8, "fixed")
	writeParquet(t, pq, sc, recs)
	if _, err := Ingest(Options{Features: pq, FeaturesInPlace: true, Out: filepath.Join(t.TempDir(), "ds")}); err == nil || !strings.Contains(err.Error(), "only a .npy feature file can be used in place") {
		t.Fatalf("in-place Parquet: %v", err)
	}
}
