package topology

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// NegativeMode is how link sampling draws negative examples, PyG's NegativeSampling modes.
type NegativeMode string

const (
	// NoNegatives draws none: the label index holds the seed edges alone.
	NoNegatives NegativeMode = ""
	// BinaryNegatives draws ceil(NegAmount × seeds) negative pairs, a uniform node of the seed
	// edge type's Src type and one of its Dst type each, appended after the seed edges with label 0.
	BinaryNegatives NegativeMode = "binary"
	// TripletNegatives draws, for each seed edge, NegAmount uniform nodes of the Dst type.
	TripletNegatives NegativeMode = "triplet"
)

// LinkOptions configures what link sampling adds to a node sample: negatives and the exclusion
// of the seed edges from the sampled neighborhoods.
type LinkOptions struct {
	// Negatives is the negative sampling mode; NoNegatives by default.
	Negatives NegativeMode
	// NegAmount is, for BinaryNegatives, the ratio of negative pairs to seed edges (> 0, any
	// real: ceil(NegAmount × len(src)) pairs), for TripletNegatives the number of negative
	// destinations per seed edge (an integer >= 1). 0 means 1, PyG's default.
	NegAmount float64
	// StrictNegatives redraws a negative pair (src, dst) that is an edge of the seed edge type's
	// graph or one of the call's seed edges, up to MaxNegativeDraws draws a negative; a negative
	// still positive after that is drawn uniformly from the pairs that are not (a triplet's keeping
	// its source), found by one read of the edge type's lists; the call fails, naming the numbers,
	// when there are none. Without it negatives are drawn as PyG draws them and may be edges of
	// the graph.
	StrictNegatives bool
	// ExcludeSeedEdges leaves the seed edges (src[i], dst[i]) out of the sampled neighborhoods,
	// every parallel copy of them: a drawn position that holds one is dropped, not redrawn (as
	// GraphBolt's exclude_seed_edges drops sampled edges; DGL's exclude_edges instead takes them
	// out of the candidates, filling the fanout from the others), so every other draw is the one
	// SampleHetero makes, on the host or a HopDrawer. A neighbor reached only through a dropped
	// edge does not join the sample (GraphBolt, dropping after all hops, keeps it). With
	// ReverseEdgeTypes it also leaves out their reverses, (dst[i], src[i]) of the reverse edge
	// type. Negatives are never excluded.
	ExcludeSeedEdges bool
	// ReverseEdgeTypes maps an edge type to the edge type that holds its reverse edges (DGL's
	// reverse_etypes): its Src is the first's Dst and its Dst the first's Src. Only the seed edge
	// type's entry is used, with ExcludeSeedEdges; a graph whose reverse edges are in the graph
	// itself (an undirected homogeneous graph) maps 0 to 0.
	ReverseEdgeTypes map[int]int
}

// batchOf is the Batch of a sample's only node type (nil: not disjoint).
func batchOf(batch [][]int64) []int64 {
	if batch == nil {
		return nil
	}
	return batch[0]
}

// MaxNegativeDraws bounds the draws of one negative under StrictNegatives.
const MaxNegativeDraws = 64

// LinkLabels is what link sampling adds to the node sample: where each seed edge and each
// negative is among the sampled nodes, as local ids of the endpoint's node type (PyG's
// edge_sample metadata; a Disjoint sample's are the seeds' positions).
type LinkLabels struct {
	// EdgeLabelIndex (NoNegatives, BinaryNegatives) holds the label edges, the seed edges in
	// input order and then the negative pairs: [0] the local ids of their Src endpoints, [1] of
	// their Dst endpoints. Nil with TripletNegatives.
	EdgeLabelIndex [2][]int64
	// EdgeLabel holds one label a label edge: the labels given (NoNegatives: nil when none
	// were), with BinaryNegatives the labels given or 1s, then a 0 per negative pair. Nil with
	// TripletNegatives.
	EdgeLabel []int64
	// SrcIndex, DstPosIndex (TripletNegatives) hold the local ids of each seed edge's
	// endpoints; DstNegIndex those of its NegAmount negative destinations, seed edge i's at
	// [i×NegAmount, (i+1)×NegAmount) (PyG's dst_neg_index of shape [seeds, amount], flattened).
	SrcIndex, DstPosIndex, DstNegIndex []int64
	// NegSrc and NegDst hold the negatives' global ids: BinaryNegatives' pairs (NegSrc[k],
	// NegDst[k]); TripletNegatives' destinations in NegDst (NegSrc nil), laid out as
	// DstNegIndex.
	NegSrc, NegDst []int64
}

