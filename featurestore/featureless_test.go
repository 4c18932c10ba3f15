package featurestore

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	fst "github.com/tierfs/tierfs/featurestore/featurestoretest"
	"github.com/tierfs/tierfs/topology"
)

// TestOpenWithoutNodeFeatures: a dataset of edges, labels, a split and an edge feature but no
// node feature (PyG's Data without x) opens; on random input its labels, split, samples and edge
// feature equal those of the same graph ingested with a node feature, and every call that reads
// or places node feature rows is an error naming the dataset and wrapping ErrFeatureNotFound
// (planned epochs: planned's TestPlanEpochsWithoutNodeFeatures).
func TestOpenWithoutNodeFeatures(t *testing.T) {
	rng := newRand(t)
	const n, e = 200, 1500
	fd := fst.WriteFeatureless(t, rng, n, e)
	bare, withX, labels := fd.Bare, fd.WithX, fd.Labels
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(bare, Options{HostCacheBytes: 1 << 20})
	must(err)
	defer s.Close()
	ref, err := Open(withX, Options{HostCacheBytes: 1 << 20})
	must(err)
	defer ref.Close()

	classes, err := s.Session().NumClasses("")
	must(err)
	if s.NumNodes() != n || s.Graph() == nil || s.Graph().NumEdges() != e || s.RowBytes() != 0 || classes != 5 {
		t.Fatalf("nodes %d, graph %v, row bytes %d, classes %d", s.NumNodes(), s.Graph(), s.RowBytes(), classes)
	}
	if nts, ets := s.Session().NodeTypes(), s.Session().EdgeTypes(); len(nts[0].Features) != 0 || len(ets[0].Features) != 2 || ets[0].Features[0].Of != "edge" || ets[0].Features[0].Default {
		t.Fatalf("node features %+v, edge features %+v: want the edge features alone, none the default", nts[0].Features, ets[0].Features)
	}
	ids := make([]int64, 64)
	for i := range ids {
		ids[i] = rng.Int64N(n)
	}
	got := make([]int64, len(ids))
	must(s.Session().Labels("", ids, got))
	for i, id := range ids {
		if got[i] != labels[id] {
			t.Fatalf("label of %d: %d, want %d", id, got[i], labels[id])
		}
	}
	opt := topology.SampleOptions{Fanouts: []int{4, 3}, Seed: rng.Uint64()}
	a, err := sampleOf(s, ids[:16], opt)
	must(err)
	b, err := sampleOf(ref, ids[:16], opt)
	must(err)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("sample without node features differs from the one with them")
	}
	ga, gb := make([]byte, 4*len(a.EdgeIDs)), make([]byte, 4*len(a.EdgeIDs))
	must(s.Session().GatherEdgeFeature("", "w", a.EdgeIDs, ga))
	must(ref.Session().GatherEdgeFeature("", "w", b.EdgeIDs, gb))
	if string(ga) != string(gb) {
		t.Fatal("edge feature w of the sampled edges differs")
	}
	st := s.Stats()
	if len(st.Tiers) != 3 || st.Tiers[0].RowsHeld+st.Tiers[1].RowsHeld+st.Tiers[2].RowsHeld != 0 {
		t.Fatalf("stats tiers %+v: want no rows held", st.Tiers)
	}
	for call, err := range map[string]error{
		"Gather":         s.Gather(ids, make([]byte, 12*len(ids))),
		"Session.Gather": s.Session().Gather("", "", ids, nil),
		"Place":          s.Place(nil),
		"PlaceIDs":       s.PlaceIDs(ids),
		"GatherDevice":   s.GatherDevice(ids, 1, 0),
		"ApplyPlacement": s.ApplyPlacement(nil),
	} {
		if !errors.Is(err, dataset.ErrFeatureNotFound) || !strings.Contains(err.Error(), bare) || !strings.Contains(err.Error(), "no node features") {
			t.Errorf("%s: %v; want an error naming %s and no node features", call, err, bare)
		}
	}
	// The session ranks the featureless type as the store with a node feature ranks the same
	// graph (in-degree; by hotness when given), for the tables of learned rows placed by it.
	hot := make([]uint32, n)
	for i := range hot {
		hot[i] = uint32(rng.IntN(50))
	}
	for _, h := range [][]uint32{nil, hot} {
		got, err := s.Session().HottestIDs("", h, 40)
		must(err)
		want, err := ref.HottestIDs(h, 40)
		must(err)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Session.HottestIDs of the featureless type (hotness %t) = %v, want %v", h != nil, got, want)
		}
	}
	if _, err := s.Session().HottestIDs("", hot[:5], 4); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("HottestIDs with 5 counts of %d nodes: %v; want ErrInvalidOption", n, err)
	}
	if _, err := Open(bare, Options{Hotness: make([]uint32, n)}); !errors.Is(err, dataset.ErrFeatureNotFound) {
		t.Errorf("Open with hotness: %v", err)
	}
	if _, err := Open(bare, Options{Feature: "x"}); !errors.Is(err, dataset.ErrFeatureNotFound) {
		t.Errorf("Open of feature x: %v", err)
	}
}
