package topology

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// SampleOptions configures SampleNeighbors.
// SampleOptions' json-tagged fields are options of the front ends' option tables
// (featurestore.TableOf, inlined by planned.EpochOptions).
type SampleOptions struct {
	// Fanouts holds, per hop, how many neighbors to sample for each node: -1 takes every
	// neighbor, 0 none. It must not be empty.
	Fanouts []int
	// Replace samples positions with repetition; without it a node's sampled positions are
	// distinct.
	Replace bool `json:"replace" help:"sample with replacement"`
	// Seed drives all randomness: the same graph, seeds and options give the same Sample,
	// whatever Workers is.
	Seed uint64 `json:"seed" help:"sampler seed: the batches' sampling seeds derive from it"`
	// Workers is the number of goroutines choosing positions; 0 means runtime.GOMAXPROCS(0).
	Workers int `json:"workers" help:"goroutines sampling (0: one per CPU); results do not depend on it"`
	// NodesOnly samples the nodes alone: Nodes, NodesPerHop and EdgesPerHop as without it, Row,
	// Col and EdgeIDs left empty (for counting what a batch reads, as placement profiling does).
	NodesOnly bool
	// MaxEdges bounds the edges one sample may draw (all hops together; 0: DefaultMaxEdges). A
	// hop that would pass it fails before allocating, with ErrSampleTooLarge.
	MaxEdges int64
	// Disjoint gives every seed its own tree (PyG's disjoint=True): see SampleNeighbors.
	Disjoint bool
	// SeedTimes holds, for a sample of a Temporal graph (Disjoint), the time of each seed's
	// tree, one a seed (PyG's seed_time / input_time); nil takes the seeds' node times. Only a
	// Temporal graph takes them.
	SeedTimes []int64
}

// DefaultMaxEdges is the most edges a sample draws unless SampleOptions.MaxEdges says otherwise:
// 2^27 edges, ~5 GiB of row, column, edge id and scratch arrays — 16× a 3-hop [15,10,5] batch of
// 8,000 seeds at full fanout.
const DefaultMaxEdges = 1 << 27

// ErrSampleTooLarge is wrapped by the error of a sample that would draw more than its MaxEdges.
var ErrSampleTooLarge = errors.New("sample too large")

// Sample is a k-hop neighborhood. Local ids are indices into Nodes.
//
// Nodes holds the seeds first, exactly as given (duplicates kept in place), then for each hop
// the nodes it reached first, in the order its edges reached them. So the nodes of hops 0..l
// are the prefix Nodes[:NodesPerHop[0]+...+NodesPerHop[l]]. An edge of hop h has its Col among
// the nodes first reached at hop h-1 (for hop 0, the first position of a seed) and its Row in
// the prefix of hops 0..h. This nesting is what DGL message-flow blocks need: the block of hop h
// has the prefix of hops 0..h as src nodes and the prefix of hops 0..h-1 as dst nodes, a prefix
// of the src nodes.
type Sample struct {
	// Nodes holds the global ids of all sampled nodes, seeds first.
	Nodes []int64
	// Row and Col hold the sampled edges in local ids, hop after hop: Row[i] is the neighbor
	// (message source), Col[i] the node it was sampled for (message target), as PyG's
	// SamplerOutput. Within a hop, edges are grouped by target in Nodes order, and each target's
	// neighbors come in ascending list position.
	Row, Col []int64
	// NodesPerHop has len(Fanouts)+1 entries: the number of seeds, then the number of nodes
	// first reached at each hop.
	NodesPerHop []int64
	// EdgesPerHop has len(Fanouts) entries: the number of edges sampled at each hop.
	EdgesPerHop []int64
	// EdgeIDs holds, for each sampled edge Row[i] -> Col[i], its edge id (its position in the
	// CSC, the row of the dataset's edge features), when the graph is an EdgeIndexer; else nil.
	EdgeIDs []int64
	// Batch holds, for a Disjoint sample, the seed index (position in the seeds) of each node's
	// tree, parallel to Nodes (PyG's SamplerOutput.batch); nil otherwise.
	Batch []int64
}

