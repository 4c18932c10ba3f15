package cli

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/ingest"
	"github.com/tierfs/tierfs/topology"
)

func readNpyInt64(t *testing.T, path string) ([]int64, []int64) {
	t.Helper()
	a, err := ingest.OpenNpy(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := make([]byte, a.Len()*8)
	if _, err := a.Data().ReadAt(b, 0); err != nil && len(b) > 0 {
		t.Fatal(err)
	}
	out := make([]int64, a.Len())
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out, a.Shape
}

// TestIngestEdgeSplitAndSampleSeedEdges: `tierfs ingest --edge-split` stores a split that
// `tierfs sample --seed-edges split:train` samples around, writing what the one sampler's SampleFromEdges
// returns for the same seed edges, labels and options (binary and triplet negatives, seed
// edges excluded); the label edges name the seed edges' endpoints.
func TestIngestEdgeSplitAndSampleSeedEdges(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	in := t.TempDir()
	const n = 80
	var edges, labels []int64
	for range 2 * 400 {
		edges = append(edges, rng.Int64N(n))
	}
	m := 1 + rng.Int64N(30)
	var src, dst []int64
	for range m {
		a, b := rng.Int64N(n), rng.Int64N(n)
		src, dst = append(src, a), append(dst, b)
		labels = append(labels, rng.Int64N(2))
	}
	// PyG's edge_label_index layout, (2, m): an (m, 2) file of 2 pairs would be read as (2, m),
	// as ingest documents for the square shape.
	pairs := append(slices.Clone(src), dst...)
	write := func(name string, shape, vals []int64) string {
		p := filepath.Join(in, name)
		if err := ingest.WriteNpy(p, "<i8", shape, int64sAsBytes(vals)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	edgesPath := write("edges.npy", []int64{2, 400}, edges)
	pairsPath := write("pairs.npy", []int64{2, m}, pairs)
	labelsPath := write("labels.npy", []int64{m}, labels)
	if err := ingest.WriteNpy(filepath.Join(in, "x.npy"), "<f4", []int64{n, 2}, make([]byte, 8*n)); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ds")
	if err := execute([]string{"ingest", "--edges", edgesPath, "--features", filepath.Join(in, "x.npy"), "--num-nodes", "80", "--out", dir,
		"--edge-split", "train=" + pairsPath + ",labels=" + labelsPath}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		flags []string
		lo    topology.LinkOptions
	}{
		{nil, topology.LinkOptions{}},
		{[]string{"--neg-sampling", "binary", "--neg-amount", "2", "--exclude-seed-edges"}, topology.LinkOptions{Negatives: topology.BinaryNegatives, NegAmount: 2, ExcludeSeedEdges: true}},
		{[]string{"--neg-sampling", "triplet", "--neg-amount", "3", "--strict-negatives"}, topology.LinkOptions{Negatives: topology.TripletNegatives, NegAmount: 3, StrictNegatives: true}},
	} {
		out := t.TempDir()
		triplet := c.lo.Negatives == topology.TripletNegatives
		for _, seeds := range []string{"split:train", pairsPath} {
			if triplet && seeds != pairsPath {
				continue // its labels hold 0s: refused below
			}
			args := append([]string{dir, "--seed-edges", seeds, "--fanouts", "3,2", "--seed", "7", "--out", out}, c.flags...)
			if seeds == pairsPath && !triplet {
				args = append(args, "--edge-labels", labelsPath)
			}
			if err := commandLine("sample")(args); err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			s, err := featurestore.Open(dir, featurestore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			wantLabels := labels
			if triplet {
				wantLabels = nil
			}
			sp, err := oneTypeSampler(s, topology.SampleOptions{Fanouts: []int{3, 2}, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			typed, err := sp.SampleFromEdges("", src, dst, wantLabels, featurestore.LinkOptions{Negatives: c.lo.Negatives, NegAmount: c.lo.NegAmount, StrictNegatives: c.lo.StrictNegatives, ExcludeSeedEdges: c.lo.ExcludeSeedEdges})
			s.Close()
			if err != nil {
				t.Fatal(err)
			}
			nodesOf, _ := typed.OneType()
			want := &topology.LinkSample{Sample: *nodesOf, LinkLabels: typed.LinkLabels}
			nodes, _ := readNpyInt64(t, filepath.Join(out, "nodes.npy"))
			row, _ := readNpyInt64(t, filepath.Join(out, "row.npy"))
			if !slices.Equal(nodes, want.Nodes) || !slices.Equal(row, want.Row) {
				t.Fatalf("%v: nodes/row differ from the sampler's SampleFromEdges", args)
			}
			if c.lo.Negatives == topology.TripletNegatives {
				neg, shape := readNpyInt64(t, filepath.Join(out, "dst_neg_index.npy"))
				srcIdx, _ := readNpyInt64(t, filepath.Join(out, "src_index.npy"))
				if !slices.Equal(neg, want.DstNegIndex) || !slices.Equal(shape, []int64{m, 3}) || !slices.Equal(srcIdx, want.SrcIndex) {
					t.Fatalf("%v: triplet indexes differ (shape %v)", args, shape)
				}
				for i := range src {
					if nodes[srcIdx[i]] != src[i] {
						t.Fatalf("%v: src_index[%d] names node %d, seed edge src %d", args, i, nodes[srcIdx[i]], src[i])
					}
				}
				continue
			}
			eli, shape := readNpyInt64(t, filepath.Join(out, "edge_label_index.npy"))
			el, _ := readNpyInt64(t, filepath.Join(out, "edge_label.npy"))
			k := int64(len(want.EdgeLabelIndex[0]))
			if !slices.Equal(shape, []int64{2, k}) || !slices.Equal(eli, append(slices.Clone(want.EdgeLabelIndex[0]), want.EdgeLabelIndex[1]...)) || !slices.Equal(el, want.EdgeLabel) {
				t.Fatalf("%v: label edges differ (shape %v)", args, shape)
			}
			for i := range src {
				if nodes[eli[i]] != src[i] || nodes[eli[k+int64(i)]] != dst[i] || el[i] != labels[i] {
					t.Fatalf("%v: label edge %d is (%d, %d) label %d, seed edge (%d, %d) label %d", args, i, nodes[eli[i]], nodes[eli[k+int64(i)]], el[i], src[i], dst[i], labels[i])
				}
			}
		}
	}
	// Refusals.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{dir, "--seed-edges", "split:val", "--out", t.TempDir()}, `no edge split "val"`},
		{[]string{dir, "--seeds", "split:train", "--neg-sampling", "binary", "--out", t.TempDir()}, "--neg-sampling goes with --seed-edges"},
		{[]string{dir, "--seeds", "split:train", "--seed-edges", "split:train", "--out", t.TempDir()}, "one of --seeds or --seed-edges"},
		{[]string{dir, "--seed-edges", pairsPath, "--edge-labels", edgesPath, "--out", t.TempDir()}, "want a 1-D array"},
		{[]string{dir, "--seed-edges", labelsPath, "--out", t.TempDir()}, "want (2, n) or (n, 2)"},
		{[]string{dir, "--seed-edges", "split:train", "--neg-sampling", "pairs", "--out", t.TempDir()}, `--neg-sampling "pairs"`},
		{[]string{dir, "--seed-edges", pairsPath, "--edge-labels", labelsPath, "--neg-sampling", "triplet", "--out", t.TempDir()}, "want none with triplet negatives"},
	} {
		if err := commandLine("sample")(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error mentioning %q", c.args, err, c.want)
		}
	}
	err := execute([]string{"sample", dir, "--seed-edges", "split:train", "--neg-sampling", "triplet", "--out", t.TempDir()})
	if zero := slices.Index(labels, 0); zero >= 0 && (err == nil || !strings.Contains(err.Error(), "triplet negatives are drawn for positive seed edges only")) {
		t.Errorf("triplet over a split with label 0 at %d: %v", zero, err)
	} else if zero < 0 && err != nil {
		t.Errorf("triplet over a split of positives: %v", err)
	}
	if err := execute([]string{"ingest", "--edges", edgesPath, "--out", filepath.Join(t.TempDir(), "x"), "--edge-split", "train=" + pairsPath + ",lables=" + labelsPath}); err == nil || !strings.Contains(err.Error(), `unknown part "lables=`) {
		t.Errorf("--edge-split with a misspelt part: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "edge_split.train.seeds")); err != nil {
		t.Errorf("the split's seeds file: %v", err)
	}
}
