package featurestore

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unsafe"

	"github.com/tierfs/tierfs/dataset"
)

// TestGoldenV5Heterogeneous opens the golden dataset of format version 5 (the first with several
// node and edge types, written by `tierfs ingest --spec` of its day: dataset/testdata/golden)
// with today's code and checks every value it holds: each type's features, the labels and splits
// of paper, and each edge type's neighbor lists.
func TestGoldenV5Heterogeneous(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "v5")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "dataset", "testdata", "golden", "v5"))); err != nil {
		t.Fatal(err)
	}
	m, err := dataset.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != 5 {
		t.Fatalf("golden v5 has version %d", m.Version)
	}
	if problems, err := m.Verify(0, nil); err != nil || len(problems) > 0 {
		t.Fatalf("verify: %v %v", problems, err)
	}
	ss, err := OpenSession(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	feature := map[string]struct {
		n, dim int64
		add    float32
	}{"paper": {4, 2, 0.5}, "author": {3, 3, 0.25}}
	for name, f := range feature {
		ids := make([]int64, f.n)
		for i := range ids {
			ids[i] = int64(i)
		}
		got := make([]float32, f.n*f.dim)
		if err := ss.Gather(name, "", ids, unsafe.Slice((*byte)(unsafe.Pointer(&got[0])), 4*len(got))); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for v := range f.n {
			for j := range f.dim {
				if want := float32(v*10+j) + f.add; got[v*f.dim+j] != want {
					t.Fatalf("%s row %d col %d: %v, want %v", name, v, j, got[v*f.dim+j], want)
				}
			}
		}
	}
	labels := make([]int64, 4)
	if err := ss.Labels("paper", []int64{0, 1, 2, 3}, labels); err != nil || !slices.Equal(labels, []int64{1, 0, -1, 2}) {
		t.Fatalf("labels %v, %v", labels, err)
	}
	for split, want := range map[string][]int64{"train": {0, 3}, "val": {1}, "test": {2}} {
		out := make([]int64, 4)
		k, err := ss.ReadSplit("paper", split, out)
		if err != nil || !slices.Equal(out[:k], want) {
			t.Fatalf("split %s: %v, %v; want %v", split, out[:k], err, want)
		}
	}
	// author -writes-> paper: (0,1) (1,1) (2,3) (2,0); paper -cites-> paper: (0,1) (3,1) (2,0)
	neighbors := map[string]map[int64][]int64{
		"author:writes:paper": {0: {2}, 1: {0, 1}, 2: nil, 3: {2}},
		"paper:cites:paper":   {0: {2}, 1: {0, 3}, 2: nil, 3: nil},
	}
	for et, lists := range neighbors {
		for v, want := range lists {
			got, err := ss.Neighbors(et, v)
			if err != nil {
				t.Fatalf("%s neighbors of %d: %v", et, v, err)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) && (len(got) != 0 || len(want) != 0) {
				t.Fatalf("%s neighbors of %d: %v, want %v", et, v, got, want)
			}
		}
	}
}