// LinkSample is a k-hop sample around seed edges of one graph, and where its label edges are.
type LinkSample struct {
	Sample
	LinkLabels
}

// HeteroLinkSample is a k-hop sample around seed edges of one edge type of a heterogeneous
// graph, and where its label edges are: Src endpoints in local ids of the edge type's Src node
// type, Dst endpoints in those of its Dst node type.
type HeteroLinkSample struct {
	HeteroSample
	LinkLabels
}

// LinkSampleOptions configures SampleFromEdges.
type LinkSampleOptions struct {
	SampleOptions
	LinkOptions
}

// HeteroLinkSampleOptions configures SampleHeteroFromEdges.
type HeteroLinkSampleOptions struct {
	HeteroSampleOptions
	LinkOptions
}

// SampleFromEdges samples the k-hop neighborhood of the seed edges (src[i], dst[i]) of g: it is
// SampleHeteroFromEdges over one node type and one edge type, the sample in SampleNeighbors'
// shape. The seed nodes are the distinct endpoints of the seed edges and negatives, ascending
// (Disjoint: every endpoint, in PyG's order; see SampleHeteroFromEdges).
func SampleFromEdges(g Graph, src, dst, labels []int64, opt LinkSampleOptions) (*LinkSample, error) {
	if g == nil {
		return nil, errors.New("topology: graph is nil")
	}
	hopt := HeteroLinkSampleOptions{
		HeteroSampleOptions: HeteroSampleOptions{Fanouts: [][]int{opt.Fanouts}, Replace: opt.Replace, Seed: opt.Seed, Workers: opt.Workers, NodesOnly: opt.NodesOnly, MaxEdges: opt.MaxEdges, Disjoint: opt.Disjoint, SeedTimes: opt.SeedTimes},
		LinkOptions:         opt.LinkOptions,
	}
	hs, err := SampleHeteroFromEdges([]int64{g.NumNodes()}, []EdgeGraph{{G: g}}, 0, src, dst, labels, hopt)
	if err != nil {
		return nil, err
	}
	return &LinkSample{
		Sample: Sample{
			Nodes: hs.Nodes[0], Row: hs.Row[0], Col: hs.Col[0], EdgeIDs: hs.EdgeIDs[0],
			NodesPerHop: hs.NodesPerHop[0], EdgesPerHop: hs.EdgesPerHop[0], Batch: batchOf(hs.Batch),
		},
		LinkLabels: hs.LinkLabels,
	}, nil
}

