package ingest

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
)

// splitFileInt64s reads the int64s a dataset file holds (its content bytes).
func splitFileInt64s(t *testing.T, m *dataset.Manifest, file string) []int64 {
	t.Helper()
	b, err := os.ReadFile(m.Path(file))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, m.File(file).ContentBytes/8)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out
}

// edgeSplitCase is one split's input: pairs, labels, negatives.
type edgeSplitCase struct {
	src, dst []int64
	labels   []float64 // nil for none
	intLabel bool      // labels written as int32, else float64
	neg      []int64   // n×k, nil for none
	k        int64
	pairs    bool // seeds written as (n, 2), else (2, n)
}

// write saves c's inputs into dir as split name's files.
func (c *edgeSplitCase) write(t *testing.T, dir, name, edgeType string) EdgeSplitInput {
	t.Helper()
	n := int64(len(c.src))
	in := EdgeSplitInput{EdgeType: edgeType, Split: name, Seeds: filepath.Join(dir, name+".seeds.npy")}
	var flat []int64
	shape := []int64{2, n}
	if c.pairs {
		shape = []int64{n, 2}
		for i := range c.src {
			flat = append(flat, c.src[i], c.dst[i])
		}
	} else {
		flat = append(slices.Clone(c.src), c.dst...)
	}
	if err := WriteNpy(in.Seeds, "<i4", shape, intBytes(flat, 'i', 4)); err != nil {
		t.Fatal(err)
	}
	if c.labels != nil {
		in.Labels = filepath.Join(dir, name+".labels.npy")
		var err error
		if c.intLabel {
			ints := make([]int64, n)
			for i, v := range c.labels {
				ints[i] = int64(v)
			}
			err = WriteNpy(in.Labels, "<i4", []int64{n}, intBytes(ints, 'i', 4))
		} else {
			b := make([]byte, 8*n)
			for i, v := range c.labels {
				binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
			}
			err = WriteNpy(in.Labels, "<f8", []int64{n}, b)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if c.neg != nil {
		in.NegDst = filepath.Join(dir, name+".neg.npy")
		if err := WriteNpy(in.NegDst, "<i8", []int64{n, c.k}, intBytes(c.neg, 'i', 8)); err != nil {
			t.Fatal(err)
		}
	}
	return in
}

// check compares split name of et in m with c.
func (c *edgeSplitCase) check(t *testing.T, m *dataset.Manifest, et *dataset.EdgeType, name string) {
	t.Helper()
	sp, ok := et.Splits[name]
	if !ok {
		t.Fatalf("edge type %s has no split %s (has %v)", et.Key(), name, et.SplitNames())
	}
	if got := splitFileInt64s(t, m, sp.Seeds.File); sp.Seeds.Count != int64(len(c.src)) || !slices.Equal(got, append(slices.Clone(c.src), c.dst...)) {
		t.Errorf("split %s seeds %v (count %d), want src %v dst %v", name, got, sp.Seeds.Count, c.src, c.dst)
	}
	switch {
	case c.labels == nil:
		if sp.Labels != nil {
			t.Errorf("split %s has labels %+v, its input none", name, sp.Labels)
		}
	case c.intLabel:
		got := splitFileInt64s(t, m, sp.Labels.File)
		for i, v := range c.labels {
			if got[i] != int64(v) || sp.Labels.DType != dataset.Int64 {
				t.Fatalf("split %s label %d = %d (%s), want %v", name, i, got[i], sp.Labels.DType, v)
			}
		}
	default:
		b, _ := os.ReadFile(m.Path(sp.Labels.File))
		for i, v := range c.labels {
			if got := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])); got != float32(v) || sp.Labels.DType != dataset.Float32 {
				t.Fatalf("split %s label %d = %v (%s), want %v", name, i, got, sp.Labels.DType, v)
			}
		}
	}
	if c.neg == nil {
		if sp.NegDst != nil {
			t.Errorf("split %s has negatives %+v, its input none", name, sp.NegDst)
		}
	} else if got := splitFileInt64s(t, m, sp.NegDst.File); sp.NegDst.PerSeed != c.k || !slices.Equal(got, c.neg) {
		t.Errorf("split %s negatives %v (k %d), want %v (k %d)", name, got, sp.NegDst.PerSeed, c.neg, c.k)
	}
}

