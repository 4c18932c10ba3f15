package topology

import (
	"fmt"
	"math"
)

// Disjoint sampling (SampleOptions.Disjoint, PyG's disjoint=True): every seed index b has its own
// tree, whose nodes are keyed by the pair (b, id) as b*n + id (n the graph's node count) and
// whose draws use DisjointSeed(Seed, b), so that two trees draw independently even where they
// hold the same id.

// DisjointSeed is the seed the tree of seed index b of a disjoint sample drawn with seed draws
// with.
func DisjointSeed(seed uint64, b int64) uint64 {
	return mix64(seed ^ mix64(uint64(b)+1))
}

// seedOf is the seed node i of a hop draws with: seed, or its tree's where batch (the hop's seed
// indices) is not nil.
func seedOf(seed uint64, batch []int64, i int) uint64 {
	if batch == nil {
		return seed
	}
	return DisjointSeed(seed, batch[i])
}

// checkDisjoint refuses a disjoint sample of seeds seeds in g that SampleNeighbors cannot key or
// draw: one whose pairs (seed index, id) do not fit an int64, or of a graph that draws its hops
// itself.
func checkDisjoint(g Graph, seeds int, disjoint bool) error {
	if !disjoint {
		return nil
	}
	if _, ok := g.(HopDrawer); ok {
		return fmt.Errorf("topology: a disjoint sample draws on the host; graph %T draws its hops itself (the GPU sampler): sample without Disjoint or on the host", g)
	}
	if n := g.NumNodes(); seeds > 0 && n > 0 && int64(seeds) > (math.MaxInt64-1)/n {
		return fmt.Errorf("topology: a disjoint sample of %d seeds in a graph of %d nodes: the pairs (seed index, node) do not fit an int64; sample fewer seeds a batch", seeds, n)
	}
	return nil
}

// seedIndices is 0, 1, ..., n-1: the seed indices of a disjoint sample's seeds.
func seedIndices(n int) []int64 {
	b := make([]int64, n)
	for i := range b {
		b[i] = int64(i)
	}
	return b
}

// key is the key of id in the tree of seed index b.
func (s *nodeSet) key(id, b int64) int64 { return b*s.n + id }

// keys is the keys of a disjoint set's nodes, as its map holds them.
func (s *nodeSet) keys() []int64 {
	k := make([]int64, min(len(s.ids), len(s.batch)))
	for i := range k {
		k[i] = s.key(s.ids[i], s.batch[i])
	}
	return k
}
