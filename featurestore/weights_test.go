package featurestore

import (
	"encoding/binary"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/ingest"
	"github.com/tierfs/tierfs/topology"
)

// weightOf is the test's weight of edge (u, v): a function of the edge alone, 0 for some, so the
// reference needs no storage order.
func weightOf(u, v int64) float32 { return float32((u*7 + v*3) % 5) }

// A sampler with Weight draws as topology.Weighted over the session's topology with each edge's
// weight, with and without replacement, on a dataset ingested with the weights as an edge
// feature in input order (ingest stores them by CSC position).
func TestWeightedSamplerMatchesTopology(t *testing.T) {
	rng := newRand(t)
	in := t.TempDir()
	const n, e = 200, 3000
	src, dst := make([]int64, e), make([]int64, e)
	edges := make([]byte, 16*e)
	w := make([]byte, 4*e)
	for i := range src {
		src[i], dst[i] = rng.Int64N(n), rng.Int64N(n)
		binary.LittleEndian.PutUint64(edges[8*i:], uint64(src[i]))
		binary.LittleEndian.PutUint64(edges[8*(e+i):], uint64(dst[i]))
		binary.LittleEndian.PutUint32(w[4*i:], math.Float32bits(weightOf(src[i], dst[i])+0.25)) // none 0: with replacement every list draws
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ingest.WriteNpy(filepath.Join(in, "edges.npy"), "<i8", []int64{2, e}, edges))
	must(ingest.WriteNpy(filepath.Join(in, "w.npy"), "<f4", []int64{e}, w))
	must(ingest.WriteNpy(filepath.Join(in, "ea.npy"), "<f4", []int64{e, 2}, make([]byte, 8*e)))
	must(ingest.WriteNpy(filepath.Join(in, "x.npy"), "<f4", []int64{n, 2}, make([]byte, 8*n)))
	dir := filepath.Join(t.TempDir(), "ds")
	_, err := ingest.Ingest(ingest.Options{Edges: filepath.Join(in, "edges.npy"), Features: filepath.Join(in, "x.npy"), Out: dir,
		EdgeFeatures: []ingest.FeatureInput{{Name: "edge_weight", Path: filepath.Join(in, "w.npy")}, {Name: "edge_attr", Path: filepath.Join(in, "ea.npy")}}})
	must(err)
	s, err := Open(dir, Options{})
	must(err)
	defer s.Close()
	ss := s.Session()
	csc := ss.edges[0].graph.(*topology.CSC)
	ref := make([]float32, csc.NumEdges())
	for v := range int64(n) {
		for p := csc.Indptr[v]; p < csc.Indptr[v+1]; p++ {
			u := int64(0)
			if csc.Indices64 != nil {
				u = csc.Indices64[p]
			} else {
				u = int64(csc.Indices32[p])
			}
			ref[p] = weightOf(u, v) + 0.25
		}
	}
	for _, replace := range []bool{false, true} {
		seeds := make([]int64, 50)
		for i := range seeds {
			seeds[i] = rng.Int64N(n)
		}
		opt := SampleOptions{Fanouts: map[string][]int{"": {4, 3}}, Replace: replace, Seed: rng.Uint64(), Weight: "edge_weight"}
		sp, err := ss.NewSampler(opt)
		must(err)
		if got := sp.Options(); got.Weight != "edge_weight" {
			t.Fatalf("Options().Weight = %q", got.Weight)
		}
		h, err := sp.Sample("", seeds)
		must(err)
		got, _ := h.OneType()
		want, err := topology.SampleNeighbors(&topology.Weighted{G: csc, W: ref}, seeds, topology.SampleOptions{Fanouts: []int{4, 3}, Replace: replace, Seed: opt.Seed})
		must(err)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("replace=%v: the weighted sampler's sample differs from topology.Weighted's over the same weights", replace)
		}
		uniform, err := ss.NewSampler(SampleOptions{Fanouts: opt.Fanouts, Replace: replace, Seed: opt.Seed})
		must(err)
		u, err := uniform.Sample("", seeds)
		must(err)
		if reflect.DeepEqual(u, h) {
			t.Fatalf("replace=%v: the weighted sample equals the uniform one", replace)
		}
	}
	for _, c := range []struct{ weight, want string }{
		{"nope", `an edge feature of the dataset: node:to:node/edge_weight`},
		{"edge_attr", `one value an edge ("edge_attr" of edge type`},
	} {
		_, err := ss.NewSampler(SampleOptions{Fanouts: map[string][]int{"": {2}}, Weight: c.weight})
		var oe *OptionError
		if !errors.As(err, &oe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Weight %q: %v, want an *OptionError naming %q", c.weight, err, c.want)
		}
	}
}
