package cli

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/internal/bytesize"
	"github.com/tierfs/tierfs/placement"
)

// placeBenchResult is one line of `tierfs bench placement`.
type placeBenchResult struct {
	Name      string  `json:"name"`
	Seconds   float64 `json:"seconds"`    // to make the placement (profile and plan)
	CacheRows int64   `json:"cache_rows"` // feature rows in GPU and host memory
	SSDRows   float64 `json:"ssd_rows_per_batch"`
	Hindsight float64 `json:"hindsight_ssd_rows_per_batch"` // the bar for CacheRows rows
	Ratio     float64 `json:"ratio"`                        // SSDRows / Hindsight
}

// runBenchPlacement is `tierfs bench placement DIR`: SSD rows per batch of a held-out epoch
// under the placements `tierfs place` makes (one epoch profiled, profiled until converged, by
// degree), against the hindsight bar of that epoch.
func benchPlacementCmd(fs *pflag.FlagSet) runFunc {
	opened := storeFlags(fs)
	fs.Lookup("host-cache").Usage = "host memory to place into (default: 20% of the feature bytes)"
	fs.Lookup("gpu-cache").Usage = "GPU memory to place into (default: 10% of the feature bytes)"
	fanouts := fs.String("fanouts", "25,10", "neighbors per hop, comma separated")
	batchSize := fs.Int("batch-size", 1024, "seeds per batch")
	asJSON := fs.String("json", "", "also write the results as JSON to this file")
	return func(pos []string) error {
		fo, err := parseFanouts(*fanouts)
		if err != nil {
			return err
		}
		gpuBytes, hostBytes := opened.GPUCacheBytes, opened.HostCacheBytes
		opened.HostCacheBytes, opened.GPUCacheBytes, opened.HostPolicy = 0, 0, ""
		s, err := openStore(pos[0], *opened)
		if err != nil {
			return err
		}
		defer s.Close()
		featureBytes := s.NumNodes() * s.Feature().RowBytes
		if gpuBytes == 0 && hostBytes == 0 {
			gpuBytes, hostBytes = featureBytes/10, featureBytes/5
		}
		var seeds []int64
		if names, _ := s.Session().SplitNames(s.NodeType()); slices.Contains(names, "train") {
			if seeds, err = s.Session().Split(s.NodeType(), "train"); err != nil {
				return err
			}
		} else {
			seeds = make([]int64, s.NumNodes())
			for i := range seeds {
				seeds[i] = int64(i)
			}
		}
		// The held-out epoch: its own order and sampling seeds, none of which a profile uses.
		r := rand.New(rand.NewPCG(777, 0))
		r.Shuffle(len(seeds), func(i, j int) { seeds[i], seeds[j] = seeds[j], seeds[i] })
		start := time.Now()
		eval, err := placement.Profile(s.Graph(), seeds, placement.ProfileOptions{Fanouts: fo, BatchSize: *batchSize, Epochs: 1, Seed: 777 << 32})
		if err != nil {
			return err
		}
		fmt.Printf("held-out epoch: %d batches of %d seeds, fanouts %v, sampled in %.1fs; caches %s GPU + %s host\n",
			eval.Batches, *batchSize, fo, time.Since(start).Seconds(), bytesize.Format(gpuBytes), bytesize.Format(hostBytes))
		var results []placeBenchResult
		configs := []struct {
			name   string
			epochs int
			policy placement.Policy
		}{
			{"degree (no profile)", 1, placement.DegreeRanked},
			{"profile 1 epoch", 1, placement.Unified},
			{"profile until converged", 0, placement.Unified}, // last: the placement it saves is this one
		}
		fmt.Printf("%-26s %9s %11s %13s %13s %7s\n", "placement", "time s", "cache rows", "ssd rows/b", "hindsight/b", "ratio")
		for _, c := range configs {
			start := time.Now()
			p, rep, err := s.PlanPlacement(featurestore.PlanOptions{Fanouts: fo, BatchSize: *batchSize, Epochs: c.epochs,
				GPUBytes: gpuBytes, HostBytes: hostBytes, Policy: c.policy, Recompute: true})
			if err != nil {
				return err
			}
			res := placeBenchResult{Name: c.name, Seconds: time.Since(start).Seconds(), SSDRows: placement.SSDRowsPerBatch(p, eval)}
			for _, t := range []placement.Tier{placement.TierGPU, placement.TierHost} {
				rows, _ := p.Used(placement.KindFeature, t)
				res.CacheRows += rows
			}
			res.Hindsight = placement.HindsightSSDRowsPerBatch(eval, res.CacheRows)
			res.Ratio = res.SSDRows / max(res.Hindsight, 1e-9)
			results = append(results, res)
			fmt.Printf("%-26s %9.2f %11d %13.0f %13.0f %7.2f\n", res.Name, res.Seconds, res.CacheRows, res.SSDRows, res.Hindsight, res.Ratio)
			for _, e := range rep.Convergence {
				fmt.Printf("  epoch %d: held out %.0f rows per batch, its hindsight %.0f\n", e.Epoch, e.HeldOut, e.Hindsight)
			}
		}
		return writeJSONResults(*asJSON, results)
	}
}
