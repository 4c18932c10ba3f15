package ingest

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/internal/sysinfo"
)

// fileHashes hashes every file of dir except the manifest (which records the time).
func fileHashes(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if e.Name() == dataset.ManifestName {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fmt.Sprintf("%x", sha256.Sum256(b))
	}
	return out
}

func smallChunks(t *testing.T) {
	oldE, oldF := synthEdgeChunk, synthFeatureChunkMax
	synthEdgeChunk, synthFeatureChunkMax = 1000, 64<<10 // many chunks, to exercise the ordering
	t.Cleanup(func() { synthEdgeChunk, synthFeatureChunkMax = oldE, oldF })
}

func TestSynthDeterministic(t *testing.T) {
	smallChunks(t)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	opt := SynthOptions{Nodes: 3000, AvgDegree: 6, Dim: 19, Seed: seed}
	hashes := make([]map[string]string, 3)
	for i := range hashes {
		o := opt
		o.Out = filepath.Join(t.TempDir(), "ds")
		if i == 2 {
			o.Seed = seed + 1
		}
		if _, err := Synth(o); err != nil {
			t.Fatal(err)
		}
		loadVerified(t, o.Out)
		hashes[i] = fileHashes(t, o.Out)
	}
	if len(hashes[0]) < 8 {
		t.Fatalf("only files %v", hashes[0])
	}
	for name, h := range hashes[0] {
		if hashes[1][name] != h {
			t.Errorf("same seed: %s differs", name)
		}
	}
	for _, name := range []string{"indices.bin", "indptr.bin", "features.x.0.bin", "labels.bin", "train.ids"} {
		if hashes[2][name] == hashes[0][name] {
			t.Errorf("seeds %d and %d give the same %s", seed, seed+1, name)
		}
	}
}

