// Package topology holds graph adjacency (CSC: for each node, its in-neighbors) and samples
// k-hop neighborhoods from it: of one graph (SampleNeighbors) or of a heterogeneous graph, one
// Graph per edge type whose neighbor ids are of its source node type (SampleHetero), or around
// seed edges for link prediction, with negatives and the seed edges left out (SampleFromEdges,
// SampleHeteroFromEdges).
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

// HopDrawer is a Graph that draws a hop's neighbors itself, on other hardware (the GPU sampler):
// given the nodes' degrees and the output offsets SampleNeighbors computed, it fills
// out[off[i]:off[i+1]] with exactly the neighbors SampleNeighbors would draw for nodes[i] at hop
// (same generator, same positions, ascending), and pos (when not nil) with those positions.
// SampleNeighbors calls it instead of drawing positions and calling NeighborsAt; SampleHetero
// does too, with the edge type's seed (EdgeTypeSeed) as seed.
type HopDrawer interface {
	Graph
	DrawHop(nodes, deg, off []int64, fanout int, replace bool, seed uint64, hop int, pos, out []int64) error
}

// EdgeIndexer is a Graph that knows its edge ids: the edge at position j of node v's list has id
// start(v) + j, its position in the CSC. SampleNeighbors fills Sample.EdgeIDs from it, SampleHetero
// the edge type's HeteroSample.EdgeIDs.
type EdgeIndexer interface {
	Graph
	// ListStarts sets start[i] to the edge id of the first edge of nodes[i]'s list. It may be
	// called between Degrees and NeighborsAt on the same nodes.
	ListStarts(nodes []int64, start []int64) error
}