// SampleHeteroFromEdges samples the k-hop neighborhood of the seed edges (src[i], dst[i]) of edge
// type seedEdgeType (src ids of its Src node type, dst ids of its Dst type), PyG's edge_sample
// with disjoint=False (with Disjoint, disjoint=True: see below):
//
//  1. Negatives (opt.Negatives) are drawn first, each from its own generator (see NegativeSeed),
//     so the same Seed gives the same negatives whatever Workers is.
//  2. The seed nodes are the distinct endpoints, ascending (PyG's torch.unique): of the Src type
//     src and the binary negatives' sources; of the Dst type dst and the negative destinations;
//     when Src and Dst are one node type, both sets together in that type.
//  3. Those seeds are sampled as SampleHetero samples its seeds (every node type may have seeds),
//     leaving out the seed edges and their reverses under ExcludeSeedEdges; with nothing
//     excluded the sample is SampleHetero's from the same seeds.
//  4. The label index maps every seed edge and negative to the local ids of its endpoints.
//
// With Disjoint (PyG's disjoint=True) the negatives are the same, and every endpoint of a label
// edge is the seed of its own tree, in PyG's order: of the Src type the seed edges' sources, then
// the binary negatives'; of the Dst type their destinations, then the negative destinations
// (triplet j of seed edge i at j×len(src) + i); one node type holds the sources, then the
// destinations; of two, tree k is each type's k-th seed. Batch is a node's tree index mod
// len(src), and the label index holds the seeds' positions. SeedTimes (one a seed edge, PyG's
// edge_label_time; Temporal graphs need them) sample tree k at its label edge's seed edge time,
// edge_label_time repeated over the negatives as PyG repeats it; with node times of an endpoint's
// type a negative is a node of time at most its seed edge's (PyG's neg_sample: redrawn from its
// generator up to MaxNegativeDraws draws, then the earliest node), not with StrictNegatives.
//
// labels (optional, not with TripletNegatives) holds one label a seed edge. It fails, naming the
// input, on a bad graph or option (as SampleHetero), a seed edge endpoint outside its type, src
// and dst or labels of other lengths, a bad NegAmount or mode, an unknown reverse edge type, a
// strict negative that stays an edge (or a graph's error while checking), or SeedTimes that do
// not fit (without Disjoint, not one a seed edge, missing for Temporal graphs or given without).
func SampleHeteroFromEdges(numNodes []int64, edges []EdgeGraph, seedEdgeType int, src, dst, labels []int64, opt HeteroLinkSampleOptions) (*HeteroLinkSample, error) {
	hops, err := checkHeteroGraph(numNodes, edges, opt.HeteroSampleOptions)
	if err != nil {
		return nil, err
	}
	if seedEdgeType < 0 || seedEdgeType >= len(edges) {
		return nil, fmt.Errorf("topology: seedEdgeType = %d is not an edge type in [0, %d)", seedEdgeType, len(edges))
	}
	numNeg, err := checkLink(numNodes, edges, seedEdgeType, src, dst, labels, opt.LinkOptions)
	if err != nil {
		return nil, err
	}
	// Negatives are seeds too: more of them than the sample may draw edges is refused before
	// anything is allocated, under the same bound (MaxEdges, the store's max_sample_edges).
	if bound := edgeBound(opt.MaxEdges); int64(numNeg) > bound {
		return nil, fmt.Errorf("topology: NegAmount = %v asks %d negatives of %d seed edges, more than the sample's bound of %d (MaxEdges; the store option max_sample_edges): %w",
			opt.NegAmount, numNeg, len(src), bound, ErrSampleTooLarge)
	}
	lt, err := checkLinkTime(numNodes, edges, seedEdgeType, len(src), numNeg, opt)
	if err != nil {
		return nil, err
	}
	et := edges[seedEdgeType]
	lk := LinkLabels{}
	if numNeg > 0 {
		if lk.NegSrc, lk.NegDst, err = drawNegatives(numNodes, edges, seedEdgeType, src, dst, numNeg, opt); err != nil {
			return nil, err
		}
		negativesInTime(lt, opt, numNodes, et, lk.NegSrc, lk.NegDst)
	}
	exclude := excludeSeedEdges(len(edges), seedEdgeType, src, dst, opt.LinkOptions)
	if opt.Disjoint {
		return sampleEdgesDisjoint(numNodes, edges, hops, et, src, dst, labels, lk, exclude, lt, opt)
	}

	// The seeds of each node type: the endpoints of every label edge, distinct, ascending.
	srcEnds := slices.Concat(src, lk.NegSrc)
	if opt.Negatives == TripletNegatives {
		srcEnds = src
	}
	dstEnds := slices.Concat(dst, lk.NegDst)
	seeds := make([][]int64, len(numNodes))
	seeds[et.Src] = append(seeds[et.Src], srcEnds...)
	seeds[et.Dst] = append(seeds[et.Dst], dstEnds...)
	for t := range seeds {
		slices.Sort(seeds[t])
		seeds[t] = slices.Compact(seeds[t])
	}

	s, err := sampleHetero(numNodes, edges, hops, seeds, opt.HeteroSampleOptions, exclude, nil)
	if err != nil {
		return nil, err
	}

	// Seeds are sorted and distinct, so a seed's local id is its index in them.
	local := func(t int, ids []int64) []int64 {
		out := make([]int64, len(ids))
		for i, v := range ids {
			l, _ := slices.BinarySearch(seeds[t], v)
			out[i] = int64(l)
		}
		return out
	}
	switch opt.Negatives {
	case TripletNegatives:
		lk.SrcIndex, lk.DstPosIndex, lk.DstNegIndex = local(et.Src, src), local(et.Dst, dst), local(et.Dst, lk.NegDst)
	default:
		lk.EdgeLabelIndex = [2][]int64{local(et.Src, srcEnds), local(et.Dst, dstEnds)}
		lk.EdgeLabel = edgeLabels(opt.Negatives, labels, len(src), len(lk.NegDst))
	}
	return &HeteroLinkSample{HeteroSample: *s, LinkLabels: lk}, nil
}