func TestSynthShapesAndSkew(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	const nodes, classes = 20000, 16
	out := filepath.Join(t.TempDir(), "ds")
	m, err := Synth(SynthOptions{Nodes: nodes, AvgDegree: 10, Dim: 32, Classes: classes, Seed: seed, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	m = loadVerified(t, out)
	nt, et := m.Nodes(), m.Edges()
	if nt.Count != nodes || et.Count != nodes*10 || et.Indices.DType != dataset.Int32 {
		t.Fatalf("%d nodes, %d edges, indices %s", nt.Count, et.Count, et.Indices.DType)
	}
	if !slices.Contains(m.Created.Args, fmt.Sprintf("seed=%d", seed)) || m.Created.By != "tierfs synth" {
		t.Errorf("created %+v", m.Created)
	}

	// Degrees: power law, so the largest in-degree is far above the mean; no self loops.
	lists := neighborLists(t, m)
	var maxDeg, hubs int
	var maxNode int
	for v, l := range lists {
		if len(l) > maxDeg {
			maxDeg, maxNode = len(l), v
		}
		if len(l) > 100 {
			hubs++
		}
		if slices.Contains(l, int64(v)) {
			t.Fatalf("node %d has a self loop", v)
		}
	}
	t.Logf("max in-degree %d (node %d), mean 10, %d nodes above 100", maxDeg, maxNode, hubs)
	if maxDeg < 20*10 {
		t.Errorf("max in-degree %d is not far above the mean 10", maxDeg)
	}
	if maxNode < 100 {
		t.Errorf("the hub is node %d: ids are not scrambled", maxNode)
	}

	// Labels and splits.
	labels := readInt64File(t, m.Path(nt.Labels.File), nodes)
	counts := make([]int, classes)
	for _, y := range labels {
		counts[y]++
	}
	if nt.Labels.NumClasses != classes || slices.Min(counts) < nodes/classes/2 {
		t.Errorf("classes %d, counts %v", nt.Labels.NumClasses, counts)
	}
	seen := map[int64]string{}
	splitIDs := map[string][]int64{}
	for name, frac := range map[string]float64{"train": 0.1, "val": 0.05, "test": 0.05} {
		s := nt.Splits[name]
		ids := readInt64File(t, m.Path(s.File), s.Count)
		splitIDs[name] = ids
		if math.Abs(float64(len(ids))-frac*nodes) > 5*math.Sqrt(frac*nodes) {
			t.Errorf("split %s has %d ids, want about %v", name, len(ids), frac*nodes)
		}
		if !slices.IsSorted(ids) {
			t.Errorf("split %s is not sorted", name)
		}
		for _, v := range ids {
			if v < 0 || v >= nodes {
				t.Fatalf("split %s holds %d", name, v)
			}
			if other, dup := seen[v]; dup {
				t.Fatalf("node %d is in %s and %s", v, other, name)
			}
			seen[v] = name
		}
	}

	// Features: learnable but not trivially. Nearest class mean (a linear classifier) fit on
	// train, scored on test.
	spec, _ := m.Feature("x")
	if spec.DType != dataset.Float32 || spec.Dim != 32 || spec.Count() != nodes {
		t.Fatalf("feature spec %+v", spec)
	}
	x := featureBytes(t, m, spec)
	row := func(v int64) []float64 {
		r := make([]float64, 32)
		for j := range r {
			r[j] = float64(math.Float32frombits(binary.LittleEndian.Uint32(x[(v*32+int64(j))*4:])))
		}
		return r
	}
	means := make([][]float64, classes)
	n := make([]int, classes)
	for c := range means {
		means[c] = make([]float64, 32)
	}
	for _, v := range splitIDs["train"] {
		y := labels[v]
		for j, f := range row(v) {
			means[y][j] += f
		}
		n[y]++
	}
	for c := range means {
		for j := range means[c] {
			means[c][j] /= float64(max(1, n[c]))
		}
	}
	correct := 0
	for _, v := range splitIDs["test"] {
		r := row(v)
		best, bestD := -1, math.Inf(1)
		for c := range means {
			var d float64
			for j := range r {
				d += (r[j] - means[c][j]) * (r[j] - means[c][j])
			}
			if d < bestD {
				best, bestD = c, d
			}
		}
		if int64(best) == labels[v] {
			correct++
		}
	}
	acc := float64(correct) / float64(len(splitIDs["test"]))
	t.Logf("nearest-class-mean accuracy on test: %.3f", acc)
	if acc < 0.55 || acc > 0.93 {
		t.Errorf("linear accuracy %.3f is outside [0.55, 0.93]: the task is too hard or too easy", acc)
	}
}

// TestSynthDTypes: every dtype is the float32 data converted (float16/bfloat16 round to
// nearest even, integers scaled and clamped); device paths stripe it.
func TestSynthDTypes(t *testing.T) {
	smallChunks(t)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	const nodes, dim = 1500, 5
	base := SynthOptions{Nodes: nodes, AvgDegree: 2, Dim: dim, Seed: seed, Classes: 4}
	ref := base
	ref.Out = filepath.Join(t.TempDir(), "f32")
	if _, err := Synth(ref); err != nil {
		t.Fatal(err)
	}
	mref := loadVerified(t, ref.Out)
	specRef, _ := mref.Feature("")
	vals := make([]float32, nodes*dim)
	raw := featureBytes(t, mref, specRef)
	for i := range vals {
		vals[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	for _, dt := range []dataset.DType{dataset.Float16, dataset.BFloat16, dataset.Float64, dataset.Int8, dataset.Uint8, dataset.Int16, dataset.Int32, dataset.Int64} {
		root := t.TempDir()
		devs := []string{filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "c")}
		for _, d := range devs {
			os.Mkdir(d, 0o755)
		}
		o := base
		o.DType, o.Out, o.DevicePaths = dt, filepath.Join(root, "ds"), devs
		if _, err := Synth(o); err != nil {
			t.Fatal(err)
		}
		m := loadVerified(t, o.Out)
		spec, _ := m.Feature("x")
		if spec.DType != dt || len(spec.Files) != 3 || !stripeName(devs[2], "ds", 2).MatchString(spec.Files[2]) {
			t.Fatalf("%s: spec %+v", dt, spec)
		}
		want := make([]byte, nodes*dim*dt.Size())
		encodeValues(want, vals, dt)
		if got := featureBytes(t, m, spec); string(got) != string(want) {
			t.Fatalf("%s: features are not the float32 features converted", dt)
		}
		if hashes := fileHashes(t, o.Out); hashes["indices.bin"] != fileHashes(t, ref.Out)["indices.bin"] {
			t.Fatalf("%s: topology depends on the dtype", dt)
		}
	}
	if got := scaleClamp(100, 127); got != 127 {
		t.Errorf("scaleClamp(100) = %d, want 127 (clamped)", got)
	}
	if got := scaleClamp(-2, 127); got != -64 { // -63.5 rounds to even
		t.Errorf("scaleClamp(-2) = %d, want -64", got)
	}
}

// TestKilledBeforeCommit: a directory written after Begin but never committed is no dataset,
// even where a valid dataset was before.
func TestKilledBeforeCommit(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ds")
	if _, err := Synth(SynthOptions{Nodes: 100, AvgDegree: 3, Dim: 4, Seed: 7, Out: out}); err != nil {
		t.Fatal(err)
	}
	loadVerified(t, out)
	// What a run killed between Begin and Commit leaves behind: files in a staging directory,
	// which is no dataset, and the old dataset untouched.
	w, err := dataset.Begin(nil, out, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.Dir, "indptr.bin"), make([]byte, 808), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := dataset.WriteInt64s(nil, filepath.Join(w.Dir, "labels.bin"), make([]int64, 100)); err != nil {
		t.Fatal(err)
	}
	if _, err := dataset.Load(w.Dir); !errors.Is(err, dataset.ErrNotDataset) {
		t.Fatalf("Load of an uncommitted directory: %v, want ErrNotDataset", err)
	}
	loadVerified(t, out)
	// A run that fails (here: a bad device path, found after Begin) leaves the old dataset and
	// no staging directory.
	if _, err := Synth(SynthOptions{Nodes: 100, AvgDegree: 3, Dim: 4, Out: out, Replace: true, DevicePaths: []string{filepath.Join(t.TempDir(), "missing")}}); err == nil {
		t.Fatal("synth with a missing device path succeeded")
	}
	loadVerified(t, out)
	entries, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".ds.tierfs-new-*"))
	if len(entries) != 1 || entries[0] != w.Dir {
		t.Fatalf("staging directories beside the dataset: %v, want only the killed run's %s", entries, w.Dir)
	}
	// Without Replace the existing dataset is refused, naming it.
	if _, err := Synth(SynthOptions{Nodes: 10, AvgDegree: 1, Out: out}); !errors.Is(err, dataset.ErrExists) || !strings.Contains(err.Error(), out) {
		t.Fatalf("synth over a dataset without Replace: %v", err)
	}
}

func TestSynthBadOptions(t *testing.T) {
	dir := t.TempDir()
	for _, o := range []SynthOptions{
		{Nodes: 0, Out: dir},
		{Nodes: 10, AvgDegree: -1, Out: dir},
		{Nodes: 10, DType: "float8", Dim: 3, Out: dir},
		{Nodes: 10, TrainFrac: 0.9, ValFrac: 0.2, Out: dir},
		{Nodes: 1, AvgDegree: 1, Out: dir},
		{Nodes: 10},
	} {
		if _, err := Synth(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	// Figures far out of range are refused naming the figure at fault, never a panic.
	for _, c := range []struct {
		o    SynthOptions
		want string
	}{
		{SynthOptions{Nodes: 1000, Dim: 128, Classes: 1 << 62, Out: dir}, "4611686018427387904 classes"},
		{SynthOptions{Nodes: 1 << 62, AvgDegree: 10, Out: dir}, "Nodes 4611686018427387904 is over"},
		{SynthOptions{Nodes: 1 << 40, AvgDegree: 10000, Out: dir}, "AvgDegree 10000 x 1099511627776 nodes"},
	} {
		if _, err := Synth(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Nodes %d Classes %d AvgDegree %v: %v, want an error saying %q", c.o.Nodes, c.o.Classes, c.o.AvgDegree, err, c.want)
		}
	}
	// Negative fractions drop a split; Dim 0 drops the features.
	out := filepath.Join(dir, "ds")
	if _, err := Synth(SynthOptions{Nodes: 50, AvgDegree: 1, ValFrac: -1, Out: out}); err != nil {
		t.Fatal(err)
	}
	m := loadVerified(t, out)
	if _, ok := m.Nodes().Splits["val"]; ok || len(m.Nodes().Features) != 0 || len(m.Nodes().Splits) != 2 {
		t.Errorf("splits %v, features %v", m.Nodes().Splits, m.Nodes().Features)
	}
}

// TestSynthTiming measures the benchmark-sized run the package doc quotes. Run with
// TIERFS_SYNTH_TIMING=1 go test -run TestSynthTiming ./ingest/.
func TestSynthTiming(t *testing.T) {
	if os.Getenv("TIERFS_SYNTH_TIMING") == "" {
		t.Skip("set TIERFS_SYNTH_TIMING=1 to time Synth on 1M nodes")
	}
	out := filepath.Join(t.TempDir(), "ds")
	stages := map[string]time.Duration{}
	var order []string
	last, lastStage := time.Now(), ""
	start := last
	_, err := Synth(SynthOptions{Nodes: 1_000_000, AvgDegree: 10, Dim: 128, Seed: 1, Out: out,
		Progress: func(stage string, done, total int64) {
			now := time.Now()
			if stage != lastStage {
				order = append(order, stage)
			}
			if lastStage != "" {
				stages[lastStage] += now.Sub(last)
			}
			last, lastStage = now, stage
		}})
	if err != nil {
		t.Fatal(err)
	}
	stages[lastStage] += time.Since(last)
	t.Logf("Synth 1M nodes, 10M edges, 128 x float32: %v", time.Since(start))
	sort.SliceStable(order, func(i, j int) bool { return false })
	for _, s := range order {
		t.Logf("  %-14s %v", s, stages[s].Round(time.Millisecond))
	}
}

// TestSynthDefaultBytesUnchanged pins the default generator's output: the hashes were taken
// before the skew and locality knobs existed, so datasets made by earlier versions keep their
// bytes. A change here breaks every dataset and benchmark made with the same options.
func TestSynthDefaultBytesUnchanged(t *testing.T) {
	for _, c := range []struct {
		opt  SynthOptions
		want string
	}{
		{SynthOptions{Nodes: 40000, AvgDegree: 10, Dim: 4, Seed: 3},
			"6588c2deb6425ec9b29f11818ac4a77ea17d5f836809a068e71cc403d5df96e0"},
		{SynthOptions{Nodes: 3001, AvgDegree: 7.5, Dim: 3, DType: dataset.Float16, Classes: 5, Seed: 11, TrainFrac: 0.3, ValFrac: -1},
			"ab04f301c1c17393ee671de4765af0a8f8e9cad264d3fa31fb138f9b39fe397c"},
	} {
		o := c.opt
		o.Out = filepath.Join(t.TempDir(), "ds")
		if _, err := Synth(o); err != nil {
			t.Fatal(err)
		}
		h := fileHashes(t, o.Out)
		names := make([]string, 0, len(h))
		for n := range h {
			if !strings.HasSuffix(n, dataset.ChecksumSuffix) { // the data: sidecars are the format's (bound since v7)
				names = append(names, n)
			}
		}
		slices.Sort(names)
		sum := sha256.New()
		for _, n := range names {
			fmt.Fprintf(sum, "%s %s\n", n, h[n])
		}
		if got := fmt.Sprintf("%x", sum.Sum(nil)); got != c.want {
			t.Errorf("%+v: files hash to %s, want %s (the default output changed)", c.opt, got, c.want)
		}
	}
}

// TestSizesBeyondTheMachineAreRefused: a graph whose bookkeeping exceeds the memory available,
// or whose files exceed the free disk, is refused at once, naming the options, and nothing is
// left behind.
func TestSizesBeyondTheMachineAreRefused(t *testing.T) {
	avail, err := sysinfo.MemAvailable()
	if err != nil {
		t.Skip(err)
	}
	root := t.TempDir()
	out := filepath.Join(root, "ds")
	nodes := 2 * avail / bytesPerNode
	if _, err := Synth(SynthOptions{Nodes: nodes, AvgDegree: 1, Dim: 4, Out: out}); err == nil ||
		!strings.Contains(err.Error(), fmt.Sprintf("synth --nodes %d", nodes)) || !strings.Contains(err.Error(), "available") {
		t.Fatalf("synth of %d nodes: %v", nodes, err)
	}
	if _, err := Synth(SynthOptions{Nodes: 100, AvgDegree: 1e12, Dim: 4, Out: out}); err == nil ||
		!strings.Contains(err.Error(), "--avg-degree 1e+12") || !strings.Contains(err.Error(), "free") {
		t.Fatalf("synth of 1e14 edges: %v", err)
	}
	// An edge id that would make the node count (and its degree counts) huge.
	edges := filepath.Join(root, "e.npy")
	huge := 4 * avail / 8
	writeNpyEdges(t, edges, "<i8", []int64{0, 1}, []int64{1, huge}, false)
	if _, err := Ingest(Options{Edges: edges, Out: out}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("1 -> %d", huge)) ||
		!strings.Contains(err.Error(), "available") {
		t.Fatalf("ingest of edge id %d: %v", huge, err)
	}
	// A node count given that the machine cannot hold.
	if _, err := Ingest(Options{Edges: edges, Out: out, NumNodes: nodes}); err == nil ||
		!strings.Contains(err.Error(), fmt.Sprintf("the node count from --num-nodes: %d nodes", nodes)) || !strings.Contains(err.Error(), "available") {
		t.Fatalf("ingest --num-nodes %d: %v", nodes, err)
	}
	if left, _ := os.ReadDir(root); len(left) != 1 { // only e.npy
		t.Fatalf("refused writes left %v", left)
	}
}
