package placement

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
)

// Plan places every node's topology and feature in GPU memory, host memory or SSD under policy,
// never using more than budget.GPUBytes of GPU and budget.HostBytes of host memory (items cost
// their bytes plus the Sizes overheads). Items nobody reads (hotness 0) stay on SSD under every
// policy that uses hotness. It fails, naming the value, on hotness and sizes of different node
// counts, non-positive sizes, negative budgets or an unknown policy.
func Plan(h *Hotness, sizes Sizes, budget Budget, policy Policy) (*Placement, error) {
	if err := h.validate(); err != nil {
		return nil, err
	}
	sizes = sizes.withDefaults()
	if err := sizes.validate(h.NumNodes()); err != nil {
		return nil, err
	}
	budget = budget.withDefaults()
	if err := budget.validate(); err != nil {
		return nil, err
	}
	if policy >= numPolicies {
		return nil, fmt.Errorf("placement: unknown policy %d", uint8(policy))
	}
	n := h.NumNodes()
	p := newPlacement(n, policy, budget, sizes)
	pl := planner{h: h, s: &sizes, p: p, left: [NumTiers]int64{TierGPU: budget.GPUBytes, TierHost: budget.HostBytes}}
	switch policy {
	case Unified, UnifiedPCIe:
		pl.unified(budget.ChunkBytes, policy == UnifiedPCIe)
	case TopologyFirst, FeaturesFirst:
		first, second := KindTopology, KindFeature
		if policy == FeaturesFirst {
			first, second = second, first
		}
		pl.fillInOrder(append(pl.hottest(first), pl.hottest(second)...))
	case DegreeRanked:
		keys := make([]uint64, n)
		for v, d := range sizes.Degrees {
			keys[v] = ^uint64(d) // degrees are >= 0 (Sizes.validate): the highest sorts first
		}
		order := make([]item, n)
		for i, v := range radixOrder(keys) {
			order[i] = item{v: int64(v), k: KindFeature}
		}
		pl.fillInOrder(order)
	case Random:
		// A fixed pseudo-random order of every item: sorted by a 32-bit hash of its position
		// (four radix passes; equal hashes keep position order), which streams through memory
		// where a shuffle would miss the cache on every swap.
		keys := make([]uint64, 2*n)
		for i := range keys {
			keys[i] = mix64(randomPolicySeed^uint64(i)) >> 32
		}
		for _, j := range radixOrder(keys) {
			pl.fill(item{v: int64(j / 2), k: Kind(j % 2)})
		}
	case None:
	}
	return p, nil
}

// randomPolicySeed fixes the Random policy's order.
const randomPolicySeed = 0x5eed_0f_7a4d0

type item struct {
	v     int64
	k     Kind
	mem   int64   // memory it costs
	score float64 // transactions it saves in the tier being filled
	dens  float64 // score / mem
}

type planner struct {
	h    *Hotness
	s    *Sizes
	p    *Placement
	left [NumTiers]int64 // budget left per memory tier
}

func (pl *planner) hot(v int64, k Kind) uint32 {
	if k == KindFeature {
		return pl.h.Feature[v]
	}
	return pl.h.Topology[v]
}

// hottest lists the items of kind k read at least once, hottest first (ties: smaller id).
func (pl *planner) hottest(k Kind) []item {
	ids := pl.hottestIDs(k)
	out := make([]item, len(ids))
	for i, v := range ids {
		out[i] = item{v: v, k: k}
	}
	return out
}

// hottestIDs is hottest's nodes.
func (pl *planner) hottestIDs(k Kind) []int64 {
	var ids []int64
	var keys []uint64
	for v := range pl.h.NumNodes() {
		if h := pl.hot(v, k); h > 0 {
			ids = append(ids, v)
			keys = append(keys, ^uint64(h))
		}
	}
	out := make([]int64, len(ids))
	for i, j := range radixOrder(keys) {
		out[i] = ids[j]
	}
	return out
}

// fillInOrder walks order and puts each item in the GPU when it fits there, else in host memory
// when it fits there, else leaves it on SSD.
func (pl *planner) fillInOrder(order []item) {
	for _, it := range order {
		pl.fill(it)
	}
}

