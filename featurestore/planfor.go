package featurestore

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/placement"
	"github.com/tierfs/tierfs/tiers/host"
	"github.com/tierfs/tierfs/topology"
)

// PlanOptions configure PlanFor and Store.PlanPlacement.
type PlanOptions struct {
	// Feature whose rows are placed; "" is the dataset's first. Store.PlanPlacement plans for the
	// store's own feature and accepts only "" or its name.
	Feature   string
	Fanouts   []int // per hop, as training samples; not empty
	BatchSize int   // seeds per batch; > 0
	// Batches to profile; 0 is one epoch of Seeds.
	Batches int
	// TimeBudget stops profiling after this long (after at least one batch); 0 is no limit.
	TimeBudget time.Duration
	// Seeds to profile, in batch order. Nil takes the dataset's "train" split when it has one,
	// else every node, shuffled with a fixed seed.
	Seeds []int64
	// GPUBytes and HostBytes are the memory the plan may fill, topology and features together
	// (as Options.GPUCacheBytes and Options.HostCacheBytes). Neither may be negative, and the
	// host budget may not exceed the machine's available memory.
	GPUBytes, HostBytes int64
	Policy              placement.Policy
	// Recompute ignores a saved placement: profile, plan and save again.
	Recompute bool
}

// PlanReport says what PlanFor did and what the placement costs.
type PlanReport struct {
	Dataset string `json:"dataset"`
	File    string `json:"file"` // the placement file
	// Source is "loaded" (the saved placement applied as it was), "replanned" (the saved profile
	// applied, the plan made again for other budgets or policy) or "computed" (profiled, planned).
	Source      string `json:"source"`
	Loaded      bool   `json:"loaded"`                 // Source == "loaded"
	StaleReason string `json:"stale_reason,omitempty"` // why a saved placement was not used as it was
	Saved       bool   `json:"saved"`                  // a new placement was written to File
	SaveError   string `json:"save_error,omitempty"`   // why writing it failed (the plan is returned regardless)

	Feature   string           `json:"feature"`
	Nodes     int64            `json:"nodes"`
	RowBytes  int64            `json:"row_bytes"`
	Policy    string           `json:"policy"`
	Budget    placement.Budget `json:"budget"`
	Fanouts   []int            `json:"fanouts"`
	BatchSize int              `json:"batch_size"`
	// ProfileBatches and ProfileSeeds are what the profile (saved or new) sampled; SeedSource
	// says where a new profile's seeds came from ("given", "train split", "all nodes").
	ProfileBatches int     `json:"profile_batches"`
	ProfileSeeds   int64   `json:"profile_seeds"`
	SeedSource     string  `json:"seed_source,omitempty"`
	ProfileSeconds float64 `json:"profile_seconds"`
	PlanSeconds    float64 `json:"plan_seconds"`
	// TopologyInMemory: the store that planned holds the whole topology in memory (it fits
	// Options.TopologyMemoryBytes), so the plan gives the budgets to features alone.
	TopologyInMemory bool `json:"topology_in_memory"`

	Usage      []TierUsage  `json:"usage"`      // the chosen placement, per kind and memory tier
	Comparison []PolicyCost `json:"comparison"` // every policy under the same profile and budget, Policies() order
}

// TierUsage is what one kind of item takes in one tier.
type TierUsage struct {
	Kind  string `json:"kind"` // "topology" or "feature"
	Tier  string `json:"tier"` // "gpu", "host" or "ssd"
	Items int64  `json:"items"`
	Bytes int64  `json:"bytes"` // memory taken, per-item overheads included (0 on SSD)
}

