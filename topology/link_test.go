package topology

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// linkTypes are the edge types of the link test graphs: a self-relation (0 -> 0, its own reverse),
// two pairs of mutual reverses (1 -> 0 and 0 -> 1, 2 -> 1 and 1 -> 2), and 0 -> 2 with none.
var linkTypes = []EdgeGraph{{Src: 0, Dst: 0}, {Src: 1, Dst: 0}, {Src: 0, Dst: 1}, {Src: 2, Dst: 1}, {Src: 1, Dst: 2}, {Src: 0, Dst: 2}}

var linkReverse = map[int]int{0: 0, 1: 2, 2: 1, 3: 4, 4: 3}

var linkFanoutCases = [][][]int{
	{{5, 3}, {2, 2}, {-1, 1}, {3, 3}, {4, 2}, {2, 1}},
	{{-1}, {-1}, {-1}, {-1}, {-1}, {-1}},
	{{0, 4}, {3, 0}, {2, 2}, {0, -1}, {5, 0}, {1, 1}},
}

// linkCase is one batch of seed edges and how to sample it.
type linkCase struct {
	seedEdgeType     int
	src, dst, labels []int64
	opt              HeteroLinkSampleOptions
}

func (c linkCase) String() string {
	return fmt.Sprintf("seed edge type %d, %d seed edges, labels %v, fanouts %v, replace %v, seed %d, NodesOnly %v, negatives %q x %v, strict %v, exclude %v",
		c.seedEdgeType, len(c.src), c.labels != nil, c.opt.Fanouts, c.opt.Replace, c.opt.Seed, c.opt.NodesOnly, c.opt.Negatives, c.opt.NegAmount, c.opt.StrictNegatives, c.opt.ExcludeSeedEdges)
}

// edgeSets returns, per edge type of h, its edges as (src, dst) pairs.
func (h heteroGraph) edgeSets() []map[[2]int64]bool {
	sets := make([]map[[2]int64]bool, len(h.edges))
	for e, el := range h.edges {
		sets[e] = map[[2]int64]bool{}
		for i := range el.src {
			sets[e][[2]int64{el.src[i], el.dst[i]}] = true
		}
	}
	return sets
}

// seedEdgesFor draws count seed edges of edge type e: mostly edges of the graph, some other
// pairs, and a repeat.
func seedEdgesFor(r *rand.Rand, h heteroGraph, e, count int) (src, dst []int64) {
	el, et := h.edges[e], h.types[e]
	for range count {
		if r.IntN(5) == 0 {
			src, dst = append(src, r.Int64N(h.numNodes[et.Src])), append(dst, r.Int64N(h.numNodes[et.Dst]))
			continue
		}
		i := r.IntN(len(el.src))
		src, dst = append(src, el.src[i]), append(dst, el.dst[i])
	}
	if count > 1 {
		src, dst = append(src, src[0]), append(dst, dst[0])
	}
	return src, dst
}

// refLink is SampleHeteroFromEdges written plainly from its contract: each negative drawn on its
// own until it is no edge, the seeds sorted with a map, the sample by refSampleHeteroFrom.
func refLink(h heteroGraph, indexed []bool, c linkCase) *HeteroLinkSample {
	et := h.types[c.seedEdgeType]
	sets := h.edgeSets()
	positive := map[[2]int64]bool{}
	for i := range c.src {
		positive[[2]int64{c.src[i], c.dst[i]}] = true
	}
	amount := c.opt.NegAmount
	if amount == 0 {
		amount = 1
	}
	var lk LinkLabels
	seed := NegativeSeed(c.opt.Seed)
	nSrc, nDst := uint64(h.numNodes[et.Src]), uint64(h.numNodes[et.Dst])
	ok := func(p [2]int64) bool { return !sets[c.seedEdgeType][p] && !positive[p] }
	// free lists the pairs a negative may take after MaxNegativeDraws draws: of source u, or of
	// every source when u < 0, ascending.
	free := func(u int64) (pairs [][2]int64) {
		for s := range int64(nSrc) {
			for d := range int64(nDst) {
				if (u < 0 || s == u) && ok([2]int64{s, d}) {
					pairs = append(pairs, [2]int64{s, d})
				}
			}
		}
		return pairs
	}
	switch c.opt.Negatives {
	case BinaryNegatives:
		for k := range int(math.Ceil(float64(len(c.src)) * amount)) {
			rs, rd := nodeRNG(seed, 0, int64(k)), nodeRNG(seed, 1, int64(k))
			var p [2]int64
			for draw := 1; ; draw++ {
				p = [2]int64{int64(rs.below(nSrc)), int64(rd.below(nDst))}
				if !c.opt.StrictNegatives || ok(p) {
					break
				}
				if draw == MaxNegativeDraws {
					pairs := free(-1)
					p = pairs[rd.below(uint64(len(pairs)))]
					break
				}
			}
			lk.NegSrc, lk.NegDst = append(lk.NegSrc, p[0]), append(lk.NegDst, p[1])
		}
	case TripletNegatives:
		for i := range c.src {
			for j := range int(amount) {
				rd := nodeRNG(seed, 1, int64(i*int(amount)+j))
				var p [2]int64
				for draw := 1; ; draw++ {
					p = [2]int64{c.src[i], int64(rd.below(nDst))}
					if !c.opt.StrictNegatives || ok(p) {
						break
					}
					if draw == MaxNegativeDraws {
						pairs := free(c.src[i])
						p = pairs[rd.below(uint64(len(pairs)))]
						break
					}
				}
				lk.NegDst = append(lk.NegDst, p[1])
			}
		}
	}
	srcEnds, dstEnds := slices.Concat(c.src, lk.NegSrc), slices.Concat(c.dst, lk.NegDst)
	typeSeeds := make([][]int64, len(h.numNodes))
	distinct := make([]map[int64]bool, len(h.numNodes))
	for t := range distinct {
		distinct[t] = map[int64]bool{}
	}
	for _, v := range srcEnds {
		distinct[et.Src][v] = true
	}
	for _, v := range dstEnds {
		distinct[et.Dst][v] = true
	}
	index := make([]map[int64]int64, len(h.numNodes))
	for t := range distinct {
		for v := range distinct[t] {
			typeSeeds[t] = append(typeSeeds[t], v)
		}
		slices.Sort(typeSeeds[t])
		index[t] = map[int64]int64{}
		for i, v := range typeSeeds[t] {
			index[t][v] = int64(i)
		}
	}
	locals := func(t int, ids []int64) []int64 {
		var out []int64
		for _, v := range ids {
			out = append(out, index[t][v])
		}
		return out
	}
	var excluded func(e int, src, dst int64) bool
	if c.opt.ExcludeSeedEdges {
		rev, hasRev := c.opt.ReverseEdgeTypes[c.seedEdgeType]
		excluded = func(e int, s, d int64) bool {
			return e == c.seedEdgeType && positive[[2]int64{s, d}] || hasRev && e == rev && positive[[2]int64{d, s}]
		}
	}
	s := refSampleHeteroFrom(h, indexed, typeSeeds, c.opt.HeteroSampleOptions, excluded, nil)
	if c.opt.Negatives == TripletNegatives {
		lk.SrcIndex, lk.DstPosIndex, lk.DstNegIndex = locals(et.Src, c.src), locals(et.Dst, c.dst), locals(et.Dst, lk.NegDst)
	} else {
		lk.EdgeLabelIndex = [2][]int64{locals(et.Src, srcEnds), locals(et.Dst, dstEnds)}
		switch {
		case c.opt.Negatives == BinaryNegatives:
			for i := range c.src {
				if c.labels != nil {
					lk.EdgeLabel = append(lk.EdgeLabel, c.labels[i])
				} else {
					lk.EdgeLabel = append(lk.EdgeLabel, 1)
				}
			}
			for range lk.NegDst {
				lk.EdgeLabel = append(lk.EdgeLabel, 0)
			}
		default:
			lk.EdgeLabel = c.labels
		}
	}
	return &HeteroLinkSample{HeteroSample: *s, LinkLabels: lk}
}

