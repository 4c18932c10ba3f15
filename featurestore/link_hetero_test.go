package featurestore

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/ingest"
	"github.com/tierfs/tierfs/topology"
)

// cscHasEdge reports whether (u, v) is an edge of c (u a src-type id, v a dst-type id).
func cscHasEdge(c *topology.CSC, u, v int64) bool {
	for p := c.Indptr[v]; p < c.Indptr[v+1]; p++ {
		var w int64
		if c.Indices64 != nil {
			w = c.Indices64[p]
		} else {
			w = int64(c.Indices32[p])
		}
		if w == u {
			return true
		}
	}
	return false
}

// Sampler.SampleFromEdges on a session equals topology.SampleHeteroFromEdges over the
// dataset's files read plainly, with the sampler's seed + calls, and its label edges are the seed
// edges and type-correct negatives; excluded seed edges (and reverses) are absent.
// heteroLinkSetup is what the link tests of a written heterogeneous dataset share: the dataset,
// its session, the plain graphs over its files with random fanouts (and the sampler's options
// of them, with a random seed), and node type indexes by name.
type heteroLinkSetup struct {
	d         *heteroData
	ss        *Session
	numNodes  []int64
	edges     []topology.EdgeGraph
	fanouts   map[string][]int
	ref       topology.HeteroSampleOptions
	typeIndex func(name string) int
}

