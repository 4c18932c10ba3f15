package ingest

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/internal/wfs"
	"github.com/tierfs/tierfs/internal/wfs/wfstest"
)

// dataHashes hashes every data file m lists, in its order: what a dataset holds, without its
// manifest and sidecars (which carry its time and random id) or the names of its stripes (which
// carry the write's nonce).
func dataHashes(t *testing.T, m *dataset.Manifest) []string {
	t.Helper()
	var out []string
	for _, f := range m.Files {
		b, err := os.ReadFile(m.Path(f.Path))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%x", sha256.Sum256(b)))
	}
	return out
}

// walkWriteFaults fails each call of write (generation 1 or 2 of a dataset, to out, through
// fsys) in turn with each fault wfs.Faulty injects, until write makes no call the fault applies
// to; the first writes are to an empty out, the others over the generation in place (the first
// write of a dataset is walked call by call in dataset's TestWriteFaults: Begin and Publish are
// the same for every writer). After each, once CleanStale has run (as the next write runs it),
// out holds nothing or the old generation or the new one — loading, verifying, its data files
// those of that generation as written without faults — never a third; beside out there is
// nothing else, and the stripes' directory write is given holds only the stripes of the dataset
// in place. After each EIO, a second fault in the same run: the first removal after it failing
// too (the cleanup's own).
func walkWriteFaults(t *testing.T, write func(fsys wfs.FS, out, stripes string, gen int) error) {
	ref := map[int][]string{}
	for gen := 1; gen <= 2; gen++ {
		out := filepath.Join(wfstest.MemDir(t), "ref")
		if err := write(nil, out, wfstest.MemDir(t), gen); err != nil {
			t.Fatal(err)
		}
		ref[gen] = dataHashes(t, loadVerified(t, out))
	}
	parent, stripes := wfstest.MemDir(t), wfstest.MemDir(t)
	out := filepath.Join(parent, "ds")
	state := func(what string) int {
		if _, err := os.Stat(out); os.IsNotExist(err) {
			return 0
		}
		m, err := dataset.Load(out)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if problems, err := m.Verify(1, nil); err != nil || len(problems) > 0 {
			t.Fatalf("%s: Verify %v %v", what, problems, err)
		}
		got := dataHashes(t, m)
		striped := 0
		for _, f := range m.Files {
			if filepath.IsAbs(f.Path) {
				striped += 2 // the stripe and its sidecar
			}
		}
		if entries, _ := os.ReadDir(stripes); len(entries) != striped {
			t.Fatalf("%s: %d entries in the stripes' directory, want the dataset's %d", what, len(entries), striped)
		}
		for gen, want := range ref {
			if slices.Equal(got, want) {
				return gen
			}
		}
		t.Fatalf("%s: the dataset's data files are of neither generation", what)
		return -1
	}
	run := func(fault wfs.Fault, n, then int) (hit, thenHit bool) {
		old := state("before")
		next := 3 - max(old, 1) // 0 -> 2, 1 -> 2, 2 -> 1
		f := &wfs.Faulty{Fault: fault, N: n, Then: then}
		err := write(f, out, stripes, next)
		what := fmt.Sprintf("%v (%s; %s), generation %d over %d, write: %v", f, f.Hit(), f.ThenHit(), next, old, err)
		if _, cerr := dataset.CleanStale(out); cerr != nil {
			t.Fatalf("%s: CleanStale: %v", what, cerr)
		}
		got := state(what)
		if got != old && got != next || err == nil && got != next {
			t.Fatalf("%s: generation %d in place", what, got)
		}
		if entries, _ := os.ReadDir(parent); len(entries) > 1 || len(entries) == 1 && entries[0].Name() != "ds" {
			t.Fatalf("%s: %d entries beside the dataset (%s...)", what, len(entries), entries[0].Name())
		}
		if f.Hit() == "" && err != nil {
			t.Fatalf("%s: no fault hit", what)
		}
		return f.Hit() != "", f.ThenHit() != ""
	}
	// A second fault, the cleanup's removal failing: the first removal after each EIO (dataset's
	// TestWriteFaults walks every one of the writer every ingest shares).
	walked, seconds := wfs.Walk(1, run)
	t.Logf("%d faulted writes, %d with a second fault in their cleanup", walked, seconds)
}

// TestSynthFaults: Synth, its feature in two stripes outside the dataset's directory, under
// every fault at every call (walkWriteFaults).
func TestSynthFaults(t *testing.T) {
	smallChunks(t) // small buffers: hundreds of writes
	walkWriteFaults(t, func(fsys wfs.FS, out, stripes string, gen int) error {
		_, err := Synth(SynthOptions{Nodes: int64(100 * gen), AvgDegree: 3, Dim: 8, DType: dataset.Float32, Seed: uint64(gen),
			Out: out, Replace: true, DevicePaths: []string{stripes, stripes}, FS: fsys})
		return err
	})
}