// diffLinkLabels describes the first difference between two LinkLabels (nil and empty alike), or
// returns "".
func diffLinkLabels(got, want LinkLabels) string {
	for _, f := range []struct {
		name      string
		got, want []int64
	}{
		{"EdgeLabelIndex[0]", got.EdgeLabelIndex[0], want.EdgeLabelIndex[0]}, {"EdgeLabelIndex[1]", got.EdgeLabelIndex[1], want.EdgeLabelIndex[1]},
		{"EdgeLabel", got.EdgeLabel, want.EdgeLabel}, {"SrcIndex", got.SrcIndex, want.SrcIndex},
		{"DstPosIndex", got.DstPosIndex, want.DstPosIndex}, {"DstNegIndex", got.DstNegIndex, want.DstNegIndex},
		{"NegSrc", got.NegSrc, want.NegSrc}, {"NegDst", got.NegDst, want.NegDst},
	} {
		if !slices.Equal(f.got, f.want) {
			return fmt.Sprintf("%s = %v, want %v", f.name, brief(f.got), brief(f.want))
		}
	}
	return ""
}

// checkLinkSample checks what the contract promises of s beyond matching the reference: each
// label edge maps back to its input pair, negatives lie in their types, strict negatives are no
// edges, and excluded edges appear neither by pair nor by edge id. It returns how many seed edges
// (or reverses) the sample holds.
func checkLinkSample(t *testing.T, name string, h heteroGraph, indexed []bool, c linkCase, s *HeteroLinkSample) (seedEdgesSampled int) {
	t.Helper()
	et := h.types[c.seedEdgeType]
	nodesSrc, nodesDst := s.Nodes[et.Src], s.Nodes[et.Dst]
	at := func(nodes []int64, l int64) int64 {
		if l < 0 || l >= int64(len(nodes)) {
			t.Fatalf("%s: local id %d outside the %d nodes of its type", name, l, len(nodes))
		}
		return nodes[l]
	}
	if c.opt.Negatives == TripletNegatives {
		amount := int(max(c.opt.NegAmount, 1))
		if len(s.SrcIndex) != len(c.src) || len(s.DstPosIndex) != len(c.src) || len(s.DstNegIndex) != len(c.src)*amount || s.NegSrc != nil || s.EdgeLabelIndex[0] != nil || s.EdgeLabel != nil {
			t.Fatalf("%s: triplet layout: %d src, %d dst pos, %d dst neg indices, NegSrc %v, EdgeLabelIndex %v, EdgeLabel %v for %d seed edges x %d",
				name, len(s.SrcIndex), len(s.DstPosIndex), len(s.DstNegIndex), s.NegSrc, s.EdgeLabelIndex, s.EdgeLabel, len(c.src), amount)
		}
		for i := range c.src {
			if at(nodesSrc, s.SrcIndex[i]) != c.src[i] || at(nodesDst, s.DstPosIndex[i]) != c.dst[i] {
				t.Fatalf("%s: seed edge %d (%d, %d) maps to (%d, %d)", name, i, c.src[i], c.dst[i], at(nodesSrc, s.SrcIndex[i]), at(nodesDst, s.DstPosIndex[i]))
			}
			for j := range amount {
				if k := i*amount + j; at(nodesDst, s.DstNegIndex[k]) != s.NegDst[k] {
					t.Fatalf("%s: DstNegIndex[%d] maps to %d, NegDst[%d] = %d", name, k, at(nodesDst, s.DstNegIndex[k]), k, s.NegDst[k])
				}
			}
		}
	} else {
		srcEnds, dstEnds := slices.Concat(c.src, s.NegSrc), slices.Concat(c.dst, s.NegDst)
		if len(s.EdgeLabelIndex[0]) != len(srcEnds) || len(s.EdgeLabelIndex[1]) != len(dstEnds) || len(s.NegSrc) != len(s.NegDst) {
			t.Fatalf("%s: %d and %d label edge ends, %d and %d negative ends, for %d seed edges", name, len(s.EdgeLabelIndex[0]), len(s.EdgeLabelIndex[1]), len(s.NegSrc), len(s.NegDst), len(c.src))
		}
		for i := range srcEnds {
			if at(nodesSrc, s.EdgeLabelIndex[0][i]) != srcEnds[i] || at(nodesDst, s.EdgeLabelIndex[1][i]) != dstEnds[i] {
				t.Fatalf("%s: label edge %d (%d, %d) maps to (%d, %d)", name, i, srcEnds[i], dstEnds[i], at(nodesSrc, s.EdgeLabelIndex[0][i]), at(nodesDst, s.EdgeLabelIndex[1][i]))
			}
		}
		amount := c.opt.NegAmount
		if amount == 0 {
			amount = 1
		}
		if want := int(math.Ceil(float64(len(c.src)) * amount)); c.opt.Negatives == BinaryNegatives && len(s.NegSrc) != want {
			t.Fatalf("%s: %d negatives, want %d", name, len(s.NegSrc), want)
		}
	}
	sets := h.edgeSets()
	positive := map[[2]int64]bool{}
	for i := range c.src {
		positive[[2]int64{c.src[i], c.dst[i]}] = true
	}
	for k, v := range s.NegDst {
		var u int64
		if s.NegSrc != nil {
			u = s.NegSrc[k]
		} else { // a triplet's: its seed edge's source
			u = c.src[k/(len(s.NegDst)/len(c.src))]
		}
		if u < 0 || u >= h.numNodes[et.Src] || v < 0 || v >= h.numNodes[et.Dst] {
			t.Fatalf("%s: negative %d (%d, %d) outside types %d, %d of %d, %d nodes", name, k, u, v, et.Src, et.Dst, h.numNodes[et.Src], h.numNodes[et.Dst])
		}
		if p := [2]int64{u, v}; c.opt.StrictNegatives && (sets[c.seedEdgeType][p] || positive[p]) {
			t.Fatalf("%s: strict negative %d (%d, %d) is a positive edge", name, k, u, v)
		}
	}

	// The seed edges and their reverses, by pair and by edge id.
	rev, hasRev := c.opt.ReverseEdgeTypes[c.seedEdgeType]
	for e := range h.types {
		isSeedType, isRevType := e == c.seedEdgeType, hasRev && e == rev
		if !isSeedType && !isRevType || c.opt.NodesOnly {
			continue
		}
		lists := h.edges[e].lists()
		var first int64
		ids := map[int64]bool{}
		for v, l := range lists {
			for p, u := range l {
				if isSeedType && positive[[2]int64{u, int64(v)}] || isRevType && positive[[2]int64{int64(v), u}] {
					ids[first+int64(p)] = true
				}
			}
			first += int64(len(l))
		}
		for i := range s.Row[e] {
			u, v := s.Nodes[h.types[e].Src][s.Row[e][i]], s.Nodes[h.types[e].Dst][s.Col[e][i]]
			byPair := isSeedType && positive[[2]int64{u, v}] || isRevType && positive[[2]int64{v, u}]
			byID := indexed[e] && ids[s.EdgeIDs[e][i]]
			if byPair != byID && indexed[e] {
				t.Fatalf("%s: edge type %d, sampled edge (%d, %d) id %d: excluded by pair %v, by id %v", name, e, u, v, s.EdgeIDs[e][i], byPair, byID)
			}
			if byPair {
				if c.opt.ExcludeSeedEdges {
					t.Fatalf("%s: edge type %d holds the excluded edge (%d, %d)", name, e, u, v)
				}
				seedEdgesSampled++
			}
		}
	}
	return seedEdgesSampled
}

