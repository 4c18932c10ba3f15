package planned

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/topology"
)

// TestPlannedLinkEpochsMatchOnDemand plans link epochs of a store (seed edges, random negative
// modes and exclusion) and checks every served batch of more epochs than were planned against
// the on-demand path: its positions against EpochOrder, its link sample (nodes, edges, label
// edges, negatives) against the first SampleFromEdges call of a Sampler of the batch's seed, and
// its rows bit for bit against a plain Gather and the dataset's rows, for memory tiers holding
// none, some and all rows.
func TestPlannedLinkEpochsMatchOnDemand(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 2000, 12, 2, 6, rng)
	rowMem := d.RowBytes + 16
	n := 300 + rng.IntN(200)
	se := &SeedEdges{Src: make([]int64, n), Dst: make([]int64, n)}
	for i := range n {
		se.Src[i], se.Dst[i] = rng.Int64N(d.Count), rng.Int64N(d.Count)
	}
	for _, c := range []struct {
		name  string
		bytes int64
		link  featurestore.LinkOptions
	}{
		{"none/no-negatives", 0, featurestore.LinkOptions{}},
		{"some/binary", rowMem * d.Count / 3, featurestore.LinkOptions{Negatives: topology.BinaryNegatives, NegAmount: 0.5 + 2*rng.Float64(), ExcludeSeedEdges: true}},
		{"some/triplet", rowMem * d.Count / 4, featurestore.LinkOptions{Negatives: topology.TripletNegatives, NegAmount: float64(1 + rng.IntN(3)), StrictNegatives: true, ExcludeSeedEdges: true, ReverseEdgeTypes: map[string]string{"": ""}}},
		{"all/binary", 2 * rowMem * d.Count, featurestore.LinkOptions{Negatives: topology.BinaryNegatives, StrictNegatives: true}},
	} {
		s, err := featurestore.Open(d.Dir, featurestore.Options{HostCacheBytes: c.bytes})
		if err != nil {
			t.Fatal(err)
		}
		se.Link, se.Labels = c.link, nil
		if c.link.Negatives != topology.TripletNegatives && rng.IntN(2) == 0 {
			se.Labels = make([]int64, n)
			for i := range se.Labels {
				se.Labels[i] = 1 + rng.Int64N(3)
			}
		}
		const k = 2
		o := EpochOptions{Dir: filepath.Join(t.TempDir(), "plan"), SeedEdges: se, BatchSize: 40 + rng.IntN(40), DropLast: rng.IntN(2) == 0,
			Sample:      topology.SampleOptions{Fanouts: []int{1 + rng.IntN(4), rng.IntN(4)}, Seed: rng.Uint64(), Replace: rng.IntN(2) == 0},
			ShuffleSeed: rng.Uint64(), Epochs: k, PlaceTiers: rng.IntN(2) == 0}
		name := fmt.Sprintf("%s (labels %v, batch %d, fanouts %v, place %v)", c.name, se.Labels != nil, o.BatchSize, o.Sample.Fanouts, o.PlaceTiers)
		p, rep, err := OpenEpochs(s.Session(), withReplan(o))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		nb := BatchesPerEpoch(n, o.BatchSize, o.DropLast)
		if rep == nil || rep.Planned != k || p.BatchesPerEpoch() != nb || !p.Link() || p.EdgeType() == "" {
			t.Fatalf("%s: report %+v, %d batches, link %v, edge type %q", name, rep, p.BatchesPerEpoch(), p.Link(), p.EdgeType())
		}
		if (c.bytes >= rowMem*d.Count) != (rep.RowsPacked == 0) {
			t.Fatalf("%s: %d rows packed", name, rep.RowsPacked)
		}
		positions := make([]int64, n)
		for i := range positions {
			positions[i] = int64(i)
		}
		for e := range k + 1 {
			order := EpochOrder(positions, o.ShuffleSeed, e%k)
			for b := range nb {
				pos, got, err := oneEdges(p, e, b)
				if err != nil {
					t.Fatalf("%s: epoch %d batch %d: %v", name, e, b, err)
				}
				want := order[b*o.BatchSize : min((b+1)*o.BatchSize, n)]
				if !reflect.DeepEqual(pos, want) {
					t.Fatalf("%s: epoch %d batch %d: positions %v, want %v", name, e, b, pos, want)
				}
				src, dst := make([]int64, len(pos)), make([]int64, len(pos))
				var labels []int64
				for i, q := range pos {
					src[i], dst[i] = se.Src[q], se.Dst[q]
					if se.Labels != nil {
						labels = append(labels, se.Labels[q])
					}
				}
				so := o.Sample
				so.Seed = BatchSampleSeed(o.Sample.Seed, e%k, b)
				sp, err := s.Session().NewSampler(featurestore.SampleOptions{Fanouts: map[string][]int{"": so.Fanouts}, Replace: so.Replace, Seed: so.Seed})
				if err != nil {
					t.Fatal(err)
				}
				typed, err := sp.SampleFromEdges(se.EdgeType, src, dst, labels, se.Link)
				if err != nil {
					t.Fatal(err)
				}
				one, _ := typed.OneType()
				ref := &topology.LinkSample{Sample: *one, LinkLabels: typed.LinkLabels}
				if !reflect.DeepEqual(got, ref) {
					t.Fatalf("%s: epoch %d batch %d: the planned link sample differs from the on-demand one", name, e, b)
				}
				if c.link.Negatives != "" && len(got.NegDst) == 0 {
					t.Fatalf("%s: epoch %d batch %d: no negatives", name, e, b)
				}
				rows := make([]byte, int64(len(got.Nodes))*d.RowBytes)
				io, err := p.Gather(e, b, "", got.Nodes, rows)
				if err != nil {
					t.Fatalf("%s: epoch %d batch %d: %v", name, e, b, err)
				}
				plain := make([]byte, len(rows))
				if err := s.Gather(got.Nodes, plain); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(rows, plain) || !bytes.Equal(rows, d.Want(got.Nodes)) {
					t.Fatalf("%s: epoch %d batch %d: planned rows differ from Gather", name, e, b)
				}
				if c.bytes == 0 && io.Rows != int64(len(got.Nodes)) {
					t.Fatalf("%s: epoch %d batch %d: %d packed rows read of %d nodes with no memory tier", name, e, b, io.Rows, len(got.Nodes))
				}
				// Load serves the node sample of the same batch.
				if l, err := oneLoad(p, e, b); err != nil || !reflect.DeepEqual(l.Seeds, pos) || !bytes.Equal(l.Rows, rows) {
					t.Fatalf("%s: epoch %d batch %d: Load differs (%v)", name, e, b, err)
				}
			}
		}
		p.Close()
		// The same plan for other link options or seed edges is stale, naming the input.
		other := o
		other.SeedEdges = &SeedEdges{Src: se.Src, Dst: se.Dst, Labels: se.Labels, Link: se.Link}
		other.SeedEdges.Link.ExcludeSeedEdges = !se.Link.ExcludeSeedEdges
		if _, _, err := OpenEpochs(s.Session(), other); !errors.Is(err, ErrStalePlan) || !strings.Contains(err.Error(), "link options") {
			t.Fatalf("%s: other link options: %v", name, err)
		}
		other.SeedEdges = &SeedEdges{Src: append([]int64{se.Dst[0]}, se.Src[1:]...), Dst: se.Dst, Labels: se.Labels, Link: se.Link}
		if _, _, err := OpenEpochs(s.Session(), other); !errors.Is(err, ErrStalePlan) || !strings.Contains(err.Error(), "seed edges") {
			t.Fatalf("%s: other seed edges: %v", name, err)
		}
		s.Close()
	}
}