// PolicyCost is one policy's placement under the profile: memory it fills and per-batch traffic.
type PolicyCost struct {
	Policy            string  `json:"policy"`
	Chosen            bool    `json:"chosen"`
	PCIeBytesPerBatch uint64  `json:"pcie_bytes_per_batch"`
	SSDBytesPerBatch  uint64  `json:"ssd_bytes_per_batch"`
	TopologyBytes     int64   `json:"topology_memory_bytes"` // GPU and host memory taken by topology
	FeatureBytes      int64   `json:"feature_memory_bytes"`  // GPU and host memory taken by features
	PerBatch          Traffic `json:"per_batch"`
}

// Traffic is placement.Traffic per batch, as JSON.
type Traffic struct {
	Topology LinkTraffic `json:"topology"`
	Feature  LinkTraffic `json:"feature"`
	Total    LinkTraffic `json:"total"`
}

// LinkTraffic is placement.LinkTraffic as JSON; arrays are indexed by tier: ssd, host, gpu.
type LinkTraffic struct {
	Reads        [placement.NumTiers]uint64 `json:"reads"`
	Transactions [placement.NumTiers]uint64 `json:"transactions"`
	PCIeBytes    uint64                     `json:"pcie_bytes"`
	SSDBytes     uint64                     `json:"ssd_bytes"`
}

func linkTraffic(l placement.LinkTraffic) LinkTraffic {
	return LinkTraffic{Reads: l.Reads, Transactions: l.Transactions, PCIeBytes: l.PCIeBytes, SSDBytes: l.SSDBytes}
}

// TopologyOverheadBytes is what a neighbor list held in memory costs beyond its entries and index
// pointer: its node id in the cache's sorted id list.
const TopologyOverheadBytes = 8

// PlanFor returns the placement of the dataset in dir for opt: the one saved there when it was
// made for the dataset as it is now and for opt's fanouts, batch size, budgets and policy;
// otherwise it profiles (reusing a saved profile when only budgets or policy changed), plans,
// and saves the result beside the dataset (placement.FileName). The report compares the chosen
// policy with every other one under the same profile and budgets. It opens the dataset with no
// caches to read the topology.
func PlanFor(dir string, opt PlanOptions) (*placement.Placement, *PlanReport, error) {
	if err := checkPlanBudgets(opt.GPUBytes, opt.HostBytes); err != nil {
		return nil, nil, err
	}
	s, err := Open(dir, Options{Feature: opt.Feature})
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	return s.PlanPlacement(opt)
}

