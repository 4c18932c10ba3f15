package ingest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
)

// gbLinkSet is one set of a GraphBolt link prediction task: pairs (src, dst), labels, negatives.
type gbLinkSet struct {
	src, dst, labels, neg []int64
	k                     int64
	name                  string // seeds or node_pairs
}

// writeGBLinkTask replaces the tasks of the GraphBolt dataset gb with a link prediction task of
// sets of type setType ("" for none), drawing endpoints in [0, nsrc) x [0, ndst).
func writeGBLinkTask(t *testing.T, gb, setType string, rng *rand.Rand, nsrc, ndst int64) map[string]*gbLinkSet {
	t.Helper()
	meta := filepath.Join(gb, GraphBoltMetadata)
	md := string(mustReadFile(t, meta))
	md = md[:strings.Index(md, "tasks:")] + "tasks:\n  - name: link_prediction\n"
	sets := map[string]*gbLinkSet{}
	for _, set := range []struct {
		name, key string
		n         int64
	}{{"train", "train_set", 1 + rng.Int64N(40)}, {"val", "validation_set", 1 + rng.Int64N(20)}, {"test", "test_set", 2}} {
		s := &gbLinkSet{name: "seeds"}
		var pairs []int64
		for range set.n {
			a, b := rng.Int64N(nsrc), rng.Int64N(ndst)
			s.src, s.dst, pairs = append(s.src, a), append(s.dst, b), append(pairs, a, b)
			s.labels = append(s.labels, rng.Int64N(2))
		}
		data := ""
		if set.name == "val" { // GraphBolt 1.x: node_pairs and negative_dsts, no labels
			s.name, s.labels, s.k = "node_pairs", nil, 1+rng.Int64N(3)
			for range set.n * s.k {
				s.neg = append(s.neg, rng.Int64N(ndst))
			}
			WriteNpy(filepath.Join(gb, "val-neg.npy"), "<i8", []int64{set.n, s.k}, dataset.BytesOf(s.neg))
			data += "          - name: negative_dsts\n            format: numpy\n            path: val-neg.npy\n"
		} else {
			WriteNpy(filepath.Join(gb, set.name+"-labels.npy"), "<i8", []int64{set.n}, dataset.BytesOf(s.labels))
			data += fmt.Sprintf("          - name: labels\n            format: numpy\n            path: %s-labels.npy\n", set.name)
			WriteNpy(filepath.Join(gb, set.name+"-indexes.npy"), "<i8", []int64{set.n}, make([]byte, 8*set.n))
			data += fmt.Sprintf("          - name: indexes\n            format: numpy\n            path: %s-indexes.npy\n", set.name)
		}
		WriteNpy(filepath.Join(gb, set.name+"-pairs.npy"), "<i8", []int64{set.n, 2}, dataset.BytesOf(pairs))
		typ := ""
		if setType != "" {
			typ = "type: " + setType + "\n        "
		}
		md += fmt.Sprintf("    %s:\n      - %sdata:\n          - name: %s\n            format: numpy\n            path: %s-pairs.npy\n%s", set.key, typ, s.name, set.name, data)
		sets[set.name] = s
	}
	if err := os.WriteFile(meta, []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	return sets
}

// checkGBLink compares the edge splits of et in m with the sets written.
func checkGBLink(t *testing.T, m *dataset.Manifest, et *dataset.EdgeType, sets map[string]*gbLinkSet) {
	t.Helper()
	for name, s := range sets {
		sp, ok := et.Splits[name]
		if !ok {
			t.Fatalf("no edge split %s (have %v)", name, et.SplitNames())
		}
		n := int64(len(s.src))
		if got := readInt64File(t, m.Path(sp.Seeds.File), 2*n); !slices.Equal(got, append(slices.Clone(s.src), s.dst...)) {
			t.Errorf("%s seeds %v, want src %v dst %v", name, got, s.src, s.dst)
		}
		if (sp.Labels == nil) != (s.labels == nil) || s.labels != nil && !slices.Equal(readInt64File(t, m.Path(sp.Labels.File), n), s.labels) {
			t.Errorf("%s labels %+v, want %v", name, sp.Labels, s.labels)
		}
		if (sp.NegDst == nil) != (s.neg == nil) || s.neg != nil && (sp.NegDst.PerSeed != s.k || !slices.Equal(readInt64File(t, m.Path(sp.NegDst.File), n*s.k), s.neg)) {
			t.Errorf("%s negatives %+v, want %v", name, sp.NegDst, s.neg)
		}
	}
}

// TestGraphBoltLinkTask ingests GraphBolt link prediction tasks (seeds + labels of GraphBolt
// 2.x, node_pairs + negative_dsts of 1.x, a (2, 2) pairs file) of a homogeneous and a
// heterogeneous graph as edge splits.
func TestGraphBoltLinkTask(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	gb := t.TempDir()
	const n = 60
	writeGraphBolt(t, gb, rng, n, 300, false)
	sets := writeGBLinkTask(t, gb, "", rng, n, n)
	parent := t.TempDir()
	m, err := Ingest(Options{GraphBolt: gb, Out: filepath.Join(parent, "ds")})
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != dataset.Version || m.Nodes().Labels != nil || len(m.Nodes().Splits) != 0 {
		t.Errorf("version %d, node labels %v, node splits %v: a link task gives edge splits only", m.Version, m.Nodes().Labels, m.Nodes().Splits)
	}
	checkGBLink(t, m, m.Edges(), sets)
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Errorf("left %d entries beside the dataset", len(entries))
	}
	if _, err := Ingest(Options{GraphBolt: gb, Out: filepath.Join(parent, "x"), EdgeSplits: []EdgeSplitInput{{Split: "train"}}}); err == nil || !strings.Contains(err.Error(), "EdgeSplits beside it") {
		t.Errorf("EdgeSplits beside GraphBolt: %v", err)
	}

	dir := t.TempDir()
	g := newHeteroGraph(t, dir, rng)
	hgb := filepath.Join(dir, "gb")
	os.Mkdir(hgb, 0o755)
	writeGraphBoltHetero(t, hgb, g)
	hsets := writeGBLinkTask(t, hgb, "author:writes:paper", rng, g.counts["author"], g.counts["paper"])
	hm, err := Ingest(Options{GraphBolt: hgb, Out: filepath.Join(t.TempDir(), "ds")})
	if err != nil {
		t.Fatal(err)
	}
	et, err := hm.EdgeTypeNamed("author:writes:paper")
	if err != nil {
		t.Fatal(err)
	}
	checkGBLink(t, hm, et, hsets)

	// A set of a type that is no edge type, and an endpoint outside its node type.
	md := string(mustReadFile(t, filepath.Join(hgb, GraphBoltMetadata)))
	os.WriteFile(filepath.Join(hgb, GraphBoltMetadata), []byte(strings.Replace(md, "- type: author:writes:paper\n        data", "- type: author:wrote:paper\n        data", 1)), 0o644)
	if _, err := Ingest(Options{GraphBolt: hgb, Out: filepath.Join(t.TempDir(), "ds")}); err == nil || !strings.Contains(err.Error(), `has type "author:wrote:paper", not an edge type`) {
		t.Errorf("unknown edge type: %v", err)
	}
	os.WriteFile(filepath.Join(hgb, GraphBoltMetadata), []byte(md), 0o644)
	big := g.counts["author"]
	WriteNpy(filepath.Join(hgb, "train-pairs.npy"), "<i8", []int64{1, 2}, dataset.BytesOf([]int64{big, 0}))
	WriteNpy(filepath.Join(hgb, "train-labels.npy"), "<i8", []int64{1}, dataset.BytesOf([]int64{1}))
	if _, err := Ingest(Options{GraphBolt: hgb, Out: filepath.Join(t.TempDir(), "ds")}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("source node id %d, outside the %d nodes", big, big)) || !strings.Contains(err.Error(), "train-pairs.npy") {
		t.Errorf("endpoint out of range: %v", err)
	}
}