// TestSampleHeteroFromEdgesMatchesReference compares SampleHeteroFromEdges with refLink on random
// 3-node-type graphs, every seed edge type, every negative mode, strict or not, exclusion with
// reverses or not, Workers 1 and 4, memory and disk topology, and checks the contract's promises.
func TestSampleHeteroFromEdgesMatchesReference(t *testing.T) {
	r := testRand(t)
	sampledWithout := 0
	for g := range 2 {
		h := randomHeteroOf(r, linkTypes)
		plain := make([]bool, len(h.types))
		indexed := make([]bool, len(h.types))
		for e := range plain {
			plain[e] = r.IntN(3) == 0
			indexed[e] = !plain[e]
		}
		mem, disk := h.graphs(t, plain)
		for _, fanouts := range linkFanoutCases {
			for seedEdgeType := range h.types {
				for _, neg := range []struct {
					mode   NegativeMode
					amount float64
				}{{NoNegatives, 0}, {BinaryNegatives, 0}, {BinaryNegatives, 0.4}, {BinaryNegatives, 2.5}, {TripletNegatives, 0}, {TripletNegatives, 3}} {
					c := linkCase{seedEdgeType: seedEdgeType}
					c.src, c.dst = seedEdgesFor(r, h, seedEdgeType, r.IntN(150))
					if neg.mode != TripletNegatives && r.IntN(2) == 0 {
						c.labels = make([]int64, len(c.src))
						for i := range c.labels {
							c.labels[i] = 1 + r.Int64N(3)
						}
					}
					c.opt = HeteroLinkSampleOptions{
						HeteroSampleOptions: HeteroSampleOptions{Fanouts: fanouts, Replace: r.IntN(2) == 0, Seed: r.Uint64(), NodesOnly: r.IntN(5) == 0},
						LinkOptions:         LinkOptions{Negatives: neg.mode, NegAmount: neg.amount, StrictNegatives: r.IntN(2) == 0, ExcludeSeedEdges: r.IntN(2) == 0},
					}
					if r.IntN(3) > 0 {
						c.opt.ReverseEdgeTypes = linkReverse
					}
					name := fmt.Sprintf("graph %d, %v", g, c)
					want := refLink(h, indexed, c)
					var first *HeteroLinkSample
					for _, workers := range []int{1, 4} {
						c.opt.Workers = workers
						for i, edges := range [][]EdgeGraph{mem, disk} {
							got, err := SampleHeteroFromEdges(h.numNodes, edges, seedEdgeType, c.src, c.dst, c.labels, c.opt)
							if err != nil {
								t.Fatalf("%s: %v", name, err)
							}
							if d := diffHetero(&got.HeteroSample, &want.HeteroSample); d != "" {
								t.Fatalf("%s, Workers %d, disk %v: %s", name, workers, i == 1, d)
							}
							if d := diffLinkLabels(got.LinkLabels, want.LinkLabels); d != "" {
								t.Fatalf("%s, Workers %d, disk %v: %s", name, workers, i == 1, d)
							}
							if first == nil {
								first = got
								if n := checkLinkSample(t, name, h, indexed, c, got); !c.opt.ExcludeSeedEdges {
									sampledWithout += n
								}
							} else if !reflect.DeepEqual(got, first) {
								t.Fatalf("%s, Workers %d, disk %v: not the sample of Workers 1 from memory", name, workers, i == 1)
							}
						}
					}

					// With nothing excluded the node sample is SampleHetero's from the seed nodes.
					if et := h.types[seedEdgeType]; !c.opt.ExcludeSeedEdges && et.Src == et.Dst {
						seeds := slices.Concat(c.src, c.dst, first.NegSrc, first.NegDst)
						slices.Sort(seeds)
						plainSample, err := SampleHetero(h.numNodes, mem, et.Src, slices.Compact(seeds), c.opt.HeteroSampleOptions)
						if err != nil {
							t.Fatal(err)
						}
						if d := diffHetero(&first.HeteroSample, plainSample); d != "" {
							t.Fatalf("%s: not SampleHetero's sample from the seed nodes: %s", name, d)
						}
					}
				}
			}
		}
	}
	if sampledWithout == 0 {
		t.Fatal("no sample without exclusion held a seed edge; the exclusion checks prove nothing")
	}
}

