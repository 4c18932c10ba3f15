// Package topology holds graph adjacency (CSC: for each node, its in-neighbors) and samples
// k-hop neighborhoods from it.
//
// A Graph answers batched questions only (degrees of many nodes, neighbors at many positions), so
// a graph read from disk costs one IO round per hop, never one per node.
package topology

// Graph is CSC adjacency: the in-neighbors of node v are the Degree(v) ids at positions
// 0..Degree(v)-1 of v's list. Implementations are safe for concurrent use.
type Graph interface {
	NumNodes() int64
	NumEdges() int64
	// Degrees sets deg[i] to the in-degree of nodes[i]. len(deg) == len(nodes).
	Degrees(nodes []int64, deg []int64) error
	// NeighborsAt resolves positions into neighbor ids: for node nodes[i], the positions
	// pos[off[i]:off[i+1]] (each in [0, degree)) become out[off[i]:off[i+1]].
	// len(off) == len(nodes)+1, len(out) == len(pos) == off[len(nodes)].
	NeighborsAt(nodes []int64, off []int64, pos []int64, out []int64) error
}