// SampleNeighbors samples the k-hop in-neighborhood of seeds, uniformly.
//
// Hop h samples for every node first reached at hop h-1 (hop 0: for each distinct seed, once, at
// its first position); a later reference to an id always maps to its first local id. For a node of
// degree d and fanout f: without replacement it takes all d neighbors when f < 0 or d <= f, else f
// distinct positions drawn uniformly; with replacement it takes all d when f < 0, else f positions
// drawn uniformly with repetition (none when d is 0). A node's draws depend only on
// (Seed, hop, node id).
//
// A Disjoint sample gives seed index b its own tree: the nodes are (b, id) pairs, so an id
// reached from two seeds (or a seed given twice) is a node of each tree, and within one tree an
// id is one node as above. Nodes and Batch list the pairs hop after hop, as above, and tree b is
// exactly SampleNeighbors(g, seeds[b:b+1], opt) with Seed = DisjointSeed(opt.Seed, b) and
// Disjoint off, relabeled: its nodes and edges, in order, are those of Batch b. It draws on the
// host (not through a HopDrawer) and needs len(seeds) * g.NumNodes() to fit an int64.
//
// A Temporal graph is sampled in time, disjoint (Disjoint must be set): tree b draws only among
// neighbors of time at most SeedTimes[b] (default: the seed's node time), in time order, as
// Temporal says; such a hop reads the times of its nodes' whole lists first (for node time, one
// more NeighborsAt call).
//
// Each hop makes one Degrees and one NeighborsAt call on g; no Fanouts (zero hops, as PyG's
// num_neighbors=[]) gives the seeds alone. It fails on a fanout below -1, negative Workers, a seed outside [0, g.NumNodes()), or an error or out-of-range answer
// from g.
func SampleNeighbors(g Graph, seeds []int64, opt SampleOptions) (*Sample, error) {
	for h, f := range opt.Fanouts {
		if f < -1 {
			return nil, fmt.Errorf("topology: Fanouts[%d] = %d; want -1 (every neighbor) or a count >= 0", h, f)
		}
	}
	workers := opt.Workers
	if workers < 0 {
		return nil, fmt.Errorf("topology: Workers = %d is negative", workers)
	}
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	numNodes := g.NumNodes()
	for i, v := range seeds {
		if v < 0 || v >= numNodes {
			return nil, fmt.Errorf("topology: seeds[%d] = %d is not a node id in [0, %d)", i, v, numNodes)
		}
	}
	if err := checkDisjoint(g, len(seeds), opt.Disjoint); err != nil {
		return nil, err
	}
	var temporal []*Temporal
	var seedTime []int64
	if tg, ok := g.(*Temporal); ok {
		if err := tg.check(g.NumNodes()); err != nil {
			return nil, err
		}
		temporal, seedTime = []*Temporal{tg}, tg.NodeTime
	}
	times, err := seedTimes(temporal, seeds, opt.Disjoint, opt.SeedTimes, seedTime)
	if err != nil {
		return nil, err
	}

	s := &Sample{
		NodesPerHop: make([]int64, len(opt.Fanouts)+1),
		EdgesPerHop: make([]int64, len(opt.Fanouts)),
	}
	s.NodesPerHop[0] = int64(len(seeds))

	// A NodesOnly sample, which needs no local ids, marks the ids it has in a bitset where one is
	// small enough.
	nodes := newNodeSet(numNodes, seeds, opt.NodesOnly && !opt.Disjoint && numNodes <= maxBitsetNodes)
	if opt.Disjoint {
		nodes.batch = seedIndices(len(seeds))
	}
	defer nodes.release()
	sc := scratches.Get().(*sampleScratch)
	defer scratches.Put(sc)
	// frontier holds the nodes first reached at the previous hop, targets their local ids (nil:
	// consecutive from firstTarget).
	frontier, targets := nodes.distinctSeeds(sc.seeds[:0], sc.targets[:0])
	sc.seeds, sc.targets = frontier, targets // kept for the next sample
	var firstTarget int64
	frontierBatch := nodes.batch
	edges := newSampledEdges(g, opt.NodesOnly)
	hs := hopSampler{picker: newPositionPicker(workers), replace: opt.Replace, nodesOnly: opt.NodesOnly, sc: sc, maxEdges: edgeBound(opt.MaxEdges), seedTimes: times}
	for h, fanout := range opt.Fanouts {
		if len(frontier) == 0 || fanout == 0 {
			break // nothing more is reachable; the remaining counts stay 0
		}
		start := int64(len(nodes.ids))
		total, err := hs.hop(g, -1, frontier, frontierBatch, targets, firstTarget, fanout, opt.Seed, h, &nodes, &edges, nil)
		if errors.Is(err, ErrSampleTooLarge) {
			return nil, fmt.Errorf("topology: a sample of %d seeds with fanouts %v: %w", len(seeds), opt.Fanouts, err)
		}
		if err != nil {
			return nil, err
		}
		end := int64(len(nodes.ids))
		s.EdgesPerHop[h] = total
		s.NodesPerHop[h+1] = end - start
		frontier, targets, firstTarget = nodes.ids[start:end:end], nil, start
		if nodes.batch != nil {
			frontierBatch = nodes.batch[start:end:end]
		}
	}
	s.Nodes, s.Row, s.Col, s.EdgeIDs, s.Batch = nodes.ids, edges.row, edges.col, edges.ids, nodes.batch
	return s, nil
}

