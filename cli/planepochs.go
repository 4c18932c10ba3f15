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
)

// runPlanEpochs plans epochs of a store (planned.PlanEpochs) and prints the report; with
// --serve it then serves epochs from the plan, and with --compare the same batches through a
// plain gather, printing both.
func planEpochsCmd(fs *pflag.FlagSet) runFunc {
	opt := storeFlags(fs)
	var sf seedFlags
	sf.register(fs, "split:train", "plan batches of seed edges (link prediction)")
	seedsArg, seedEdgesArg, fanouts, link := sf.seeds, sf.seedEdges, sf.fanouts, sf.link
	plan := optionFlags[planned.EpochOptions](fs) // every plan option, from its table
	serve := fs.Int("serve", 0, "then serve this many epochs from the plan and print what they read")
	compare := fs.Bool("compare", false, "with --serve, also gather the same batches through the store (random reads) and print both")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	usePlacement := placementFlag(fs)
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
		o := *plan
		if o.Dir == "" {
			o.Dir = defaultPlanDir(pos[0])
		}
		o.Seeds, o.SeedEdges, o.Sample.Fanouts = seeds, seedEdges, hops
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
				_, typed, err := p.Sample(e, b)
				if err != nil {
					return err
				}
				sample, _ := typed.OneType()
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
	if _, err := link.mode(); err != nil {
		return nil, err
	}
	lo := *link.opt
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
