package cli

import (
	"cmp"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/planned"
	"github.com/tierfs/tierfs/topology"
)

// runPlanEpochs plans epochs of a store (planned.PlanEpochs) and prints the report; with
// --serve it then serves epochs from the plan, and with --compare the same batches through a
// plain gather, printing both.
func planEpochsCmd(fs *pflag.FlagSet) runFunc {
	opt := storeFlags(fs)
	seedsArg := fs.String("seeds", "split:train", "seed node ids: .npy, or split:NAME")
	seedEdgesArg := fs.String("seed-edges", "", "plan batches of seed edges (link prediction) instead of --seeds: a (2, n) or (n, 2) integer .npy of (src, dst) pairs, or split:NAME for an edge split of the dataset (its labels with it)")
	var link linkFlags
	link.register(fs)
	fanouts := fs.String("fanouts", "25,10", "neighbors per hop, comma separated; -1 takes all")
	replace := fs.Bool("replace", false, "sample with replacement")
	batch := fs.Int("batch-size", 1024, "seeds per batch")
	dropLast := fs.Bool("drop-last", false, "drop each epoch's last short batch")
	epochs := fs.Int("epochs", 1, "epochs to plan (K, 1 to 1024); epoch e is served from planned epoch e mod K")
	seed := fs.Uint64("seed", 0, "sampler seed")
	shuffleSeed := fs.Uint64("shuffle-seed", 0, "seed of the epochs' orders")
	planDir := fs.String("plan-dir", "", "directory for the plan (default: DIR/plans/epochs)")
	var budget sizeFlag
	fs.Var(&budget, "disk-budget", "bound on the plan's files (packed rows and stored samples), e.g. 20GB: plan as many epochs as fit (default: none)")
	packMethod := fs.String("pack-method", "", "how planning reads the rows it packs: scan (the feature files in ascending order, large reads), random (a read a row), or empty to choose by the disk model")
	var packMemory sizeFlag
	fs.Var(&packMemory, "pack-memory", "distinct rows a packing window holds (planning holds two), e.g. 1GB (default 1GiB); a scan reads the feature files once a window")
	serve := fs.Int("serve", 0, "then serve this many epochs from the plan and print what they read")
	compare := fs.Bool("compare", false, "with --serve, also gather the same batches through the store (random reads) and print both")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	usePlacement := placementFlag(fs)
	placeTiers := fs.Bool("place-tiers", true, "first fill the memory tiers with the rows the planned epochs read most (false: keep the store's placement)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of planning to this file")
	return func(pos []string) error {
		var s *featurestore.Store
		var hops []int
		var seeds []int64
		var seedEdges *planned.SeedEdges
		var err error
		if *seedEdgesArg == "" {
			if set := link.given(fs); set != "" {
				return fmt.Errorf("%s goes with --seed-edges (planning batches of seed edges)", set)
			}
			if s, hops, seeds, err = openToSample(pos[0], opt, *usePlacement, *fanouts, *seedsArg); err != nil {
				return err
			}
		} else {
			if s, hops, err = openToPlanEdges(pos[0], opt, *usePlacement, *fanouts, fs); err != nil {
				return err
			}
			if seedEdges, err = planSeedEdges(s, *seedEdgesArg, link); err != nil {
				s.Close()
				return err
			}
		}
		defer s.Close()
		dir := *planDir
		if dir == "" {
			dir = defaultPlanDir(pos[0])
		}
		o := planned.EpochOptions{Dir: dir, NodeType: s.NodeType(), Seeds: seeds, SeedEdges: seedEdges, BatchSize: *batch, DropLast: *dropLast,
			Sample: topology.SampleOptions{Fanouts: hops, Replace: *replace, Seed: *seed}, ShuffleSeed: *shuffleSeed,
			Epochs: *epochs, DiskBudget: int64(budget), PlaceTiers: *placeTiers, PackMethod: *packMethod, PackMemory: int64(packMemory)}
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		rep, err := planned.PlanEpochs(s.Session(), o)
		stop()
		if err != nil {
			return err
		}
		if *asJSON {
			if err := printJSON(rep); err != nil {
				return err
			}
		} else {
			printPlanReport(rep, s.RowBytes())
		}
		if *serve <= 0 {
			return nil
		}
		p, _, err := planned.OpenEpochs(s.Session(), o)
		if err != nil {
			return err
		}
		defer p.Close()
		var sampleT, gatherT, plainT time.Duration
		var nodes int64
		for e := range *serve {
			for b := range p.BatchesPerEpoch() {
				t := time.Now()
				_, sample, err := p.Sample(e, b)
				if err != nil {
					return err
				}
				sampleT += time.Since(t)
				rows := make([]byte, int64(len(sample.Nodes))*s.RowBytes())
				t = time.Now()
				if _, err := p.Gather(e, b, "", sample.Nodes, rows); err != nil {
					return err
				}
				gatherT += time.Since(t)
				nodes += int64(len(sample.Nodes))
				if *compare {
					t = time.Now()
					if err := s.Gather(sample.Nodes, rows); err != nil {
						return err
					}
					plainT += time.Since(t)
				}
			}
		}
		st := p.Stats()
		per := func(v int64) float64 { return float64(v) / float64(max(1, st.Batches)) }
		fmt.Printf("served %d epochs (%d batches, backend %s): per batch %.0f nodes, %.0f packed rows, %.1f MiB read in %.1f reads\n",
			*serve, st.Batches, st.Backend, per(nodes), per(st.Rows), per(st.BytesRead)/(1<<20), per(st.Reads))
		fmt.Printf("  sampling %.2fs, planned gathers %.2fs (%.1f ms a batch)\n", sampleT.Seconds(), gatherT.Seconds(), gatherT.Seconds()*1000/float64(max(1, st.Batches)))
		if *compare {
			fmt.Printf("  plain gathers of the same batches %.2fs (%.1f ms a batch)\n", plainT.Seconds(), plainT.Seconds()*1000/float64(max(1, st.Batches)))
		}
		return nil
	}
}

