package featurestore

import (
	"fmt"
	"math"
	"slices"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/topology"
)

// Place refills the GPU tier with the hottest rows that fit Options.GPUCacheBytes (when a GPU is
// in use) and the host tier with the next hottest that fit Options.HostCacheBytes. hotness has
// one count per node (higher is hotter, ties go to the smaller id); nil ranks by in-degree (in a
// graph of several types: by how often the type's nodes are neighbors in the edge types held in
// memory), or by id when there is no topology to rank by. Gathers wait while it runs.
func (s *Store) Place(hotness []uint32) error {
	leave, err := s.enterFeature("Place")
	if err != nil {
		return err
	}
	defer leave()
	n := s.NumNodes()
	if hotness != nil && int64(len(hotness)) != n {
		return fmt.Errorf("featurestore: hotness has %d entries, the dataset %d nodes", len(hotness), n)
	}
	gpuRows := s.kindRows(tiers.GPU)
	k := min(s.memoryRows(), n)
	var ids []int64
	if k == n && gpuRows == 0 {
		ids = make([]int64, n)
		for i := range ids {
			ids[i] = int64(i)
		}
	} else if ids, err = s.hottest(hotness, k, gpuRows); err != nil {
		return err
	}
	s.place.Lock()
	defer s.place.Unlock()
	return s.fillTiers(ids)
}

// placeCounts is Place(counts) with rows of equal count ranked as Place(nil) ranks them (the
// applied placement's memory rows first, in its order; else by in-degree; else by how often the
// type's nodes are neighbors), not by id: rows that the counted batches read equally often are
// interchangeable for those batches, and the prior picks the ones other batches read more. Memory:
// 4 bytes a node while it ranks.
func (s *Store) placeCounts(counts []uint32) error {
	leave, err := s.enter()
	if err != nil {
		return err
	}
	defer leave()
	n := s.NumNodes()
	if int64(len(counts)) != n {
		return fmt.Errorf("featurestore: %d counts for the dataset's %d nodes", len(counts), n)
	}
	gpuRows := s.kindRows(tiers.GPU)
	k := min(s.memoryRows(), n)
	prior, err := s.priorScores(k, gpuRows)
	if err != nil {
		return err
	}
	ids := topK(k, func(yield func(int64, uint64) bool) {
		for v, c := range counts {
			var p uint32
			if prior != nil {
				p = prior[v]
			}
			if !yield(int64(v), uint64(c)<<32|uint64(p)) {
				return
			}
		}
	})
	s.place.Lock()
	defer s.place.Unlock()
	return s.fillTiers(ids)
}

// priorScores scores every node as Place(nil) ranks the k rows the memory tiers hold (higher is
// hotter): the applied placement's memory rows by their order (the rest 0), else in-degree, else
// the neighbor count; nil where Place(nil) ranks by id.
func (s *Store) priorScores(k, gpuRows int64) ([]uint32, error) {
	n := s.NumNodes()
	switch plan := s.currentPlacement(); {
	case plan != nil:
		ids, err := s.planRows(plan, k, gpuRows)
		if err != nil {
			return nil, err
		}
		scores := make([]uint32, n)
		for i, v := range ids {
			scores[v] = uint32(len(ids) - i)
		}
		return scores, nil
	case s.graph != nil:
		scores := make([]uint32, n)
		err := s.inDegrees(func(v int64, d uint64) bool {
			scores[v] = uint32(min(d, math.MaxUint32))
			return true
		})
		return scores, err
	case s.sess.readsAsNeighbor(s.nt):
		return s.neighborCounts(), nil
	}
	return nil, nil
}

// HottestIDs returns at most k ids, hottest first, ranked as Place ranks them: by hotness (one
// count per node, ties to the smaller id), or with nil hotness by the applied placement's
// memory rows (GPU rows first), else by in-degree, else by id. Multi-GPU ownership is decided
// from this order (each rank places its share with PlaceIDs).
func (s *Store) HottestIDs(hotness []uint32, k int64) ([]int64, error) {
	leave, err := s.enterFeature("HottestIDs")
	if err != nil {
		return nil, err
	}
	defer leave()
	n := s.NumNodes()
	if hotness != nil && int64(len(hotness)) != n {
		return nil, fmt.Errorf("featurestore: hotness has %d entries, the dataset %d nodes", len(hotness), n)
	}
	if k < 0 {
		return nil, fmt.Errorf("featurestore: HottestIDs of k = %d ids; want k >= 0", k)
	}
	k = min(k, n)
	if hotness == nil && s.currentPlacement() != nil {
		ids, err := s.planRows(s.currentPlacement(), n, 1)
		if err != nil {
			return nil, err
		}
		return ids[:min(int64(len(ids)), k)], nil
	}
	return s.hottest(hotness, k, s.kindRows(tiers.GPU))
}

