package topology

import (
	"fmt"
	"slices"
)

// Disjoint and temporal link sampling (HeteroSampleOptions.Disjoint and SeedTimes in
// SampleHeteroFromEdges: PyG's LinkNeighborLoader(disjoint=True) and edge_label_time, as
// edge_sample lays them out).

// linkTime is what a disjoint link sample is drawn with: each tree's seed time (nil: not
// temporal) and the node times its negatives keep within (per endpoint, Src then Dst; nil: none).
type linkTime struct {
	trees    int
	times    []int64
	negTimes [2][]int64
}

// checkLinkTime refuses a disjoint or temporal link sample of numPos seed edges and numNeg
// negatives that cannot be drawn (SeedTimes without Disjoint, or not one a seed edge, or
// missing for Temporal graphs; StrictNegatives whose negatives keep within node times; what
// SampleHetero refuses of a disjoint sample) and returns its trees' times.
func checkLinkTime(numNodes []int64, edges []EdgeGraph, seedEdgeType, numPos, numNeg int, opt HeteroLinkSampleOptions) (linkTime, error) {
	if !opt.Disjoint {
		if opt.SeedTimes != nil {
			return linkTime{}, fmt.Errorf("topology: %d SeedTimes for a link sample that is not Disjoint; a sample in time is disjoint (PyG's edge_label_time implies disjoint=True)", len(opt.SeedTimes))
		}
		return linkTime{}, nil
	}
	et := edges[seedEdgeType]
	srcEnds, dstEnds := numPos+numNeg, numPos+numNeg
	if opt.Negatives == TripletNegatives {
		srcEnds = numPos
	}
	lt := linkTime{trees: dstEnds}
	if et.Src == et.Dst {
		lt.trees = srcEnds + dstEnds
	}
	var temporal bool
	for _, eg := range edges {
		tg, ok := eg.G.(*Temporal)
		temporal = temporal || ok
		if ok && tg.NodeTime != nil {
			for end, t := range [2]int{et.Src, et.Dst} {
				if t == eg.Src && lt.negTimes[end] == nil {
					lt.negTimes[end] = tg.NodeTime
				}
			}
		}
	}
	switch {
	case temporal && opt.SeedTimes == nil:
		return linkTime{}, fmt.Errorf("topology: a link sample in time needs SeedTimes, one a seed edge (PyG's edge_label_time): seed edges have no node time")
	case opt.SeedTimes != nil && len(opt.SeedTimes) != numPos:
		return linkTime{}, fmt.Errorf("topology: %d SeedTimes for %d seed edges; want one a seed edge", len(opt.SeedTimes), numPos)
	}
	if opt.SeedTimes != nil {
		// PyG's src_time and dst_time: seed edge k mod numPos's time for every label edge k.
		at := func(n int) []int64 {
			t := make([]int64, n)
			for k := range t {
				t[k] = opt.SeedTimes[k%numPos]
			}
			return t
		}
		lt.times = at(dstEnds)
		if et.Src == et.Dst {
			lt.times = append(at(srcEnds), lt.times...) // not nil: a temporal sample of no seed edges
		}
	}
	hopt := opt.HeteroSampleOptions
	hopt.SeedTimes = lt.times
	if _, err := checkHeteroDisjoint(numNodes, edges, -1, make([]int64, lt.trees), hopt); err != nil {
		return linkTime{}, err
	}
	if !temporal || opt.SeedTimes == nil || numNeg == 0 || (lt.negTimes[0] == nil && lt.negTimes[1] == nil) {
		lt.negTimes = [2][]int64{}
	} else if opt.StrictNegatives {
		return linkTime{}, fmt.Errorf("topology: StrictNegatives in a link sample in time whose negatives keep within node times; draw them without StrictNegatives")
	}
	return lt, nil
}