// nodeSet is the nodes of one node type in a sample: their ids in local id order, and what tells
// an id's first local id (localOf) or, for a NodesOnly sample, only whether the id is held (seen).
// A disjoint sample's set also holds each node's seed index (batch, parallel to ids) and maps
// the pair (key) rather than the id.
type nodeSet struct {
	ids     []int64
	batch   []int64 // nil unless disjoint
	n       int64   // ids lie in [0, n)
	localOf *idMap
	seen    *nodeBits
}

// newNodeSet starts the set of a type of n nodes with seeds, exactly as given, and takes its map
// (or, with bitset, its bitset) from the pool; release gives it back.
func newNodeSet(n int64, seeds []int64, bitset bool) nodeSet {
	s := nodeSet{ids: slices.Clone(seeds), n: n}
	if s.ids == nil {
		s.ids = []int64{}
	}
	if bitset {
		s.seen = getNodeBits(n)
	} else {
		s.localOf = idMaps.Get().(*idMap)
		s.localOf.reserve(len(seeds))
	}
	return s
}

// distinctSeeds maps the ids s starts with (the seeds) to their first positions and returns the
// distinct ones (a disjoint set's: all) with those positions, appended to frontier and targets
// (reused storage).
func (s *nodeSet) distinctSeeds(frontier, targets []int64) ([]int64, []int64) {
	for i, v := range s.ids {
		key := v
		if s.batch != nil {
			key = s.key(v, s.batch[i])
		}
		if _, added := s.addIfAbsent(key, int64(i)); added {
			frontier = append(frontier, v)
			targets = append(targets, int64(i))
		}
	}
	return frontier, targets
}

// addIfAbsent returns the local id of id, mapping id to local first if id is new (added). With a
// bitset the local id returned is meaningless.
func (s *nodeSet) addIfAbsent(id, local int64) (int64, bool) {
	if s.seen != nil {
		return local, s.seen.add(id)
	}
	return s.localOf.addIfAbsent(id, local)
}

// release empties the map or bitset and gives it back to its pool.
func (s *nodeSet) release() {
	switch {
	case s.seen != nil:
		s.seen.release(s.ids)
	case s.batch != nil:
		s.localOf.release(s.keys())
	default:
		s.localOf.release(s.ids)
	}
	s.seen, s.localOf = nil, nil
}

