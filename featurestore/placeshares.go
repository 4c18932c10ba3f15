package featurestore

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/tiers/gpu"
)

// One ranking across types (ARCHITECTURE.md, "Types"): a profile counts how many batches read
// each (type, row); memory is worth most where it saves the most disk reads per byte, so every
// reached row of every type is ranked by
//
//	count × reads(row bytes) / row bytes,   reads(b) = ⌈b / 4096⌉
//
// (a row costs at least one 4 KiB read however small it is), the GPU budget goes to the
// highest-ranked rows, the host budget to the next, and what is left of either (rows no batch
// reached) is split over the types by the bytes of their rows still uncached. Each type's tier
// stack is then sized to its share and filled by its own counts, hottest first.

// typeCounts is one type's profile: its row bytes and per-row batch counts.
type typeCounts struct {
	rowBytes int64
	counts   []uint32 // nil: the type has no tier stack
}

// rankedShares splits gpu and host bytes over types by the ranking above; gpuOn false gives the
// GPU budget to none. The shares never sum to more than the budgets, and a type never gets
// more than its rows' bytes in the two tiers together.
func rankedShares(types []typeCounts, gpu, host int64, gpuOn bool) []budgetShare {
	type bucket struct {
		t     int
		count uint32
		rows  int64
	}
	var buckets []bucket
	for t, tc := range types {
		if tc.counts == nil {
			continue
		}
		hist := map[uint32]int64{}
		for _, c := range tc.counts {
			if c > 0 {
				hist[c]++
			}
		}
		for c, n := range hist {
			buckets = append(buckets, bucket{t, c, n})
		}
	}
	score := func(b bucket) float64 {
		rb := types[b.t].rowBytes
		return float64(b.count) * float64((rb+4095)/4096) / float64(rb)
	}
	slices.SortFunc(buckets, func(a, b bucket) int {
		if c := cmp.Compare(score(b), score(a)); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(b.count, a.count))
	})
	shares := make([]budgetShare, len(types))
	left := []int64{0, host}
	if gpuOn {
		left[0] = gpu
	}
	held := make([]int64, len(types)) // rows given a tier so far, per type
	take := func(tier, t int, rows int64) int64 {
		rb := types[t].rowBytes
		n := min(rows, left[tier]/rb)
		left[tier] -= n * rb
		held[t] += n
		if tier == 0 {
			shares[t].gpu += n * rb
		} else {
			shares[t].host += n * rb
		}
		return n
	}
	for tier := range left {
		for i := range buckets {
			buckets[i].rows -= take(tier, buckets[i].t, buckets[i].rows)
		}
	}
	// What is left goes to rows no batch reached, by the bytes each type still has uncached.
	for tier := range left {
		var uncached float64
		for t, tc := range types {
			if tc.counts != nil {
				uncached += float64((int64(len(tc.counts)) - held[t]) * tc.rowBytes)
			}
		}
		budget := left[tier]
		for t, tc := range types {
			if tc.counts == nil || uncached == 0 {
				continue
			}
			rest := int64(len(tc.counts)) - held[t]
			frac := float64(rest*tc.rowBytes) / uncached
			take(tier, t, min(rest, int64(frac*float64(budget))/tc.rowBytes))
		}
	}
	return shares
}

// rankedShares is rankedShares over the session's stacks and budgets, with counts per node type.
func (ss *Session) rankedShares(counts [][]uint32) []budgetShare {
	types := make([]typeCounts, len(ss.nodes))
	gpuOn := false
	for t, n := range ss.nodes {
		if s := n.stack; s != nil {
			types[t] = typeCounts{rowBytes: s.spec.RowBytes, counts: counts[t]}
			gpuOn = gpuOn || s.gpu != nil
		}
	}
	return rankedShares(types, ss.opt.GPUCacheBytes, ss.opt.HostCacheBytes, gpuOn)
}

// resizeStacks sizes each stack's memory tiers to its share (the session's budgets split by
// rankedShares); Place fills them after. Every stack is held (entered, place lock for writing)
// for the whole resize, so no gather sees a tier between its release and its reallocation: GPU
// tiers whose row count changes are freed first, all of them, then allocated, so the device
// never holds both.
func (ss *Session) resizeStacks(shares []budgetShare) error {
	var held []*Store
	defer func() {
		for _, s := range held {
			s.place.Unlock()
			s.guard.leave()
		}
	}()
	for _, n := range ss.nodes {
		if s := n.stack; s != nil {
			if _, err := s.enter(); err != nil {
				return err
			}
			s.place.Lock()
			held = append(held, s)
		}
	}
	resized := map[*Store]bool{}
	for t, n := range ss.nodes {
		s := n.stack
		if s == nil || s.gpu == nil {
			continue
		}
		g := s.gpu
		if err := g.quiesce(s); err != nil {
			return err
		}
		if min(TierRows(tiers.GPU, shares[t].gpu, s.spec.RowBytes), s.NumNodes()) != g.tier.Capacity() {
			g.tier.Close()
			resized[s] = true
		}
	}
	for t, n := range ss.nodes {
		s := n.stack
		if s == nil {
			continue
		}
		s.tierGen++
		gpuBytes, hostBytes := shares[t].gpu, shares[t].host
		if g := s.gpu; g != nil && resized[s] {
			rows := min(TierRows(tiers.GPU, gpuBytes, s.spec.RowBytes), s.NumNodes())
			var err error
			if g.tier, err = gpu.New(g.dev, s.spec.RowBytes, rows, g.blocks, s.opt.MaxConcurrentIO); err != nil {
				// An empty tier keeps the stack serving (from the host tier and the SSD).
				g.tier, _ = gpu.New(g.dev, s.spec.RowBytes, 0, g.blocks, s.opt.MaxConcurrentIO)
				s.setTier(tiers.GPU, nil) // an empty tier is out of the list (and this one may be nil)
				return fmt.Errorf("featurestore: GPU tier of %s resized to %d rows: %w", ss.m.NodeTypes[t].Name, rows, err)
			}
			s.setTier(tiers.GPU, g.tier)
		}
		s.opt.GPUCacheBytes, s.opt.HostCacheBytes = gpuBytes, hostBytes
		if s.opt.HostPolicy == HostSieve {
			h, err := newHostTier(s.opt.HostPolicy, s.spec.RowBytes, hostBytes, s.opt.CopyWorkers)
			if err != nil {
				return err
			}
			closeTier(s.tier(tiers.Host))
			s.setTier(tiers.Host, h)
			if s.gpu != nil {
				if err := s.attachTiers([]tiers.Tier{h}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