// fill puts it in the GPU when it fits there, else in host memory when it fits there, else
// leaves it on SSD.
func (pl *planner) fill(it item) {
	m := pl.s.memory(it.v, it.k)
	for _, t := range []Tier{TierGPU, TierHost} {
		if m <= pl.left[t] {
			pl.left[t] -= m
			pl.p.set(it.v, it.k, t, m)
			return
		}
	}
}

// ssdTx is the SSD-side cost of h reads of b bytes in 64-byte units: whole blocks.
func ssdTx(h uint32, b, block int64) float64 {
	return float64(h) * float64((b+block-1)/block) * float64(block) / CacheLine
}

// memTx is the PCIe cost of h reads of b bytes from host memory: ceil(h*b/64) transactions.
func memTx(h uint32, b int64) float64 { return math.Ceil(float64(h) * float64(b) / CacheLine) }

// unified fills the GPU, then host memory, ranking items by transactions saved per byte of
// memory. Moving an item from SSD to host memory saves its SSD blocks on the SSD link and
// ssdTx-memTx on PCIe; moving it to the GPU saves its SSD blocks on both links. pcieOnly counts
// the PCIe link alone (Hyperion's score).
func (pl *planner) unified(chunk int64, pcieOnly bool) {
	if !pcieOnly && !slices.ContainsFunc(pl.h.Topology, func(c uint32) bool { return c > 0 }) {
		// Feature rows alone compete (as when the store holds its topology in memory): each
		// costs the same memory and saves more the hotter it is, in either tier, so the ranking
		// is by hotness for both, and the GPU then host memory take its head. (PCIe-only scores
		// give no host-tier saving to a row of whole blocks: those take the general path.)
		for _, v := range pl.hottestIDs(KindFeature) {
			pl.fill(item{v: v, k: KindFeature})
		}
		return
	}
	pl.unifiedByDensity(chunk, pcieOnly)
}

// unifiedByDensity is unified for any mix of items: per tier, the candidates' scores and
// densities, then fillTier.
func (pl *planner) unifiedByDensity(chunk int64, pcieOnly bool) {
	count := 0
	for v := range pl.h.NumNodes() {
		count += min(1, int(pl.h.Topology[v])) + min(1, int(pl.h.Feature[v]))
	}
	cands := make([]item, 0, count)
	for v := range pl.h.NumNodes() {
		for _, k := range []Kind{KindTopology, KindFeature} {
			if pl.hot(v, k) > 0 {
				cands = append(cands, item{v: v, k: k, mem: pl.s.memory(v, k)})
			}
		}
	}
	for _, t := range []Tier{TierGPU, TierHost} {
		for i := range cands {
			it := &cands[i]
			hot, b := pl.hot(it.v, it.k), pl.s.bytes(it.v, it.k)
			ssd := ssdTx(hot, b, pl.s.BlockSize)
			pcie := ssd
			if t == TierHost {
				pcie = ssd - memTx(hot, b)
			}
			it.score = pcie
			if !pcieOnly {
				it.score += ssd
			}
			it.dens = it.score / float64(it.mem)
		}
		pl.fillTier(cands, t, chunk)
		// What the GPU did not take competes for host memory, still in node order.
		cands = slices.DeleteFunc(cands, func(it item) bool { return pl.p.Tier(it.v, it.k) != TierSSD })
	}
}