// withReplan is o planning when its plan is missing.
func withReplan(o EpochOptions) EpochOptions {
	o.Replan = true
	return o
}

// TestHeteroPlannedLinkEpochsMatchOnDemand is the session case: seed edges of one edge type,
// every served batch against the first SampleFromEdges of a Sampler of the batch's seed,
// and every packed type's rows against the session's gather.
func TestHeteroPlannedLinkEpochsMatchOnDemand(t *testing.T) {
	rng := newRand(t)
	d := writeHetero(t, rng)
	ss, err := featurestore.OpenSession(d.Dir, featurestore.Options{HostCacheBytes: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	e := rng.IntN(len(d.Manifest.EdgeTypes))
	key := d.Manifest.EdgeTypes[e].Key()
	src, dst := randomSeedEdges(d, e, 150+rng.IntN(100), rng)
	o := heteroEpochOpts(t, ss, d, 2, rng)
	o.Seeds, o.NodeType = nil, ""
	o.SeedEdges = &SeedEdges{EdgeType: key, Src: src, Dst: dst,
		Link: featurestore.LinkOptions{Negatives: topology.BinaryNegatives, NegAmount: 1 + rng.Float64(), ExcludeSeedEdges: true}}
	t.Logf("seed edge type %s, %d seed edges, batch %d", key, len(src), o.BatchSize)
	// Bad input names the input: an edge type the dataset lacks, an id outside its type, a node
	// type beside seed edges.
	for _, c := range []struct {
		edit func(se *SeedEdges, o *EpochOptions)
		want string
		is   error
	}{
		{func(se *SeedEdges, o *EpochOptions) { se.EdgeType = "paper:likes:paper" }, `no edge type "paper:likes:paper"`, dataset.ErrTypeNotFound},
		{func(se *SeedEdges, o *EpochOptions) { se.EdgeType = "" }, `edge types (paper:cites:paper`, featurestore.ErrInvalidOption},
		{func(se *SeedEdges, o *EpochOptions) { se.Dst = append([]int64{1 << 40}, se.Dst[1:]...) }, "dst[0] = 1099511627776 is out of range", featurestore.ErrIDOutOfRange},
		{func(se *SeedEdges, o *EpochOptions) { o.NodeType = "paper" }, "none with seed edges", featurestore.ErrInvalidOption},
	} {
		bad := o
		se := *o.SeedEdges
		bad.SeedEdges = &se
		c.edit(&se, &bad)
		if _, err := PlanEpochs(ss, bad); err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, c.is) {
			t.Errorf("error %v, want one containing %q (is %v)", err, c.want, c.is)
		}
	}
	if _, err := PlanEpochs(ss, o); err != nil {
		t.Fatal(err)
	}
	p, _, err := OpenEpochs(ss, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.EdgeType() != key {
		t.Fatalf("edge type %q, want %q", p.EdgeType(), key)
	}
	for ep := range 3 {
		for b := range p.BatchesPerEpoch() {
			pos, got, err := p.SampleEdges(ep, b)
			if err != nil {
				t.Fatalf("epoch %d batch %d: %v", ep, b, err)
			}
			s, dd := make([]int64, len(pos)), make([]int64, len(pos))
			for i, q := range pos {
				s[i], dd[i] = src[q], dst[q]
			}
			hs, err := ss.NewSampler(featurestore.SampleOptions{Fanouts: o.EdgeFanouts, Replace: o.Sample.Replace, Seed: BatchSampleSeed(o.Sample.Seed, ep%2, b)})
			if err != nil {
				t.Fatal(err)
			}
			ref, err := hs.SampleFromEdges(key, s, dd, nil, o.SeedEdges.Link)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, ref) {
				t.Fatalf("epoch %d batch %d: the planned link sample differs from the on-demand one", ep, b)
			}
			for _, nt := range p.NodeTypes() {
				idx, err := ss.Internals().NodeTypeIndex(nt)
				if err != nil {
					t.Fatal(err)
				}
				nodes := got.Nodes[idx]
				rb := d.RowBytes[nt]
				rows := make([]byte, int64(len(nodes))*rb)
				if _, err := p.Gather(ep, b, nt, nodes, rows); err != nil {
					t.Fatalf("epoch %d batch %d type %s: %v", ep, b, nt, err)
				}
				for i, v := range nodes {
					if !bytes.Equal(rows[int64(i)*rb:int64(i+1)*rb], d.Rows[nt][v*rb:(v+1)*rb]) {
						t.Fatalf("epoch %d batch %d type %s: row %d (node %d) differs", ep, b, nt, i, v)
					}
				}
			}
		}
	}
}

// TestLinkPlanErrors: bad seed edges, edge types, link options and negatives that cannot be
// drawn each fail naming the input.
func TestLinkPlanErrors(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 500, 4, 1, 4, rng)
	s, err := featurestore.Open(d.Dir, featurestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := func() EpochOptions {
		return EpochOptions{Dir: filepath.Join(t.TempDir(), "plan"), BatchSize: 10, Epochs: 1,
			Sample:    topology.SampleOptions{Fanouts: []int{2}, Seed: 1},
			SeedEdges: &SeedEdges{Src: []int64{1, 2, 3}, Dst: []int64{4, 5, 6}}}
	}
	for _, c := range []struct {
		name string
		edit func(o *EpochOptions)
		want string
		is   error
	}{
		{"src out of range", func(o *EpochOptions) { o.SeedEdges.Src[1] = 500 }, "src[1] = 500 is out of range [0, 500)", featurestore.ErrIDOutOfRange},
		{"dst negative", func(o *EpochOptions) { o.SeedEdges.Dst[2] = -1 }, "dst[2] = -1 is out of range", featurestore.ErrIDOutOfRange},
		{"lengths", func(o *EpochOptions) { o.SeedEdges.Dst = o.SeedEdges.Dst[:2] }, "3 src ids but 2 dst ids", featurestore.ErrInvalidOption},
		{"labels", func(o *EpochOptions) { o.SeedEdges.Labels = []int64{1} }, "1 labels for 3 seed edges", featurestore.ErrInvalidOption},
		{"wrong edge type", func(o *EpochOptions) { o.SeedEdges.EdgeType = "user:rates:item" }, `seed edges of edge type "user:rates:item"`, dataset.ErrTypeNotFound},
		{"negative amount", func(o *EpochOptions) {
			o.SeedEdges.Link = featurestore.LinkOptions{Negatives: topology.BinaryNegatives, NegAmount: -2}
		}, "neg_amount", featurestore.ErrInvalidOption},
		{"triplet amount", func(o *EpochOptions) {
			o.SeedEdges.Link = featurestore.LinkOptions{Negatives: topology.TripletNegatives, NegAmount: 1.5}
		}, "whole number", featurestore.ErrInvalidOption},
		{"triplet labels", func(o *EpochOptions) {
			o.SeedEdges.Link = featurestore.LinkOptions{Negatives: topology.TripletNegatives}
			o.SeedEdges.Labels = []int64{1, 1, 1}
		}, "labels", featurestore.ErrInvalidOption},
		{"mode", func(o *EpochOptions) { o.SeedEdges.Link = featurestore.LinkOptions{Negatives: "pairs"} }, "negatives", featurestore.ErrInvalidOption},
		{"reverse", func(o *EpochOptions) { o.SeedEdges.Link.ReverseEdgeTypes = map[string]string{"a:b:c": ""} }, "reverse_edge_types", featurestore.ErrInvalidOption},
		{"seeds and edges", func(o *EpochOptions) { o.Seeds = []int64{1} }, "none with seed edges", featurestore.ErrInvalidOption},
		{"no batch", func(o *EpochOptions) {
			o.BatchSize, o.DropLast = 4, true
			o.SeedEdges.Src, o.SeedEdges.Dst = []int64{1}, []int64{2}
		}, "seed_edges", featurestore.ErrInvalidOption},
	} {
		o := base()
		c.edit(&o)
		_, err := PlanEpochs(s.Session(), o)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, c.is) {
			t.Errorf("%s: error %v, want one containing %q (is %v)", c.name, err, c.want, c.is)
		}
	}
	// Strict negatives on a graph where every pair is an edge cannot be met: planning fails
	// naming the epoch, the batch and the numbers.
	full := writeCompleteDataset(t, 6)
	t.Logf("complete graph of 6 nodes in %s", full)
	fs, err := featurestore.Open(full, featurestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	o := base()
	o.SeedEdges = &SeedEdges{Src: []int64{0, 1}, Dst: []int64{2, 3}, Link: featurestore.LinkOptions{Negatives: topology.BinaryNegatives, StrictNegatives: true}}
	_, err = PlanEpochs(fs.Session(), o)
	if err == nil || !strings.Contains(err.Error(), "planning epoch 0 batch 0") || !strings.Contains(err.Error(), "no negative") {
		t.Fatalf("strict negatives on a complete graph: %v", err)
	}
}

// writeCompleteDataset writes a dataset of n nodes (rows of one float32) whose graph holds every
// pair (u, v), self loops included.
func writeCompleteDataset(t *testing.T, n int64) string {
	t.Helper()
	dir := t.TempDir()
	spec, err := dataset.NewFeatureSpec("x", dataset.Float32, 1, n, 1, dataset.DefaultBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	spec.Files[0] = "features.x.0.bin"
	w, err := dataset.NewFeatureWriter(nil, dir, &spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRows(make([]byte, n*spec.RowBytes)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	indptr := make([]int64, n+1)
	raw := make([]byte, 0, 4*n*n)
	for v := range n {
		indptr[v+1] = indptr[v] + n
		for u := range n {
			raw = binary.LittleEndian.AppendUint32(raw, uint32(u))
		}
	}
	if err := dataset.WriteInt64s(nil, filepath.Join(dir, "indptr.bin"), indptr); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "indices.bin"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	m := &dataset.Manifest{
		NodeTypes: []dataset.NodeType{{Name: "node", Count: n, Features: []dataset.FeatureSpec{spec}}},
		EdgeTypes: []dataset.EdgeType{{Src: "node", Rel: "to", Dst: "node", Count: n * n, Layout: "csc",
			Indptr: dataset.ArraySpec{File: "indptr.bin", DType: dataset.Int64}, Indices: dataset.ArraySpec{File: "indices.bin", DType: dataset.Int32}}},
	}
	m.SetDir(dir)
	if err := dataset.Commit(m, []string{"indptr.bin", "indices.bin", spec.Files[0]}, "test", nil); err != nil {
		t.Fatal(err)
	}
	return dir
}
