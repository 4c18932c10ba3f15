package placement

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierfs/tierfs/topology"
)

// ProfileOptions configure Profile.
type ProfileOptions struct {
	Fanouts   []int // per hop, as topology.SampleOptions.Fanouts; not empty
	BatchSize int   // seeds per batch; > 0
	// Epochs to pre-sample, each a visit of every seed in batches, as a loader makes them: epoch
	// 0 in the order given, every later epoch in a fresh permutation drawn from (Seed, epoch).
	// 0 means until the estimate converges (Converged), at most MaxProfileEpochs.
	Epochs int
	// Batches, when > 0, samples exactly this many batches instead (epochs as above, the last
	// one cut short); it overrides Epochs.
	Batches int
	// TimeBudget stops profiling once it has run this long (after at least one epoch, or one
	// batch when Batches is set); 0 means no limit. Hotness.Batches says how many batches ran.
	TimeBudget time.Duration
	// CacheRows is the number of feature rows the memory tiers will hold; the convergence
	// estimate (Hotness.Convergence) is for a cache of that many rows. 0 means a quarter of the
	// nodes.
	CacheRows int64
	Replace   bool   // sample with replacement
	Seed      uint64 // batch b (counted over all epochs) samples with a seed derived from (Seed, b)
	// Workers sample batches in parallel; 0 is one per CPU. The counts do not depend on it.
	Workers int
	// Progress, when set, is called after every batch with the batches done and the batches
	// planned so far (the total grows when a converging profile starts another epoch).
	Progress func(done, total int)
}

// MaxProfileEpochs bounds a profile whose Epochs is 0 (until converged).
const MaxProfileEpochs = 8

// Converged is the relative change of the held-out estimate below which a profile with Epochs 0
// stops: another epoch would move SSD rows per batch by less than this.
const Converged = 0.02

// EpochEstimate is how well the counts of the epochs before Epoch predict Epoch: the SSD rows per
// batch of Epoch when the CacheRows hottest rows of the earlier epochs are cached (HeldOut), and
// when the CacheRows rows Epoch itself read most are (Hindsight, the bar no static placement
// chosen beforehand can beat on that epoch).
type EpochEstimate struct {
	Epoch     int     `json:"epoch"`
	HeldOut   float64 `json:"held_out_ssd_rows_per_batch"`
	Hindsight float64 `json:"hindsight_ssd_rows_per_batch"`
}

// SizesOf returns the Sizes of g's topology items (degrees read in batches) for feature rows of
// rowBytes and neighbor ids of indexBytes (0 means DefaultIndexBytes).
func SizesOf(g topology.Graph, rowBytes, indexBytes int64) (Sizes, error) {
	if g == nil {
		return Sizes{}, errors.New("placement: graph is nil")
	}
	s := Sizes{RowBytes: rowBytes, IndexBytes: indexBytes, Degrees: make([]int64, g.NumNodes())}
	const batch = 1 << 16
	nodes := make([]int64, 0, batch)
	for lo := int64(0); lo < g.NumNodes(); lo += batch {
		hi := min(lo+batch, g.NumNodes())
		nodes = nodes[:0]
		for v := lo; v < hi; v++ {
			nodes = append(nodes, v)
		}
		if err := g.Degrees(nodes, s.Degrees[lo:hi]); err != nil {
			return Sizes{}, fmt.Errorf("placement: degrees of nodes [%d, %d): %w", lo, hi, err)
		}
	}
	s = s.withDefaults()
	return s, s.validate(g.NumNodes())
}