// hottest ranks the k rows the memory tiers should hold (see HottestIDs); gpuRows says whether
// an applied placement's GPU rows come first.
func (s *Store) hottest(hotness []uint32, k, gpuRows int64) ([]int64, error) {
	switch plan := s.currentPlacement(); {
	case hotness == nil && plan != nil:
		return s.planRows(plan, k, gpuRows)
	case k == 0:
		return nil, nil
	case hotness != nil:
		return topK(k, func(yield func(int64, uint64) bool) {
			for v, h := range hotness {
				if !yield(int64(v), uint64(h)) {
					return
				}
			}
		}), nil
	case s.graph != nil:
		return s.topByDegree(k)
	case s.sess.readsAsNeighbor(s.nt):
		return s.topByNeighborCount(k), nil
	default:
		ids := make([]int64, k)
		for i := range ids {
			ids[i] = int64(i)
		}
		return ids, nil
	}
}

// PlaceIDs refills the memory tiers, fastest first, with ids in the order given: the GPU tier
// (when a GPU is in use) takes the first rows it holds, the host tier the next; ids beyond both
// are not cached. ids must be distinct and in [0, NumNodes). Later Place(nil) calls rank as
// before (this does not change the applied placement). Gathers wait while it runs.
func (s *Store) PlaceIDs(ids []int64) error {
	leave, err := s.enterFeature("PlaceIDs")
	if err != nil {
		return err
	}
	defer leave()
	if err := s.checkPlaceIDs("PlaceIDs", ids); err != nil {
		return err
	}
	ids = ids[:min(int64(len(ids)), s.memoryRows())]
	s.place.Lock()
	defer s.place.Unlock()
	return s.fillTiers(ids)
}

// checkPlaceIDs checks that ids, given to op, are distinct and in [0, NumNodes).
func (s *Store) checkPlaceIDs(op string, ids []int64) error {
	n := s.NumNodes()
	seen := make([]uint64, (n+63)/64)
	for i, v := range ids {
		if v < 0 || v >= n {
			return fmt.Errorf("featurestore: %s: ids[%d] = %d is out of range [0, %d): %w", op, i, v, n, ErrIDOutOfRange)
		}
		if seen[v/64]&(1<<(v%64)) != 0 {
			return fmt.Errorf("featurestore: %s: ids[%d] = %d appears twice", op, i, v)
		}
		seen[v/64] |= 1 << (v % 64)
	}
	return nil
}

// fillTiers fills the memory tiers, fastest first, each with the hottest ids (hottest first) the
// tiers before it did not take, reading the rows from the SSD tier. The caller holds the place
// lock for writing; kernels of earlier gathers may still read the tiers, so they are waited for
// first.
func (s *Store) fillTiers(ids []int64) error {
	s.tierGen++
	if g := s.gpu; g != nil {
		if err := g.quiesce(s); err != nil {
			return err
		}
	}
	for _, t := range s.tierList() {
		if t.Kind() == tiers.SSD {
			break
		}
		take := ids[:min(int64(len(ids)), s.capacityRows(t))]
		if err := t.Fill(take, s.ssd.Source); err != nil {
			return fmt.Errorf("featurestore: fill %s tier: %w", t.Kind(), err)
		}
		ids = ids[len(take):]
	}
	return nil
}

// readsAsNeighbor reports whether node type nt is the source type of an edge type held in memory
// in a dataset of several types (topByNeighborCount can rank its rows).
func (ss *Session) readsAsNeighbor(nt int) bool {
	for _, e := range ss.edges {
		if _, ok := e.graph.(*topology.CSC); ok && e.src == nt {
			return true
		}
	}
	return false
}

// topByNeighborCount ranks the rows of a type of a heterogeneous graph by how often the type's
// nodes are neighbors in the edge types held in memory whose source type it is (a row is read
// each time a sample reaches it as a neighbor). One counter (4 bytes) per node while it runs.
func (s *Store) topByNeighborCount(k int64) []int64 {
	counts := s.neighborCounts()
	return topK(k, func(yield func(int64, uint64) bool) {
		for v, c := range counts {
			if !yield(int64(v), uint64(c)) {
				return
			}
		}
	})
}

// neighborCounts is how often each node of the store's type is a neighbor in the edge types
// held in memory whose source type it is.
func (s *Store) neighborCounts() []uint32 { return s.sess.neighborCounts(s.nt) }

// neighborCounts is how often each node of type nt is a neighbor in the edge types held in
// memory whose source type it is.
func (ss *Session) neighborCounts(nt int) []uint32 {
	counts := make([]uint32, ss.nodes[nt].spec.Count)
	for _, e := range ss.edges {
		csc, ok := e.graph.(*topology.CSC)
		if !ok || e.src != nt {
			continue
		}
		for _, v := range csc.Indices32 {
			counts[v]++
		}
		for _, v := range csc.Indices64 {
			counts[v]++
		}
	}
	return counts
}

