package featurestore

import (
	"fmt"

	"github.com/tierfs/tierfs/topology"
)

// HottestIDs returns at most k ids of node type ntype ("" for the only one), hottest first,
// ranked as its tier stack's Store.HottestIDs ranks them. A type without features has no tier
// stack; its rows are ranked as a stack of it would rank them with no placement applied (see
// rankWithoutStack). Tables of learned rows of a featureless type (tierfs.Embedding's memory
// tiers) are placed by this ranking.
func (ss *Session) HottestIDs(ntype string, hotness []uint32, k int64) ([]int64, error) {
	nt, leave, err := ss.enterType(ntype, ss.nodeTypeOf)
	if err != nil {
		return nil, err
	}
	spec := ss.nodes[nt].spec
	switch st := ss.nodes[nt].stack; {
	case hotness != nil && int64(len(hotness)) != spec.Count:
		leave()
		return nil, fmt.Errorf("featurestore: HottestIDs: hotness has %d entries; node type %q has %d nodes (nil hotness: the store's own ranking): %w",
			len(hotness), spec.Name, spec.Count, ErrInvalidOption)
	case k < 0:
		leave()
		return nil, fmt.Errorf("featurestore: HottestIDs of k = %d ids; want k >= 0: %w", k, ErrInvalidOption)
	case st != nil:
		leave() // the stack enters the session itself
		return st.HottestIDs(hotness, k)
	}
	defer leave()
	return ss.rankWithoutStack(nt, hotness, min(k, spec.Count)), nil
}

// rankWithoutStack ranks the k hottest nodes of type nt, which has no tier stack: by hotness
// (ties to the smaller id), else in a one-type graph held in memory by in-degree, else by how
// often the type's nodes are neighbors in the edge types held in memory, else by id.
func (ss *Session) rankWithoutStack(nt int, hotness []uint32, k int64) []int64 {
	byCount := func(counts []uint32) []int64 {
		return topK(k, func(yield func(int64, uint64) bool) {
			for v, c := range counts {
				if !yield(int64(v), uint64(c)) {
					return
				}
			}
		})
	}
	if k == 0 {
		return nil
	}
	if hotness != nil {
		return byCount(hotness)
	}
	if len(ss.nodes) == 1 && len(ss.edges) == 1 {
		if csc, ok := ss.edges[0].graph.(*topology.CSC); ok {
			return topK(k, func(yield func(int64, uint64) bool) { cscInDegrees(csc, yield) })
		}
	}
	if ss.readsAsNeighbor(nt) {
		return byCount(ss.neighborCounts(nt))
	}
	ids := make([]int64, k)
	for i := range ids {
		ids[i] = int64(i)
	}
	return ids
}
