package featurestore

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/topology"
)

// Call k of a Sampler draws what its first call draws with seed Seed + k; failed calls do not count.
func TestSamplerSeedsEachCall(t *testing.T) {
	d := writeDataset(t, 3000, 4, 1, 8, newRand(t))
	s, err := Open(d.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	opt := topology.SampleOptions{Fanouts: []int{4, 3}, Seed: 41}
	sp, err := s.Session().NewSampler(SampleOptions{Fanouts: map[string][]int{"": opt.Fanouts}, Seed: opt.Seed})
	if err != nil {
		t.Fatal(err)
	}
	seeds := []int64{5, 99, 2000, 5}
	for k := range 4 {
		if k == 2 {
			if _, err := sp.Sample("", []int64{0, 3000}); !errors.Is(err, ErrIDOutOfRange) {
				t.Fatalf("out-of-range seed: %v, want ErrIDOutOfRange", err)
			}
		}
		typed, err := sp.Sample("", seeds)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := typed.OneType()
		o := opt
		o.Seed += uint64(k)
		want, err := sampleOf(s, seeds, o)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("call %d differs from a first call with seed %d", k, o.Seed)
		}
		if sp.Calls() != uint64(k+1) {
			t.Fatalf("after call %d Calls() = %d", k, sp.Calls())
		}
	}
	if sp.Options().Seed != 41 {
		t.Errorf("Options().Seed = %d, want the first call's, 41", sp.Options().Seed)
	}
}

func TestSampleOptionErrors(t *testing.T) {
	d := writeDataset(t, 100, 4, 1, 4, newRand(t))
	s, err := Open(d.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		opt  topology.SampleOptions
		want string
	}{
		{topology.SampleOptions{}, "fanouts"},
		{topology.SampleOptions{Fanouts: []int{10, -2}}, "fanouts[1] = -2"},
		{topology.SampleOptions{Fanouts: []int{1}, Workers: -1}, "workers = -1"},
	} {
		_, err := sampleOf(s, []int64{0}, c.opt)
		if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewSampler(%+v): %v, want ErrInvalidOption naming %s", c.opt, err, c.want)
		}
	}
	if _, err := sampleOf(s, []int64{-1}, topology.SampleOptions{Fanouts: []int{1}}); !errors.Is(err, ErrIDOutOfRange) || !strings.Contains(err.Error(), "seeds[0] = -1") {
		t.Errorf("Sample of seed -1: %v, want ErrIDOutOfRange naming it", err)
	}
}

// addSplit adds a split to the dataset in dir.
func addSplit(t *testing.T, dir, name string, ids []int64) {
	t.Helper()
	m, err := dataset.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	file := "split." + name + ".ids"
	if err := dataset.WriteInt64s(nil, filepath.Join(dir, file), ids); err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range m.Files {
		files = append(files, f.Path)
	}
	if m.Nodes().Splits == nil {
		m.Nodes().Splits = map[string]dataset.IDsSpec{}
	}
	m.Nodes().Splits[name] = dataset.IDsSpec{ArraySpec: dataset.ArraySpec{File: file, DType: dataset.Int64}, Count: int64(len(ids))}
	if err := dataset.Commit(m, append(files, file), "test", nil); err != nil {
		t.Fatal(err)
	}
}

func TestReadSplit(t *testing.T) {
	d := writeDataset(t, 1000, 4, 1, 4, newRand(t))
	train := []int64{7, 3, 999, 0, 512}
	addSplit(t, d.Dir, "train", train)
	s, err := Open(d.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.Session().ReadSplit("", "train", nil); err != nil || n != 5 {
		t.Fatalf("size query: %d, %v", n, err)
	}
	out := []int64{-9, -9, -9}
	if n, err := s.Session().ReadSplit("", "train", out); err != nil || n != 5 || !reflect.DeepEqual(out, train[:3]) {
		t.Fatalf("first 3: %v (size %d, %v)", out, n, err)
	}
	out = make([]int64, 8)
	if n, err := s.Session().ReadSplit("", "train", out); err != nil || n != 5 || !reflect.DeepEqual(out[:5], train) || out[5] != 0 {
		t.Fatalf("into 8: %v (size %d, %v)", out, n, err)
	}
	if ids, err := s.Session().Split("", "train"); err != nil || !reflect.DeepEqual(ids, train) {
		t.Fatalf("Split: %v, %v", ids, err)
	}
	if _, err := s.Session().ReadSplit("", "holdout", nil); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `"holdout"`) || !strings.Contains(err.Error(), "train") {
		t.Fatalf("missing split: %v, want ErrNotFound naming it and the splits there are", err)
	}
}