// sampledEdges is the edges of one graph (edge type) in a sample, as Sample's Row, Col and
// EdgeIDs.
type sampledEdges struct{ row, col, ids []int64 }

// newSampledEdges starts empty edges of g: ids is nil unless g is an EdgeIndexer and the sample
// keeps edges.
func newSampledEdges(g Graph, nodesOnly bool) sampledEdges {
	e := sampledEdges{row: []int64{}, col: []int64{}}
	if _, ok := g.(EdgeIndexer); ok && !nodesOnly {
		e.ids = []int64{}
	}
	return e
}

// hopSampler samples hops: the picker, the options every hop shares, and the per-hop arrays it
// reuses (sc).
type hopSampler struct {
	picker             *positionPicker
	replace, nodesOnly bool
	sc                 *sampleScratch
	maxEdges           int64   // the sample's bound (SampleOptions.MaxEdges, defaulted)
	drawn              int64   // edges drawn by the sample's hops so far
	seedTimes          []int64 // a temporal sample's time of each tree, by seed index
}

// tooLarge is the error of hop h, of nodes frontier nodes with fanout, whose draws pass the
// sample's bound: those of the nodes before rest (before edges; the first of rest draws c)
// fitted. It names the edges the whole hop would draw (saturating), those drawn before it and
// the bound.
func (hs *hopSampler) tooLarge(rest []int64, before, c int64, fanout, h, nodes int) error {
	hopEdges := before + c
	for _, d := range rest[1:] {
		hopEdges = satAdd(hopEdges, max(0, sampleCount(d, fanout, hs.replace)))
	}
	return fmt.Errorf("%w: hop %d of %d nodes (fanout %d, replace %v) would draw %d edges, which with the %d drawn before it pass the sample's bound of %d edges (MaxEdges); sample fewer seeds, smaller fanouts or raise the bound",
		ErrSampleTooLarge, h, nodes, fanout, hs.replace, hopEdges, hs.drawn, hs.maxEdges)
}

// satAdd is a + b for a, b >= 0, or MaxInt64 when that overflows.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// edgeBound is opt's MaxEdges with its default.
func edgeBound(maxEdges int64) int64 {
	if maxEdges <= 0 {
		return DefaultMaxEdges
	}
	return maxEdges
}