// Profile pre-samples batches of seeds from g the way a loader visits them, epoch after epoch,
// and counts, per node, how often sampling reads its neighbor list (Hotness.Topology: every node
// a hop samples for, i.e. the distinct seeds at hop 0 and the nodes first reached at hop h-1 at
// hop h, while the hop's fanout is not 0) and how often its feature row is read
// (Hotness.Feature: every entry of the batch's Sample.Nodes). Seeds count like any other read.
//
// After each epoch but the first it estimates how well the epochs before predicted it
// (Hotness.Convergence); with Epochs 0 it stops once that estimate improves by less than
// Converged. Batches are sampled in parallel; the counts equal a serial run's.
//
// It holds 16 bytes per node plus a copy of seeds and, while it samples, a bitset of the nodes
// (n/8 bytes) per worker on graphs of up to 2^29 nodes (topology.SampleOptions.NodesOnly).
func Profile(g topology.Graph, seeds []int64, opt ProfileOptions) (*Hotness, error) {
	switch {
	case g == nil:
		return nil, errors.New("placement: graph is nil")
	case len(seeds) == 0:
		return nil, errors.New("placement: no seeds to profile")
	case len(opt.Fanouts) == 0:
		return nil, errors.New("placement: Fanouts is empty; give one fanout per hop")
	case opt.BatchSize <= 0:
		return nil, fmt.Errorf("placement: batch size %d; want > 0", opt.BatchSize)
	case opt.Epochs < 0:
		return nil, fmt.Errorf("placement: %d epochs; want >= 0 (0 is until converged)", opt.Epochs)
	case opt.Batches < 0:
		return nil, fmt.Errorf("placement: %d batches; want >= 0 (0 is whole epochs)", opt.Batches)
	case opt.TimeBudget < 0:
		return nil, fmt.Errorf("placement: time budget %v is negative", opt.TimeBudget)
	case opt.CacheRows < 0:
		return nil, fmt.Errorf("placement: cache of %d rows is negative", opt.CacheRows)
	case opt.Workers < 0:
		return nil, fmt.Errorf("placement: %d workers; want >= 0 (0 is one per CPU)", opt.Workers)
	}
	n := g.NumNodes()
	perEpoch := (len(seeds) + opt.BatchSize - 1) / opt.BatchSize
	if len(seeds) < opt.BatchSize {
		perEpoch = 1
	}
	epochs := opt.Epochs
	switch {
	case opt.Batches > 0:
		epochs = (opt.Batches + perEpoch - 1) / perEpoch
	case epochs == 0:
		epochs = MaxProfileEpochs
	}
	if int64(epochs)*int64(perEpoch) >= math.MaxUint32 {
		// A node is counted at most once a batch: with fewer batches no count overflows.
		return nil, fmt.Errorf("placement: %d epochs of %d batches are too many to count in 32 bits; profile fewer (Batches)", epochs, perEpoch)
	}
	cacheRows := opt.CacheRows
	if cacheRows == 0 {
		cacheRows = n / 4
	}
	h := &Hotness{
		Topology: make([]uint32, n), Feature: make([]uint32, n),
		Fanouts: slices.Clone(opt.Fanouts), BatchSize: opt.BatchSize, Replace: opt.Replace,
	}
	epochCounts := make([]uint32, n) // the feature counts of the epoch being sampled
	order := slices.Clone(seeds)
	start := time.Now()
	total := perEpoch // batches planned so far, for Progress
	if opt.Batches > 0 {
		total = opt.Batches
	} else if opt.Epochs > 0 {
		total = opt.Epochs * perEpoch
	}
	for e := range epochs {
		if e > 0 {
			if opt.TimeBudget > 0 && time.Since(start) >= opt.TimeBudget {
				break
			}
			ShuffleEpoch(order, opt.Seed, e)
			if opt.Batches == 0 && opt.Epochs == 0 {
				total += perEpoch
			}
		}
		batches := perEpoch
		if opt.Batches > 0 {
			batches = min(perEpoch, opt.Batches-h.Batches)
		}
		var budget time.Duration // what is left of the time budget; 0 is none (the first epoch runs whole)
		if opt.TimeBudget > 0 && (e > 0 || opt.Batches > 0) {
			budget = max(opt.TimeBudget-time.Since(start), time.Nanosecond)
		}
		clear(epochCounts)
		ran, seedsRan, err := profileEpoch(g, order, h, epochCounts, opt, h.Batches, batches, budget, total)
		h.Batches += ran
		h.Seeds += seedsRan
		if err != nil {
			return nil, err
		}
		if e > 0 && ran == batches {
			est := EpochEstimate{Epoch: e,
				HeldOut:   missesUnder(h.Feature, epochCounts, cacheRows) / float64(ran),
				Hindsight: missesUnder(epochCounts, epochCounts, cacheRows) / float64(ran)}
			h.Convergence = append(h.Convergence, est)
		}
		for v, c := range epochCounts {
			h.Feature[v] += c
		}
		if k := len(h.Convergence); opt.Epochs == 0 && opt.Batches == 0 && k >= 2 &&
			h.Convergence[k-2].HeldOut-h.Convergence[k-1].HeldOut <= Converged*h.Convergence[k-2].HeldOut {
			break
		}
		if ran < batches {
			break // the time budget ran out
		}
	}
	return h, nil
}

