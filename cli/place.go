package cli

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/internal/bytesize"
	"github.com/tierfs/tierfs/placement"
)

// runPlace is `tierfs place DIR`: profile, plan and save the dataset's placement (or load the
// saved one), and compare every policy.
func placeCmd(fs *pflag.FlagSet) runFunc {
	opened := storeFlags(fs)
	fs.Lookup("host-cache").Usage = "host memory for topology and features to plan for, e.g. 256MiB (the --host-cache of the stores that will use the plan)"
	fs.Lookup("gpu-cache").Usage = "GPU memory for topology and features to plan for (0: no GPU tier)"
	fs.Lookup("feature").Usage = "feature whose rows are placed (default: the first)"
	fanouts := fs.String("fanouts", "10,5", "neighbors per hop of the training sampler, comma separated")
	batchSize := fs.Int("batch-size", 1024, "seeds per training batch")
	policyName := fs.String("policy", "unified", "placement policy: "+policyNames())
	epochs := fs.Int("epochs", 0, "epochs of the seeds to profile, each in a fresh order as a loader visits them (0: until the estimate converges, at most 8)")
	batches := fs.Int("batches", 0, "batches to profile instead of whole epochs (0: whole epochs)")
	timeBudget := fs.Duration("time-budget", 0, "stop profiling after this long, e.g. 30s (0: no limit)")
	seedsPath := fs.String("seeds", "", "seeds to profile: .npy or split:NAME (default: the train split, else every node)")
	recompute := fs.Bool("recompute", false, "ignore a saved placement: profile and plan again")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	return func(pos []string) error {
		var err error
		opt := featurestore.PlanOptions{Feature: opened.Feature, BatchSize: *batchSize, Epochs: *epochs, Batches: *batches, TimeBudget: *timeBudget,
			GPUBytes: opened.GPUCacheBytes, HostBytes: opened.HostCacheBytes, Recompute: *recompute}
		if opt.Fanouts, err = parseFanouts(*fanouts); err != nil {
			return err
		}
		if opt.Policy, err = placement.ParsePolicy(*policyName); err != nil {
			return err
		}
		// The caches are the plan's budgets; the store that profiles needs none (the plan is saved,
		// not applied here), nor a host policy.
		opened.HostCacheBytes, opened.GPUCacheBytes, opened.HostPolicy = 0, 0, ""
		s, err := openStore(pos[0], *opened)
		if err != nil {
			return err
		}
		defer s.Close()
		if *seedsPath != "" {
			if opt.Seeds, err = readIDs(s, *seedsPath); err != nil {
				return err
			}
		}
		bar := newProgressBar()
		opt.Progress = func(done, total int) { bar.update("profile", int64(done), int64(total)) }
		_, r, err := s.PlanPlacement(opt)
		bar.done()
		if err != nil {
			return err
		}
		return printReport(*asJSON, r, printPlacement)
	}
}

