package placement

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/internal/sysinfo"
	"github.com/tierfs/tierfs/topology"
)

// Store is what planning needs from a feature store: *featurestore.Store satisfies it (the
// featurestore package asserts so). PlanStore only reads it: the topology to profile, the splits
// to take seeds from, and what the store's items cost in memory.
type Store interface {
	// Dir is the dataset's directory: the placement is saved there (FileName), and errors name it.
	Dir() string
	// Feature is the feature whose rows are placed (its Name and RowBytes).
	Feature() *dataset.FeatureSpec
	// NumNodes is the number of nodes.
	NumNodes() int64
	// Graph is the topology profiling samples; nil when the dataset has none.
	Graph() topology.Graph
	// TopologyOnDisk reports whether the store reads the topology from disk; when it holds the
	// whole topology in memory, reading it costs no transfers and plans leave it out.
	TopologyOnDisk() bool
	// PlacementSizes are the sizes of the store's items as its tiers hold them: Degrees,
	// RowBytes, IndexBytes, BlockSize, and the per-item memory overheads of its caches.
	PlacementSizes() (Sizes, error)
	// SplitNames lists the dataset's node splits; Split reads one. A new profile takes its seeds
	// from the "train" split when there is one.
	SplitNames() []string
	Split(name string) ([]int64, error)
}

// PlanOptions configure PlanStore (and featurestore.PlanFor).
type PlanOptions struct {
	// Feature whose rows are placed; "" is the dataset's first. PlanStore plans for the store's
	// own feature and accepts only "" or its name.
	Feature   string
	Fanouts   []int // per hop, as training samples; not empty
	BatchSize int   // seeds per batch; > 0
	// Epochs to profile (ProfileOptions.Epochs); 0 is until the estimate converges.
	Epochs int
	// Batches to profile instead, when > 0 (ProfileOptions.Batches).
	Batches int
	// TimeBudget stops profiling after this long (after at least one batch); 0 is no limit.
	TimeBudget time.Duration
	// Seeds to profile, in batch order. Nil takes the dataset's "train" split when it has one,
	// else every node, shuffled with a fixed seed.
	Seeds []int64
	// GPUBytes and HostBytes are the memory the plan may fill, topology and features together
	// (as featurestore.Options.GPUCacheBytes and HostCacheBytes). Neither may be negative, and
	// the host budget may not exceed the machine's available memory.
	GPUBytes, HostBytes int64
	Policy              Policy
	// Recompute ignores a saved placement: profile, plan and save again.
	Recompute bool
	// Progress, when set, follows profiling (ProfileOptions.Progress).
	Progress func(done, total int) `json:"-"`
}

// Report says what PlanStore did and what the placement costs. Its JSON is what `tierfs place
// --json` prints and tfs_place_json returns.
type Report struct {
	Dataset string `json:"dataset"`
	File    string `json:"file"` // the placement file
	// Source is "loaded" (the saved placement applied as it was), "replanned" (the saved profile
	// applied, the plan made again for other budgets or policy) or "computed" (profiled, planned).
	Source      string `json:"source"`
	Loaded      bool   `json:"loaded"`                 // Source == "loaded"
	StaleReason string `json:"stale_reason,omitempty"` // why a saved placement was not used as it was
	Saved       bool   `json:"saved"`                  // a new placement was written to File
	SaveError   string `json:"save_error,omitempty"`   // why writing it failed (the plan is returned regardless)

	Feature   string `json:"feature"`
	Nodes     int64  `json:"nodes"`
	RowBytes  int64  `json:"row_bytes"`
	Policy    string `json:"policy"`
	Budget    Budget `json:"budget"`
	Fanouts   []int  `json:"fanouts"`
	BatchSize int    `json:"batch_size"`
	// ProfileBatches and ProfileSeeds are what the profile (saved or new) sampled; SeedSource
	// says where a new profile's seeds came from ("given", "train split", "all nodes").
	ProfileBatches int     `json:"profile_batches"`
	ProfileSeeds   int64   `json:"profile_seeds"`
	SeedSource     string  `json:"seed_source,omitempty"`
	ProfileSeconds float64 `json:"profile_seconds"`
	// Convergence is the new profile's held-out estimate after each epoch but the first
	// (EpochEstimate): SSD rows per batch predicted vs the hindsight bar, for a cache of the
	// feature rows the budgets hold. Empty for a saved profile.
	Convergence []EpochEstimate `json:"convergence,omitempty"`
	PlanSeconds float64         `json:"plan_seconds"`
	// TopologyInMemory: the store that planned holds the whole topology in memory (for
	// featurestore, it fits Options.TopologyMemoryBytes), so the plan gives the budgets to
	// features alone.
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
	Policy            string       `json:"policy"`
	Chosen            bool         `json:"chosen"`
	PCIeBytesPerBatch uint64       `json:"pcie_bytes_per_batch"`
	SSDBytesPerBatch  uint64       `json:"ssd_bytes_per_batch"`
	TopologyBytes     int64        `json:"topology_memory_bytes"` // GPU and host memory taken by topology
	FeatureBytes      int64        `json:"feature_memory_bytes"`  // GPU and host memory taken by features
	PerBatch          BatchTraffic `json:"per_batch"`
}