// PlanPlacement is PlanFor on the store's dataset and feature, using the store's topology. It
// does not change the store's tiers (ApplyPlacement does).
func (s *Store) PlanPlacement(opt PlanOptions) (*placement.Placement, *PlanReport, error) {
	switch {
	case opt.Feature != "" && opt.Feature != s.spec.Name:
		return nil, nil, fmt.Errorf("featurestore: plan for feature %q on a store of feature %q", opt.Feature, s.spec.Name)
	case len(opt.Fanouts) == 0:
		return nil, nil, errors.New("featurestore: plan: fanouts are empty; give one fanout per hop")
	case opt.BatchSize <= 0:
		return nil, nil, fmt.Errorf("featurestore: plan: batch size %d; want > 0", opt.BatchSize)
	case opt.Batches < 0:
		return nil, nil, fmt.Errorf("featurestore: plan: %d batches; want >= 0 (0 is one epoch)", opt.Batches)
	case opt.TimeBudget < 0:
		return nil, nil, fmt.Errorf("featurestore: plan: time budget %v is negative", opt.TimeBudget)
	case opt.Policy >= placement.Policy(len(placement.Policies())):
		return nil, nil, fmt.Errorf("featurestore: plan: unknown policy %d", uint8(opt.Policy))
	}
	if err := checkPlanBudgets(opt.GPUBytes, opt.HostBytes); err != nil {
		return nil, nil, err
	}
	leave, err := s.enter()
	if err != nil {
		return nil, nil, err
	}
	defer leave()
	if s.graph == nil {
		return nil, nil, fmt.Errorf("featurestore: dataset %s has no topology to profile for a placement", s.m.Dir())
	}
	dir := s.m.Dir()
	sizes, err := placement.SizesOf(s.graph, s.spec.RowBytes, int64(s.m.Edges().Indices.DType.Size()))
	if err != nil {
		return nil, nil, err
	}
	sizes.BlockSize = int64(s.m.BlockSize)
	sizes.FeatureOverhead = host.IndexBytesPerRow
	sizes.TopologyOverhead = TopologyOverheadBytes
	want := placement.Inputs{Fanouts: slices.Clone(opt.Fanouts), BatchSize: opt.BatchSize,
		Budget: placement.Budget{GPUBytes: opt.GPUBytes, HostBytes: opt.HostBytes}, Policy: opt.Policy}
	_, onDisk := s.graph.(*topology.DiskCSC)
	rep := &PlanReport{Dataset: dir, File: filepath.Join(dir, placement.FileName), Feature: s.spec.Name,
		Nodes: s.NumNodes(), RowBytes: s.spec.RowBytes, Fanouts: want.Fanouts, BatchSize: opt.BatchSize,
		TopologyInMemory: !onDisk}

	var h *placement.Hotness
	var p *placement.Placement
	if opt.Recompute {
		rep.StaleReason = "recompute asked for"
	} else {
		h, p, err = placement.Load(dir, want)
		switch {
		case err == nil:
			if why := sizesDiffer(p, sizes); why != "" {
				rep.StaleReason = fmt.Sprintf("placement: %s is stale: %s", rep.File, why)
				p = nil // the profile does not depend on sizes: plan again
			}
		case errors.Is(err, placement.ErrStale):
			rep.StaleReason = err.Error() // h is the saved profile when only the plan's inputs differ
		case errors.Is(err, os.ErrNotExist):
			rep.StaleReason = "no saved placement"
		case errors.Is(err, placement.ErrCorrupt):
			rep.StaleReason = err.Error()
		default:
			return nil, nil, err
		}
	}
	switch {
	case p != nil:
		rep.Source = "loaded"
	case h != nil:
		rep.Source = "replanned"
	default:
		rep.Source = "computed"
		seeds, from, err := s.profileSeeds(opt.Seeds)
		if err != nil {
			return nil, nil, err
		}
		rep.SeedSource = from
		start := time.Now()
		h, err = placement.Profile(s.graph, seeds, placement.ProfileOptions{
			Fanouts: opt.Fanouts, BatchSize: opt.BatchSize, Batches: opt.Batches, TimeBudget: opt.TimeBudget, Seed: 1,
		})
		if err != nil {
			return nil, nil, err
		}
		rep.ProfileSeconds = time.Since(start).Seconds()
	}
	rep.Loaded = p != nil
	// A topology the store already holds in memory costs no transfers: plan with its hotness at
	// zero, so the budgets go to features (the saved profile keeps the real counts).
	planH := h
	if !onDisk {
		noTopology := *h
		noTopology.Topology = make([]uint32, len(h.Topology))
		planH = &noTopology
	}
	if p == nil {
		start := time.Now()
		if p, err = placement.Plan(planH, sizes, want.Budget, opt.Policy); err != nil {
			return nil, nil, err
		}
		rep.PlanSeconds = time.Since(start).Seconds()
		if err := placement.Save(dir, h, p); err != nil {
			rep.SaveError = err.Error()
		} else {
			rep.Saved = true
		}
	}
	rep.Policy, rep.Budget = p.Policy.String(), p.Budget
	rep.ProfileBatches, rep.ProfileSeeds = h.Batches, h.Seeds
	for _, t := range []placement.Tier{placement.TierGPU, placement.TierHost, placement.TierSSD} {
		for _, k := range []placement.Kind{placement.KindTopology, placement.KindFeature} {
			items, bytes := p.Used(k, t)
			rep.Usage = append(rep.Usage, TierUsage{Kind: k.String(), Tier: t.String(), Items: items, Bytes: bytes})
		}
	}
	for _, pol := range placement.Policies() {
		q := p
		if pol != p.Policy {
			if q, err = placement.Plan(planH, sizes, p.Budget, pol); err != nil {
				return nil, nil, fmt.Errorf("featurestore: plan %s for comparison: %w", pol, err)
			}
		}
		t, err := placement.Cost(q, planH, sizes)
		if err != nil {
			return nil, nil, err
		}
		t = t.PerBatch()
		c := PolicyCost{Policy: pol.String(), Chosen: pol == p.Policy,
			PCIeBytesPerBatch: t.Total.PCIeBytes, SSDBytesPerBatch: t.Total.SSDBytes,
			PerBatch: Traffic{Topology: linkTraffic(t.Topology), Feature: linkTraffic(t.Feature), Total: linkTraffic(t.Total)}}
		for _, tier := range []placement.Tier{placement.TierGPU, placement.TierHost} {
			_, tb := q.Used(placement.KindTopology, tier)
			_, fb := q.Used(placement.KindFeature, tier)
			c.TopologyBytes += tb
			c.FeatureBytes += fb
		}
		rep.Comparison = append(rep.Comparison, c)
	}
	return p, rep, nil
}