// edgeLabels is LinkLabels.EdgeLabel of numPos seed edges with labels (nil: none) and numNeg
// negatives of mode (not TripletNegatives).
func edgeLabels(mode NegativeMode, labels []int64, numPos, numNeg int) []int64 {
	switch {
	case mode == BinaryNegatives:
		out := make([]int64, numPos+numNeg)
		if labels != nil {
			copy(out, labels)
		} else {
			for i := range numPos {
				out[i] = 1
			}
		}
		return out
	case labels != nil:
		return slices.Clone(labels)
	}
	return nil
}

// excludeSeedEdges is the exclusion sets of ExcludeSeedEdges over numEdgeTypes edge types (nil:
// nothing excluded): the seed edges in their type, their reverses in the reverse type.
func excludeSeedEdges(numEdgeTypes, seedEdgeType int, src, dst []int64, opt LinkOptions) []pairSet {
	if !opt.ExcludeSeedEdges || len(src) == 0 {
		return nil
	}
	exclude := make([]pairSet, numEdgeTypes)
	exclude[seedEdgeType] = make(pairSet, len(src))
	for i := range src {
		exclude[seedEdgeType][[2]int64{src[i], dst[i]}] = struct{}{}
	}
	if r, ok := opt.ReverseEdgeTypes[seedEdgeType]; ok {
		if exclude[r] == nil {
			exclude[r] = make(pairSet, len(src))
		}
		for i := range src {
			exclude[r][[2]int64{dst[i], src[i]}] = struct{}{}
		}
	}
	return exclude
}