// BatchTraffic is Traffic per batch (Traffic.PerBatch without its batch count), as reports
// write it.
type BatchTraffic struct {
	Topology LinkTraffic `json:"topology"`
	Feature  LinkTraffic `json:"feature"`
	Total    LinkTraffic `json:"total"`
}

// PlanStore returns the placement of st's dataset for opt: the one saved in st.Dir() when it was
// made for the dataset as it is now and for opt's fanouts, batch size, budgets and policy (and
// for st's item sizes); otherwise it profiles st's topology (reusing a saved profile when only
// budgets or policy changed), plans, and saves the result beside the dataset (FileName). The
// report compares the chosen policy with every other one under the same profile and budgets.
// When st holds its topology in memory, the plan gives the budgets to features alone (the saved
// profile keeps the topology's real counts). It does not change st; a failure to save is in the
// report, not an error.
func PlanStore(st Store, opt PlanOptions) (*Placement, *Report, error) {
	feature := st.Feature()
	if err := checkPlanOptions(&opt, feature.Name); err != nil {
		return nil, nil, err
	}
	dir := st.Dir()
	g := st.Graph()
	if g == nil {
		return nil, nil, fmt.Errorf("placement: dataset %s has no topology to profile for a placement", dir)
	}
	sizes, err := st.PlacementSizes()
	if err != nil {
		return nil, nil, err
	}
	want := Inputs{Fanouts: slices.Clone(opt.Fanouts), BatchSize: opt.BatchSize,
		Budget: Budget{GPUBytes: opt.GPUBytes, HostBytes: opt.HostBytes}, Policy: opt.Policy}
	onDisk := st.TopologyOnDisk()
	rep := &Report{Dataset: dir, File: filepath.Join(dir, FileName), Feature: feature.Name,
		Nodes: st.NumNodes(), RowBytes: feature.RowBytes, Fanouts: want.Fanouts, BatchSize: opt.BatchSize,
		TopologyInMemory: !onDisk}

	h, p, err := savedPlan(dir, want, sizes, opt.Recompute, rep)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case p != nil:
		rep.Source = "loaded"
	case h != nil:
		rep.Source = "replanned"
	default:
		rep.Source = "computed"
		seeds, from, err := profileSeeds(st, opt.Seeds)
		if err != nil {
			return nil, nil, err
		}
		rep.SeedSource = from
		start := time.Now()
		h, err = Profile(g, seeds, ProfileOptions{
			Fanouts: opt.Fanouts, BatchSize: opt.BatchSize, Epochs: opt.Epochs, Batches: opt.Batches, TimeBudget: opt.TimeBudget,
			CacheRows: cacheRows(opt, sizes, st.NumNodes()), Seed: 1, Progress: opt.Progress,
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
	// The other policies' plans, for the comparison, depend only on the profile and budgets:
	// made while the chosen one is made and saved.
	waitOthers := othersPlanned(planH, sizes, want.Budget, opt.Policy)
	if p == nil {
		start := time.Now()
		if p, err = Plan(planH, sizes, want.Budget, opt.Policy); err != nil {
			_, _ = waitOthers() // the chosen plan's error is the one returned
			return nil, nil, err
		}
		rep.PlanSeconds = time.Since(start).Seconds()
		if err := Save(dir, h, p); err != nil {
			rep.SaveError = err.Error()
		} else {
			rep.Saved = true
		}
	}
	rep.Policy, rep.Budget = p.Policy.String(), p.Budget
	rep.ProfileBatches, rep.ProfileSeeds, rep.Convergence = h.Batches, h.Seeds, h.Convergence
	for _, t := range []Tier{TierGPU, TierHost, TierSSD} {
		for _, k := range []Kind{KindTopology, KindFeature} {
			items, bytes := p.Used(k, t)
			rep.Usage = append(rep.Usage, TierUsage{Kind: k.String(), Tier: t.String(), Items: items, Bytes: bytes})
		}
	}
	others, err := waitOthers()
	if err != nil {
		return nil, nil, err
	}
	// Costing each plan is independent of the rest: done in parallel.
	if rep.Comparison, err = costComparison(others, p, planH, sizes); err != nil {
		return nil, nil, err
	}
	return p, rep, nil
}

// checkPlanOptions refuses options PlanStore cannot plan by, for a store of feature.
func checkPlanOptions(opt *PlanOptions, feature string) error {
	switch {
	case opt.Feature != "" && opt.Feature != feature:
		return fmt.Errorf("placement: plan for feature %q on a store of feature %q", opt.Feature, feature)
	case len(opt.Fanouts) == 0:
		return errors.New("placement: plan: fanouts are empty; give one fanout per hop")
	case opt.BatchSize <= 0:
		return fmt.Errorf("placement: plan: batch size %d; want > 0", opt.BatchSize)
	case opt.Epochs < 0:
		return fmt.Errorf("placement: plan: %d epochs; want >= 0 (0 is until converged)", opt.Epochs)
	case opt.Batches < 0:
		return fmt.Errorf("placement: plan: %d batches; want >= 0 (0 is whole epochs)", opt.Batches)
	case opt.TimeBudget < 0:
		return fmt.Errorf("placement: plan: time budget %v is negative", opt.TimeBudget)
	case opt.Policy >= numPolicies:
		return fmt.Errorf("placement: plan: unknown policy %d", uint8(opt.Policy))
	}
	return CheckBudgets(opt.GPUBytes, opt.HostBytes)
}

// savedPlan is the profile and placement saved in dir for want (h alone where only the plan's
// inputs or sizes changed; neither where none is saved, it is damaged or recompute is asked for),
// with why it is not used in rep.StaleReason.
func savedPlan(dir string, want Inputs, sizes Sizes, recompute bool, rep *Report) (h *Hotness, p *Placement, err error) {
	if recompute {
		rep.StaleReason = "recompute asked for"
		return nil, nil, nil
	}
	h, p, err = Load(dir, want)
	switch {
	case err == nil:
		if why := sizesDiffer(p, sizes); why != "" {
			rep.StaleReason = fmt.Sprintf("placement: %s is stale: %s", rep.File, why)
			p = nil // the profile does not depend on sizes: plan again
		}
	case errors.Is(err, ErrStale):
		rep.StaleReason = err.Error() // h is the saved profile when only the plan's inputs differ
	case errors.Is(err, os.ErrNotExist):
		rep.StaleReason = "no saved placement"
	case errors.As(err, new(*corruptError)):
		// The saved file is damaged (not the dataset's manifest, whose damage is the caller's).
		rep.StaleReason = err.Error()
	default:
		return nil, nil, err
	}
	return h, p, nil
}

// othersPlanned makes, on goroutines of their own, the plans of every policy but chosen for the
// report's comparison (they depend only on the profile and budgets); wait returns them, the
// chosen policy's entry nil.
func othersPlanned(h *Hotness, sizes Sizes, budget Budget, chosen Policy) (wait func() ([]*Placement, error)) {
	others := make([]*Placement, len(Policies()))
	othersErr := make([]error, len(Policies()))
	var planning sync.WaitGroup
	for i, pol := range Policies() {
		if pol != chosen {
			planning.Go(func() { others[i], othersErr[i] = Plan(h, sizes, budget, pol) })
		}
	}
	return func() ([]*Placement, error) {
		planning.Wait()
		for i, err := range othersErr {
			if err != nil {
				return nil, fmt.Errorf("placement: plan %s for comparison: %w", Policies()[i], err)
			}
		}
		return others, nil
	}
}

// costComparison costs every policy's plan (others, the chosen p where others has none) under the
// profile h, in parallel.
func costComparison(others []*Placement, p *Placement, h *Hotness, sizes Sizes) ([]PolicyCost, error) {
	costs := make([]PolicyCost, len(Policies()))
	errs := make([]error, len(Policies()))
	var costing sync.WaitGroup
	for i, q := range others {
		if q == nil {
			q = p // the chosen policy
		}
		costing.Go(func() { costs[i], errs[i] = comparePolicy(q, p.Policy, h, sizes) })
	}
	costing.Wait()
	return costs, errors.Join(errs...)
}

// comparePolicy is what placement q costs under the profile h; chosen is the policy the report
// chose.
func comparePolicy(q *Placement, chosen Policy, h *Hotness, sizes Sizes) (PolicyCost, error) {
	t, err := Cost(q, h, sizes)
	if err != nil {
		return PolicyCost{}, err
	}
	t = t.PerBatch()
	c := PolicyCost{Policy: q.Policy.String(), Chosen: q.Policy == chosen,
		PCIeBytesPerBatch: t.Total.PCIeBytes, SSDBytesPerBatch: t.Total.SSDBytes,
		PerBatch: BatchTraffic{Topology: t.Topology, Feature: t.Feature, Total: t.Total}}
	for _, tier := range []Tier{TierGPU, TierHost} {
		_, tb := q.Used(KindTopology, tier)
		_, fb := q.Used(KindFeature, tier)
		c.TopologyBytes += tb
		c.FeatureBytes += fb
	}
	return c, nil
}

// cacheRows is about how many feature rows the budgets hold, for the profile's estimate.
func cacheRows(opt PlanOptions, s Sizes, nodes int64) int64 {
	per := max(s.RowBytes+s.FeatureOverhead, 1)
	return min((opt.GPUBytes+opt.HostBytes)/per, nodes)
}

// sizesDiffer says how the sizes a saved placement was planned with differ from sizes ("" when
// they do not).
func sizesDiffer(p *Placement, s Sizes) string {
	if p.RowBytes != s.RowBytes || p.IndexBytes != s.IndexBytes || p.BlockSize != s.BlockSize ||
		p.FeatureOverhead != s.FeatureOverhead || p.TopologyOverhead != s.TopologyOverhead {
		return fmt.Sprintf("planned for %d-byte rows, %d-byte ids, %d-byte blocks and overheads %d/%d bytes; the store has %d, %d, %d and %d/%d",
			p.RowBytes, p.IndexBytes, p.BlockSize, p.FeatureOverhead, p.TopologyOverhead,
			s.RowBytes, s.IndexBytes, s.BlockSize, s.FeatureOverhead, s.TopologyOverhead)
	}
	return ""
}

// profileSeeds returns the seeds to profile and where they came from.
func profileSeeds(st Store, given []int64) ([]int64, string, error) {
	if given != nil {
		if len(given) == 0 {
			return nil, "", errors.New("placement: plan: the seed list is empty")
		}
		return given, "given", nil
	}
	var seeds []int64
	from := "all nodes"
	if slices.Contains(st.SplitNames(), "train") {
		var err error
		if seeds, err = st.Split("train"); err != nil {
			return nil, "", err
		}
		from = "train split"
	} else {
		seeds = make([]int64, st.NumNodes())
		for i := range seeds {
			seeds[i] = int64(i)
		}
	}
	if len(seeds) == 0 {
		return nil, "", fmt.Errorf("placement: plan: no seeds to profile (%s of %s is empty)", from, st.Dir())
	}
	r := rand.New(rand.NewPCG(1, 0))
	r.Shuffle(len(seeds), func(i, j int) { seeds[i], seeds[j] = seeds[j], seeds[i] })
	return seeds, from, nil
}

// CheckBudgets refuses a plan's budgets as featurestore.Open refuses cache sizes (negative
// ones), and a host budget above the machine's available memory (MemAvailable; when that cannot
// be read, the host budget is not bounded). The errors name the budget.
func CheckBudgets(gpuBytes, hostBytes int64) error {
	if gpuBytes < 0 {
		return fmt.Errorf("placement: GPU budget of %d bytes is negative", gpuBytes)
	}
	if hostBytes < 0 {
		return fmt.Errorf("placement: host budget of %d bytes is negative", hostBytes)
	}
	if avail, err := sysinfo.MemAvailable(); err == nil && hostBytes > avail {
		return fmt.Errorf("placement: host budget of %d bytes (%.1f GiB) is more than this machine's available memory, %d bytes (%.1f GiB, MemAvailable of /proc/meminfo)",
			hostBytes, float64(hostBytes)/(1<<30), avail, float64(avail)/(1<<30))
	}
	return nil
}

// SavedFor returns the placement saved in dir when it is fresh for opening the dataset's feature
// (by name; "" is the first) with caches of exactly gpuBytes GPU and hostBytes host memory: made
// for the dataset as it is now, for that feature's node count and row size, and for that budget
// (any policy, fanouts and batch size). A missing file gives an error wrapping os.ErrNotExist, a
// stale one a *StaleError (errors.Is(err, ErrStale)).
func SavedFor(dir, feature string, gpuBytes, hostBytes int64) (*Placement, error) {
	in, err := Saved(dir)
	if err != nil {
		return nil, err
	}
	in.Budget.GPUBytes, in.Budget.HostBytes = gpuBytes, hostBytes
	_, p, err := Load(dir, in)
	if err != nil {
		return nil, err
	}
	m, err := dataset.Load(dir)
	if err != nil {
		return nil, err
	}
	spec, err := m.Feature(feature)
	if err != nil {
		return nil, err
	}
	if p.RowBytes != spec.RowBytes || p.NumNodes() != m.Nodes().Count {
		return nil, &StaleError{Path: filepath.Join(dir, FileName),
			Reason: fmt.Sprintf("planned for %d nodes of %d-byte rows, feature %q has %d nodes of %d-byte rows", p.NumNodes(), p.RowBytes, spec.Name, m.Nodes().Count, spec.RowBytes)}
	}
	return p, nil
}
