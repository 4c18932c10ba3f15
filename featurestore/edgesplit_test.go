package featurestore

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/ingest"
)

func int64Bytes(v []int64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}

// TestReadEdgeSplit ingests random edge splits (a (2, n) seeds file with float labels, an (n, 2)
// one with int labels and negatives) and reads them back through a session, with and without
// verified reads, against the input.
func TestReadEdgeSplit(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	in := t.TempDir()
	nn := 5 + rng.Int64N(200)
	var edges []int64
	for range 4 * nn {
		edges = append(edges, rng.Int64N(nn))
	}
	if err := ingest.WriteNpy(filepath.Join(in, "edges.npy"), "<i8", []int64{2, 2 * nn}, int64Bytes(edges)); err != nil {
		t.Fatal(err)
	}
	if err := ingest.WriteNpy(filepath.Join(in, "x.npy"), "<f4", []int64{nn, 4}, make([]byte, 16*nn)); err != nil {
		t.Fatal(err)
	}
	type want struct {
		src, dst, neg []int64
		labels        []float32 // as stored: float32 or int64 values
		k             int64
		intLabels     bool
	}
	wants := map[string]*want{}
	var splits []ingest.EdgeSplitInput
	for _, name := range []string{"train", "test"} {
		w := &want{}
		n := 1 + rng.Int64N(300)
		if name == "test" {
			w.k, w.intLabels = 1+rng.Int64N(5), true
			if n == 2 {
				n = 3 // written as (n, 2) pairs below: a (2, 2) array reads as (2, n)
			}
		}
		var pairs []int64
		lb := make([]byte, 0, 8*n)
		for range n {
			s, d := rng.Int64N(nn), rng.Int64N(nn)
			w.src, w.dst = append(w.src, s), append(w.dst, d)
			pairs = append(pairs, s, d)
			l := float32(rng.IntN(2))
			w.labels = append(w.labels, l)
			if w.intLabels {
				lb = binary.LittleEndian.AppendUint64(lb, uint64(l))
			} else {
				lb = binary.LittleEndian.AppendUint64(lb, math.Float64bits(float64(l)))
			}
			for range w.k {
				w.neg = append(w.neg, rng.Int64N(nn))
			}
		}
		sp := ingest.EdgeSplitInput{Split: name, Seeds: filepath.Join(in, name+".seeds.npy"), Labels: filepath.Join(in, name+".labels.npy")}
		seeds, shape := append(slices.Clone(w.src), w.dst...), []int64{2, n}
		if name == "test" {
			seeds, shape = pairs, []int64{n, 2}
		}
		if err := ingest.WriteNpy(sp.Seeds, "<i8", shape, int64Bytes(seeds)); err != nil {
			t.Fatal(err)
		}
		descr := "<f8"
		if w.intLabels {
			descr = "<i8"
		}
		if err := ingest.WriteNpy(sp.Labels, descr, []int64{n}, lb); err != nil {
			t.Fatal(err)
		}
		if w.k > 0 {
			sp.NegDst = filepath.Join(in, name+".neg.npy")
			if err := ingest.WriteNpy(sp.NegDst, "<i8", []int64{n, w.k}, int64Bytes(w.neg)); err != nil {
				t.Fatal(err)
			}
		}
		splits = append(splits, sp)
		wants[name] = w
	}
	dir := filepath.Join(t.TempDir(), "ds")
	if _, err := ingest.Ingest(ingest.Options{Edges: filepath.Join(in, "edges.npy"), Features: filepath.Join(in, "x.npy"), Out: dir, EdgeSplits: splits}); err != nil {
		t.Fatal(err)
	}
	for _, opt := range []Options{{UnverifiedReads: true}, {TopologyMemoryBytes: -1}} {
		ss, err := OpenSession(dir, opt)
		if err != nil {
			t.Fatal(err)
		}
		infos, err := ss.EdgeSplits("")
		if err != nil || len(infos) != 2 {
			t.Fatalf("EdgeSplits: %v %v", infos, err)
		}
		for name, w := range wants {
			s, err := ss.ReadEdgeSplit("node:to:node", name)
			if err != nil {
				t.Fatal(err)
			}
			if infos[name] != s.Info || s.Info.NegPerSeed != w.k {
				t.Errorf("%s: info %+v, EdgeSplits %+v, want %d negatives each", name, s.Info, infos[name], w.k)
			}
			if !slices.Equal(s.Src(), w.src) || !slices.Equal(s.Dst(), w.dst) || !slices.Equal(s.NegDst, w.neg) {
				t.Errorf("%s: src %v dst %v neg %v, want %v %v %v", name, s.Src(), s.Dst(), s.NegDst, w.src, w.dst, w.neg)
			}
			for i, l := range w.labels {
				var got float32
				if w.intLabels {
					got = float32(int64(binary.LittleEndian.Uint64(s.Labels[8*i:])))
				} else {
					got = math.Float32frombits(binary.LittleEndian.Uint32(s.Labels[4*i:]))
				}
				if got != l {
					t.Fatalf("%s label %d = %v, want %v (%s)", name, i, got, l, s.Info.LabelDType)
				}
			}
		}
		// Bad calls: an unknown split, edge type, a buffer of the wrong size, negatives of a
		// split without them.
		if _, err := ss.ReadEdgeSplit("", "val"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "[test train]") {
			t.Errorf("unknown split: %v", err)
		}
		if _, err := ss.ReadEdgeSplit("a:b:c", "train"); !errors.Is(err, dataset.ErrTypeNotFound) {
			t.Errorf("unknown edge type: %v", err)
		}
		if _, err := ss.ReadEdgeSplitInto("", "train", make([]int64, 1), nil, nil); err == nil || !strings.Contains(err.Error(), "edge_label_index buffer holds 8 bytes") {
			t.Errorf("short buffer: %v", err)
		}
		if _, err := ss.ReadEdgeSplitInto("", "train", nil, nil, make([]int64, 1)); !errors.Is(err, ErrNotFound) {
			t.Errorf("negatives of a split without: %v", err)
		}
		ss.Close()
	}
}

// TestReadEdgeSplitGolden reads the edge splits of the golden v6 dataset.
func TestReadEdgeSplitGolden(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "v6")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "dataset", "testdata", "golden", "v6"))); err != nil {
		t.Fatal(err)
	}
	ss, err := OpenSession(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	s, err := ss.ReadEdgeSplit("", "test")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.EdgeLabelIndex, []int64{0, 2}) || !slices.Equal(s.NegDst, []int64{3, 4}) || s.Labels != nil {
		t.Errorf("test split %+v", s)
	}
	s, err = ss.ReadEdgeSplit("", "val")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.EdgeLabelIndex, []int64{1, 4, 2, 0}) || s.Info.LabelDType != dataset.Int64 || binary.LittleEndian.Uint64(s.Labels) != 1 {
		t.Errorf("val split %+v", s)
	}
}