// negativesInTime redraws each negative node whose node time is after its seed edge's time
// (seed edge k mod len(SeedTimes) for binary pair k, i for triplet i's destinations), as PyG's
// neg_sample: from the negative's generator, its values after those drawNegatives took, up to
// MaxNegativeDraws draws in all; one still after its time becomes the node of earliest time
// (PyG's fallback, the lowest id among ties).
func negativesInTime(lt linkTime, opt HeteroLinkSampleOptions, numNodes []int64, et EdgeGraph, negSrc, negDst []int64) {
	if lt.negTimes[0] == nil && lt.negTimes[1] == nil {
		return
	}
	seed := NegativeSeed(opt.Seed)
	numPos := len(opt.SeedTimes)
	perSeed := 1
	if opt.Negatives == TripletNegatives {
		perSeed = len(negDst) / numPos
	}
	for end, neg := range [2][]int64{negSrc, negDst} {
		times := lt.negTimes[end]
		if times == nil || neg == nil {
			continue
		}
		n := uint64(numNodes[[2]int{et.Src, et.Dst}[end]])
		earliest := int64(0)
		for v, t := range times {
			if t < times[earliest] {
				earliest = int64(v)
			}
		}
		for k, v := range neg {
			limit := opt.SeedTimes[k%numPos]
			if opt.Negatives == TripletNegatives {
				limit = opt.SeedTimes[k/perSeed]
			}
			if times[v] <= limit {
				continue
			}
			rng := nodeRNG(seed, end, int64(k))
			rng.below(n) // the draw drawNegatives made
			for d := 1; d < MaxNegativeDraws && times[v] > limit; d++ {
				v = int64(rng.below(n))
			}
			if times[v] > limit {
				v = earliest
			}
			neg[k] = v
		}
	}
}

// sampleEdgesDisjoint is SampleHeteroFromEdges with Disjoint, PyG's edge_sample with
// disjoint=True: every endpoint of a label edge is a seed of its own tree, in PyG's order — of
// the Src type the seed edges' sources, then the binary negatives' (triplets: none); of the Dst
// type their destinations, then the negative destinations (triplet j of seed edge i at j×seeds +
// i); one node type holds the sources, then the destinations — and a node's Batch is its tree's
// index mod the number of seed edges (of distinct Src and Dst types, tree k is both types' k-th
// seed). The label index holds the seeds' local ids, which are their positions. With SeedTimes
// (a temporal sample) tree k draws at the time of its label edge's seed edge, PyG's
// edge_label_time repeated over the negatives.
func sampleEdgesDisjoint(numNodes []int64, edges []EdgeGraph, hops int, et EdgeGraph, src, dst, labels []int64, lk LinkLabels, exclude []pairSet, lt linkTime, opt HeteroLinkSampleOptions) (*HeteroLinkSample, error) {
	numPos := len(src)
	negDst := lk.NegDst
	if opt.Negatives == TripletNegatives && numPos > 0 {
		perSeed := len(lk.NegDst) / numPos
		negDst = make([]int64, len(lk.NegDst))
		for i := range numPos {
			for j := range perSeed {
				negDst[j*numPos+i] = lk.NegDst[i*perSeed+j]
			}
		}
	}
	srcEnds, dstEnds := slices.Concat(src, lk.NegSrc), slices.Concat(dst, negDst)
	seeds := make([][]int64, len(numNodes))
	seeds[et.Src] = srcEnds
	dstBase := int64(0) // the local id of the first destination seed
	if et.Src == et.Dst {
		seeds[et.Src] = slices.Concat(srcEnds, dstEnds)
		dstBase = int64(len(srcEnds))
	} else {
		seeds[et.Dst] = dstEnds
	}
	s, err := sampleHetero(numNodes, edges, hops, seeds, opt.HeteroSampleOptions, exclude, lt.times)
	if err != nil {
		return nil, err
	}
	if numPos > 0 {
		for _, b := range s.Batch {
			for i := range b {
				b[i] %= int64(numPos)
			}
		}
	}
	positions := func(from, n int64) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = from + int64(i)
		}
		return out
	}
	switch opt.Negatives {
	case TripletNegatives:
		lk.SrcIndex, lk.DstPosIndex = positions(0, int64(numPos)), positions(dstBase, int64(numPos))
		perSeed := 0
		if numPos > 0 {
			perSeed = len(lk.NegDst) / numPos
		}
		lk.DstNegIndex = make([]int64, len(lk.NegDst))
		for i := range numPos {
			for j := range perSeed {
				lk.DstNegIndex[i*perSeed+j] = dstBase + int64(numPos+j*numPos+i)
			}
		}
	default:
		lk.EdgeLabelIndex = [2][]int64{positions(0, int64(len(srcEnds))), positions(dstBase, int64(len(dstEnds)))}
		lk.EdgeLabel = edgeLabels(opt.Negatives, labels, numPos, len(lk.NegDst))
	}
	return &HeteroLinkSample{HeteroSample: *s, LinkLabels: lk}, nil
}