// TestIngestFaults: Ingest of edges with a feature, an edge feature, labels, a split and an edge
// split (seeds, labels, negatives) under every fault at every call (walkWriteFaults).
func TestIngestFaults(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	in := t.TempDir()
	inputs := map[int]Options{}
	for gen := 1; gen <= 2; gen++ {
		p := func(name string) string { return filepath.Join(in, fmt.Sprintf("%d.%s", gen, name)) }
		nodes, edges := 50*gen, 150*gen
		src, dst := testGraph(rng, nodes, edges)
		writeNpyEdges(t, p("e.npy"), "<i8", src, dst, false)
		x := make([]byte, nodes*4*3)
		ex := make([]byte, edges*4)
		labels := make([]int64, nodes)
		for i := range x {
			x[i] = byte(rng.UintN(256))
		}
		for i := range ex {
			ex[i] = byte(rng.UintN(256))
		}
		for i := range labels {
			labels[i] = rng.Int64N(5)
		}
		WriteNpy(p("x.npy"), "<f4", []int64{int64(nodes), 3}, x)
		WriteNpy(p("ex.npy"), "<f4", []int64{int64(edges)}, ex)
		WriteNpy(p("y.npy"), "<i8", []int64{int64(nodes)}, intBytes(labels, 'i', 8))
		splits := p("splits")
		os.Mkdir(splits, 0o755)
		WriteNpy(filepath.Join(splits, "train.npy"), "<i8", []int64{3}, intBytes([]int64{0, 2, 4}, 'i', 8))
		split := randomSplit(rng, int64(nodes), int64(nodes), true, false, 2, false).write(t, in, fmt.Sprintf("%d.train", gen), "")
		split.Split = "train"
		inputs[gen] = Options{Edges: p("e.npy"), Features: p("x.npy"), Labels: p("y.npy"), SplitsDir: splits,
			EdgeFeatures: []FeatureInput{{Name: "w", Path: p("ex.npy")}}, EdgeSplits: []EdgeSplitInput{split}}
	}
	walkWriteFaults(t, func(fsys wfs.FS, out, _ string, gen int) error {
		o := inputs[gen]
		o.Out, o.Replace, o.FS = out, true, fsys
		_, err := Ingest(o)
		if err != nil && !strings.Contains(err.Error(), "injected") && fsys != nil {
			return fmt.Errorf("not the fault's error: %w", err)
		}
		return err
	})
}

// TestWriteNpyFaults fails each call of a WriteNpy over an existing array in turn with each
// fault wfs.Faulty injects, and for each EIO also each removal after it (a second fault: the
// temporary file's removal failing). After each, the path holds the old array or the new one,
// whole (the new one when WriteNpy returned nil), and nothing else is in its directory but, after
// a failed removal, the temporary file, which the next WriteNpy of the path replaces.
func TestWriteNpyFaults(t *testing.T) {
	dir := wfstest.MemDir(t)
	path := filepath.Join(dir, "a.npy")
	arrays := [][]int64{{1, 2, 3}, {4, 5, 6, 7, 8}}
	read := func(what string) int {
		got, err := ReadNpyInt64s(path)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for k, a := range arrays {
			if slices.Equal(got, a) {
				return k
			}
		}
		t.Fatalf("%s: %s holds %v, neither array", what, path, got)
		return -1
	}
	if err := WriteNpy(path, "<i8", []int64{3}, dataset.BytesOf(arrays[0])); err != nil {
		t.Fatal(err)
	}
	run := func(fault wfs.Fault, n, then int) (hit, thenHit bool) {
		old := read("before")
		next := 1 - old
		f := &wfs.Faulty{Fault: fault, N: n, Then: then}
		err := writeNpy(f, path, "<i8", []int64{int64(len(arrays[next]))}, dataset.BytesOf(arrays[next]))
		what := fmt.Sprintf("%v (%s; %s): %v", f, f.Hit(), f.ThenHit(), err)
		got := read(what)
		if got != old && got != next || err == nil && got != next || f.Hit() == "" && err != nil {
			t.Fatalf("%s: holds array %d; want the old %d or the new %d", what, got, old, next)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) > 2 || len(entries) == 2 && (entries[1].Name() != "a.npy"+npyTmpSuffix || !strings.Contains(f.ThenHit(), npyTmpSuffix) && !strings.Contains(f.Hit(), "remove")) {
			t.Fatalf("%s: the directory holds %v", what, entries)
		}
		return f.Hit() != "", f.ThenHit() != ""
	}
	walked, seconds := wfs.Walk(0, run)
	if err := WriteNpy(path, "<i8", []int64{3}, dataset.BytesOf(arrays[0])); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 || read("after") != 0 {
		t.Fatalf("after a WriteNpy without faults the directory holds %v", entries)
	}
	t.Logf("%d faulted writes, %d with a second fault", walked, seconds)
}