// TestSampleFromEdgesHomogeneous: on one graph, SampleFromEdges is the one-type case of the
// reference, and with nothing excluded its sample is SampleNeighbors' from the sorted distinct
// endpoints.
func TestSampleFromEdgesHomogeneous(t *testing.T) {
	r := testRand(t)
	for _, el := range randomGraphs(r) {
		g := el.csc(t)
		h := heteroGraph{numNodes: []int64{el.numNodes}, types: []EdgeGraph{{}}, edges: []edgeList{el}}
		for _, fanouts := range fanoutCases {
			for _, mode := range []NegativeMode{NoNegatives, BinaryNegatives, TripletNegatives} {
				c := linkCase{}
				c.src, c.dst = seedEdgesFor(r, h, 0, r.IntN(300))
				c.opt.Fanouts, c.opt.Replace, c.opt.Seed = [][]int{fanouts}, r.IntN(2) == 0, r.Uint64()
				c.opt.LinkOptions = LinkOptions{Negatives: mode, NegAmount: float64(1 + r.IntN(3)), StrictNegatives: r.IntN(2) == 0, ExcludeSeedEdges: r.IntN(2) == 0}
				if r.IntN(2) == 0 {
					c.opt.ReverseEdgeTypes = map[int]int{0: 0}
				}
				name := fmt.Sprintf("%s, %v", el.name, c)
				opt := LinkSampleOptions{
					SampleOptions: SampleOptions{Fanouts: fanouts, Replace: c.opt.Replace, Seed: c.opt.Seed, Workers: 1 + r.IntN(4)},
					LinkOptions:   c.opt.LinkOptions,
				}
				got, err := SampleFromEdges(g, c.src, c.dst, nil, opt)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				want := refLink(h, []bool{true}, c)
				one := &HeteroSample{
					Nodes: [][]int64{got.Nodes}, NodesPerHop: [][]int64{got.NodesPerHop},
					Row: [][]int64{got.Row}, Col: [][]int64{got.Col}, EdgeIDs: [][]int64{got.EdgeIDs}, EdgesPerHop: [][]int64{got.EdgesPerHop},
				}
				if d := diffHetero(one, &want.HeteroSample); d != "" {
					t.Fatalf("%s: %s", name, d)
				}
				if d := diffLinkLabels(got.LinkLabels, want.LinkLabels); d != "" {
					t.Fatalf("%s: %s", name, d)
				}
				checkLinkSample(t, name, h, []bool{true}, c, &HeteroLinkSample{HeteroSample: *one, LinkLabels: got.LinkLabels})
				if !c.opt.ExcludeSeedEdges {
					seeds := slices.Concat(c.src, c.dst, got.NegSrc, got.NegDst)
					slices.Sort(seeds)
					plainSample, err := SampleNeighbors(g, slices.Compact(seeds), opt.SampleOptions)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(&got.Sample, plainSample) {
						t.Fatalf("%s: not SampleNeighbors' sample from the seed nodes", name)
					}
				}
			}
		}
	}
}