// checkLink validates link sampling's own input, all of it before anything is drawn, and returns
// the number of negatives to draw.
func checkLink(numNodes []int64, edges []EdgeGraph, seedEdgeType int, src, dst, labels []int64, opt LinkOptions) (int, error) {
	et := edges[seedEdgeType]
	if len(src) != len(dst) {
		return 0, fmt.Errorf("topology: %d src ids but %d dst ids; give one of each per seed edge", len(src), len(dst))
	}
	if labels != nil && len(labels) != len(src) {
		return 0, fmt.Errorf("topology: %d labels for %d seed edges; give one label per seed edge or none", len(labels), len(src))
	}
	for _, end := range []struct {
		name string
		ids  []int64
		typ  int
		role string
	}{{"src", src, et.Src, "Src"}, {"dst", dst, et.Dst, "Dst"}} {
		n := numNodes[end.typ]
		for i, v := range end.ids {
			if v < 0 || v >= n {
				return 0, fmt.Errorf("topology: %s[%d] = %d is not a node id of edges[%d].%s type %d in [0, %d)", end.name, i, v, seedEdgeType, end.role, end.typ, n)
			}
		}
	}
	for e, r := range opt.ReverseEdgeTypes {
		switch {
		case e < 0 || e >= len(edges):
			return 0, fmt.Errorf("topology: ReverseEdgeTypes has key %d, not an edge type in [0, %d)", e, len(edges))
		case r < 0 || r >= len(edges):
			return 0, fmt.Errorf("topology: ReverseEdgeTypes[%d] = %d is not an edge type in [0, %d)", e, r, len(edges))
		case edges[r].Src != edges[e].Dst || edges[r].Dst != edges[e].Src:
			return 0, fmt.Errorf("topology: ReverseEdgeTypes[%d] = %d, but edge type %d goes %d -> %d and %d goes %d -> %d; a reverse type swaps Src and Dst",
				e, r, e, edges[e].Src, edges[e].Dst, r, edges[r].Src, edges[r].Dst)
		}
	}
	amount := opt.NegAmount
	if amount == 0 {
		amount = 1
	}
	var numNeg int
	switch opt.Negatives {
	case NoNegatives:
		return 0, nil
	case BinaryNegatives:
		if !(amount > 0) || math.IsInf(amount, 0) {
			return 0, fmt.Errorf("topology: NegAmount = %v; binary negatives want a ratio > 0", opt.NegAmount)
		}
		n := math.Ceil(float64(len(src)) * amount)
		if n > math.MaxInt32 {
			return 0, fmt.Errorf("topology: NegAmount = %v asks %v negatives of %d seed edges", opt.NegAmount, n, len(src))
		}
		numNeg = int(n)
	case TripletNegatives:
		if amount < 1 || amount != math.Trunc(amount) || amount > math.MaxInt32 {
			return 0, fmt.Errorf("topology: NegAmount = %v; triplet negatives want a whole number >= 1 of negatives per seed edge", opt.NegAmount)
		}
		if labels != nil {
			return 0, fmt.Errorf("topology: %d labels with triplet negatives; triplet samples take no labels (SrcIndex, DstPosIndex and DstNegIndex tell positives from negatives)", len(labels))
		}
		if n := float64(len(src)) * amount; n > math.MaxInt32 {
			return 0, fmt.Errorf("topology: NegAmount = %v asks %v negatives of %d seed edges", opt.NegAmount, n, len(src))
		}
		numNeg = len(src) * int(amount)
	default:
		return 0, fmt.Errorf("topology: Negatives = %q; want %q, %q or %q", opt.Negatives, NoNegatives, BinaryNegatives, TripletNegatives)
	}
	return numNeg, nil // negatives come with seed edges, whose endpoints prove both types non-empty
}

// NegativeSeed is the seed negatives draw with: Seed mixed with a tag no edge type index reaches,
// so negatives and neighbor draws are independent. Negative k's node of endpoint 0 (the edge
// type's Src) or 1 (its Dst) comes from the generator SampleNeighbors gives a node, with
// NegativeSeed(Seed) as seed, the endpoint as hop and k as node id: its first value below the
// type's node count (the multiply-shift draw), its next ones for strict redraws. A GPU drawing
// negatives draws the same.
func NegativeSeed(seed uint64) uint64 {
	return seed ^ mix64(negativeTag)
}

const negativeTag = 0x6e65676174697665 // "negative"

// Endpoints of a negative, the "hop" argument of its generator (NegativeRNG).
const (
	negSrcEnd = 0
	negDstEnd = 1
)

