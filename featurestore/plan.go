package featurestore

import (
	"fmt"

	"github.com/tierfs/tierfs/placement"
	"github.com/tierfs/tierfs/tiers/host"
	"github.com/tierfs/tierfs/topology"
)

// checkPlacement rejects an Options.Placement made for another node count or row size.
func (s *Store) checkPlacement() error { return s.checkPlan(s.opt.Placement) }

// checkPlan rejects a placement made for another node count or row size.
func (s *Store) checkPlan(p *placement.Placement) error {
	if p == nil {
		return nil
	}
	if p.NumNodes() != s.NumNodes() {
		return fmt.Errorf("featurestore: placement of %d nodes for a dataset of %d", p.NumNodes(), s.NumNodes())
	}
	if p.RowBytes != s.spec.RowBytes {
		return fmt.Errorf("featurestore: placement planned for %d-byte rows, feature %q has %d-byte rows", p.RowBytes, s.spec.Name, s.spec.RowBytes)
	}
	return nil
}

// planRows lists the feature rows placement p puts in memory, GPU rows first when the
// store has a GPU tier (gpuRows > 0). They must fit the k rows the tiers hold.
func (s *Store) planRows(p *placement.Placement, k, gpuRows int64) ([]int64, error) {
	var ids []int64
	if gpuRows > 0 {
		ids = p.Nodes(placement.KindFeature, placement.TierGPU)
	}
	ids = append(ids, p.Nodes(placement.KindFeature, placement.TierHost)...)
	if int64(len(ids)) > k {
		return nil, fmt.Errorf("featurestore: placement puts %d feature rows in memory, the caches hold %d (HostCacheBytes %d, GPU rows %d); plan with a budget that matches the caches and Sizes.FeatureOverhead %d",
			len(ids), k, s.opt.HostCacheBytes, gpuRows, host.IndexBytesPerRow)
	}
	return ids, nil
}

// cachePlanTopology holds in memory the neighbor lists of the nodes whose topology p puts in GPU
// or host memory, when the topology is on disk (there is no GPU topology cache yet, so both live
// in host memory). Memory: the plan's topology bytes plus 16 bytes a node; the plan's budget
// bounds it.
func (s *Store) cachePlanTopology(p *placement.Placement) error {
	g, ok := s.graph.(*topology.DiskCSC)
	if !ok || p == nil {
		return nil
	}
	nodes := p.Nodes(placement.KindTopology, placement.TierGPU)
	return g.CacheNeighbors(append(nodes, p.Nodes(placement.KindTopology, placement.TierHost)...))
}
