package featurestore

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/ingest"
	"github.com/tierfs/tierfs/topology"
)

// TestOpenWithoutNodeFeatures: a dataset of edges, labels, a split and an edge feature but no
// node feature (PyG's Data without x) opens; on random input its labels, split, samples and edge
// feature equal those of the same graph ingested with a node feature, and every call that reads
// or places node feature rows is an error naming the dataset and wrapping ErrFeatureNotFound.
func TestOpenWithoutNodeFeatures(t *testing.T) {
	rng := newRand(t)
	in := t.TempDir()
	const n, e = 200, 1500
	i64 := func(vals []int64) []byte {
		b := make([]byte, 8*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
		}
		return b
	}
	pairs, labels, w := make([]int64, 2*e), make([]int64, n), make([]byte, 4*e)
	for i := range pairs {
		pairs[i] = rng.Int64N(n)
	}
	for i := range labels {
		labels[i] = rng.Int64N(5)
	}
	for i := range w {
		w[i] = byte(rng.UintN(256))
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ingest.WriteNpy(filepath.Join(in, "edges.npy"), "<i8", []int64{2, e}, i64(pairs)))
	must(ingest.WriteNpy(filepath.Join(in, "y.npy"), "<i8", []int64{n}, i64(labels)))
	must(ingest.WriteNpy(filepath.Join(in, "x.npy"), "<f4", []int64{n, 3}, make([]byte, 12*n)))
	must(ingest.WriteNpy(filepath.Join(in, "w.npy"), "<f4", []int64{e}, w))
	bare, withX := filepath.Join(t.TempDir(), "bare"), filepath.Join(t.TempDir(), "x")
	for _, o := range []ingest.Options{{Out: bare}, {Out: withX, Features: filepath.Join(in, "x.npy")}} {
		o.Edges, o.Labels = filepath.Join(in, "edges.npy"), filepath.Join(in, "y.npy")
		o.EdgeFeatures = []ingest.FeatureInput{{Name: "w", Path: filepath.Join(in, "w.npy")}}
		_, err := ingest.Ingest(o)
		must(err)
	}
	s, err := Open(bare, Options{HostCacheBytes: 1 << 20})
	must(err)
	defer s.Close()
	ref, err := Open(withX, Options{HostCacheBytes: 1 << 20})
	must(err)
	defer ref.Close()

	if s.NumNodes() != n || s.Graph() == nil || s.Graph().NumEdges() != e || s.RowBytes() != 0 || s.NumClasses() != 5 {
		t.Fatalf("nodes %d, graph %v, row bytes %d, classes %d", s.NumNodes(), s.Graph(), s.RowBytes(), s.NumClasses())
	}
	if fs := s.Features(); len(fs) != 2 || fs[0].Of != "edge" || fs[0].Default || fs[1].Of != "edge" {
		t.Fatalf("features %+v: want the edge features alone, none the default", fs)
	}
	ids := make([]int64, 64)
	for i := range ids {
		ids[i] = rng.Int64N(n)
	}
	got := make([]int64, len(ids))
	must(s.Labels(ids, got))
	for i, id := range ids {
		if got[i] != labels[id] {
			t.Fatalf("label of %d: %d, want %d", id, got[i], labels[id])
		}
	}
	opt := topology.SampleOptions{Fanouts: []int{4, 3}, Seed: rng.Uint64()}
	a, err := s.Sample(ids[:16], opt)
	must(err)
	b, err := ref.Sample(ids[:16], opt)
	must(err)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("sample without node features differs from the one with them")
	}
	ga, gb := make([]byte, 4*len(a.EdgeIDs)), make([]byte, 4*len(a.EdgeIDs))
	must(s.GatherFeature("w", a.EdgeIDs, ga))
	must(ref.GatherFeature("w", b.EdgeIDs, gb))
	if string(ga) != string(gb) {
		t.Fatal("edge feature w of the sampled edges differs")
	}
	st := s.Stats()
	if len(st.Tiers) != 3 || st.Tiers[0].RowsHeld+st.Tiers[1].RowsHeld+st.Tiers[2].RowsHeld != 0 {
		t.Fatalf("stats tiers %+v: want no rows held", st.Tiers)
	}
	for call, err := range map[string]error{
		"Gather":         s.Gather(ids, make([]byte, 12*len(ids))),
		"GatherFeature":  s.GatherFeature("", ids, nil),
		"Place":          s.Place(nil),
		"PlaceIDs":       s.PlaceIDs(ids),
		"GatherDevice":   s.GatherDevice(ids, 1, 0),
		"ApplyPlacement": s.ApplyPlacement(nil),
	} {
		if !errors.Is(err, dataset.ErrFeatureNotFound) || !strings.Contains(err.Error(), bare) || !strings.Contains(err.Error(), "no node features") {
			t.Errorf("%s: %v; want an error naming %s and no node features", call, err, bare)
		}
	}
	if _, err := s.PlanEpochs(EpochOptions{}); !errors.Is(err, dataset.ErrFeatureNotFound) {
		t.Errorf("PlanEpochs: %v", err)
	}
	if _, err := Open(bare, Options{Hotness: make([]uint32, n)}); !errors.Is(err, dataset.ErrFeatureNotFound) {
		t.Errorf("Open with hotness: %v", err)
	}
	if _, err := Open(bare, Options{Feature: "x"}); !errors.Is(err, dataset.ErrFeatureNotFound) {
		t.Errorf("Open of feature x: %v", err)
	}
}