func newHeteroLinkSetup(t *testing.T, rng *rand.Rand) heteroLinkSetup {
	d := writeHetero(t, rng)
	ss, err := OpenSession(d.Dir, Options{HostCacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	h := heteroLinkSetup{d: d, ss: ss, fanouts: map[string][]int{}, ref: topology.HeteroSampleOptions{Seed: rng.Uint64()}}
	h.typeIndex = func(name string) int {
		return slices.IndexFunc(d.Manifest.NodeTypes, func(n dataset.NodeType) bool { return n.Name == name })
	}
	for _, nt := range d.Manifest.NodeTypes {
		h.numNodes = append(h.numNodes, nt.Count)
	}
	for i, et := range d.Manifest.EdgeTypes {
		h.edges = append(h.edges, topology.EdgeGraph{Src: h.typeIndex(et.Src), Dst: h.typeIndex(et.Dst), G: d.CSC[i]})
		f := []int{1 + rng.IntN(5), rng.IntN(4) - 1}
		h.fanouts[et.Key()] = f
		h.ref.Fanouts = append(h.ref.Fanouts, f)
	}
	return h
}

func TestHeteroSampleFromEdgesMatchesReference(t *testing.T) {
	rng := newRand(t)
	h := newHeteroLinkSetup(t, rng)
	d, ss, numNodes, edges, fanouts, ref := h.d, h.ss, h.numNodes, h.edges, h.fanouts, h.ref
	edgeIndex := func(key string) int {
		return slices.IndexFunc(d.Manifest.EdgeTypes, func(et dataset.EdgeType) bool { return et.Key() == key })
	}
	sp, err := ss.NewSampler(SampleOptions{Fanouts: fanouts, Seed: ref.Seed})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		edgeType string
		link     LinkOptions
	}{
		{"author:writes:paper", LinkOptions{}},
		{"author:writes:paper", LinkOptions{Negatives: topology.BinaryNegatives, NegAmount: 1.5, StrictNegatives: true}},
		{"author:writes:paper", LinkOptions{Negatives: topology.TripletNegatives, NegAmount: 3, ExcludeSeedEdges: true,
			ReverseEdgeTypes: map[string]string{"author:writes:paper": "paper:written_by:author"}}},
		{"paper:cites:paper", LinkOptions{Negatives: topology.BinaryNegatives, ExcludeSeedEdges: true,
			ReverseEdgeTypes: map[string]string{"paper:cites:paper": "paper:cites:paper"}}},
		{"author:affiliated_with:institution", LinkOptions{Negatives: topology.TripletNegatives, StrictNegatives: true, ExcludeSeedEdges: true}},
	}
	for call, c := range cases {
		e := edgeIndex(c.edgeType)
		et := edges[e]
		src, dst := randomSeedEdges(d, e, 1+rng.IntN(60), rng)
		var labels []int64
		if c.link.Negatives != topology.TripletNegatives && rng.IntN(2) == 0 {
			labels = make([]int64, len(src))
			for i := range labels {
				labels[i] = rng.Int64N(3)
			}
		}
		got, err := sp.SampleFromEdges(c.edgeType, src, dst, labels, c.link)
		if err != nil {
			t.Fatalf("%s %+v: %v", c.edgeType, c.link, err)
		}
		o := topology.HeteroLinkSampleOptions{HeteroSampleOptions: ref, LinkOptions: topology.LinkOptions{
			Negatives: c.link.Negatives, NegAmount: c.link.NegAmount, StrictNegatives: c.link.StrictNegatives, ExcludeSeedEdges: c.link.ExcludeSeedEdges}}
		o.Seed += uint64(call)
		for k, v := range c.link.ReverseEdgeTypes {
			o.ReverseEdgeTypes = map[int]int{edgeIndex(k): edgeIndex(v)}
		}
		want, err := topology.SampleHeteroFromEdges(numNodes, edges, e, src, dst, labels, o)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("call %d %s %+v: the session's sample differs from the core's over the files", call, c.edgeType, c.link)
		}
		// The plain facts the reference alone would not catch.
		srcNodes, dstNodes := got.Nodes[et.Src], got.Nodes[et.Dst]
		pos, negs := got.EdgeLabelIndex, [2][]int64{got.NegSrc, got.NegDst}
		if c.link.Negatives == topology.TripletNegatives {
			pos = [2][]int64{got.SrcIndex, got.DstPosIndex}
			amount := max(int(c.link.NegAmount), 1)
			if len(got.DstNegIndex) != amount*len(src) {
				t.Fatalf("call %d: %d negatives for %d seed edges × %d", call, len(got.DstNegIndex), len(src), amount)
			}
			for k, l := range got.DstNegIndex {
				if dstNodes[l] != got.NegDst[k] {
					t.Fatalf("call %d: dst_neg_index[%d] points at %d, negative is %d", call, k, dstNodes[l], got.NegDst[k])
				}
				if c.link.StrictNegatives && cscHasEdge(d.CSC[e], src[k/amount], got.NegDst[k]) {
					t.Fatalf("call %d: strict triplet negative (%d, %d) is an edge", call, src[k/amount], got.NegDst[k])
				}
			}
		}
		for i := range src {
			if srcNodes[pos[0][i]] != src[i] || dstNodes[pos[1][i]] != dst[i] {
				t.Fatalf("call %d: seed edge %d (%d, %d) is labelled (%d, %d)", call, i, src[i], dst[i], srcNodes[pos[0][i]], dstNodes[pos[1][i]])
			}
		}
		if c.link.Negatives == topology.BinaryNegatives {
			for k := range negs[0] {
				u, v := negs[0][k], negs[1][k]
				if u >= numNodes[et.Src] || v >= numNodes[et.Dst] {
					t.Fatalf("call %d: negative (%d, %d) outside its types", call, u, v)
				}
				if srcNodes[pos[0][len(src)+k]] != u || dstNodes[pos[1][len(src)+k]] != v || got.EdgeLabel[len(src)+k] != 0 {
					t.Fatalf("call %d: negative %d mislabelled", call, k)
				}
				if c.link.StrictNegatives && cscHasEdge(d.CSC[e], u, v) {
					t.Fatalf("call %d: strict negative (%d, %d) is an edge", call, u, v)
				}
			}
		}
		if c.link.ExcludeSeedEdges {
			seedPairs := map[[2]int64]bool{}
			for i := range src {
				seedPairs[[2]int64{src[i], dst[i]}] = true
			}
			for j := range got.Row[e] {
				if seedPairs[[2]int64{srcNodes[got.Row[e][j]], dstNodes[got.Col[e][j]]}] {
					t.Fatalf("call %d: excluded seed edge (%d, %d) was sampled", call, srcNodes[got.Row[e][j]], dstNodes[got.Col[e][j]])
				}
			}
			for _, v := range c.link.ReverseEdgeTypes {
				r := edgeIndex(v)
				for j := range got.Row[r] {
					a, b := got.Nodes[edges[r].Src][got.Row[r][j]], got.Nodes[edges[r].Dst][got.Col[r][j]]
					if seedPairs[[2]int64{b, a}] {
						t.Fatalf("call %d: reverse (%d, %d) of a seed edge was sampled in %s", call, a, b, v)
					}
				}
			}
		}
	}
	if sp.Calls() != uint64(len(cases)) {
		t.Fatalf("calls %d, want %d", sp.Calls(), len(cases))
	}
}