func randomSplit(rng *rand.Rand, nsrc, ndst int64, labels, intLabel bool, k int64, pairs bool) *edgeSplitCase {
	n := rng.Int64N(50)
	if pairs && n == 2 {
		n = 3 // a (2, 2) array reads as (2, n): the layouts cannot be told apart
	}
	c := &edgeSplitCase{intLabel: intLabel, k: k, pairs: pairs}
	for range n {
		c.src, c.dst = append(c.src, rng.Int64N(nsrc)), append(c.dst, rng.Int64N(ndst))
		if labels {
			c.labels = append(c.labels, float64(rng.IntN(3)))
		}
		for range k {
			c.neg = append(c.neg, rng.Int64N(ndst))
		}
	}
	if labels && c.labels == nil {
		c.labels = []float64{}
	}
	return c
}

// TestIngestEdgeSplits ingests random edge splits of a homogeneous and a heterogeneous graph and
// compares what the dataset holds with the input, in every layout and label dtype.
func TestIngestEdgeSplits(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()

	// Homogeneous: seeds (2, n) with float labels, (n, 2) with int labels, (2, n) with negatives.
	nn := 2 + rng.Int64N(100)
	var edges []int64
	for range 3 * nn {
		edges = append(edges, rng.Int64N(nn))
	}
	edgesPath := filepath.Join(dir, "edges.npy")
	if err := WriteNpy(edgesPath, "<i8", []int64{int64(len(edges) / 2), 2}, intBytes(edges[:len(edges)/2*2], 'i', 8)); err != nil {
		t.Fatal(err)
	}
	cases := map[string]*edgeSplitCase{
		"train": randomSplit(rng, nn, nn, true, false, 0, false),
		"val":   randomSplit(rng, nn, nn, true, true, 0, true),
		"test":  randomSplit(rng, nn, nn, false, false, 1+rng.Int64N(4), false),
	}
	opt := Options{Edges: edgesPath, NumNodes: nn, Out: filepath.Join(dir, "homo")}
	for name, c := range cases {
		opt.EdgeSplits = append(opt.EdgeSplits, c.write(t, dir, name, ""))
	}
	m, err := Ingest(opt)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != dataset.Version {
		t.Errorf("version %d, want %d (every new dataset)", m.Version, dataset.Version)
	}
	for name, c := range cases {
		c.check(t, m, m.Edges(), name)
	}
	if probs, err := m.Verify(0, nil); err != nil || len(probs) > 0 {
		t.Fatalf("Verify: %v %v", probs, err)
	}

	// Heterogeneous: a:to:b with counts that differ, so a src id used as a dst would be caught.
	hdir := filepath.Join(dir, "hetero-in")
	os.MkdirAll(hdir, 0o755)
	na, nb := 1+rng.Int64N(30), 40+rng.Int64N(30)
	var src, dst []int64
	for range 20 {
		src, dst = append(src, rng.Int64N(na)), append(dst, rng.Int64N(nb))
	}
	hedges := filepath.Join(hdir, "ab.npy")
	if err := WriteNpy(hedges, "<i8", []int64{2, 20}, intBytes(append(src, dst...), 'i', 8)); err != nil {
		t.Fatal(err)
	}
	hopt := HeteroOptions{Out: filepath.Join(dir, "hetero"),
		NodeTypes: []NodeTypeInput{{Name: "a", NumNodes: na}, {Name: "b", NumNodes: nb}},
		EdgeTypes: []EdgeTypeInput{{Src: "a", Rel: "to", Dst: "b", Edges: hedges}, {Src: "b", Rel: "rev", Dst: "a", Edges: hedges + ".rev.npy"}}}
	if err := WriteNpy(hopt.EdgeTypes[1].Edges, "<i8", []int64{2, 20}, intBytes(append(dst, src...), 'i', 8)); err != nil {
		t.Fatal(err)
	}
	hc := randomSplit(rng, na, nb, true, false, 2, true)
	hopt.EdgeSplits = []EdgeSplitInput{hc.write(t, hdir, "train", "a:to:b")}
	hm, err := IngestHetero(hopt)
	if err != nil {
		t.Fatal(err)
	}
	et, err := hm.EdgeTypeNamed("a:to:b")
	if err != nil {
		t.Fatal(err)
	}
	hc.check(t, hm, et, "train")
	if rev, _ := hm.EdgeTypeNamed("b:rev:a"); len(rev.Splits) != 0 || !strings.HasPrefix(et.Splits["train"].Seeds.File, "edges/a/to/b/") {
		t.Errorf("splits in the wrong place: b:rev:a %v, a:to:b seeds %s", rev.SplitNames(), et.Splits["train"].Seeds.File)
	}
	if probs, err := hm.Verify(0, nil); err != nil || len(probs) > 0 {
		t.Fatalf("Verify: %v %v", probs, err)
	}
}