// profileEpoch samples batches [0, count) of order (batch b numbered first+b over the profile)
// on opt.Workers goroutines, adding topology counts to h and feature counts to epoch. It returns
// the batches and seeds it sampled: a prefix of the epoch, shorter than count only when budget
// (when > 0) ran out.
func profileEpoch(g topology.Graph, order []int64, h *Hotness, epoch []uint32, opt ProfileOptions, first, count int, budget time.Duration, total int) (int, int64, error) {
	workers := opt.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, count)
	start := time.Now()
	// Batches are claimed in order, and none after the budget ran out or an error: the batches
	// that ran are a prefix of the epoch.
	var claimMu sync.Mutex
	next, stopped := 0, false
	claim := func() (int, bool) {
		claimMu.Lock()
		defer claimMu.Unlock()
		if stopped || next >= count {
			return 0, false
		}
		if next > 0 && budget > 0 && time.Since(start) >= budget {
			stopped = true
			return 0, false
		}
		next++
		return next - 1, true
	}
	stop := func() {
		claimMu.Lock()
		stopped = true
		claimMu.Unlock()
	}
	errs := make([]error, count)
	ranBatch := make([]bool, count)
	var wg sync.WaitGroup
	var progress sync.Mutex
	done := first
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var distinct []int64
			for {
				b, ok := claim()
				if !ok {
					return
				}
				batch := batchOf(order, opt.BatchSize, b)
				s, err := topology.SampleNeighbors(g, batch, topology.SampleOptions{
					Fanouts: opt.Fanouts, Replace: opt.Replace, Seed: BatchSeed(opt.Seed, first+b), Workers: 1, NodesOnly: true,
				})
				if err != nil {
					errs[b] = fmt.Errorf("placement: profile batch %d: %w", first+b, err)
					stop()
					return
				}
				if opt.Fanouts[0] != 0 { // a hop of fanout 0 reads no list
					distinct = append(distinct[:0], batch...)
					slices.Sort(distinct)
					for _, v := range slices.Compact(distinct) {
						atomic.AddUint32(&h.Topology[v], 1)
					}
				}
				at := s.NodesPerHop[0]
				for hop := 1; hop < len(opt.Fanouts); hop++ {
					frontier := s.Nodes[at : at+s.NodesPerHop[hop]]
					if opt.Fanouts[hop] == 0 || len(frontier) == 0 {
						break
					}
					for _, v := range frontier {
						atomic.AddUint32(&h.Topology[v], 1)
					}
					at += s.NodesPerHop[hop]
				}
				for _, v := range s.Nodes {
					atomic.AddUint32(&epoch[v], 1)
				}
				ranBatch[b] = true
				if opt.Progress != nil {
					progress.Lock()
					done++
					opt.Progress(done, total)
					progress.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, 0, err
	}
	ran := 0
	var seeds int64
	for ran < count && ranBatch[ran] {
		seeds += int64(len(batchOf(order, opt.BatchSize, ran)))
		ran++
	}
	return ran, seeds, nil
}

// BatchSeed is the sampling seed of batch b (counted over every epoch) of a profile seeded seed:
// featurestore.Session.ProfileReads draws its batches with it too, so both count the same.
func BatchSeed(seed uint64, b int) uint64 { return mix64(seed ^ mix64(uint64(b))) }

// ShuffleEpoch puts order, the seeds as the epoch before e visited them, in epoch e's order (e >
// 0): a fresh permutation drawn from (seed, e), as a shuffling loader makes it.
func ShuffleEpoch(order []int64, seed uint64, e int) {
	r := rand.New(rand.NewPCG(seed, uint64(e)))
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
}

// batchOf is batch b of an epoch visiting order: the BatchSize seeds from b*BatchSize, the last
// batch shorter; all of order when it is shorter than a batch.
func batchOf(order []int64, size, b int) []int64 {
	lo := b * size
	return order[lo:min(lo+size, len(order))]
}

// missesUnder estimates the rows of eval read from SSD when the cacheRows rows ranked highest by
// rank are cached: the eval counts of the uncached rows. Rows tied with the last cached one are
// cached at random, so they count in proportion (by sorting, when counts exceed 2^22, ties are
// broken by the sort's order instead).
func missesUnder(rank, eval []uint32, cacheRows int64) float64 {
	if cacheRows >= int64(len(rank)) {
		return 0
	}
	var maxRank uint32
	for _, r := range rank {
		maxRank = max(maxRank, r)
	}
	if maxRank > 1<<22 { // counts this large are rare: rank by sorting instead of a histogram
		byRank := make([]int, len(rank))
		for v := range byRank {
			byRank[v] = v
		}
		slices.SortFunc(byRank, func(a, b int) int { return cmp.Compare(rank[b], rank[a]) })
		var misses float64
		for _, v := range byRank[cacheRows:] {
			misses += float64(eval[v])
		}
		return misses
	}
	hist := make([]int64, int(maxRank)+1)
	evalAt := make([]float64, int(maxRank)+1)
	for v, r := range rank {
		hist[r]++
		evalAt[r] += float64(eval[v])
	}
	var misses float64
	left := cacheRows
	for r := int(maxRank); r >= 0; r-- {
		switch {
		case left >= hist[r]:
			left -= hist[r]
		case left > 0:
			misses += evalAt[r] * float64(hist[r]-left) / float64(hist[r])
			left = 0
		default:
			misses += evalAt[r]
		}
	}
	return misses
}

func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
