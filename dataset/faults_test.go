package dataset

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/internal/wfs"
	"github.com/tierfs/tierfs/internal/wfs/wfstest"
)

// writeGeneration writes dataset generation gen to dest through fsys the way ingest does (Begin,
// a striped feature with one stripe in stripes, a mapped topology file, int64 arrays, Commit,
// Publish; Abort on any error): gen+10 nodes, every label gen, feature bytes gen.
func writeGeneration(fsys wfs.FS, dest, stripes string, gen int64) (err error) {
	w, err := Begin(fsys, dest, true)
	if err != nil {
		return err
	}
	var claimed []string
	defer func() {
		if err != nil {
			w.Abort(claimed)
		}
	}()
	count := gen + 10
	spec, err := NewFeatureSpec("x", Uint8, 8, count, 2, DefaultBlockSize)
	if err != nil {
		return err
	}
	spec.Files = []string{"features.x.0.bin", filepath.Join(stripes, "x.1."+w.Nonce+".bin")}
	if err := w.Claim(spec.Files); err != nil {
		return err
	}
	claimed = spec.Files
	fw, err := NewFeatureWriter(w.FS, w.Dir, &spec)
	if err != nil {
		return err
	}
	err = fw.WriteRows(slices.Repeat([]byte{byte(gen)}, int(count*spec.RowBytes)))
	if cerr := fw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	idx, err := CreateMapped(w.FS, filepath.Join(w.Dir, "indices.bin"), 4*count)
	if err != nil {
		return err
	}
	indptr, labels := make([]int64, count+1), make([]int64, count)
	for v := range count {
		indptr[v+1], labels[v] = v+1, gen
		binary.LittleEndian.PutUint32(idx.Bytes()[4*v:], uint32((v+count-1)%count))
	}
	if err := idx.Close(); err != nil {
		return err
	}
	for name, vals := range map[string][]int64{"indptr.bin": indptr, "labels.bin": labels} {
		if err := WriteInt64s(w.FS, filepath.Join(w.Dir, name), vals); err != nil {
			return err
		}
	}
	m := w.Manifest()
	m.NodeTypes = []NodeType{{Name: "node", Count: count, Features: []FeatureSpec{spec}, Labels: &LabelSpec{ArraySpec{"labels.bin", Int64}, 100}}}
	m.EdgeTypes = []EdgeType{{Src: "node", Rel: "to", Dst: "node", Count: count, Layout: "csc",
		Indptr: ArraySpec{"indptr.bin", Int64}, Indices: ArraySpec{"indices.bin", Int32}}}
	if err := Commit(m, append(slices.Clone(spec.Files), "indptr.bin", "indices.bin", "labels.bin"), "faults_test.go", nil); err != nil {
		return err
	}
	return w.Publish(m)
}

// generationAt is the generation of the dataset at dest, loaded and verified whole, and -1 when
// there is none; any other state (a dataset that does not load or verify, labels or features of
// two generations) fails t.
func generationAt(t *testing.T, dest, what string) int64 {
	t.Helper()
	if _, err := os.Stat(dest); os.IsNotExist(err) {
		return -1
	}
	m, err := Load(dest)
	if err != nil {
		t.Fatalf("%s: the dataset does not load: %v", what, err)
	}
	if problems, err := m.Verify(1, nil); err != nil || len(problems) > 0 {
		t.Fatalf("%s: Verify: %v %v", what, problems, err)
	}
	nt := m.NodeTypes[0]
	gen := nt.Count - 10
	labels := mustRead(t, m.Path(nt.Labels.File))[:8*nt.Count]
	for v := range nt.Count {
		if got := int64(binary.LittleEndian.Uint64(labels[8*v:])); got != gen {
			t.Fatalf("%s: node %d of generation %d has label %d", what, v, gen, got)
		}
	}
	for _, f := range nt.Features[0].Files {
		for i, b := range mustRead(t, m.Path(f)) {
			if b != byte(gen) && b != 0 { // 0: a block's padding
				t.Fatalf("%s: byte %d of %s is %d, in generation %d", what, i, f, b, gen)
			}
		}
	}
	return gen
}