// sizesDiffer says how the sizes a saved placement was planned with differ from sizes ("" when
// they do not).
func sizesDiffer(p *placement.Placement, s placement.Sizes) string {
	if p.RowBytes != s.RowBytes || p.IndexBytes != s.IndexBytes || p.BlockSize != s.BlockSize ||
		p.FeatureOverhead != s.FeatureOverhead || p.TopologyOverhead != s.TopologyOverhead {
		return fmt.Sprintf("planned for %d-byte rows, %d-byte ids, %d-byte blocks and overheads %d/%d bytes; the store has %d, %d, %d and %d/%d",
			p.RowBytes, p.IndexBytes, p.BlockSize, p.FeatureOverhead, p.TopologyOverhead,
			s.RowBytes, s.IndexBytes, s.BlockSize, s.FeatureOverhead, s.TopologyOverhead)
	}
	return ""
}

// profileSeeds returns the seeds to profile and where they came from.
func (s *Store) profileSeeds(given []int64) ([]int64, string, error) {
	if given != nil {
		if len(given) == 0 {
			return nil, "", errors.New("featurestore: plan: the seed list is empty")
		}
		return given, "given", nil
	}
	var seeds []int64
	from := "all nodes"
	if _, ok := s.m.Nodes().Splits["train"]; ok {
		var err error
		if seeds, err = s.Split("train"); err != nil {
			return nil, "", err
		}
		from = "train split"
	} else {
		seeds = make([]int64, s.NumNodes())
		for i := range seeds {
			seeds[i] = int64(i)
		}
	}
	if len(seeds) == 0 {
		return nil, "", fmt.Errorf("featurestore: plan: no seeds to profile (%s of %s is empty)", from, s.m.Dir())
	}
	r := rand.New(rand.NewPCG(1, 0))
	r.Shuffle(len(seeds), func(i, j int) { seeds[i], seeds[j] = seeds[j], seeds[i] })
	return seeds, from, nil
}

// checkPlanBudgets applies Open's refusals to a plan's budgets, and refuses a host budget above
// the machine's available memory.
func checkPlanBudgets(gpuBytes, hostBytes int64) error {
	if gpuBytes < 0 {
		return fmt.Errorf("featurestore: GPU budget of %d bytes is negative", gpuBytes)
	}
	if hostBytes < 0 {
		return fmt.Errorf("featurestore: host budget of %d bytes is negative", hostBytes)
	}
	if avail, err := MemAvailable(); err == nil && hostBytes > avail {
		return fmt.Errorf("featurestore: host budget of %d bytes (%.1f GiB) is more than this machine's available memory, %d bytes (%.1f GiB, MemAvailable of /proc/meminfo)",
			hostBytes, float64(hostBytes)/(1<<30), avail, float64(avail)/(1<<30))
	}
	return nil
}