// hop samples fanout (not 0) in-neighbors in g of every node of frontier, whose local ids are
// targets (nil: consecutive from firstTarget), drawing with seed at hop h (a disjoint sample's,
// with the seeds of the frontier's seed indices, frontierBatch; nil: not disjoint): the neighbors it
// reaches first join src, and the edges join edges unless the sample is NodesOnly (their ids
// when edges.ids is not nil). A drawn edge in exclude (nil: none) is dropped: it neither joins
// edges nor brings its neighbor into src, and the other draws stay as they are. It returns the
// number of edges kept; src grows by at most that. edgeType names g in errors: -1 for the one
// graph of SampleNeighbors, else its index in SampleHetero's edges.
func (hs *hopSampler) hop(g Graph, edgeType int, frontier, frontierBatch, targets []int64, firstTarget int64, fanout int, seed uint64, h int, src *nodeSet, edges *sampledEdges, exclude pairSet) (int64, error) {
	graphErr := func(err error) error {
		if edgeType >= 0 {
			return fmt.Errorf("topology: edges[%d]: %w", edgeType, err)
		}
		return err
	}
	sc := hs.sc
	deg := resize(sc.deg, len(frontier))
	sc.deg = deg
	if err := g.Degrees(frontier, deg); err != nil {
		return 0, graphErr(err)
	}
	var tl *timeLists
	if tg, ok := g.(*Temporal); ok {
		l, err := hs.timeLists(tg, frontier, frontierBatch, deg, fanout, h)
		if err != nil {
			return 0, graphErr(err)
		}
		tl = &l // deg now counts the positions each node draws among
	}
	off := resize(sc.off, len(frontier)+1)
	sc.off = off
	off[0] = 0
	for i, d := range deg {
		if d < 0 {
			if edgeType >= 0 {
				return 0, fmt.Errorf("topology: edges[%d] gave degree %d for node %d", edgeType, d, frontier[i])
			}
			return 0, fmt.Errorf("topology: graph gave degree %d for node %d", d, frontier[i])
		}
		c := sampleCount(d, fanout, hs.replace)
		if c > hs.maxEdges-hs.drawn-off[i] { // no sum here can overflow
			return 0, hs.tooLarge(deg[i:], off[i], c, fanout, h, len(frontier))
		}
		off[i+1] = off[i] + c
	}
	total := off[len(frontier)]
	hs.drawn += total
	pos, out := resize(sc.pos, int(total)), resize(sc.out, int(total))
	sc.pos, sc.out = pos, out
	indexer, _ := g.(EdgeIndexer)
	if edges.ids == nil {
		indexer = nil
	}
	starts, err := hs.draw(g, indexer != nil, frontier, frontierBatch, deg, off, pos, out, fanout, seed, h, tl)
	if err != nil {
		return 0, graphErr(err)
	}

	keepEdges := !hs.nodesOnly
	if keepEdges {
		edges.row = slices.Grow(edges.row, int(total))
		edges.col = slices.Grow(edges.col, int(total))
	}
	if indexer != nil {
		edges.ids = slices.Grow(edges.ids, int(total))
	}
	numNodes, seen, localOf := src.n, src.seen, src.localOf
	ids, row, col, eids := src.ids, edges.row, edges.col, edges.ids
	kept := total
	for i := range frontier {
		target := firstTarget + int64(i)
		if targets != nil {
			target = targets[i]
		}
		for k := off[i]; k < off[i+1]; k++ {
			nb := out[k]
			if nb < 0 || nb >= numNodes {
				src.ids = ids
				if edgeType >= 0 {
					return 0, fmt.Errorf("topology: edges[%d] gave neighbor %d of node %d, not a node id of its Src type in [0, %d)", edgeType, nb, frontier[i], numNodes)
				}
				return 0, fmt.Errorf("topology: graph gave neighbor %d of node %d, not a node id in [0, %d)", nb, frontier[i], numNodes)
			}
			if exclude != nil {
				if _, drop := exclude[[2]int64{nb, frontier[i]}]; drop {
					kept--
					continue
				}
			}
			if indexer != nil {
				eids = append(eids, starts[i]+pos[k])
			}
			if seen != nil {
				if seen.add(nb) {
					ids = append(ids, nb)
				}
				continue
			}
			key := nb
			if frontierBatch != nil {
				key = src.key(nb, frontierBatch[i])
			}
			local, added := localOf.addIfAbsent(key, int64(len(ids)))
			if added {
				ids = append(ids, nb)
				if frontierBatch != nil {
					src.batch = append(src.batch, frontierBatch[i])
				}
			}
			if keepEdges {
				row = append(row, local)
				col = append(col, target)
			}
		}
	}
	src.ids, edges.row, edges.col, edges.ids = ids, row, col, eids
	return kept, nil
}

// pairSet is a set of edges of one edge type, keyed by (src, dst) global ids: the edges a sample
// leaves out.
type pairSet map[[2]int64]struct{}

// idMap maps node ids to local ids by open addressing with linear probing. It grows as ids are
// added, staying at most half full: sized by the distinct ids, not by the ids looked up, so a
// hop that draws many repeats keeps a table that fits the cache.
type idMap struct {
	slots []idSlot // len is a power of two
	shift uint     // 64 - log2(len(slots)), for Fibonacci hashing
	count int      // ids held
}

// sampleScratch is what a sampler uses while it samples and returns nothing of: the distinct
// seeds and their local ids (targets), each hop's degrees, offsets, positions, neighbors and list
// starts.
type sampleScratch struct {
	seeds, deg, off, pos, out, starts, targets []int64
	toff, tbase, tpos, ttimes                  []int64 // a temporal hop's lists (timeLists)
}

