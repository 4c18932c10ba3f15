package featurestore

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/ingest"
	"github.com/tierfs/tierfs/topology"
)

// timeOfEdge is the test's time of edge (u, v): a function of the edge alone, so the reference
// needs no storage order.
func timeOfEdge(u, v int64) int64 { return (u*5 + v*11) % 13 }

// A sampler with Time draws as topology.Temporal over the session's topology (disjoint), with the
// dataset's node feature as node time or its edge feature as edge time, both strategies, seed
// times given or (node time) the seeds' own; calls count as a plain sampler's.
func TestTemporalSamplerMatchesTopology(t *testing.T) {
	rng := newRand(t)
	in := t.TempDir()
	const n, e = 200, 3000
	src, dst := make([]int64, e), make([]int64, e)
	edges, et, nt := make([]byte, 16*e), make([]byte, 8*e), make([]byte, 4*n)
	nodeTime := make([]int64, n)
	for i := range nodeTime {
		nodeTime[i] = rng.Int64N(20)
		binary.LittleEndian.PutUint32(nt[4*i:], uint32(nodeTime[i]))
	}
	for i := range src {
		src[i], dst[i] = rng.Int64N(n), rng.Int64N(n)
		binary.LittleEndian.PutUint64(edges[8*i:], uint64(src[i]))
		binary.LittleEndian.PutUint64(edges[8*(e+i):], uint64(dst[i]))
		binary.LittleEndian.PutUint64(et[8*i:], uint64(timeOfEdge(src[i], dst[i])))
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ingest.WriteNpy(filepath.Join(in, "edges.npy"), "<i8", []int64{2, e}, edges))
	must(ingest.WriteNpy(filepath.Join(in, "et.npy"), "<i8", []int64{e}, et))
	must(ingest.WriteNpy(filepath.Join(in, "t.npy"), "<i4", []int64{n}, nt))
	must(ingest.WriteNpy(filepath.Join(in, "ft.npy"), "<f4", []int64{n}, make([]byte, 4*n)))
	must(ingest.WriteNpy(filepath.Join(in, "x.npy"), "<f4", []int64{n, 2}, make([]byte, 8*n)))
	dir := filepath.Join(t.TempDir(), "ds")
	_, err := ingest.Ingest(ingest.Options{Edges: filepath.Join(in, "edges.npy"), Features: filepath.Join(in, "x.npy"), Out: dir,
		NodeFeatures: []ingest.FeatureInput{{Name: "time", Path: filepath.Join(in, "t.npy")}, {Name: "float_time", Path: filepath.Join(in, "ft.npy")}},
		EdgeFeatures: []ingest.FeatureInput{{Name: "edge_time", Path: filepath.Join(in, "et.npy")}}})
	must(err)
	s, err := Open(dir, Options{})
	must(err)
	defer s.Close()
	ss := s.Session()
	csc := ss.edges[0].graph.(*topology.CSC)
	edgeTime := make([]int64, csc.NumEdges())
	for v := range int64(n) {
		for p := csc.Indptr[v]; p < csc.Indptr[v+1]; p++ {
			u := int64(0)
			if csc.Indices64 != nil {
				u = csc.Indices64[p]
			} else {
				u = int64(csc.Indices32[p])
			}
			edgeTime[p] = timeOfEdge(u, v)
		}
	}
	seeds := []int64{3, 150, 3, 77}
	for _, c := range []struct {
		time, strategy string
		g              *topology.Temporal
		seedTimes      []int64
	}{
		{"time", "", &topology.Temporal{G: csc, NodeTime: nodeTime}, nil},
		{"time", "last", &topology.Temporal{G: csc, NodeTime: nodeTime, Strategy: topology.TimeLast}, []int64{5, 19, 0, 10}},
		{"edge_time", "uniform", &topology.Temporal{G: csc, EdgeTime: edgeTime}, []int64{6, 12, 2, 9}},
		{"edge_time", "last", &topology.Temporal{G: csc, EdgeTime: edgeTime, Strategy: topology.TimeLast}, []int64{6, 12, 2, 9}},
	} {
		opt := SampleOptions{Fanouts: map[string][]int{"": {3, 2}}, Seed: rng.Uint64(), Time: c.time, TemporalStrategy: c.strategy}
		sp, err := ss.NewSampler(opt)
		must(err)
		for k := range 2 {
			typed, err := sp.SampleAt("", seeds, c.seedTimes)
			must(err)
			got, _ := typed.OneType()
			want, err := topology.SampleNeighbors(c.g, seeds, topology.SampleOptions{Fanouts: []int{3, 2}, Seed: opt.Seed + uint64(k), Disjoint: true, SeedTimes: c.seedTimes})
			must(err)
			if got.Batch == nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("time %q strategy %q call %d: nodes %v edge ids %v, want topology's %v %v", c.time, c.strategy, k, got.Nodes, got.EdgeIDs, want.Nodes, want.EdgeIDs)
			}
		}
		// seed edges at edge_label_time, binary negatives: topology's temporal link sample
		lsp, err := ss.NewSampler(opt)
		must(err)
		ls, ld, lt := []int64{3, 150, 77}, []int64{9, 3, 3}, []int64{7, 15, 2}
		for k := range 2 {
			got, err := lsp.SampleFromEdgesAt("", ls, ld, nil, lt, LinkOptions{Negatives: topology.BinaryNegatives})
			must(err)
			want, err := topology.SampleFromEdges(c.g, ls, ld, nil, topology.LinkSampleOptions{
				SampleOptions: topology.SampleOptions{Fanouts: []int{3, 2}, Seed: opt.Seed + uint64(k), Disjoint: true, SeedTimes: lt},
				LinkOptions:   topology.LinkOptions{Negatives: topology.BinaryNegatives}})
			must(err)
			one, _ := got.OneType()
			if one.Batch == nil || !reflect.DeepEqual(one, &want.Sample) || !reflect.DeepEqual(got.LinkLabels, want.LinkLabels) {
				t.Fatalf("time %q strategy %q link call %d: nodes %v batch %v, want topology's %v %v", c.time, c.strategy, k, one.Nodes, one.Batch, want.Nodes, want.Batch)
			}
		}
		if _, err := lsp.SampleFromEdges("", ls, ld, nil, LinkOptions{}); !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "edge_label_time") {
			t.Errorf("time %q: seed edges without edge_label_time: %v", c.time, err)
		}
		if o := sp.Options(); o.Time != c.time || o.TemporalStrategy != c.strategy || !o.Disjoint {
			t.Errorf("Options() = %+v, want time %q strategy %q, disjoint", o, c.time, c.strategy)
		}
	}

	// what is refused, by name
	plain, err := ss.NewSampler(SampleOptions{Fanouts: map[string][]int{"": {2}}})
	must(err)
	if _, err := plain.SampleAt("", seeds, []int64{1, 2, 3, 4}); !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "not temporal") {
		t.Errorf("seed times for a plain sampler: %v", err)
	}
	if _, err := plain.SampleFromEdgesAt("", []int64{1}, []int64{2}, nil, []int64{1}, LinkOptions{}); !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "not temporal") {
		t.Errorf("edge_label_time for a plain sampler: %v", err)
	}
	edgeLevel, err := ss.NewSampler(SampleOptions{Fanouts: map[string][]int{"": {2}}, Time: "edge_time"})
	must(err)
	if _, err := edgeLevel.Sample("", seeds); !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "input_time") {
		t.Errorf("edge time without seed times: %v", err)
	}
	if _, err := edgeLevel.SampleAt("", seeds, []int64{1}); !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "one a seed") {
		t.Errorf("seed times of another length: %v", err)
	}
	for _, c := range []struct {
		opt  SampleOptions
		want string
	}{
		{SampleOptions{Time: "nope"}, "node time, node float_time, edge edge_time"},
		{SampleOptions{Time: "float_time"}, "integers"},
		{SampleOptions{Time: "time", TemporalStrategy: "first"}, `"uniform" or "last"`},
		{SampleOptions{TemporalStrategy: "last"}, `without "time"`},
		{SampleOptions{Time: "edge_time", Weight: "edge_time"}, "weighted temporal"},
	} {
		c.opt.Fanouts = map[string][]int{"": {2}}
		if _, err := ss.NewSampler(c.opt); !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want ErrInvalidOption containing %q", c.opt, err, c.want)
		}
	}
}