// TestSampleFromEdgesSmallExample pins PyG's layout on a graph small enough to check by hand.
func TestSampleFromEdgesSmallExample(t *testing.T) {
	// 0 <- 1, 0 <- 2, 1 <- 2, 3 <- 0, 2 <- 3 (in-lists: 0: [1 2], 1: [2], 2: [3], 3: [0]).
	g, err := FromEdges(5, []int64{1, 2, 2, 0, 3}, []int64{0, 0, 1, 3, 2})
	if err != nil {
		t.Fatal(err)
	}
	opt := LinkSampleOptions{SampleOptions: SampleOptions{Fanouts: []int{-1}}}
	s, err := SampleFromEdges(g, []int64{2, 3}, []int64{0, 2}, []int64{7, 8}, opt)
	if err != nil {
		t.Fatal(err)
	}
	// Seeds: unique(2, 3, 0, 2) = [0 2 3]; label edges (2, 0), (3, 2) in local ids.
	if !slices.Equal(s.Nodes[:3], []int64{0, 2, 3}) || !slices.Equal(s.EdgeLabelIndex[0], []int64{1, 2}) || !slices.Equal(s.EdgeLabelIndex[1], []int64{0, 1}) || !slices.Equal(s.EdgeLabel, []int64{7, 8}) {
		t.Fatalf("Nodes %v, EdgeLabelIndex %v, EdgeLabel %v; want seeds [0 2 3], [[1 2] [0 1]], [7 8]", s.Nodes, s.EdgeLabelIndex, s.EdgeLabel)
	}
	// Every in-edge of the seeds: 0 <- 1, 0 <- 2; 2 <- 3; 3 <- 0. Node 1 is new.
	if !slices.Equal(s.Nodes, []int64{0, 2, 3, 1}) || !slices.Equal(s.Row, []int64{3, 1, 2, 0}) || !slices.Equal(s.Col, []int64{0, 0, 1, 2}) || !slices.Equal(s.EdgeIDs, []int64{0, 1, 3, 4}) {
		t.Fatalf("Nodes %v, Row %v, Col %v, EdgeIDs %v", s.Nodes, s.Row, s.Col, s.EdgeIDs)
	}

	// Excluding the seed edges and their reverses drops 0 <- 2 (a seed edge) and 3 <- 2's reverse 2 <- 3.
	opt.ExcludeSeedEdges, opt.ReverseEdgeTypes = true, map[int]int{0: 0}
	if s, err = SampleFromEdges(g, []int64{2, 3}, []int64{0, 2}, nil, opt); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Nodes, []int64{0, 2, 3, 1}) || !slices.Equal(s.Row, []int64{3, 0}) || !slices.Equal(s.Col, []int64{0, 2}) || !slices.Equal(s.EdgeIDs, []int64{0, 4}) || !slices.Equal(s.EdgesPerHop, []int64{2}) || s.EdgeLabel != nil {
		t.Fatalf("excluded: Nodes %v, Row %v, Col %v, EdgeIDs %v, EdgesPerHop %v, EdgeLabel %v", s.Nodes, s.Row, s.Col, s.EdgeIDs, s.EdgesPerHop, s.EdgeLabel)
	}

	// Binary negatives: 2 × 1.5 = 3 pairs after the seed edges, labels 1 (none given) then 0.
	opt.ExcludeSeedEdges, opt.Negatives, opt.NegAmount = false, BinaryNegatives, 1.5
	if s, err = SampleFromEdges(g, []int64{2, 3}, []int64{0, 2}, nil, opt); err != nil {
		t.Fatal(err)
	}
	if len(s.NegSrc) != 3 || !slices.Equal(s.EdgeLabel, []int64{1, 1, 0, 0, 0}) || len(s.EdgeLabelIndex[0]) != 5 {
		t.Fatalf("binary: NegSrc %v, EdgeLabel %v, EdgeLabelIndex %v", s.NegSrc, s.EdgeLabel, s.EdgeLabelIndex)
	}
	// The same Seed draws the same negatives; another draws others (on 5 nodes, almost surely).
	again, _ := SampleFromEdges(g, []int64{2, 3}, []int64{0, 2}, nil, opt)
	if !reflect.DeepEqual(s, again) {
		t.Fatal("the same Seed gave another sample")
	}
	opt.Seed = 99
	other, _ := SampleFromEdges(g, []int64{2, 3}, []int64{0, 2}, nil, opt)
	if slices.Equal(other.NegSrc, s.NegSrc) && slices.Equal(other.NegDst, s.NegDst) {
		t.Fatalf("Seed 0 and 99 drew the same negatives %v, %v", s.NegSrc, s.NegDst)
	}
}