// fillTier places in tier t the candidates (in node order) that save the most per byte. Each
// kind's candidates are ranked by density and cut into chunks of at most chunk bytes (an
// item larger than chunk is a chunk of its own); while a head chunk fits, the one of higher
// density is taken. The bytes left then take single items, best density first.
func (pl *planner) fillTier(cands []item, t Tier, chunk int64) {
	var counts [2]int
	for _, it := range cands {
		if it.score > 0 {
			counts[it.k]++
		}
	}
	byKind := [2][]item{make([]item, 0, counts[0]), make([]item, 0, counts[1])}
	for _, it := range cands {
		if it.score > 0 {
			byKind[it.k] = append(byKind[it.k], it)
		}
	}
	var sorting sync.WaitGroup
	sorting.Go(func() { sortByDensity(byKind[KindTopology]) })
	// Feature rows all cost the same memory and bytes, so a row's density grows with its
	// hotness alone: ranking by hotness is ranking by density, and a counting sort does it.
	sorting.Go(func() { pl.sortByHotness(byKind[KindFeature]) })
	sorting.Wait()
	var pos [2]int
	take := func(it item) {
		pl.left[t] -= it.mem
		pl.p.set(it.v, it.k, t, it.mem)
	}
	for {
		best, bestEnd, bestDensity := -1, 0, 0.0
		for k, q := range byKind {
			if pos[k] == len(q) {
				continue
			}
			end, mem, saved := pos[k], int64(0), 0.0
			for end < len(q) && (end == pos[k] || mem+q[end].mem <= chunk) {
				mem += q[end].mem
				saved += q[end].score
				end++
			}
			if mem <= pl.left[t] && (best < 0 || saved/float64(mem) > bestDensity) {
				best, bestEnd, bestDensity = k, end, saved/float64(mem)
			}
		}
		if best < 0 {
			break
		}
		for _, it := range byKind[best][pos[best]:bestEnd] {
			take(it)
		}
		pos[best] = bestEnd
	}
	// Fill what no whole chunk fits with single items, merging both kinds by density.
	for pos[0] < len(byKind[0]) || pos[1] < len(byKind[1]) {
		k := 0
		if pos[0] == len(byKind[0]) || (pos[1] < len(byKind[1]) && byKind[1][pos[1]].dens > byKind[0][pos[0]].dens) {
			k = 1
		}
		it := byKind[k][pos[k]]
		pos[k]++
		if it.mem <= pl.left[t] {
			take(it)
		}
	}
}

// sortByHotness orders items of one kind, given in node order, hottest first, ties in node
// order.
func (pl *planner) sortByHotness(items []item) {
	sortItemsBy(items, func(it item) uint64 { return ^uint64(pl.hot(it.v, it.k)) })
}

// sortByDensity orders items given in node order best density first, ties in node order, as a
// comparison sort by (density descending, node ascending) would.
func sortByDensity(items []item) {
	// dens >= 0: its bits grow with it; complemented, the best density sorts first.
	sortItemsBy(items, func(it item) uint64 { return ^math.Float64bits(it.dens) })
}

// sortItemsBy orders items by key ascending, equal keys in their given order (radixOrder).
func sortItemsBy(items []item, key func(item) uint64) {
	keys := make([]uint64, len(items))
	for i, it := range items {
		keys[i] = key(it)
	}
	sorted := make([]item, len(items))
	for i, j := range radixOrder(keys) {
		sorted[i] = items[j]
	}
	copy(items, sorted)
}

// radixOrder returns the positions of keys in ascending key order, equal keys in position order
// (a stable sort): an LSD radix sort over the key bytes that differ, in time linear in the keys.
func radixOrder(keys []uint64) []uint32 {
	n := len(keys)
	if int64(n) > math.MaxUint32 {
		panic(fmt.Sprintf("placement: radixOrder of %d keys (at most 2^32)", n))
	}
	idx := make([]uint32, n)
	for i := range idx {
		idx[i] = uint32(i)
	}
	if n < 1<<12 {
		slices.SortStableFunc(idx, func(a, b uint32) int { return cmp.Compare(keys[a], keys[b]) })
		return idx
	}
	keys = slices.Clone(keys)
	tmpKeys, tmpIdx := make([]uint64, n), make([]uint32, n)
	for shift := 0; shift < 64; shift += 8 {
		var count [256]int
		for _, k := range keys {
			count[(k>>shift)&255]++
		}
		if count[(keys[0]>>shift)&255] == n {
			continue // every key has this digit
		}
		next := 0
		for d, c := range count {
			count[d], next = next, next+c
		}
		for i, k := range keys {
			d := (k >> shift) & 255
			tmpKeys[count[d]], tmpIdx[count[d]] = k, idx[i]
			count[d]++
		}
		keys, tmpKeys, idx, tmpIdx = tmpKeys, keys, tmpIdx, idx
	}
	return idx
}
