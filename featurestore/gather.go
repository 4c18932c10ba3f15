package featurestore

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierfs/tierfs/tiers"
)

// split is a batch of ids divided among tiers, fastest first: tier t serves count[t] rows, the
// row in slot slots(t)[k] going to output row pos(t)[k]. Every id goes to the first tier that
// holds it; the last tier holds every row.
type split struct {
	tierOf []uint8 // per id: the tier serving it
	count  []int
	pairs  []int64 // per tier in order: its slots, then its positions
}

// slots and pos are tier t's lists.
func (sp *split) slots(t int) []int64 { b := sp.base(t); return sp.pairs[b : b+sp.count[t]] }
func (sp *split) pos(t int) []int64 {
	b := sp.base(t) + sp.count[t]
	return sp.pairs[b : b+sp.count[t]]
}

// base is where tier t's slots start in pairs.
func (sp *split) base(t int) int {
	b := 0
	for _, c := range sp.count[:t] {
		b += 2 * c
	}
	return b
}

// splitChunk is the least number of ids a goroutine of the splitter takes.
const splitChunk = 2048

// splitIDs divides ids among ts (the caller holds every tiers.Holder among them) in parallel
// chunks: first each chunk's per-tier counts, then, at each chunk's offsets, the (slot, position)
// pairs, into pairs (len(ids)*2 values, e.g. pinned memory for a device copy). Position k of ids
// is written as posOf(k) (nil: k).
func splitIDs(ids []int64, ts []tiers.Tier, pairs []int64, posOf []int64, workers int) *split {
	n, nt := len(ids), len(ts)
	sp := &split{tierOf: make([]uint8, n), count: make([]int, nt), pairs: pairs[:2*n]}
	slot := make([]int64, n)
	chunk := max(splitChunk, (n+4*workers-1)/max(1, 4*workers)) // about 4 chunks a worker
	chunks := (n + chunk - 1) / chunk
	counts := make([][]int, chunks+1)
	counts[0] = make([]int, nt)
	parallelChunks(chunks, workers, func(c int) {
		lo, hi := c*chunk, min((c+1)*chunk, n)
		k := make([]int, nt)
		rem := make([]int, 0, hi-lo) // positions no faster tier holds
		for i := lo; i < hi; i++ {
			rem = append(rem, i)
		}
		look, got := make([]int64, hi-lo), make([]int64, hi-lo)
		for t, tier := range ts {
			if len(rem) == 0 {
				break
			}
			for j, i := range rem {
				look[j] = ids[i]
			}
			tier.Lookup(look[:len(rem)], got[:len(rem)])
			left := rem[:0]
			for j, i := range rem {
				if s := got[j]; s >= 0 || t == nt-1 {
					slot[i], sp.tierOf[i] = s, uint8(t)
					k[t]++
				} else {
					left = append(left, i)
				}
			}
			rem = left
		}
		counts[c+1] = k
	})
	for c := 1; c <= chunks; c++ { // counts[c] becomes the offsets of chunk c's pairs
		for t := range nt {
			counts[c][t] += counts[c-1][t]
		}
	}
	copy(sp.count, counts[chunks])
	bases := make([]int, nt)
	for t := range nt {
		bases[t] = sp.base(t)
	}
	parallelChunks(chunks, workers, func(c int) {
		k := counts[c]
		for i := c * chunk; i < min((c+1)*chunk, n); i++ {
			t := sp.tierOf[i]
			p := int64(i)
			if posOf != nil {
				p = posOf[i]
			}
			b := bases[t]
			sp.pairs[b+k[t]] = slot[i]
			sp.pairs[b+sp.count[t]+k[t]] = p
			k[t]++
		}
	})
	return sp
}