// TestStrictNegativesDense: on graphs so dense that MaxNegativeDraws draws often find only edges,
// strict negatives still are no edges and match the reference's fallback; where no pair is free
// the call fails naming the numbers.
func TestStrictNegativesDense(t *testing.T) {
	r := testRand(t)
	// 4 sources, 300 destinations; each source is adjacent to all but 3 (one draw in 100 is free).
	const nSrc, nDst = 4, 300
	el := edgeList{name: "dense", numNodes: nDst}
	for u := range int64(nSrc) {
		freeDst := map[int64]bool{r.Int64N(nDst): true, r.Int64N(nDst): true, r.Int64N(nDst): true}
		for d := range int64(nDst) {
			if !freeDst[d] {
				el.src, el.dst = append(el.src, u), append(el.dst, d)
			}
		}
	}
	h := heteroGraph{numNodes: []int64{nDst, nSrc}, types: []EdgeGraph{{Src: 1, Dst: 0}}, edges: []edgeList{el}}
	mem, disk := h.graphs(t, []bool{false})
	for _, mode := range []NegativeMode{BinaryNegatives, TripletNegatives} {
		for range 5 {
			c := linkCase{src: []int64{r.Int64N(nSrc), r.Int64N(nSrc)}, dst: []int64{r.Int64N(nDst), r.Int64N(nDst)}}
			c.opt = HeteroLinkSampleOptions{
				HeteroSampleOptions: HeteroSampleOptions{Fanouts: [][]int{{2}}, Seed: r.Uint64()},
				LinkOptions:         LinkOptions{Negatives: mode, NegAmount: 20, StrictNegatives: true},
			}
			want := refLink(h, []bool{true}, c)
			for i, edges := range [][]EdgeGraph{mem, disk} {
				got, err := SampleHeteroFromEdges(h.numNodes, edges, 0, c.src, c.dst, nil, c.opt)
				if err != nil {
					t.Fatalf("%v: %v", c, err)
				}
				if d := diffLinkLabels(got.LinkLabels, want.LinkLabels); d != "" {
					t.Fatalf("%v, disk %v: %s", c, i == 1, d)
				}
				checkLinkSample(t, c.String(), h, []bool{true}, c, got)
			}
		}
	}

	// 3 nodes, every pair an edge but (2, 1).
	var src, dst []int64
	for u := range int64(3) {
		for v := range int64(3) {
			if u != 2 || v != 1 {
				src, dst = append(src, u), append(dst, v)
			}
		}
	}
	g := must(FromEdges(3, src, dst))
	opt := LinkSampleOptions{SampleOptions: SampleOptions{Fanouts: []int{1}}, LinkOptions: LinkOptions{Negatives: BinaryNegatives, NegAmount: 4, StrictNegatives: true}}
	s, err := SampleFromEdges(g, []int64{0}, []int64{0}, nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.NegSrc, []int64{2, 2, 2, 2}) || !slices.Equal(s.NegDst, []int64{1, 1, 1, 1}) {
		t.Fatalf("binary negatives %v, %v; want (2, 1), the one non-edge, four times", s.NegSrc, s.NegDst)
	}
	opt.Negatives = TripletNegatives
	if s, err = SampleFromEdges(g, []int64{2}, []int64{0}, nil, opt); err != nil || !slices.Equal(s.NegDst, []int64{1, 1, 1, 1}) {
		t.Fatalf("triplet negatives of source 2: %v, %v; want 1 four times", s, err)
	}
	want := "topology: strict negatives of edges[0] (0 -> 0, 8 edges among 3 × 3 node pairs): negative 0: source 0 is adjacent to all 3 destinations, so it has no negative"
	if _, err := SampleFromEdges(g, []int64{0}, []int64{0}, nil, opt); err == nil || err.Error() != want {
		t.Fatalf("triplet negatives of source 0, adjacent to every node: error %v, want %q", err, want)
	}
	opt.Negatives = BinaryNegatives
	want = "topology: strict negatives of edges[0] (0 -> 0, 8 edges among 3 × 3 node pairs): every one of the 3 × 3 pairs is an edge or a seed edge, so there is no negative"
	if _, err := SampleFromEdges(g, []int64{2}, []int64{1}, nil, opt); err == nil || err.Error() != want {
		t.Fatalf("binary negatives with the one non-edge a seed edge: error %v, want %q", err, want)
	}
}

