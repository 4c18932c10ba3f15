package featurestore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/ingest"
	"github.com/tierfs/tierfs/topology"
)

// TestGatherFeatureAndEdgeIDs: a dataset with a second node feature and edge features, ingested
// from random arrays: GatherFeature of random ids equals the input rows (node features by node
// id; edge features by the edge ids the sampler reports, which must be the rows of the input
// edges the sampled pairs came from), with the topology in memory and on disk, and with the
// second node feature served as the default.
func TestGatherFeatureAndEdgeIDs(t *testing.T) {
	rng := newRand(t)
	in := t.TempDir()
	const n, e = 300, 4000
	src, dst := make([]int64, e), make([]int64, e)
	for i := range src {
		src[i], dst[i] = rng.Int64N(n), rng.Int64N(n)
	}
	// Repeated pairs are dropped, so a sampled (src, dst) names one input edge.
	pairs := map[[2]int64]int64{}
	k := 0
	for i := range src {
		key := [2]int64{src[i], dst[i]}
		if _, dup := pairs[key]; dup {
			continue
		}
		pairs[key] = int64(k)
		src[k], dst[k] = src[i], dst[i]
		k++
	}
	src, dst = src[:k], dst[:k]
	edges := make([]byte, 0, 16*k)
	for _, v := range append(append([]int64{}, src...), dst...) {
		edges = append(edges, byte(v), byte(v>>8), 0, 0, 0, 0, 0, 0)
	}
	random := func(size int) []byte {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return b
	}
	x, h, w, ea := random(n*8), random(n*6), random(k*4), random(k*5)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ingest.WriteNpy(filepath.Join(in, "edges.npy"), "<i8", []int64{2, int64(k)}, edges))
	must(ingest.WriteNpy(filepath.Join(in, "x.npy"), "<f4", []int64{n, 2}, x))
	must(ingest.WriteNpy(filepath.Join(in, "h.npy"), "<i2", []int64{n, 3}, h))
	must(ingest.WriteNpy(filepath.Join(in, "w.npy"), "<f4", []int64{int64(k)}, w))
	must(ingest.WriteNpy(filepath.Join(in, "ea.npy"), "|u1", []int64{int64(k), 5}, ea))
	dir := filepath.Join(t.TempDir(), "ds")
	_, err := ingest.Ingest(ingest.Options{Edges: filepath.Join(in, "edges.npy"), Features: filepath.Join(in, "x.npy"), Out: dir,
		NodeFeatures: []ingest.FeatureInput{{Name: "h", Path: filepath.Join(in, "h.npy")}},
		EdgeFeatures: []ingest.FeatureInput{{Name: "edge_weight", Path: filepath.Join(in, "w.npy")}, {Name: "edge_attr", Path: filepath.Join(in, "ea.npy")}}})
	must(err)
	for _, tc := range []struct {
		feature  string
		topology int64
	}{{"", 0}, {"", -1}, {"h", 0}} {
		t.Run(fmt.Sprintf("feature=%q/topology=%d", tc.feature, tc.topology), func(t *testing.T) {
			s, err := Open(dir, Options{Feature: tc.feature, TopologyMemoryBytes: tc.topology})
			must(err)
			defer s.Close()
			ss := s.Session()
			infos := append(slices.Clone(ss.NodeTypes()[0].Features), ss.EdgeTypes()[0].Features...)
			// ingest's input_edge_id last: the input is not sorted by destination.
			if len(infos) != 5 || infos[0].Name != "x" || infos[1].Name != "h" || infos[2].Of != "edge" || !infos[2].Scalar || infos[3].Dim != 5 ||
				infos[4].Name != ingest.InputEdgeIDFeature || infos[4].DType != dataset.Int64 || !infos[4].Scalar {
				t.Fatalf("Features() = %+v", infos)
			}
			if def := infos[0].Default; def != (tc.feature == "") || infos[1].Default != (tc.feature == "h") {
				t.Fatalf("default feature flags %+v", infos)
			}
			ids := make([]int64, 500)
			for i := range ids {
				ids[i] = rng.Int64N(n)
			}
			for _, f := range []struct {
				name string
				rows []byte
				rb   int
			}{{"x", x, 8}, {"h", h, 6}} {
				got := make([]byte, len(ids)*f.rb)
				must(ss.Gather("", f.name, ids, got))
				for i, id := range ids {
					if !bytes.Equal(got[i*f.rb:(i+1)*f.rb], f.rows[int(id)*f.rb:(int(id)+1)*f.rb]) {
						t.Fatalf("feature %s row of node %d differs", f.name, id)
					}
				}
			}
			smp, err := sampleOf(s, ids[:64], topology.SampleOptions{Fanouts: []int{5, 3}, Seed: rng.Uint64()})
			must(err)
			if len(smp.EdgeIDs) != len(smp.Row) || len(smp.Row) == 0 {
				t.Fatalf("%d edge ids for %d edges", len(smp.EdgeIDs), len(smp.Row))
			}
			for _, f := range []struct {
				name string
				rows []byte
				rb   int
			}{{"edge_weight", w, 4}, {"edge_attr", ea, 5}} {
				got := make([]byte, len(smp.EdgeIDs)*f.rb)
				must(ss.GatherEdgeFeature("", f.name, smp.EdgeIDs, got))
				for i := range smp.EdgeIDs {
					in := pairs[[2]int64{smp.Nodes[smp.Row[i]], smp.Nodes[smp.Col[i]]}]
					if !bytes.Equal(got[i*f.rb:(i+1)*f.rb], f.rows[int(in)*f.rb:(int(in)+1)*f.rb]) {
						t.Fatalf("%s of sampled edge %d (input edge %d, edge id %d) differs", f.name, i, in, smp.EdgeIDs[i])
					}
				}
			}
			inputIDs := make([]byte, 8*len(smp.EdgeIDs))
			must(ss.GatherEdgeFeature("", ingest.InputEdgeIDFeature, smp.EdgeIDs, inputIDs))
			for i := range smp.EdgeIDs {
				in := pairs[[2]int64{smp.Nodes[smp.Row[i]], smp.Nodes[smp.Col[i]]}]
				if got := int64(binary.LittleEndian.Uint64(inputIDs[8*i:])); got != in {
					t.Fatalf("%s of sampled edge %d (edge id %d) is %d, want input edge %d", ingest.InputEdgeIDFeature, i, smp.EdgeIDs[i], got, in)
				}
			}
			if err := ss.Gather("", "nope", ids[:1], make([]byte, 8)); !errors.Is(err, dataset.ErrFeatureNotFound) {
				t.Fatalf("unknown feature: %v", err)
			}
			if err := ss.GatherEdgeFeature("", "edge_attr", []int64{int64(k)}, make([]byte, 5)); !errors.Is(err, ErrIDOutOfRange) {
				t.Fatalf("edge id past the edges: %v", err)
			}
			if err := ss.GatherEdgeFeature("", "edge_attr", []int64{0}, make([]byte, 4)); err == nil {
				t.Fatal("a destination of the wrong size was accepted")
			}
		})
	}
}
