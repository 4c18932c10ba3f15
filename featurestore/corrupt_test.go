package featurestore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore/featurestoretest"
	"github.com/tierfs/tierfs/topology"
)

// TestBitFlipsNeverAnswer flips one bit at a random offset of the labels, split, indptr or
// indices file, many times (printed seed), and opens the dataset with default options, the
// topology in memory and on disk, and with unverified reads (the topology and labels in memory): opening, Labels, Split and Sample each either give the answer of the
// undamaged dataset or an error dataset.IsCorrupt recognises, never a different answer.
func TestBitFlipsNeverAnswer(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 3000, 8, 1, 6, rng)
	all := make([]int64, d.Count)
	for v := range all {
		all[v] = int64(v)
	}
	seeds := randomIDs(rng, 300, d.Count)
	sopt := topology.SampleOptions{Fanouts: []int{-1, -1}, Seed: 7}
	modes := []struct {
		name string
		opt  Options
	}{
		{"memory", Options{}},
		{"disk", Options{TopologyMemoryBytes: -1}},
		// Unverified reads: labels, splits and the topology are read whole and checked always.
		{"memory, unverified reads", Options{UnverifiedReads: true}},
	}
	ref := make([]*topology.Sample, len(modes))
	for i, mode := range modes {
		s, err := Open(d.Dir, mode.opt)
		if err != nil {
			t.Fatal(err)
		}
		if ref[i], err = sampleOf(s, seeds, sopt); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	trials := 100
	if testing.Short() {
		trials = 20
	}
	files := []string{"labels.bin", "train.ids", "indptr.bin", "indices.bin"}
	var caught, clean int // opens with an error somewhere, and without
	for trial := range trials {
		file := files[trial%len(files)]
		path := filepath.Join(d.Dir, file)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		off, bit := rng.Int64N(int64(len(raw))), rng.UintN(8)
		raw[off] ^= 1 << bit
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		what := func(call string) string { return fmt.Sprintf("%s byte %d bit %d: %s", file, off, bit, call) }
		for i, mode := range modes {
			failed := false
			bad := func(call string, err error) bool {
				failed = failed || err != nil
				if err != nil && !dataset.IsCorrupt(err) {
					t.Errorf("%s (%s topology): %v; want a corruption error", what(call), mode.name, err)
				}
				return err != nil
			}
			s, err := Open(d.Dir, mode.opt)
			if bad("open", err) {
				caught++
				continue
			}
			labels := make([]int64, d.Count)
			if err := s.Session().Labels("", all, labels); !bad("Labels", err) && !slices.Equal(labels, d.Labels) {
				t.Errorf("%s (%s topology): Labels differ from the undamaged dataset's", what("Labels"), mode.name)
			}
			train, err := s.Session().Split("", "train")
			if !bad("Split", err) && !slices.Equal(train, d.Train) {
				t.Errorf("%s (%s topology): Split(train) differs from the undamaged dataset's", what("Split"), mode.name)
			}
			sm, err := sampleOf(s, seeds, sopt)
			if !bad("Sample", err) && !reflect.DeepEqual(sm, ref[i]) {
				t.Errorf("%s (%s topology): Sample differs from the undamaged dataset's", what("Sample"), mode.name)
			}
			s.Close()
			if failed {
				caught++
			} else {
				clean++
			}
		}
		raw[off] ^= 1 << bit
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d trials, %d opens each: %d found corruption, %d gave every reference answer", trials, len(modes), caught, clean)
}

// TestDiskTopologyHugeIndptr: with the topology on disk, an index pointer damaged to a huge
// value (the checksums agreeing, as when verification is off or the damage predates them) is
// corruption when sampling every neighbor, without a huge allocation.
func TestDiskTopologyHugeIndptr(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 2000, 8, 1, 6, rng)
	v := rng.Int64N(d.Count-1) + 1
	f, err := os.OpenFile(filepath.Join(d.Dir, "indptr.bin"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	huge := binary.LittleEndian.AppendUint64(nil, 1<<40) // 8 TiB of int64 ids
	if _, err := f.WriteAt(huge, 8*v); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s, err := Open(d.Dir, Options{TopologyMemoryBytes: -1, Hotness: make([]uint32, d.Count)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = sampleOf(s, []int64{v - 1, v, rng.Int64N(d.Count)}, topology.SampleOptions{Fanouts: []int{-1}})
	if !dataset.IsCorrupt(err) {
		t.Fatalf("sample over a damaged indptr[%d]: %v; want corruption", v, err)
	}
	t.Log(err)
	// In memory the same damage is corruption at open.
	if _, err := Open(d.Dir, Options{}); !dataset.IsCorrupt(err) {
		t.Fatalf("open with the topology in memory: %v; want corruption", err)
	}
}

// TestDefaultOptionsBitFlipsEveryFile flips one bit at a random offset of a random file of the
// dataset — features, topology, labels, splits, checksum sidecars, the manifest — 320 times
// (printed seed; 40 with -short), and opens the dataset with default options (reads verified),
// without and with a host tier filled at open: opening, Labels, Split, Sample and a Gather of
// every row each either give the undamaged dataset's answer or an error, never a different
// answer. (Issue 30's target: 0 silent wrong answers over >= 300 single-bit flips.)
func TestDefaultOptionsBitFlipsEveryFile(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 1500, 8, 2, 5, rng)
	all := make([]int64, d.Count)
	for v := range all {
		all[v] = int64(v)
	}
	seeds := randomIDs(rng, 200, d.Count)
	sopt := topology.SampleOptions{Fanouts: []int{4, 3}, Seed: 3}
	modes := []struct {
		name string
		opt  Options
	}{{"default", Options{}}, {"host tier", Options{HostCacheBytes: d.Count / 2 * (d.RowBytes + 16)}}}
	ref, err := Open(d.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	refSample, err := sampleOf(ref, seeds, sopt)
	ref.Close()
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(d.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() && info.Size() > 0 {
			files = append(files, e.Name())
		}
	}
	trials := 320
	if testing.Short() {
		trials = 40
	}
	caught, clean := 0, 0
	for trial := range trials {
		file := files[rng.IntN(len(files))]
		path := filepath.Join(d.Dir, file)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		off, bit := rng.Int64N(int64(len(raw))), rng.UintN(8)
		raw[off] ^= 1 << bit
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		what := fmt.Sprintf("trial %d: %s byte %d bit %d", trial, file, off, bit)
		for _, mode := range modes {
			failed := false
			ok := func(err error) bool { failed = failed || err != nil; return err == nil }
			s, err := Open(d.Dir, mode.opt)
			if !ok(err) {
				caught++
				continue
			}
			labels := make([]int64, d.Count)
			if ok(s.Session().Labels("", all, labels)) && !slices.Equal(labels, d.Labels) {
				t.Errorf("%s (%s): Labels differ from the undamaged dataset's, without an error", what, mode.name)
			}
			if train, err := s.Session().Split("", "train"); ok(err) && !slices.Equal(train, d.Train) {
				t.Errorf("%s (%s): Split(train) differs from the undamaged dataset's, without an error", what, mode.name)
			}
			if sm, err := sampleOf(s, seeds, sopt); ok(err) && !reflect.DeepEqual(sm, refSample) {
				t.Errorf("%s (%s): Sample differs from the undamaged dataset's, without an error", what, mode.name)
			}
			rows := make([]byte, d.Count*d.RowBytes)
			if ok(s.Gather(all, rows)) && !bytes.Equal(rows, d.Rows) {
				t.Errorf("%s (%s): Gather differs from the undamaged dataset's, without an error", what, mode.name)
			}
			s.Close()
			if failed {
				caught++
			} else {
				clean++
			}
		}
		raw[off] ^= 1 << bit
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d flips over %d files, %d opens each: %d found the damage, %d gave every reference answer", trials, len(files), len(modes), caught, clean)
}

// TestLabelsOutsideNumClasses: num_classes edited below the largest label of the golden dataset
// of version 8 (which does not bind it), its manifest hash recomputed, is ErrCorrupt naming the
// node and its label — at open when the labels are held in memory, and in the call that reads
// that node's label when they are read from disk (the others still answer).
func TestLabelsOutsideNumClasses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "v8")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "dataset", "testdata", "golden", "v8"))); err != nil {
		t.Fatal(err)
	}
	featurestoretest.EditManifest(t, dir, func(m *dataset.Manifest) { m.Nodes().Labels.NumClasses = 2 }) // labels 0, 1, -1, 2, 1
	if _, err := OpenSession(dir, Options{}); !errors.Is(err, dataset.ErrCorrupt) || !strings.Contains(err.Error(), "node 3 has label 2") {
		t.Fatalf("open with labels in memory: %v, want ErrCorrupt naming node 3", err)
	}
	ss, err := OpenSession(dir, Options{TopologyMemoryBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	out := make([]int64, 3)
	if err := ss.Labels("", []int64{0, 1, 2}, out); err != nil || !slices.Equal(out, []int64{0, 1, -1}) {
		t.Fatalf("labels of nodes 0 to 2: %v, %v", out, err)
	}
	if err := ss.Labels("", []int64{4, 3}, out[:2]); !errors.Is(err, dataset.ErrCorrupt) || !strings.Contains(err.Error(), "node 3 has label 2") {
		t.Fatalf("labels of node 3 from disk: %v, want ErrCorrupt naming it", err)
	}
}