func TestSampleFromEdgesErrors(t *testing.T) {
	g := must(FromBipartiteEdges(3, 5, []int64{1, 2}, []int64{0, 0})) // 5 nodes of type 0, neighbors of type 1 (3 nodes)
	back := must(FromBipartiteEdges(5, 3, []int64{0}, []int64{1}))
	numNodes := []int64{5, 3}
	edges := []EdgeGraph{{Src: 1, Dst: 0, G: g}, {Src: 0, Dst: 1, G: back}}
	opt := func(l LinkOptions) HeteroLinkSampleOptions {
		return HeteroLinkSampleOptions{HeteroSampleOptions: HeteroSampleOptions{Fanouts: [][]int{{1}, {1}}}, LinkOptions: l}
	}
	ioErr := errors.New("disk on fire")
	for _, c := range []struct {
		numNodes         []int64
		seedEdgeType     int
		src, dst, labels []int64
		opt              HeteroLinkSampleOptions
		want             string
	}{
		{numNodes, 2, nil, nil, nil, opt(LinkOptions{}), "topology: seedEdgeType = 2 is not an edge type in [0, 2)"},
		{numNodes, 0, []int64{0, 3}, []int64{0, 0}, nil, opt(LinkOptions{}), "topology: src[1] = 3 is not a node id of edges[0].Src type 1 in [0, 3)"},
		{numNodes, 0, []int64{0, 2}, []int64{0, -1}, nil, opt(LinkOptions{}), "topology: dst[1] = -1 is not a node id of edges[0].Dst type 0 in [0, 5)"},
		{numNodes, 1, []int64{4}, []int64{3}, nil, opt(LinkOptions{}), "topology: dst[0] = 3 is not a node id of edges[1].Dst type 1 in [0, 3)"},
		{numNodes, 0, []int64{0}, []int64{0, 1}, nil, opt(LinkOptions{}), "topology: 1 src ids but 2 dst ids; give one of each per seed edge"},
		{numNodes, 0, []int64{0}, []int64{0}, []int64{1, 1}, opt(LinkOptions{}), "topology: 2 labels for 1 seed edges; give one label per seed edge or none"},
		{numNodes, 0, []int64{0}, []int64{0}, nil, opt(LinkOptions{Negatives: "pairs"}), `topology: Negatives = "pairs"; want "", "binary" or "triplet"`},
		{numNodes, 0, []int64{0}, []int64{0}, nil, opt(LinkOptions{Negatives: BinaryNegatives, NegAmount: -1}), "topology: NegAmount = -1; binary negatives want a ratio > 0"},
		{numNodes, 0, []int64{0}, []int64{0}, nil, opt(LinkOptions{Negatives: BinaryNegatives, NegAmount: math.NaN()}), "topology: NegAmount = NaN; binary negatives want a ratio > 0"},
		{numNodes, 0, []int64{0}, []int64{0}, nil, opt(LinkOptions{Negatives: TripletNegatives, NegAmount: 1.5}), "topology: NegAmount = 1.5; triplet negatives want a whole number >= 1 of negatives per seed edge"},
		{numNodes, 0, []int64{0}, []int64{0}, []int64{1}, opt(LinkOptions{Negatives: TripletNegatives}), "topology: 1 labels with triplet negatives; triplet samples take no labels (SrcIndex, DstPosIndex and DstNegIndex tell positives from negatives)"},
		{numNodes, 0, []int64{0}, []int64{0}, nil, opt(LinkOptions{ReverseEdgeTypes: map[int]int{0: 2}}), "topology: ReverseEdgeTypes[0] = 2 is not an edge type in [0, 2)"},
		{numNodes, 0, []int64{0}, []int64{0}, nil, opt(LinkOptions{ReverseEdgeTypes: map[int]int{-1: 0}}), "topology: ReverseEdgeTypes has key -1, not an edge type in [0, 2)"},
		{numNodes, 0, []int64{0}, []int64{0}, nil, opt(LinkOptions{ReverseEdgeTypes: map[int]int{0: 0}}), "topology: ReverseEdgeTypes[0] = 0, but edge type 0 goes 1 -> 0 and 0 goes 1 -> 0; a reverse type swaps Src and Dst"},
		{[]int64{5, -1}, 0, []int64{0}, []int64{0}, nil, opt(LinkOptions{}), "topology: numNodes[1] = -1 is negative"},
		{numNodes, 0, []int64{0}, []int64{0}, nil, HeteroLinkSampleOptions{}, "topology: 0 rows of Fanouts for 2 edge types; give one row per edge type"},
	} {
		_, err := SampleHeteroFromEdges(c.numNodes, edges, c.seedEdgeType, c.src, c.dst, c.labels, c.opt)
		if err == nil || err.Error() != c.want {
			t.Errorf("SampleHeteroFromEdges(%v, type %d, %v, %v, %v, %+v) error = %v, want %q", c.numNodes, c.seedEdgeType, c.src, c.dst, c.labels, c.opt.LinkOptions, err, c.want)
		}
	}

	// Negatives are bounded as the sample's edges are (MaxEdges, default DefaultMaxEdges): a
	// request for more is refused before anything is allocated (issue 43: amount=1e9 died of OOM).
	for _, c := range []struct {
		l        LinkOptions
		maxEdges int64
		want     string
	}{
		{LinkOptions{Negatives: BinaryNegatives, NegAmount: 1e9}, 0, "topology: NegAmount = 1e+09 asks 1000000000 negatives of 1 seed edges, more than the sample's bound of 134217728"},
		{LinkOptions{Negatives: TripletNegatives, NegAmount: 1e8}, 1e7, "topology: NegAmount = 1e+08 asks 100000000 negatives of 1 seed edges, more than the sample's bound of 10000000"},
		{LinkOptions{Negatives: BinaryNegatives, NegAmount: 3}, 2, "topology: NegAmount = 3 asks 3 negatives of 1 seed edges, more than the sample's bound of 2"},
	} {
		o := opt(c.l)
		o.MaxEdges = c.maxEdges
		_, err := SampleHeteroFromEdges(numNodes, edges, 0, []int64{0}, []int64{0}, nil, o)
		if !errors.Is(err, ErrSampleTooLarge) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("negatives %+v, MaxEdges %d: %v; want ErrSampleTooLarge and %q", c.l, c.maxEdges, err, c.want)
		}
	}
	o := opt(LinkOptions{Negatives: BinaryNegatives, NegAmount: 2})
	o.MaxEdges = 2
	if _, err := SampleHeteroFromEdges(numNodes, edges, 0, []int64{0}, []int64{0}, nil, o); err != nil {
		t.Errorf("2 negatives under a bound of 2: %v", err)
	}

	// The one-type call keeps its MaxEdges.
	one := must(FromEdges(4, []int64{1, 2, 3}, []int64{0, 0, 0}))
	if _, err := SampleFromEdges(one, []int64{1}, []int64{0}, nil, LinkSampleOptions{SampleOptions: SampleOptions{Fanouts: []int{-1}, MaxEdges: 1},
		LinkOptions: LinkOptions{Negatives: BinaryNegatives, NegAmount: 2}}); !errors.Is(err, ErrSampleTooLarge) {
		t.Errorf("SampleFromEdges with MaxEdges 1 and 2 negatives: %v; want ErrSampleTooLarge", err)
	}

	// The graph's errors under strict negatives come wrapped.
	_, err := SampleFromEdges(faultyGraph{degree: 2, err: ioErr}, []int64{1}, []int64{2}, nil, LinkSampleOptions{
		SampleOptions: SampleOptions{Fanouts: []int{1}}, LinkOptions: LinkOptions{Negatives: BinaryNegatives, StrictNegatives: true}})
	if !errors.Is(err, ioErr) || !strings.HasPrefix(err.Error(), "topology: strict negatives: ") {
		t.Fatalf("strict negatives on a failing graph: %v", err)
	}

	for _, seed := range []uint64{0, 1, 1 << 63} {
		if NegativeSeed(seed) == seed || NegativeSeed(seed) == EdgeTypeSeed(seed, 1) {
			t.Fatalf("NegativeSeed(%d) = %d collides with an edge type's seed", seed, NegativeSeed(seed))
		}
	}
}