// Bad input to Sampler.SampleFromEdges is refused before drawing, naming the input.
func TestHeteroSampleFromEdgesErrors(t *testing.T) {
	d := writeHetero(t, newRand(t))
	ss, err := OpenSession(d.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	fanouts := map[string][]int{}
	for _, et := range d.Manifest.EdgeTypes {
		fanouts[et.Key()] = []int{2}
	}
	sp, err := ss.NewSampler(SampleOptions{Fanouts: fanouts})
	if err != nil {
		t.Fatal(err)
	}
	const writes = "author:writes:paper"
	nAuthor, nInst := d.Manifest.NodeTypes[1].Count, d.Manifest.NodeTypes[2].Count
	for _, c := range []struct {
		edgeType         string
		src, dst, labels []int64
		link             LinkOptions
		is               error
		want             string
	}{
		{"author:reads:book", []int64{0}, []int64{0}, nil, LinkOptions{}, dataset.ErrTypeNotFound, `no edge type "author:reads:book" (it has paper:cites:paper, author:writes:paper`},
		{"author:reads:book", []int64{0}, []int64{0}, nil, LinkOptions{}, dataset.ErrTypeNotFound, `nor node type "book"`},
		{"author:reads:paper", []int64{0}, []int64{0}, nil, LinkOptions{Undirected: true}, ErrInvalidOption, `"author:reads:paper" is from "author" to "paper"`},
		{"author:reads:paper", []int64{nAuthor}, []int64{0}, nil, LinkOptions{}, ErrIDOutOfRange, `src[0] = ` + itoa(nAuthor) + ` is out of range [0, ` + itoa(nAuthor) + `) of node type "author"`},
		{"", []int64{0}, []int64{0}, nil, LinkOptions{}, ErrInvalidOption, `has 4 edge types (paper:cites:paper, author:writes:paper`},
		// src ids are authors: a paper id past the authors is out of range of "author".
		{writes, []int64{0, nAuthor}, []int64{1, 2}, nil, LinkOptions{}, ErrIDOutOfRange, `src[1] = ` + itoa(nAuthor) + ` is out of range [0, ` + itoa(nAuthor) + `) of node type "author"`},
		{"author:affiliated_with:institution", []int64{0}, []int64{nInst}, nil, LinkOptions{}, ErrIDOutOfRange, `dst[0] = ` + itoa(nInst) + ` is out of range [0, ` + itoa(nInst) + `) of node type "institution"`},
		{writes, []int64{0, 1}, []int64{1}, nil, LinkOptions{}, ErrInvalidOption, "2 src ids but 1 dst ids of edge type"},
		{writes, []int64{0, 1}, []int64{1, 2}, []int64{1}, LinkOptions{}, ErrInvalidOption, "1 labels for 2 seed edges"},
		{writes, []int64{0}, []int64{1}, []int64{1}, LinkOptions{Negatives: topology.TripletNegatives}, ErrInvalidOption, "option labels"},
		{writes, []int64{0}, []int64{1}, nil, LinkOptions{Negatives: topology.TripletNegatives, NegAmount: 2.5}, ErrInvalidOption, "neg_amount = 2.5"},
		{writes, []int64{0}, []int64{1}, nil, LinkOptions{Negatives: "pairs"}, ErrInvalidOption, `negatives = "pairs"`},
		{writes, []int64{0}, []int64{1}, nil, LinkOptions{ReverseEdgeTypes: map[string]string{writes: "paper:cites:paper"}}, ErrInvalidOption, `reverse_edge_types["author:writes:paper"] = "paper:cites:paper": want an edge type from "paper" to "author"`},
		{writes, []int64{0}, []int64{1}, nil, LinkOptions{ReverseEdgeTypes: map[string]string{writes: "paper:rev_writes:author"}}, ErrInvalidOption, `"paper:rev_writes:author"`},
		{writes, []int64{0}, []int64{1}, nil, LinkOptions{ReverseEdgeTypes: map[string]string{"x:y:z": writes}}, ErrInvalidOption, `option reverse_edge_types = "x:y:z"`},
	} {
		_, err := sp.SampleFromEdges(c.edgeType, c.src, c.dst, c.labels, c.link)
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SampleFromEdges(%q, %v, %v, %v, %+v): %v, want %v naming %q", c.edgeType, c.src, c.dst, c.labels, c.link, err, c.is, c.want)
		}
	}
	if sp.Calls() != 0 {
		t.Fatalf("failed calls counted: %d", sp.Calls())
	}
}

