package placement

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tierfs/tierfs/topology"
)

// ProfileOptions configure Profile.
type ProfileOptions struct {
	Fanouts   []int // per hop, as topology.SampleOptions.Fanouts; not empty
	BatchSize int   // seeds per batch; > 0
	// Batches to sample: batch b takes the BatchSize seeds that follow batch b-1's, wrapping
	// around to the start of seeds. 0 means one epoch, ceil(len(seeds)/BatchSize) batches.
	Batches int
	// TimeBudget stops profiling once it has run this long (after at least one batch); 0 means
	// no limit. Hotness.Batches says how many batches ran.
	TimeBudget time.Duration
	Replace    bool   // sample with replacement
	Seed       uint64 // batch b samples with a seed derived from (Seed, b)
	Workers    int    // as topology.SampleOptions.Workers
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

// Profile pre-samples batches of seeds from g and counts, per node, how often sampling reads its
// neighbor list (Hotness.Topology: every node a hop samples for, i.e. the distinct seeds at hop 0
// and the nodes first reached at hop h-1 at hop h, while the hop's fanout is not 0) and how often
// its feature row is read (Hotness.Feature: every entry of the batch's Sample.Nodes).
//
// It makes one topology.SampleNeighbors call per batch and holds 12 bytes per node.
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
	case opt.Batches < 0:
		return nil, fmt.Errorf("placement: %d batches; want >= 0 (0 is one epoch)", opt.Batches)
	case opt.TimeBudget < 0:
		return nil, fmt.Errorf("placement: time budget %v is negative", opt.TimeBudget)
	}
	n := g.NumNodes()
	batches := opt.Batches
	if batches == 0 {
		batches = (len(seeds) + opt.BatchSize - 1) / opt.BatchSize
	}
	h := &Hotness{
		Topology: make([]uint32, n), Feature: make([]uint32, n),
		Fanouts: append([]int(nil), opt.Fanouts...), BatchSize: opt.BatchSize, Replace: opt.Replace,
	}
	stamp := make([]uint32, n) // batch+1 of the last batch that counted v as a hop-0 target
	batch := make([]int64, 0, opt.BatchSize)
	next := 0
	start := time.Now()
	for b := range batches {
		if b > 0 && opt.TimeBudget > 0 && time.Since(start) >= opt.TimeBudget {
			break
		}
		batch = batch[:0]
		if len(seeds) >= opt.BatchSize {
			for len(batch) < opt.BatchSize {
				take := min(opt.BatchSize-len(batch), len(seeds)-next)
				batch = append(batch, seeds[next:next+take]...)
				next = (next + take) % len(seeds)
			}
		} else {
			batch = append(batch, seeds...)
		}
		s, err := topology.SampleNeighbors(g, batch, topology.SampleOptions{
			Fanouts: opt.Fanouts, Replace: opt.Replace, Seed: mix64(opt.Seed ^ mix64(uint64(b))), Workers: opt.Workers,
		})
		if err != nil {
			return nil, fmt.Errorf("placement: profile batch %d: %w", b, err)
		}
		if mark := uint32(b) + 1; opt.Fanouts[0] != 0 { // a hop of fanout 0 reads no list
			for _, v := range batch {
				if stamp[v] != mark {
					stamp[v] = mark
					inc(&h.Topology[v])
				}
			}
		}
		first := s.NodesPerHop[0]
		for hop := 1; hop < len(opt.Fanouts); hop++ {
			frontier := s.Nodes[first : first+s.NodesPerHop[hop]]
			if opt.Fanouts[hop] == 0 || len(frontier) == 0 {
				break
			}
			for _, v := range frontier {
				inc(&h.Topology[v])
			}
			first += s.NodesPerHop[hop]
		}
		for _, v := range s.Nodes {
			inc(&h.Feature[v])
		}
		h.Batches++
		h.Seeds += int64(len(batch))
	}
	return h, nil
}

// inc adds one, saturating.
func inc(c *uint32) {
	if *c != math.MaxUint32 {
		*c++
	}
}

func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