// parallelChunks runs fn(c) for every chunk c in [0, chunks) on up to workers goroutines.
func parallelChunks(chunks, workers int, fn func(c int)) {
	if chunks <= 1 || workers < 2 {
		for c := range chunks {
			fn(c)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, chunks) {
		wg.Go(func() {
			for {
				c := int(next.Add(1)) - 1
				if c >= chunks {
					return
				}
				fn(c)
			}
		})
	}
	wg.Wait()
}

// MaxGatherChunk bounds a gather's transient memory: a larger batch is served in chunks of this
// many ids, one after the other (the splitter's lists, the disk requests and, on the device path,
// the staging and miss lists take a few tens of bytes an id of a chunk).
const MaxGatherChunk = 1 << 20

// Gather writes the feature row of ids[i] to dst[i*RowBytes : (i+1)*RowBytes] for every i.
// len(dst) must be len(ids)*RowBytes; ids may repeat and come in any order. Ids are split once by
// tier; the SSD tier's reads are submitted first, the memory tiers copy while they are in flight,
// and Gather returns once every row is in place; then a host tier that admits (SIEVE) is offered
// the rows read from disk. Batches over MaxGatherChunk ids go in chunks. On error dst holds
// partial results.
func (s *Store) Gather(ids []int64, dst []byte) error {
	leave, err := s.enterFeature("Gather")
	if err != nil {
		return err
	}
	defer leave()
	rb := s.spec.RowBytes
	if int64(len(dst)) != int64(len(ids))*rb {
		return fmt.Errorf("featurestore: gather of %d ids needs a %d-byte destination (%d bytes per row), got %d bytes", len(ids), int64(len(ids))*rb, rb, len(dst))
	}
	if err := s.checkIDs(ids); err != nil {
		return err
	}
	start := time.Now()
	ts, count := []tiers.Tier(nil), []int(nil)
	for lo := 0; lo < len(ids) || lo == 0; lo += MaxGatherChunk {
		hi := min(lo+MaxGatherChunk, len(ids))
		if ts, count, err = s.gatherChunk(ids[lo:hi], dst[int64(lo)*rb:int64(hi)*rb], count); err != nil {
			break
		}
	}
	s.stats.gather(ts, count, time.Since(start))
	return err
}

// gatherChunk is Gather of a checked chunk; it adds the rows each tier served to count (by the
// tiers it returns).
func (s *Store) gatherChunk(ids []int64, dst []byte, count []int) ([]tiers.Tier, []int, error) {
	s.place.RLock()
	defer s.place.RUnlock()
	ts, release := heldTiers(s.tierList())
	splitStart := time.Now()
	sp := splitIDs(ids, ts, make([]int64, 2*len(ids)), nil, s.opt.CopyWorkers)
	since(&s.stats.splitNanos, splitStart)
	// The SSD tier's reads go out first; the memory tiers copy while they are in flight, and tiers
	// that change under gathers are released as soon as the memory copies are done.
	last := len(ts) - 1
	errs := make([]error, len(ts))
	var disk, memory sync.WaitGroup
	if sp.count[last] > 0 {
		disk.Go(func() {
			defer since(&s.stats.diskNanos, time.Now())
			errs[last] = ts[last].CopyToHost(sp.slots(last), sp.pos(last), dst)
		})
	}
	for t := last - 1; t >= 0; t-- {
		if sp.count[t] == 0 {
			continue
		}
		if t == 0 {
			errs[t] = ts[t].CopyToHost(sp.slots(t), sp.pos(t), dst)
			continue
		}
		memory.Go(func() { errs[t] = ts[t].CopyToHost(sp.slots(t), sp.pos(t), dst) })
	}
	memory.Wait()
	release()
	disk.Wait()
	err := errors.Join(errs...)
	if err == nil && sp.count[last] > 0 {
		s.admit(ids, dst, sp.tierOf, last)
	}
	if len(count) != len(sp.count) { // the tiers changed (a Place started the GPU path): count anew
		count = make([]int, len(sp.count))
	}
	for t, k := range sp.count {
		count[t] += k
	}
	if err != nil {
		return ts, count, fmt.Errorf("featurestore: gather: %w", err)
	}
	return ts, count, nil
}

// checkIDs rejects ids outside [0, NumNodes) naming the first bad one.
func (s *Store) checkIDs(ids []int64) error { return s.checkIDsFrom(ids, 0) }

// checkIDsFrom is checkIDs for ids that start at position first of the caller's ids.
func (s *Store) checkIDsFrom(ids []int64, first int) error {
	n := s.NumNodes()
	for i, id := range ids {
		if uint64(id) >= uint64(n) {
			return fmt.Errorf("featurestore: ids[%d] = %d is out of range [0, %d): %w", first+i, id, n, ErrIDOutOfRange)
		}
	}
	return nil
}

// admit offers the rows of ids the last tier served (dst holding row k for ids[k]; tierOf[k]
// the tier that served it) to every tier of the stack that admits rows (tiers.Admitter). The
// caller holds the place lock for reading.
func (s *Store) admit(ids []int64, dst []byte, tierOf []uint8, last int) {
	var skip []bool
	for _, t := range s.tierList() {
		a, ok := t.(tiers.Admitter)
		if !ok {
			continue
		}
		if skip == nil {
			skip = make([]bool, len(ids))
			for i, t := range tierOf {
				skip[i] = int(t) != last
			}
		}
		a.Admit(ids, dst, skip)
	}
}