// TestIngestEdgeSplitsRefused checks that bad edge splits are refused with an error naming the
// input and that nothing is published.
func TestIngestEdgeSplitsRefused(t *testing.T) {
	dir := t.TempDir()
	const nn = 10
	edgesPath := filepath.Join(dir, "edges.npy")
	if err := WriteNpy(edgesPath, "<i8", []int64{2, 3}, intBytes([]int64{0, 1, 2, 3, 4, 5}, 'i', 8)); err != nil {
		t.Fatal(err)
	}
	good := (&edgeSplitCase{src: []int64{1, 2}, dst: []int64{3, 4}, labels: []float64{1, 0}}).write(t, dir, "train", "")
	shortLabels := (&edgeSplitCase{src: []int64{1}, dst: []int64{3}, labels: []float64{1}}).write(t, dir, "val", "")
	outOfRange := (&edgeSplitCase{src: []int64{1, nn}, dst: []int64{3, 4}}).write(t, dir, "test", "")
	oneD := filepath.Join(dir, "oned.npy")
	if err := WriteNpy(oneD, "<i8", []int64{3}, intBytes([]int64{0, 1, 2}, 'i', 8)); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	os.MkdirAll(sub, 0o755)
	negOut := (&edgeSplitCase{src: []int64{1}, dst: []int64{3}, neg: []int64{2, 1}, k: 2}).write(t, sub, "test", "")
	negOut.Seeds = good.Seeds // two seeds, but negatives for one
	for _, tc := range []struct {
		name  string
		split EdgeSplitInput
		want  string
		file  string // the input the error must name
	}{
		{"src out of range", outOfRange, "seed edge 1 has source node id 10, outside the 10 nodes", outOfRange.Seeds},
		{"labels length", EdgeSplitInput{Split: "val", Seeds: good.Seeds, Labels: shortLabels.Labels}, "want one label per seed edge (2,)", shortLabels.Labels},
		{"unknown split", EdgeSplitInput{Split: "holdout", Seeds: good.Seeds}, `edge split "holdout": unknown split`, ""},
		{"unknown edge type", EdgeSplitInput{EdgeType: "a:to:b", Split: "train", Seeds: good.Seeds}, `edge type "a:to:b" edge split "train": the graph has no such edge type`, ""},
		{"negatives rows", negOut, "want C-order integer node ids of shape (2, k)", negOut.NegDst},
		{"seeds dtype", EdgeSplitInput{Split: "train", Seeds: good.Labels}, "want integer node ids", good.Labels},
		{"seeds shape", EdgeSplitInput{Split: "train", Seeds: oneD}, "has shape (3,); want (2, n) or (n, 2)", oneD},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "out-"+strings.ReplaceAll(tc.name, " ", "-"))
			_, err := Ingest(Options{Edges: edgesPath, NumNodes: nn, Out: out, EdgeSplits: []EdgeSplitInput{good, tc.split}})
			if tc.split.Split == "train" && tc.split.EdgeType == "" {
				_, err = Ingest(Options{Edges: edgesPath, NumNodes: nn, Out: out, EdgeSplits: []EdgeSplitInput{tc.split}})
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Ingest: %v, want an error mentioning %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.file) {
				t.Errorf("error does not name the input %s: %v", tc.file, err)
			}
			if _, serr := os.Stat(out); !os.IsNotExist(serr) {
				t.Errorf("%s exists after a refused ingest (%v)", out, serr)
			}
		})
	}
	// A negative id in the negatives file, with the right shape.
	bad := (&edgeSplitCase{src: []int64{1}, dst: []int64{3}, neg: []int64{2, -1}, k: 2}).write(t, dir, "test", "")
	out := filepath.Join(dir, "out-neg")
	if _, err := Ingest(Options{Edges: edgesPath, NumNodes: nn, Out: out, EdgeSplits: []EdgeSplitInput{bad}}); err == nil || !strings.Contains(err.Error(), "seed edge 0's negative 1 is node id -1") || !strings.Contains(err.Error(), bad.NegDst) {
		t.Fatalf("negative -1: %v", err)
	}
	if _, serr := os.Stat(out); !os.IsNotExist(serr) {
		t.Errorf("%s exists after a refused ingest", out)
	}
}