// cscInDegrees hands every node's in-degree in csc to yield in id order (until yield returns false).
func cscInDegrees(csc *topology.CSC, yield func(int64, uint64) bool) {
	for v := range int64(len(csc.Indptr) - 1) {
		if !yield(v, uint64(csc.Indptr[v+1]-csc.Indptr[v])) {
			return
		}
	}
}

// topByDegree ranks nodes by in-degree, streaming the index pointers so no per-node array is held.
func (s *Store) topByDegree(k int64) ([]int64, error) {
	var err error
	ids := topK(k, func(yield func(int64, uint64) bool) { err = s.inDegrees(yield) })
	return ids, err
}

// inDegrees hands every node's in-degree to yield in id order (until yield returns false): from
// the graph in memory, else streaming the index pointers a chunk at a time through the IO stacks
// (verified unless Options.UnverifiedReads) and checking their structure: a damaged file is
// corruption.
func (s *Store) inDegrees(yield func(int64, uint64) bool) error {
	if csc, ok := s.graph.(*topology.CSC); ok {
		cscInDegrees(csc, yield)
		return nil
	}
	file, edges, n := s.m.Edges().Indptr.File, s.m.Edges().Count, s.NumNodes()
	const chunk = 1 << 17 // pointers
	buf := make([]int64, 0, chunk)
	var next int64 // index of buf[0]
	at := func(v int64) (int64, error) {
		if v >= next+int64(len(buf)) {
			next += int64(len(buf))
			buf = buf[:min(chunk, n+1-next)]
			if err := s.sess.readFileAt(file, 8*next, dataset.BytesOf(buf)); err != nil {
				return 0, fmt.Errorf("featurestore: read index pointers: %w", err)
			}
		}
		return buf[v-next], nil
	}
	prev, err := at(0)
	if err != nil {
		return err
	}
	if prev != 0 {
		return fmt.Errorf("featurestore: %s: indptr[0] is %d, want 0: %w", file, prev, dataset.ErrCorrupt)
	}
	for v := range n {
		cur, err := at(v + 1)
		if err != nil {
			return err
		}
		if cur < prev || cur > edges {
			return fmt.Errorf("featurestore: %s: index pointers of node %d are %d, %d; want 0 <= indptr[v] <= indptr[v+1] <= %d edges: %w",
				file, v, prev, cur, edges, dataset.ErrCorrupt)
		}
		if !yield(v, uint64(cur-prev)) {
			return nil
		}
		prev = cur
	}
	return nil
}

// topK returns the k ids with the highest scores (ties to the smaller id), hottest first. It
// holds at most k + k/2 candidates (16 bytes each): when they fill the buffer, the k hottest are
// selected (expected linear time) and the coldest of them is the bar a later id must pass; the
// survivors are sorted once at the end.
func topK(k int64, scores func(yield func(id int64, score uint64) bool)) []int64 {
	if k <= 0 {
		return nil
	}
	buf := make([]scored, 0, k+k/2+64)
	var bar scored // with cut: an id must be hotter than bar to be a candidate
	cut := false
	for id, score := range scores {
		e := scored{score, id}
		if cut && !bar.less(e) {
			continue
		}
		if buf = append(buf, e); len(buf) == cap(buf) {
			selectHottest(buf, int(k))
			buf, cut = buf[:k], true
			bar = slices.MinFunc(buf, scored.compare)
		}
	}
	slices.SortFunc(buf, func(a, b scored) int { return b.compare(a) })
	ids := make([]int64, min(int64(len(buf)), k))
	for i := range ids {
		ids[i] = buf[i].id
	}
	return ids
}

type scored struct {
	score uint64
	id    int64
}

// less orders by coldness: lower score first, then higher id.
func (a scored) less(b scored) bool { return a.score < b.score || (a.score == b.score && a.id > b.id) }

// compare is less as a three-way comparison (ids are distinct, so never 0 for two ids).
func (a scored) compare(b scored) int {
	switch {
	case a.score != b.score:
		if a.score < b.score {
			return -1
		}
		return 1
	case a.id > b.id:
		return -1
	case a.id < b.id:
		return 1
	}
	return 0
}

// selectHottest reorders s so that its k hottest entries come first, in no order (quickselect,
// pivots drawn from a fixed pseudo-random sequence: expected linear time on any input).
func selectHottest(s []scored, k int) {
	lo, hi := 0, len(s) // the k-th hottest is in s[lo:hi]
	x := uint64(0x9e3779b97f4a7c15)
	for hi-lo > 1 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		p := lo + int(x%uint64(hi-lo))
		s[p], s[hi-1] = s[hi-1], s[p]
		pivot, store := s[hi-1], lo
		for i := lo; i < hi-1; i++ {
			if pivot.less(s[i]) { // hotter than the pivot
				s[i], s[store] = s[store], s[i]
				store++
			}
		}
		s[store], s[hi-1] = s[hi-1], s[store]
		switch {
		case store == k-1 || store == k:
			return
		case store < k:
			lo = store + 1
		default:
			hi = store
		}
	}
}