// scratches keeps the scratch of finished samples for the next ones, so a sampler that runs
// batch after batch does not allocate its per-hop arrays every batch.
var scratches = sync.Pool{New: func() any { return new(sampleScratch) }}

// maxBitsetNodes bounds the graphs whose NodesOnly samples mark ids in a bitset (n/8 bytes a
// sample in flight: 64 MiB at the bound) rather than an idMap.
const maxBitsetNodes = 1 << 29

// nodeBits is a set of node ids, one bit each.
type nodeBits struct{ words []uint64 }

// bitsets keeps the bitsets of finished samples, empty, for the next ones.
var bitsets sync.Pool

// getNodeBits returns an empty set for ids in [0, n).
func getNodeBits(n int64) *nodeBits {
	b, _ := bitsets.Get().(*nodeBits)
	if b == nil {
		b = new(nodeBits)
	}
	if words := int((n + 63) / 64); len(b.words) < words {
		b.words = make([]uint64, words)
	}
	return b
}

// add puts id in the set and reports whether it was new.
func (b *nodeBits) add(id int64) bool {
	w, bit := &b.words[id>>6], uint64(1)<<(id&63)
	if *w&bit != 0 {
		return false
	}
	*w |= bit
	return true
}

// release empties b, whose ids are all in ids, and gives it back to bitsets.
func (b *nodeBits) release(ids []int64) {
	for _, v := range ids {
		b.words[v>>6] = 0
	}
	bitsets.Put(b)
}

// idMaps keeps the maps of finished samples for the next ones: a map keeps its table, emptied,
// so a sampler that runs batch after batch neither allocates nor grows one per batch.
var idMaps = sync.Pool{New: func() any { return new(idMap) }}

// release empties m, whose ids are all in ids, and gives it back to idMaps.
func (m *idMap) release(ids []int64) {
	m.removeAll(ids)
	if m.count != 0 { // not every id was in ids: empty the table the slow way
		clear(m.slots)
		m.count = 0
	}
	idMaps.Put(m)
}

// removeAll removes ids from m: one lookup per id, not a pass over the table.
func (m *idMap) removeAll(ids []int64) {
	for _, v := range ids {
		if m.count == 0 {
			return
		}
		key := v + 1
		for i := m.home(key); m.slots[i].idPlus1 != 0; i = (i + 1) & (len(m.slots) - 1) {
			if m.slots[i].idPlus1 == key {
				m.remove(i)
				break
			}
		}
	}
}

// remove empties slot i and moves later slots of its probe run back (backward-shift deletion),
// so every id left is still found from its home slot.
func (m *idMap) remove(i int) {
	mask := len(m.slots) - 1
	m.count--
	for {
		m.slots[i] = idSlot{}
		j := i
		for {
			j = (j + 1) & mask
			if m.slots[j].idPlus1 == 0 {
				return
			}
			// slots[j] may fill the hole at i unless its home lies cyclically in (i, j].
			if home := m.home(m.slots[j].idPlus1); (j-home)&mask >= (j-i)&mask {
				m.slots[i] = m.slots[j]
				i = j
				break
			}
		}
	}
}

// idSlot holds a node id plus one (0 marks an empty slot) and its local id.
type idSlot struct{ idPlus1, local int64 }

// reserve makes room for count ids in all.
func (m *idMap) reserve(count int) {
	if 2*count <= len(m.slots) {
		return
	}
	log2 := bits.Len(uint(max(16, 2*count) - 1))
	old := m.slots
	m.slots, m.shift = make([]idSlot, 1<<log2), uint(64-log2)
	for _, s := range old {
		if s.idPlus1 != 0 {
			i := m.home(s.idPlus1)
			for m.slots[i].idPlus1 != 0 {
				i = (i + 1) & (len(m.slots) - 1)
			}
			m.slots[i] = s
		}
	}
}