func printPlacement(r *featurestore.PlanReport) {
	fmt.Printf("placement of %s (feature %s: %d nodes, %d-byte rows)\n", r.Dataset, r.Feature, r.Nodes, r.RowBytes)
	profile := fmt.Sprintf("%d batches, %d seeds, fanouts %s, batch size %d", r.ProfileBatches, r.ProfileSeeds, joinInts(r.Fanouts), r.BatchSize)
	switch r.Source {
	case "loaded":
		fmt.Printf("  loaded      %s (profile of %s)\n", r.File, profile)
	case "replanned":
		fmt.Printf("  replanned   from the saved profile (%s) in %.2fs\n", profile, r.PlanSeconds)
	default:
		fmt.Printf("  computed    profiled %s (seeds: %s) in %.2fs, planned in %.2fs\n", profile, r.SeedSource, r.ProfileSeconds, r.PlanSeconds)
		for _, e := range r.Convergence {
			fmt.Printf("  epoch %d     held out: %.0f SSD rows per batch from the epochs before (hindsight bar %.0f, %.2fx)\n",
				e.Epoch, e.HeldOut, e.Hindsight, e.HeldOut/max(e.Hindsight, 1e-9))
		}
	}
	if r.StaleReason != "" && r.StaleReason != "no saved placement" {
		fmt.Printf("  not reused  %s\n", r.StaleReason)
	}
	switch {
	case r.Saved:
		fmt.Printf("  saved to    %s\n", r.File)
	case r.SaveError != "":
		fmt.Printf("  NOT saved   %s\n", r.SaveError)
	}
	fmt.Printf("  policy      %s; budget GPU %s, host %s\n", r.Policy, bytesize.Format(r.Budget.GPUBytes), bytesize.Format(r.Budget.HostBytes))
	if r.TopologyInMemory {
		fmt.Printf("  note        a store opened with the default topology budget holds the whole topology in memory;\n" +
			"              the topology tiers below matter when it stays on disk\n")
	}

	fmt.Printf("\n%-5s %14s %12s %14s %12s\n", "tier", "topology lists", "bytes", "feature rows", "bytes")
	for i := 0; i+1 < len(r.Usage); i += 2 {
		t, f := r.Usage[i], r.Usage[i+1]
		tb, fb := bytesize.Format(t.Bytes), bytesize.Format(f.Bytes)
		if t.Tier == "ssd" {
			tb, fb = "-", "-"
		}
		fmt.Printf("%-5s %14d %12s %14d %12s\n", t.Tier, t.Items, tb, f.Items, fb)
	}

	fmt.Printf("\n  %-16s %14s %13s %17s %17s\n", "policy", "PCIe MB/batch", "SSD MB/batch", "topology in mem", "features in mem")
	for _, c := range r.Comparison {
		mark := " "
		if c.Chosen {
			mark = "*"
		}
		fmt.Printf("%s %-16s %14.2f %13.2f %17s %17s\n", mark, c.Policy, float64(c.PCIeBytesPerBatch)/1e6, float64(c.SSDBytesPerBatch)/1e6,
			bytesize.Format(c.TopologyBytes), bytesize.Format(c.FeatureBytes))
	}
	fmt.Printf("(* the chosen policy; MB = 10^6 bytes; traffic modelled per profiled batch: host reads in 64-byte PCIe\n" +
		" transactions, SSD reads in whole blocks staged over PCIe)\n")
}

func policyNames() string {
	var names []string
	for _, p := range placement.Policies() {
		names = append(names, p.String())
	}
	return strings.Join(names, ", ")
}

// parseFanouts reads "10,5"; a value that is not a list of integers is a usage error.
func parseFanouts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, usageErrorf("--fanouts %q: %q is not an integer", s, f)
		}
		out = append(out, n)
	}
	return out, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// placementFlag adds --placement to the flags of a command that opens a store.
func placementFlag(fs *pflag.FlagSet) *bool {
	return fs.Bool("placement", false, "fill the caches from the placement `tierfs place` saved in the dataset (it must be fresh: made for the dataset as it is and for these cache sizes)")
}

// withPlacement sets opt.Placement to the placement saved in dir when use is set, or says how to
// make one.
func withPlacement(dir string, opt *featurestore.Options, use bool) error {
	if !use {
		return nil
	}
	p, err := featurestore.SavedPlacement(dir, *opt)
	if err == nil {
		opt.Placement = p
		return nil
	}
	fanouts, batch := "10,5", 1024
	if in, serr := placement.Saved(dir); serr == nil {
		fanouts, batch = joinInts(in.Fanouts), in.BatchSize
	}
	cmd := fmt.Sprintf("tierfs place %s --fanouts %s --batch-size %d --host-cache %d", dir, fanouts, batch, opt.HostCacheBytes)
	if opt.GPUCacheBytes > 0 {
		cmd += fmt.Sprintf(" --gpu-cache %d", opt.GPUCacheBytes)
	}
	if opt.Feature != "" {
		cmd += " --feature " + opt.Feature
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("--placement: %s has no saved placement; make one with: %s", dir, cmd)
	case errors.Is(err, placement.ErrStale):
		return fmt.Errorf("--placement: %v; plan again with: %s", err, cmd)
	}
	return fmt.Errorf("--placement: %w (plan again with: %s)", err, cmd)
}