// MemAvailable is MemAvailable of /proc/meminfo in bytes.
func MemAvailable() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			if fields := strings.Fields(rest); len(fields) > 0 {
				kb, err := strconv.ParseInt(fields[0], 10, 64)
				if err != nil {
					return 0, fmt.Errorf("/proc/meminfo: MemAvailable %q: %w", rest, err)
				}
				return kb << 10, nil
			}
		}
	}
	return 0, errors.New("/proc/meminfo has no MemAvailable line")
}

// SavedPlacement returns the placement PlanFor saved in dir when it is fresh for opening the
// dataset with opt: made for the dataset as it is now, for the row size of opt's feature, and
// for a budget of exactly opt.GPUCacheBytes GPU and opt.HostCacheBytes host bytes (any policy,
// fanouts and batch size). A missing file gives an error wrapping os.ErrNotExist, a stale one a
// *placement.StaleError (errors.Is(err, placement.ErrStale)).
func SavedPlacement(dir string, opt Options) (*placement.Placement, error) {
	in, err := placement.Saved(dir)
	if err != nil {
		return nil, err
	}
	in.Budget.GPUBytes, in.Budget.HostBytes = opt.GPUCacheBytes, opt.HostCacheBytes
	_, p, err := placement.Load(dir, in)
	if err != nil {
		return nil, err
	}
	m, err := dataset.Load(dir)
	if err != nil {
		return nil, err
	}
	spec, err := m.Feature(opt.Feature)
	if err != nil {
		return nil, err
	}
	if p.RowBytes != spec.RowBytes || p.NumNodes() != m.Nodes().Count {
		return nil, &placement.StaleError{Path: filepath.Join(dir, placement.FileName),
			Reason: fmt.Sprintf("planned for %d nodes of %d-byte rows, feature %q has %d nodes of %d-byte rows", p.NumNodes(), p.RowBytes, spec.Name, m.Nodes().Count, spec.RowBytes)}
	}
	return p, nil
}

// Placement is the placement the store's tiers follow (Options.Placement, or the last
// ApplyPlacement), or nil.
func (s *Store) Placement() *placement.Placement {
	s.place.RLock()
	defer s.place.RUnlock()
	return s.opt.Placement
}

// currentPlacement is Placement, for Place.
func (s *Store) currentPlacement() *placement.Placement { return s.Placement() }

// ApplyPlacement makes the store follow p from now on: it checks that p was made for this
// dataset's node count and row size and that its memory-tier feature rows fit the caches, holds
// the neighbor lists of its memory-tier topology in memory when the topology is on disk
// (replacing any earlier ones), and refills the feature tiers from p as Place does (gathers wait
// meanwhile). Later Place(nil) calls keep following p.
func (s *Store) ApplyPlacement(p *placement.Placement) error {
	if p == nil {
		return errors.New("featurestore: ApplyPlacement of a nil placement")
	}
	if err := s.preparePlacement(p); err != nil {
		return err
	}
	s.place.Lock()
	s.opt.Placement = p
	s.place.Unlock()
	return s.Place(nil)
}

// preparePlacement checks p against the store and caches its topology (ApplyPlacement's first
// half).
func (s *Store) preparePlacement(p *placement.Placement) error {
	leave, err := s.enter()
	if err != nil {
		return err
	}
	defer leave()
	if err := s.checkPlan(p); err != nil {
		return err
	}
	gpuRows := s.gpuCapacityRows()
	k := min(host.CapacityRows(s.opt.HostCacheBytes, s.spec.RowBytes)+gpuRows, s.NumNodes())
	if _, err := s.planRows(p, k, gpuRows); err != nil {
		return err
	}
	return s.cachePlanTopology(p)
}