// Strict negatives that cannot be met — every (a, b) pair of a tiny graph is an edge — fail
// naming the edge type and the density.
func TestHeteroStrictNegativesThatCannotBeMet(t *testing.T) {
	dir := t.TempDir() + "/full"
	_, err := ingest.SynthHetero(ingest.SynthHeteroOptions{
		NodeTypes: []ingest.SynthNodeType{{Name: "a", Nodes: 1, Dim: 2}, {Name: "b", Nodes: 1}},
		EdgeTypes: []ingest.SynthEdgeType{{Src: "a", Rel: "r", Dst: "b", AvgDegree: 3}},
		Out:       dir,
	})
	if err != nil {
		t.Fatal(err)
	}
	ss, err := OpenSession(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	sp, err := ss.NewSampler(SampleOptions{Fanouts: map[string][]int{"a:r:b": {1}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []topology.NegativeMode{topology.BinaryNegatives, topology.TripletNegatives} {
		_, err = sp.SampleFromEdges("a:r:b", []int64{0}, []int64{0}, nil, LinkOptions{Negatives: mode, StrictNegatives: true})
		if err == nil || !strings.Contains(err.Error(), `edge type "a:r:b"`) || !strings.Contains(err.Error(), "no negative") {
			t.Errorf("%s strict negatives of a complete graph: %v, want an error naming the edge type and that there is no negative", mode, err)
		}
		// Without strict, negatives are drawn as PyG draws them (with replacement, may be edges).
		if _, err := sp.SampleFromEdges("a:r:b", []int64{0}, []int64{0}, nil, LinkOptions{Negatives: mode, NegAmount: 4}); err != nil {
			t.Errorf("%s negatives, not strict: %v", mode, err)
		}
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// Seed edges of an edge type the dataset has no edges of, between two of its node types (PyG's
// LinkNeighborLoader takes them; test_hetero_link_neighbor_loader_no_edges in PyG 2.8's
// test/loader/test_link_neighbor_loader.py): the sample is topology.SampleHetero's of their
// distinct endpoints over the dataset's edge types alone, with the dataset's edge types, and
// the label edges point at the seed edges and negatives.
func TestSampleFromEdgesOfATypeWithoutEdges(t *testing.T) {
	rng := newRand(t)
	h0 := newHeteroLinkSetup(t, rng)
	ss, numNodes, edges, fanouts, ref, typeIndex := h0.ss, h0.numNodes, h0.edges, h0.fanouts, h0.ref, h0.typeIndex
	sp, err := ss.NewSampler(SampleOptions{Fanouts: fanouts, Seed: ref.Seed})
	if err != nil {
		t.Fatal(err)
	}
	paper := typeIndex("paper")
	n := 1 + rng.IntN(50)
	src, dst := make([]int64, n), make([]int64, n)
	for i := range src {
		src[i], dst[i] = rng.Int64N(numNodes[paper]), rng.Int64N(numNodes[paper])
	}
	link := LinkOptions{Negatives: topology.BinaryNegatives, StrictNegatives: true, ExcludeSeedEdges: true, Undirected: true}
	got, err := sp.SampleFromEdges("paper:likes:paper", src, dst, nil, link)
	if err != nil {
		t.Fatal(err)
	}
	seeds := slices.Concat(src, dst, got.NegSrc, got.NegDst)
	slices.Sort(seeds)
	seeds = slices.Compact(seeds)
	want, err := topology.SampleHetero(numNodes, edges, paper, seeds, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.HeteroSample, *want) {
		t.Fatalf("the sample around %d seed edges of a type without edges is not SampleHetero's of their %d endpoints", n, len(seeds))
	}
	if len(got.NegSrc) != n || len(got.EdgeLabel) != 2*n {
		t.Fatalf("%d negatives and %d labels for %d seed edges, want %d and %d", len(got.NegSrc), len(got.EdgeLabel), n, n, 2*n)
	}
	nodes := got.Nodes[paper]
	for i := range 2 * n {
		u, v, label := slices.Concat(src, got.NegSrc)[i], slices.Concat(dst, got.NegDst)[i], int64(1)
		if i >= n {
			label = 0
		}
		if nodes[got.EdgeLabelIndex[0][i]] != u || nodes[got.EdgeLabelIndex[1][i]] != v || got.EdgeLabel[i] != label {
			t.Fatalf("label edge %d: (%d, %d) label %d, want (%d, %d) label %d", i, nodes[got.EdgeLabelIndex[0][i]], nodes[got.EdgeLabelIndex[1][i]], got.EdgeLabel[i], u, v, label)
		}
	}

	// Between two node types, with triplets: the endpoints of each type lead its nodes, sorted.
	inst, author := typeIndex("institution"), typeIndex("author")
	isrc, idst := []int64{rng.Int64N(numNodes[inst]), 0}, []int64{rng.Int64N(numNodes[author]), numNodes[author] - 1}
	h, err := sp.SampleFromEdges("institution:employs:author", isrc, idst, nil, LinkOptions{Negatives: topology.TripletNegatives, NegAmount: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Row) != len(edges) || len(h.EdgesPerHop) != len(edges) || len(h.DstNegIndex) != 4 {
		t.Fatalf("%d edge types, %d triplet negatives; want the dataset's %d and 4", len(h.Row), len(h.DstNegIndex), len(edges))
	}
	for i := range isrc {
		if h.Nodes[inst][h.SrcIndex[i]] != isrc[i] || h.Nodes[author][h.DstPosIndex[i]] != idst[i] {
			t.Fatalf("seed edge %d (%d, %d) is labelled (%d, %d)", i, isrc[i], idst[i], h.Nodes[inst][h.SrcIndex[i]], h.Nodes[author][h.DstPosIndex[i]])
		}
	}
	if sp.Calls() != 2 {
		t.Fatalf("calls %d, want 2", sp.Calls())
	}
}