func (m *idMap) home(idPlus1 int64) int {
	return int(uint64(idPlus1) * 0x9e3779b97f4a7c15 >> m.shift)
}

// addIfAbsent returns the local id of id, mapping id to local first if id is new (added).
func (m *idMap) addIfAbsent(id, local int64) (_ int64, added bool) {
	if 2*(m.count+1) > len(m.slots) {
		m.reserve(2 * (m.count + 1))
	}
	key := id + 1
	for i := m.home(key); ; i = (i + 1) & (len(m.slots) - 1) {
		switch m.slots[i].idPlus1 {
		case key:
			return m.slots[i].local, false
		case 0:
			m.slots[i] = idSlot{key, local}
			m.count++
			return local, true
		}
	}
}

// draw fills out[off[i]:off[i+1]] with the neighbors hop h draws for frontier[i] (and pos with
// their positions where g does not draw them itself): a Weighted graph's by its weights, a
// HopDrawer's by DrawHop, another's by the uniform picker (a Temporal graph's among the
// positions of its time lists tl, deg counting them). It answers the lists' first edge ids where
// the hop keeps edge ids (ids) or draws by weight, else nil.
func (hs *hopSampler) draw(g Graph, ids bool, frontier, batch, deg, off, pos, out []int64, fanout int, seed uint64, h int, tl *timeLists) ([]int64, error) {
	weighted, _ := g.(*Weighted)
	var starts []int64
	if ids || weighted != nil {
		starts = resize(hs.sc.starts, len(frontier))
		hs.sc.starts = starts
		if err := g.(EdgeIndexer).ListStarts(frontier, starts); err != nil {
			return nil, err
		}
	}
	switch drawer, isDrawer := g.(HopDrawer); {
	case weighted != nil:
		if int64(len(weighted.W)) != g.NumEdges() {
			return nil, fmt.Errorf("topology: %d weights for a graph of %d edges", len(weighted.W), g.NumEdges())
		}
		if err := hs.picker.pickWeighted(frontier, batch, deg, off, pos, starts, weighted.W, fanout, hs.replace, seed, h); err != nil {
			return nil, err
		}
	case isDrawer:
		var drawn []int64
		if ids {
			drawn = pos
		}
		return starts, drawer.DrawHop(frontier, deg, off, fanout, hs.replace, seed, h, drawn, out)
	default:
		hs.picker.pick(frontier, batch, deg, off, pos, fanout, hs.replace, seed, h)
		if tl != nil {
			tl.positions(off, pos)
		}
	}
	return starts, g.NeighborsAt(frontier, off, pos, out)
}

// sampleCount is the number of positions sampled for a node of degree deg.
func sampleCount(deg int64, fanout int, replace bool) int64 {
	if takesAll(deg, fanout, replace) {
		return deg
	}
	return int64(fanout)
}

// takesAll reports whether a node of degree deg keeps its whole neighbor list.
func takesAll(deg int64, fanout int, replace bool) bool {
	return deg == 0 || fanout < 0 || (!replace && deg <= int64(fanout))
}

// resize returns a slice of length n, reusing buf's storage when it is large enough.
func resize(buf []int64, n int) []int64 {
	if cap(buf) < n {
		return make([]int64, n)
	}
	return buf[:n]
}

// pickChunk is the number of nodes a worker takes at a time.
const pickChunk = 256

// positionPicker chooses sampled positions in parallel. Each worker owns its scratch set.
type positionPicker struct {
	workers int
	seen    []map[int64]struct{}
	wkeys   [][]float64 // weighted draws' keys or prefix sums
	widx    [][]int64   // and positions
}

func newPositionPicker(workers int) *positionPicker {
	return &positionPicker{workers: workers, seen: make([]map[int64]struct{}, workers), wkeys: make([][]float64, workers), widx: make([][]int64, workers)}
}