// names lists the entries of dir.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// TestWriteFaults fails each call of a dataset write in turn (the first write of dest, then one
// replacing a dataset there) with each fault wfs.Faulty injects — ENOSPC, EIO, a short write, a
// failed fsync — until the write makes no call the fault applies to; and, for each EIO, a second
// fault in the same run: each removal after the first failure in turn (Faulty.Then: the
// cleanup's own removal failing, in Abort, Publish or the CleanStale run after the write). After
// each, once CleanStale has run (as the next Begin runs it), dest holds the old dataset (nothing,
// for the first write) or the new one, each loading and verifying with its own data, never a
// third; beside dest there is nothing else, and the stripes' directory holds only the stripe of
// the dataset in place. A write that returns nil has published the new one.
func TestWriteFaults(t *testing.T) {
	parent, stripes := wfstest.MemDir(t), wfstest.MemDir(t)
	dest := filepath.Join(parent, "ds")
	gen := int64(0) // the generation in place; -1: none yet
	walked, seconds := 0, 0
	// run is one faulted write and its cleanup; it says whether each fault hit.
	run := func(fault wfs.Fault, first bool, n, then int) (hit, thenHit bool) {
		if first { // dest empty before each write
			os.RemoveAll(dest)
			for _, name := range names(t, stripes) {
				os.Remove(filepath.Join(stripes, name))
			}
			gen = -1
		} else if gen < 0 {
			if err := writeGeneration(nil, dest, stripes, 1); err != nil {
				t.Fatal(err)
			}
			gen = 1
		}
		f := &wfs.Faulty{Fault: fault, N: n, Then: then}
		next := max(gen, 0) + 1
		err := writeGeneration(f, dest, stripes, next)
		_, ferr := cleanStale(f, dest) // where the second fault may land too
		what := f.String() + " (" + f.Hit() + "; " + f.ThenHit() + ")"
		if _, cerr := CleanStale(dest); cerr != nil {
			t.Fatalf("%s: CleanStale (after a faulted one: %v): %v", what, ferr, cerr)
		}
		got := generationAt(t, dest, what)
		switch {
		case f.Hit() == "" && (err != nil || got != next):
			t.Fatalf("%s: no fault hit, yet the write returned %v and left generation %d", what, err, got)
		case err == nil && got != next:
			t.Fatalf("%s: the write returned nil but left generation %d, want %d", what, got, next)
		case got != gen && got != next:
			t.Fatalf("%s: generation %d at dest; want the old %d or the new %d (write: %v)", what, got, gen, next, err)
		}
		if left := names(t, parent); !reflect.DeepEqual(left, []string{"ds"}) && !(got < 0 && len(left) == 0) {
			t.Fatalf("%s: beside dest: %q", what, left)
		}
		wantStripes := 0
		if got >= 0 {
			wantStripes = 2 // the stripe and its sidecar
		}
		if left := names(t, stripes); len(left) != wantStripes {
			t.Fatalf("%s: stripes left: %q", what, left)
		}
		gen = got
		return f.Hit() != "", f.ThenHit() != ""
	}
	for _, first := range []bool{true, false} {
		w, s := wfs.Walk(0, func(fault wfs.Fault, n, then int) (bool, bool) { return run(fault, first, n, then) })
		walked, seconds = walked+w, seconds+s
	}
	t.Logf("%d faulted writes, %d with a second fault in their cleanup", walked, seconds)
}

// TestUpgradeFaults fails each call of an upgrade in turn with each fault wfs.Faulty injects,
// until the upgrade makes no call the fault applies to. After each, the dataset loads and
// verifies at its old version or the new one with its data files unchanged, never anything
// else, and the next Upgrade finishes the work and leaves nothing of it behind.
func TestUpgradeFaults(t *testing.T) {
	r := testRand(t)
	src, srcStripes := wfstest.MemDir(t), wfstest.MemDir(t)
	old := writeOldDataset(t, src, srcStripes, 300, r)
	walked := 0
	for _, fault := range wfs.Faults {
		for n := 1; ; n++ {
			dir, stripes := wfstest.MemDir(t), wfstest.MemDir(t)
			copyDir(t, src, dir)
			copyDir(t, srcStripes, stripes)
			text := strings.ReplaceAll(string(mustRead(t, filepath.Join(dir, ManifestName))), srcStripes, stripes)
			if err := os.WriteFile(filepath.Join(dir, ManifestName), rehashed(t, text), 0o644); err != nil {
				t.Fatal(err)
			}
			m, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			data := dataFiles(t, m)
			f := &wfs.Faulty{Fault: fault, N: n}
			from, err := upgrade(f, dir, nil, nil)
			what := f.String() + " (" + f.Hit() + ")"
			if f.Hit() == "" && (err != nil || from != old.Version) {
				t.Fatalf("%s: no fault hit, yet the upgrade returned %d, %v", what, from, err)
			}
			got, lerr := Load(dir)
			if lerr != nil {
				t.Fatalf("%s (upgrade: %v): the dataset does not load: %v", what, err, lerr)
			}
			if got.Version != old.Version && got.Version != Version || err == nil && got.Version != Version {
				t.Fatalf("%s (upgrade: %v): version %d, want %d or %d", what, err, got.Version, old.Version, Version)
			}
			if problems, verr := got.Verify(1, nil); verr != nil || len(problems) > 0 {
				t.Fatalf("%s (upgrade: %v): Verify %v %v", what, err, problems, verr)
			}
			if !reflect.DeepEqual(dataFiles(t, got), data) {
				t.Fatalf("%s: data files changed", what)
			}
			if _, err := Upgrade(dir, nil); err != nil {
				t.Fatalf("%s: the upgrade after: %v", what, err)
			}
			checkUpgraded(t, dir, m, data, stripes)
			os.RemoveAll(dir)
			os.RemoveAll(stripes)
			if f.Hit() == "" {
				walked += n - 1
				break
			}
		}
	}
	t.Logf("%d faulted upgrades", walked)
}