// drawNegatives draws numNeg negatives for the seed edges of edges[seedEdgeType]: BinaryNegatives' pairs (negSrc
// and negDst, numNeg each), TripletNegatives' destinations (negDst; negSrc nil), seed edge i's at
// [i×amount, (i+1)×amount). Negative k's node of endpoint end (0 Src, 1 Dst) is
// nodeRNG(NegativeSeed(Seed), end, k).below(n), n the type's node count; under StrictNegatives a
// pair that is an edge redraws both its nodes (a triplet's its destination) from the same
// generators, round after round, each round one Degrees and one NeighborsAt call on et.G for the
// destinations still in doubt; after MaxNegativeDraws rounds pickNonNeighbors settles the rest.
func drawNegatives(numNodes []int64, edges []EdgeGraph, seedEdgeType int, src, dst []int64, numNeg int, opt HeteroLinkSampleOptions) (negSrc, negDst []int64, err error) {
	et := edges[seedEdgeType]
	seed := NegativeSeed(opt.Seed)
	nSrc, nDst := numNodes[et.Src], numNodes[et.Dst]
	triplet := opt.Negatives == TripletNegatives
	perSeed := 0
	if triplet {
		perSeed = numNeg / len(src)
	}
	srcRNG, dstRNG := make([]splitmix, numNeg), make([]splitmix, numNeg)
	negDst = make([]int64, numNeg)
	if !triplet {
		negSrc = make([]int64, numNeg)
	}
	// pairSrc is negative k's source: its own with binary negatives, its seed edge's with triplets.
	pairSrc := func(k int) int64 {
		if triplet {
			return src[k/perSeed]
		}
		return negSrc[k]
	}
	draw := func(k int) {
		if !triplet {
			negSrc[k] = int64(srcRNG[k].below(uint64(nSrc)))
		}
		negDst[k] = int64(dstRNG[k].below(uint64(nDst)))
	}
	for k := range numNeg {
		if !triplet {
			srcRNG[k] = nodeRNG(seed, negSrcEnd, int64(k))
		}
		dstRNG[k] = nodeRNG(seed, negDstEnd, int64(k))
		draw(k)
	}
	if !opt.StrictNegatives {
		return negSrc, negDst, nil
	}

	positives := make(pairSet, len(src))
	for i := range src {
		positives[[2]int64{src[i], dst[i]}] = struct{}{}
	}
	pending := make([]int, numNeg) // negatives not yet known not to be edges
	for k := range pending {
		pending[k] = k
	}
	var nodes, deg, off, pos, out []int64
	for round := 1; len(pending) > 0; round++ {
		// The in-lists of the pending pairs' destinations, each fetched once.
		nodes = nodes[:0]
		for _, k := range pending {
			nodes = append(nodes, negDst[k])
		}
		slices.Sort(nodes)
		nodes = slices.Compact(nodes)
		deg, off = resize(deg, len(nodes)), resize(off, len(nodes)+1)
		if err := et.G.Degrees(nodes, deg); err != nil {
			return nil, nil, fmt.Errorf("topology: strict negatives: %w", err)
		}
		off[0] = 0
		for i, d := range deg {
			if d < 0 {
				return nil, nil, fmt.Errorf("topology: strict negatives: graph gave degree %d for node %d", d, nodes[i])
			}
			off[i+1] = off[i] + d
		}
		pos, out = resize(pos, int(off[len(nodes)])), resize(out, int(off[len(nodes)]))
		for i := range nodes {
			for j := off[i]; j < off[i+1]; j++ {
				pos[j] = j - off[i]
			}
		}
		if err := et.G.NeighborsAt(nodes, off, pos, out); err != nil {
			return nil, nil, fmt.Errorf("topology: strict negatives: %w", err)
		}
		edgesOf := make(pairSet, len(out))
		for i, v := range nodes {
			for _, nb := range out[off[i]:off[i+1]] {
				edgesOf[[2]int64{nb, v}] = struct{}{}
			}
		}
		still := pending[:0]
		for _, k := range pending {
			pair := [2]int64{pairSrc(k), negDst[k]}
			_, isEdge := edgesOf[pair]
			_, isSeed := positives[pair]
			if !isEdge && !isSeed {
				continue
			}
			if round < MaxNegativeDraws {
				draw(k)
			}
			still = append(still, k)
		}
		pending = still
		if round == MaxNegativeDraws && len(pending) > 0 {
			if err := pickNonNeighbors(et.G, nSrc, nDst, positives, pending, triplet, pairSrc, negSrc, negDst, dstRNG); err != nil {
				return nil, nil, fmt.Errorf("topology: strict negatives of edges[%d] (%d -> %d, %d edges among %d × %d node pairs): %w",
					seedEdgeType, et.Src, et.Dst, et.G.NumEdges(), nSrc, nDst, err)
			}
			break
		}
	}
	return negSrc, negDst, nil
}

// scanChunk is the number of destinations pickNonNeighbors reads at a time.
const scanChunk = 1 << 16

// maxFallbackBits bounds the pairs a binary fallback marks, one bit each (1 GiB).
const maxFallbackBits = 1 << 33