// pick fills pos[off[i]:off[i+1]] with ascending positions for nodes[i], of degree deg[i]
// (drawn with DisjointSeed(seed, batch[i]) where batch is not nil).
func (p *positionPicker) pick(nodes, batch, deg, off, pos []int64, fanout int, replace bool, seed uint64, hop int) {
	pickRange := func(worker, lo, hi int) {
		for i := lo; i < hi; i++ {
			dst := pos[off[i]:off[i+1]]
			d := deg[i]
			switch {
			case takesAll(d, fanout, replace):
				for j := range dst {
					dst[j] = int64(j)
				}
			case replace:
				r := nodeRNG(seedOf(seed, batch, i), hop, nodes[i])
				for j := range dst {
					dst[j] = int64(r.below(uint64(d)))
				}
				slices.Sort(dst)
			default:
				r := nodeRNG(seedOf(seed, batch, i), hop, nodes[i])
				p.floyd(worker, dst, d, &r)
			}
		}
	}
	p.inChunks(len(nodes), pickRange)
}

// inChunks runs pickRange(worker, lo, hi) over [0, n) in chunks of pickChunk on the picker's
// workers (in the caller alone when one chunk or worker does).
func (p *positionPicker) inChunks(n int, pickRange func(worker, lo, hi int)) {
	workers := min(p.workers, (n+pickChunk-1)/pickChunk)
	if workers <= 1 {
		pickRange(0, 0, n)
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				lo := int(next.Add(pickChunk)) - pickChunk
				if lo >= n {
					return
				}
				pickRange(w, lo, min(lo+pickChunk, n))
			}
		})
	}
	wg.Wait()
}

// smallPick is the largest sample checked for repeats by scanning rather than with a set.
const smallPick = 64

// floyd fills dst with len(dst) distinct positions in [0, deg), ascending, each subset equally
// likely (Floyd's algorithm). len(dst) < deg.
func (p *positionPicker) floyd(worker int, dst []int64, deg int64, r *splitmix) {
	k := int64(len(dst))
	if k <= smallPick {
		for m, j := 0, deg-k; j < deg; m, j = m+1, j+1 {
			t := int64(r.below(uint64(j + 1)))
			if slices.Contains(dst[:m], t) {
				t = j
			}
			dst[m] = t
		}
	} else {
		seen := p.seen[worker]
		if seen == nil {
			seen = make(map[int64]struct{}, k)
			p.seen[worker] = seen
		}
		clear(seen)
		for m, j := 0, deg-k; j < deg; m, j = m+1, j+1 {
			t := int64(r.below(uint64(j + 1)))
			if _, dup := seen[t]; dup {
				t = j
			}
			seen[t] = struct{}{}
			dst[m] = t
		}
	}
	slices.Sort(dst)
}

// splitmix is the SplitMix64 generator.
type splitmix struct{ state uint64 }

// nodeRNG is the generator of node's draws at hop: a hash of (seed, hop, node), so draws do not
// depend on which worker makes them.
func nodeRNG(seed uint64, hop int, node int64) splitmix {
	return splitmix{mix64(mix64(mix64(seed)^uint64(hop)) ^ uint64(node))}
}

func (r *splitmix) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	return mix64(r.state)
}

func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// below returns a uniform value in [0, n), n > 0.
func (r *splitmix) below(n uint64) uint64 { return Below(r.next(), n, r.next) }

// Below maps x, a uniform 64-bit draw, to a uniform value in [0, n), n > 0, by Lemire's multiply
// and reject, drawing again from next in the rare case that x falls in the rejected part.
// Samples and epoch orders (planned.EpochOrder) depend on it bit for bit, so it is fixed here
// rather than left to math/rand's choice of reduction.
func Below(x, n uint64, next func() uint64) uint64 {
	hi, lo := bits.Mul64(x, n)
	if lo < n {
		threshold := -n % n
		for lo < threshold {
			hi, lo = bits.Mul64(next(), n)
		}
	}
	return hi
}