// The one sampler on a one-type store draws exactly what the homogeneous engine
// (topology.SampleNeighbors over the store's topology) draws with seed Seed + k at call k, its
// arrays the one type's — and what topology.SampleHetero's one-type case draws.
func TestOneSamplerIsTheHomogeneousEngine(t *testing.T) {
	rng := newRand(t) // logs its seed
	d := writeDataset(t, 3000, 4, 1, 12, rng)
	s := mustOpen(t, d.Dir, Options{})
	for _, replace := range []bool{false, true} {
		fanouts := []int{int(rng.IntN(8)) + 1, -1, int(rng.IntN(4))}[:1+rng.IntN(3)]
		seed := rng.Uint64()
		sp, err := s.Session().NewSampler(SampleOptions{Fanouts: map[string][]int{"": fanouts}, Replace: replace, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		for k := range 3 {
			seeds := randomIDs(rng, 1+rng.IntN(200), 3000)
			got, err := sp.Sample("", seeds)
			if err != nil {
				t.Fatal(err)
			}
			opt := topology.SampleOptions{Fanouts: fanouts, Replace: replace, Seed: seed + uint64(k)}
			want, err := topology.SampleNeighbors(s.graph, seeds, opt)
			if err != nil {
				t.Fatal(err)
			}
			if one, ok := got.OneType(); !ok || !reflect.DeepEqual(one, want) {
				t.Fatalf("replace %v, fanouts %v, call %d: the one sampler's sample differs from SampleNeighbors'", replace, fanouts, k)
			}
			if len(got.Nodes) != 1 || len(got.Row) != 1 {
				t.Fatalf("not one type's arrays: %d node types, %d edge types", len(got.Nodes), len(got.Row))
			}
			typed, err := topology.SampleHetero([]int64{3000}, []topology.EdgeGraph{{G: s.graph}}, 0, seeds,
				topology.HeteroSampleOptions{Fanouts: [][]int{fanouts}, Replace: replace, Seed: opt.Seed})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, typed) {
				t.Fatalf("replace %v, fanouts %v, call %d: the one sampler's sample differs from SampleHetero's one-type case", replace, fanouts, k)
			}
		}
	}
}

// A Disjoint sampler's call k is topology's disjoint sample of the store's graph with seed Seed + k,
// Batch included, on one type and on several (SampleHetero's); link sampling refuses it, naming
// disjoint.
func TestDisjointSampler(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 3000, 4, 1, 8, rng)
	s := mustOpen(t, d.Dir, Options{})
	defer s.Close()
	sp, err := s.Session().NewSampler(SampleOptions{Fanouts: map[string][]int{"": {4, 3}}, Seed: 9, Disjoint: true})
	if err != nil {
		t.Fatal(err)
	}
	seeds := []int64{5, 99, 5, 2000}
	for k := range 2 {
		typed, err := sp.Sample("", seeds)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := typed.OneType()
		want, err := topology.SampleNeighbors(s.Session().edges[0].graph, seeds, topology.SampleOptions{Fanouts: []int{4, 3}, Seed: 9 + uint64(k), Disjoint: true})
		if err != nil {
			t.Fatal(err)
		}
		if got.Batch == nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("call %d: nodes %v batch %v, want topology's disjoint sample %v %v", k, got.Nodes, got.Batch, want.Nodes, want.Batch)
		}
	}
	if !sp.Options().Disjoint {
		t.Error("Options() lost Disjoint")
	}
	// Seed edges sample disjoint too (topology's linktime tests check the layout): one tree for
	// each endpoint, its nodes numbered by seed edge.
	link, err := sp.SampleFromEdges("", []int64{1}, []int64{2}, nil, LinkOptions{})
	if err != nil || link.Batch == nil || len(link.Batch[0]) != len(link.Nodes[0]) {
		t.Errorf("disjoint link sample: %+v, %v; want a sample with a seed-edge index for every node", link, err)
	}
	h := writeHetero(t, rng)
	hs := mustOpen(t, h.Dir, Options{})
	defer hs.Close()
	fanouts := map[string][]int{}
	for _, e := range hs.Session().edges {
		fanouts[e.spec.Key()] = []int{2}
	}
	hsp, err := hs.Session().NewSampler(SampleOptions{Fanouts: fanouts, Seed: 3, Disjoint: true})
	if err != nil {
		t.Fatal(err)
	}
	nt := hs.Session().nodes[hs.Session().edges[0].dst].spec.Name
	typed, err := hsp.Sample(nt, []int64{0, 1, 0})
	if err != nil {
		t.Fatal(err)
	}
	numNodes, edges := hs.Session().typedGraphs(hs.Session().sampleGraph)
	want, err := topology.SampleHetero(numNodes, edges, hs.Session().edges[0].dst, []int64{0, 1, 0}, topology.HeteroSampleOptions{Fanouts: hsp.opt.Fanouts, Seed: 3, Disjoint: true, MaxEdges: hsp.opt.MaxEdges})
	if err != nil {
		t.Fatal(err)
	}
	if typed.Batch == nil || !reflect.DeepEqual(typed, want) {
		t.Errorf("disjoint sampler of a heterogeneous dataset: batch %v, want topology's disjoint SampleHetero %v", typed.Batch, want.Batch)
	}
}