// pickNonNeighbors settles the negatives pending, each still positive after MaxNegativeDraws
// draws, uniformly among the pairs that make no edge of g nor a positive pair: a triplet keeps
// its source (pairSrc(k)) and takes the c-th such destination of it, ascending; a binary pair
// takes the c-th such pair (src, dst) of all, ascending by src, then dst. c is the next value of
// the negative's generator rng[k] below their number. It reads every list of g once, scanChunk
// destinations a call, and fails when there is no such pair.
func pickNonNeighbors(g Graph, nSrc, nDst int64, positives pairSet, pending []int, triplet bool, pairSrc func(int) int64, negSrc, negDst []int64, rng []splitmix) error {
	// adjacent[s] marks the destinations s may not take, one bit each: of the pending triplets'
	// sources, or of every source for binary pairs.
	words := (nDst + 63) / 64
	adjacent := map[int64][]uint64{}
	if triplet {
		for _, k := range pending {
			adjacent[pairSrc(k)] = make([]uint64, words)
		}
	} else {
		if words > maxFallbackBits/64/nSrc { // nSrc > 0: there are seed edges
			return fmt.Errorf("negative %d is still positive after %d draws, and marking all %d × %d pairs to pick from the others would take over %d bits", pending[0], MaxNegativeDraws, nSrc, nDst, maxFallbackBits)
		}
		for u := range nSrc {
			adjacent[u] = make([]uint64, words)
		}
	}
	mark := func(s, d int64) {
		if row, ok := adjacent[s]; ok {
			row[d>>6] |= 1 << (d & 63)
		}
	}
	for p := range positives {
		mark(p[0], p[1])
	}
	var nodes, deg, off, pos, out []int64
	for lo := int64(0); lo < nDst; lo += scanChunk {
		hi := min(lo+scanChunk, nDst)
		nodes, deg, off = resize(nodes, int(hi-lo)), resize(deg, int(hi-lo)), resize(off, int(hi-lo)+1)
		for i := range nodes {
			nodes[i] = lo + int64(i)
		}
		if err := g.Degrees(nodes, deg); err != nil {
			return err
		}
		off[0] = 0
		for i, d := range deg {
			if d < 0 {
				return fmt.Errorf("graph gave degree %d for node %d", d, nodes[i])
			}
			off[i+1] = off[i] + d
		}
		pos, out = resize(pos, int(off[len(nodes)])), resize(out, int(off[len(nodes)]))
		for i := range nodes {
			for j := off[i]; j < off[i+1]; j++ {
				pos[j] = j - off[i]
			}
		}
		if err := g.NeighborsAt(nodes, off, pos, out); err != nil {
			return err
		}
		for i, d := range nodes {
			for _, nb := range out[off[i]:off[i+1]] {
				mark(nb, d)
			}
		}
	}
	free := func(u int64) int64 {
		n := nDst
		for _, w := range adjacent[u] {
			n -= int64(bits.OnesCount64(w))
		}
		return n
	}
	// nth returns the c-th destination (ascending) that u may take.
	nth := func(u, c int64) int64 {
		adj := adjacent[u]
		for d := range nDst {
			if adj[d>>6]&(1<<(d&63)) == 0 {
				if c == 0 {
					return d
				}
				c--
			}
		}
		panic("topology: fewer free destinations than counted")
	}
	if triplet {
		for _, k := range pending {
			u := pairSrc(k)
			n := free(u)
			if n == 0 {
				return fmt.Errorf("negative %d: source %d is adjacent to all %d destinations, so it has no negative", k, u, nDst)
			}
			negDst[k] = nth(u, int64(rng[k].below(uint64(n))))
		}
		return nil
	}
	freeOf := make([]int64, nSrc)
	var total int64
	for u := range nSrc {
		freeOf[u] = free(u)
		total += freeOf[u]
	}
	if total == 0 {
		return fmt.Errorf("every one of the %d × %d pairs is an edge or a seed edge, so there is no negative", nSrc, nDst)
	}
	for _, k := range pending {
		c := int64(rng[k].below(uint64(total)))
		u := int64(0)
		for c >= freeOf[u] {
			c -= freeOf[u]
			u++
		}
		negSrc[k], negDst[k] = u, nth(u, c)
	}
	return nil
}
