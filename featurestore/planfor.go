package featurestore

import (
	"errors"
	"fmt"

	"github.com/tierfs/tierfs/placement"
	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/tiers/host"
	"github.com/tierfs/tierfs/topology"
)

// PlanOptions configure PlanFor and Store.PlanPlacement (placement.PlanOptions).
type PlanOptions = placement.PlanOptions

// PlanReport says what PlanFor did and what the placement costs (placement.Report; its parts are
// placement's TierUsage, PolicyCost, BatchTraffic and LinkTraffic).
type PlanReport = placement.Report

// planTarget is a Store as placement.PlanStore plans for it: the stack, with its node type's splits.
type planTarget struct{ *Store }

var _ placement.Store = planTarget{}

// SplitNames lists the splits of the stack's node type.
func (p planTarget) SplitNames() []string { return p.sess.splitNames(p.nt) }

// Split reads the split name of the stack's node type.
func (p planTarget) Split(name string) ([]int64, error) {
	return p.sess.Split(p.sess.nodes[p.nt].spec.Name, name)
}

// TopologyOverheadBytes is what a neighbor list held in memory costs beyond its entries and index
// pointer: its node id in the cache's sorted id list.
const TopologyOverheadBytes = 8

// PlanFor returns the placement of the dataset in dir for opt (placement.PlanStore on the
// dataset opened for opt.Feature): the one saved there when it was made for the dataset as it is
// now and for opt's fanouts, batch size, budgets and policy; otherwise it profiles (reusing a
// saved profile when only budgets or policy changed), plans, and saves the result beside the
// dataset (placement.FileName). The report compares the chosen policy with every other one under
// the same profile and budgets. It refuses bad budgets before opening the dataset, and opens it
// with no caches to read the topology.
func PlanFor(dir string, opt PlanOptions) (*placement.Placement, *PlanReport, error) {
	if err := placement.CheckBudgets(opt.GPUBytes, opt.HostBytes); err != nil {
		return nil, nil, err
	}
	s, err := Open(dir, Options{Feature: opt.Feature})
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	return s.PlanPlacement(opt)
}

// PlanPlacement is PlanFor on the store's dataset and feature, using the store's topology
// (placement.PlanStore). It does not change the store's tiers (ApplyPlacement does).
func (s *Store) PlanPlacement(opt PlanOptions) (*placement.Placement, *PlanReport, error) {
	leave, err := s.enterFeature("PlanPlacement")
	if err != nil {
		return nil, nil, err
	}
	defer leave()
	if s.graph == nil && len(s.sess.edges) > 0 {
		return nil, nil, fmt.Errorf("featurestore: dataset %s has %d node types and %d edge types (%s): a saved placement covers a graph of one type; place a graph of several types by a profile (store.place(fanouts={edge type: [...]}, batch_size=...), tfs_place_json with fanouts per edge type): %w",
			s.m.Dir(), len(s.sess.nodes), len(s.sess.edges), s.sess.edgeTypeList(), errors.ErrUnsupported)
	}
	return placement.PlanStore(planTarget{s}, opt)
}

// Dir is the dataset's directory.
func (s *Store) Dir() string { return s.m.Dir() }

// TopologyOnDisk reports whether the store reads the topology from disk (it did not fit
// Options.TopologyMemoryBytes); false when it holds it in memory or the dataset has none.
func (s *Store) TopologyOnDisk() bool {
	_, ok := s.graph.(*topology.DiskCSC)
	return ok
}

// PlacementSizes are the sizes of the store's items as its tiers hold them, for planning: the
// topology's degrees and id width, the feature's row size, the dataset's block size, a host-tier
// row's index (host.IndexBytesPerRow) and a cached neighbor list's TopologyOverheadBytes. It
// reads every degree; a dataset without topology is an error.
func (s *Store) PlacementSizes() (placement.Sizes, error) {
	if err := s.needFeature("PlacementSizes"); err != nil {
		return placement.Sizes{}, err
	}
	if s.graph == nil {
		return placement.Sizes{}, fmt.Errorf("featurestore: dataset %s has no topology to size for a placement", s.m.Dir())
	}
	sizes, err := placement.SizesOf(s.graph, s.spec.RowBytes, int64(s.m.Edges().Indices.DType.Size()))
	if err != nil {
		return placement.Sizes{}, err
	}
	sizes.BlockSize = int64(s.m.BlockSize)
	sizes.FeatureOverhead = host.IndexBytesPerRow
	sizes.TopologyOverhead = TopologyOverheadBytes
	return sizes, nil
}

// SavedPlacement returns the placement PlanFor saved in dir when it is fresh for opening the
// dataset with opt: made for the dataset as it is now, for the row size of opt's feature, and
// for a budget of exactly opt.GPUCacheBytes GPU and opt.HostCacheBytes host bytes (any policy,
// fanouts and batch size; placement.SavedFor). A missing file gives an error wrapping
// os.ErrNotExist, a stale one a *placement.StaleError (errors.Is(err, placement.ErrStale)).
func SavedPlacement(dir string, opt Options) (*placement.Placement, error) {
	return placement.SavedFor(dir, opt.Feature, opt.GPUCacheBytes, opt.HostCacheBytes)
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
	if err := s.needFeature("ApplyPlacement"); err != nil {
		return err
	}
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
	gpuRows := s.kindRows(tiers.GPU)
	k := min(TierRows(tiers.Host, s.opt.HostCacheBytes, s.spec.RowBytes)+gpuRows, s.NumNodes())
	if _, err := s.planRows(p, k, gpuRows); err != nil {
		return err
	}
	return s.cachePlanTopology(p)
}