func printPlanReport(r *planned.EpochPlanReport, rowBytes int64) {
	fmt.Printf("planned %d of %d epochs into %s in %.1fs (%d batches an epoch)\n", r.Planned, r.Epochs, r.Dir, r.Seconds, r.BatchesPerEpoch)
	fmt.Printf("  written %.1f MiB (%s per epoch), %d rows of %d B, stored samples %.1f MiB\n", float64(r.BytesWritten)/(1<<20), mibList(r.EpochBytes),
		r.RowsPacked, rowBytes, float64(r.SampleBytes)/(1<<20))
	fmt.Printf("  per batch: %.0f nodes (%d..%d), %.0f packed rows (%d..%d)\n", r.NodesPerBatch.Mean, r.NodesPerBatch.Min, r.NodesPerBatch.Max,
		r.RowsPerBatch.Mean, r.RowsPerBatch.Min, r.RowsPerBatch.Max)
	fmt.Printf("  time over the planner's goroutines: sampling %.1fs, reading rows %.1fs, writing %.1fs\n", r.SampleSeconds, r.ReadSeconds, r.WriteSeconds)
	if r.PlaceSeconds > 0 {
		fmt.Printf("  placement pass (place tiers) %.1fs: sampling %.1fs over the planner's goroutines, refilling the tiers %.1fs\n", r.PlaceSeconds, r.PlaceSampleSeconds, r.FillSeconds)
	}
	fmt.Printf("  packed by %s in %d windows: %d reads, %.1f MiB read (disk model: scan %.1fs, random %.1fs)\n", cmp.Or(r.PackMethod, "nothing"), r.PackWindows,
		r.PackReads, float64(r.PackReadBytes)/(1<<20), r.ScanEstimate, r.RandomEstimate)
	if r.DiskBudget > 0 {
		fmt.Printf("  disk budget %d bytes\n", r.DiskBudget)
	}
}

func mibList(v []int64) string {
	parts := make([]string, len(v))
	for i, b := range v {
		parts[i] = fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return strings.Join(parts, ", ")
}

// defaultPlanDir is where plan-epochs writes a dataset's plan without --plan-dir.
func defaultPlanDir(ds string) string { return filepath.Join(ds, "plans", "epochs") }

// openToPlanEdges opens the store of a plan of seed edges and parses its fanouts; --seeds, which
// plans seed nodes, is refused beside --seed-edges.
func openToPlanEdges(dir string, opt *featurestore.Options, usePlacement bool, fanouts string, fs *pflag.FlagSet) (*featurestore.Store, []int, error) {
	if fs.Changed("seeds") {
		return nil, nil, fmt.Errorf("give one of --seeds (batches of seed nodes) or --seed-edges (batches of seed edges)")
	}
	if err := withPlacement(dir, opt, usePlacement); err != nil {
		return nil, nil, err
	}
	hops, err := parseFanouts(fanouts)
	if err != nil {
		return nil, nil, err
	}
	s, err := openStore(dir, *opt)
	return s, hops, err
}

// planSeedEdges reads --seed-edges (as `tierfs sample --seed-edges` does) and the link flags as a
// plan's seed edges.
func planSeedEdges(s *featurestore.Store, arg string, link linkFlags) (*planned.SeedEdges, error) {
	mode := topology.NegativeMode(*link.negMode)
	if mode != topology.NoNegatives && mode != topology.BinaryNegatives && mode != topology.TripletNegatives {
		return nil, fmt.Errorf("--neg-sampling %q: want binary or triplet", *link.negMode)
	}
	lo := featurestore.HeteroLinkOptions{Negatives: mode, StrictNegatives: *link.strict, ExcludeSeedEdges: *link.exclude}
	if mode != topology.NoNegatives {
		lo.NegAmount = *link.negRatio
	}
	if name, ok := strings.CutPrefix(arg, "split:"); ok {
		if *link.labels != "" {
			return nil, fmt.Errorf("--edge-labels with --seed-edges %s: an edge split has its own labels", arg)
		}
		return planned.SeedEdgesOfSplit(s.Session(), "", name, lo)
	}
	src, dst, labels, err := seedEdgesOf(s, arg, *link.labels)
	if err != nil {
		return nil, err
	}
	return &planned.SeedEdges{Src: src, Dst: dst, Labels: labels, Link: lo}, nil
}
