package featurestore

import "fmt"

// neighborsBatch is how many neighbor ids Neighbors resolves per NeighborsAt call.
const neighborsBatch = 1 << 16

// Neighbors returns the in-neighbors of node along edge type etype (its src:rel:dst key, "" for
// the only one): node is an id of the edge type's dst type, the neighbors ids of its src type,
// in the order of node's CSC list (position j is edge id start(node) + j).
func (ss *Session) Neighbors(etype string, node int64) ([]int64, error) {
	e, leave, err := ss.enterType(etype, ss.edgeTypeOf)
	if err != nil {
		return nil, err
	}
	defer leave()
	es := &ss.edges[e]
	if n := ss.nodes[es.dst].spec.Count; uint64(node) >= uint64(n) {
		return nil, fmt.Errorf("featurestore: node %d is out of range [0, %d) of node type %q, the destination of edge type %q: %w", node, n, es.spec.Dst, es.spec.Key(), ErrIDOutOfRange)
	}
	nodes := []int64{node}
	deg := make([]int64, 1)
	if err := es.graph.Degrees(nodes, deg); err != nil {
		return nil, fmt.Errorf("featurestore: edge type %q: %w", es.spec.Key(), err)
	}
	out := make([]int64, deg[0])
	pos := make([]int64, min(deg[0], neighborsBatch))
	for first := int64(0); first < deg[0]; first += neighborsBatch {
		n := min(neighborsBatch, deg[0]-first)
		for i := range n {
			pos[i] = first + i
		}
		if err := es.graph.NeighborsAt(nodes, []int64{0, n}, pos[:n], out[first:first+n]); err != nil {
			return nil, fmt.Errorf("featurestore: edge type %q: %w", es.spec.Key(), err)
		}
	}
	return out, nil
}