// TestSampleHeteroFromEdgesDrawHop: over HopDrawers that draw as the host does, link sampling,
// exclusion included, gives the host's sample: the exclusion filters the drawn edges after the
// draw, whoever draws.
func TestSampleHeteroFromEdgesDrawHop(t *testing.T) {
	r := testRand(t)
	h := randomHeteroOf(r, linkTypes)
	mem, _ := h.graphs(t, make([]bool, len(h.types)))
	drawers := slices.Clone(mem)
	for e := range drawers {
		drawers[e].G = &drawingGraph{CSC: mem[e].G.(*CSC)}
	}
	for seedEdgeType := range h.types {
		src, dst := seedEdgesFor(r, h, seedEdgeType, 100)
		opt := HeteroLinkSampleOptions{
			HeteroSampleOptions: HeteroSampleOptions{Fanouts: linkFanoutCases[0], Seed: r.Uint64()},
			LinkOptions:         LinkOptions{Negatives: BinaryNegatives, StrictNegatives: true, ExcludeSeedEdges: true, ReverseEdgeTypes: linkReverse},
		}
		want, err := SampleHeteroFromEdges(h.numNodes, mem, seedEdgeType, src, dst, nil, opt)
		if err != nil {
			t.Fatal(err)
		}
		got, err := SampleHeteroFromEdges(h.numNodes, drawers, seedEdgeType, src, dst, nil, opt)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed edge type %d, seed %d: the HopDrawers' sample differs: %s", seedEdgeType, opt.Seed, diffHetero(&got.HeteroSample, &want.HeteroSample))
		}
	}
}

// BenchmarkSampleFromEdges samples 2 hops, [25, 10], around 512 seed edges of BenchmarkSample's
// graph (1024 endpoints, as BenchmarkSample's seeds), plain, then with binary strict negatives and
// the seed edges and reverses excluded; edges/s compares the overhead.
func BenchmarkSampleFromEdges(b *testing.B) {
	const numNodes, numEdges, numSeeds = 1 << 20, 10 << 20, 512
	r := rand.New(rand.NewPCG(1, 2))
	src, dst := make([]int64, numEdges), make([]int64, numEdges)
	for i := range src {
		src[i], dst[i] = r.Int64N(numNodes), r.Int64N(numNodes)
	}
	g, err := FromEdges(numNodes, src, dst)
	if err != nil {
		b.Fatal(err)
	}
	seedSrc, seedDst := make([]int64, numSeeds), make([]int64, numSeeds)
	for i := range seedSrc {
		j := r.IntN(numEdges)
		seedSrc[i], seedDst[i] = src[j], dst[j]
	}
	nodeTime, seedTimes := randomTimes(r, numNodes, 1000), randomTimes(r, numSeeds, 1000)
	tg := &Temporal{G: g, NodeTime: nodeTime}
	for _, c := range []struct {
		name     string
		link     LinkOptions
		disjoint bool
		times    []int64 // in time (PyG's edge_label_time), over node times
	}{
		{"plain", LinkOptions{}, false, nil},
		{"binary-strict-exclude", LinkOptions{Negatives: BinaryNegatives, StrictNegatives: true, ExcludeSeedEdges: true, ReverseEdgeTypes: map[int]int{0: 0}}, false, nil},
		{"disjoint-binary", LinkOptions{Negatives: BinaryNegatives}, true, nil},
		{"temporal-binary", LinkOptions{Negatives: BinaryNegatives}, true, seedTimes},
	} {
		b.Run(c.name, func(b *testing.B) {
			opt := LinkSampleOptions{SampleOptions: SampleOptions{Fanouts: []int{25, 10}, Disjoint: c.disjoint, SeedTimes: c.times}, LinkOptions: c.link}
			graph := Graph(g)
			if c.times != nil {
				graph = tg
			}
			runs := 0
			for b.Loop() {
				opt.Seed = uint64(runs)
				if _, err := SampleFromEdges(graph, seedSrc, seedDst, nil, opt); err != nil {
					b.Fatal(err)
				}
				runs++
			}
			b.ReportMetric(float64(runs*numSeeds)/b.Elapsed().Seconds(), "edges/s")
		})
	}
}
