package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tierfs/tierfs/advise"
	"github.com/tierfs/tierfs/internal/bytesize"
	"github.com/tierfs/tierfs/internal/sysinfo"
)

// adviseLong is `tierfs advise --help`'s description (commandHelp).
const adviseLong = `Runs the real sampler and gather for a few batches on DIR (with the given caches), counts
what each tier served per batch, and evaluates Hyperion's TPC model for 1..--max-ssds SSDs:

  T_ssd  = N_ssd / (IOPS * Q) + alpha       N_ssd = reads + (blocks - reads) * k per batch
  T_pcie = (B_ssd + B_mem) / Th_link        bytes per batch over the host-to-GPU link
                                             (no GPU: the host memory copy, measured)
  T_batch = max(T_ssd, T_pcie, T_sample, T_train)           overlapped (--mode overlapped)
          = max(T_sample + T_ssd + T_pcie, T_train)         serial (tierfs's loaders; default)
  TPC    = batch_size / (T_batch * (C_ssd * Q + C_machine))

and recommends the SSD count with the best TPC within --budget (ties: fewer SSDs).
Without --measure the throughputs come from --ssd-iops (default %d per SSD), --pcie-gbps
(default %d GB/s) and --alpha-us (default %d us).`

func adviseCmd(fs *pflag.FlagSet) runFunc {
	opt := storeFlags(fs) // --gpu-cache: without a GPU path the store serves from the host and the report says so
	var req advise.Request
	fanouts := fs.String("fanouts", "10,5", "neighbors per hop, comma separated; -1 takes all")
	fs.IntVar(&req.BatchSize, "batch-size", 1024, "seeds per batch")
	fs.Float64Var(&req.SSDPrice, "ssd-price", 0, "price of one SSD (required)")
	fs.Float64Var(&req.MachinePrice, "machine-price", 0, "price of the machine without SSDs (required)")
	fs.Float64Var(&req.Budget, "budget", 0, "most total price allowed (0: no limit)")
	fs.IntVar(&req.MaxSSDs, "max-ssds", advise.DefaultMaxSSDs, "SSD slots: configurations 1..N are evaluated")
	fs.BoolVar(&req.Measure, "measure", false, "probe SSD IOPS, read latency and host copy throughput on this machine (~2 s)")
	fs.Float64Var(&req.TrainMS, "train-ms", 0, "training step per batch in ms (0: predict the loader alone)")
	fs.Float64Var(&req.SSDIOPS, "ssd-iops", 0, fmt.Sprintf("random reads/s of one SSD at the block size (default: measured, else %d)", advise.DefaultSSDIOPS))
	fs.Float64Var(&req.PCIeGBps, "pcie-gbps", 0, fmt.Sprintf("host-to-GPU link in GB/s = 1e9 bytes/s (default: measured host copy without a GPU, else %d)", advise.DefaultPCIeGBps))
	fs.Float64Var(&req.AlphaUS, "alpha-us", 0, fmt.Sprintf("fixed SSD latency per batch in us (default: measured, else %d)", advise.DefaultAlphaUS))
	fs.Float64Var(&req.BlockCost, "block-cost", 0, "cost of each block past a merged read's first, in single-block reads (default: measured, else 1)")
	fs.IntVar(&req.Batches, "batches", advise.DefaultBatches, "batches to sample and gather for the counts")
	fs.Uint64Var(&req.Seed, "seed", 1, "random seed of the batches and the sampler")
	mode := fs.String("mode", "", "serial (tierfs's loaders: sample, then gather, while the model trains; the default) or overlapped (sampling and IO overlap each other too)")
	fs.IntVar(&req.CurrentSSDs, "current-ssds", 0, "SSDs the dataset sits on now (default: the devices of its feature files)")
	fs.Float64Var(&req.ProbeSeconds, "probe-seconds", 1, "length of the IOPS probe of --measure")
	fs.BoolVar(&req.Check, "check", false, "afterwards, time fresh batches of sample+gather and compare with the prediction")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	plot := fs.String("plot", "", "write a PNG of the predicted seeds/s and TPC against the SSD count (bottlenecks, recommended count) to this file")
	return func(pos []string) error {
		req.Mode = advise.Mode(*mode)
		req.QueueDepth = opt.QueueDepth
		fo, err := parseFanouts(*fanouts)
		if err != nil {
			return err
		}
		req.Fanouts = fo
		if avail, err := sysinfo.MemAvailable(); err == nil && opt.HostCacheBytes > avail {
			return fmt.Errorf("--host-cache %s (%d bytes) is more than this machine's available memory, %s (%d bytes, MemAvailable of /proc/meminfo)",
				bytesize.Format(opt.HostCacheBytes), opt.HostCacheBytes, bytesize.Format(avail), avail)
		}
		s, err := openStore(pos[0], *opt)
		if err != nil {
			return err
		}
		defer s.Close()
		r, err := advise.Run(s, req)
		if err != nil {
			return err
		}
		if *plot != "" {
			if err := writePlot(*plot, r.Dataset, r.Advice); err != nil {
				return err
			}
		}
		return printReport(*asJSON, r, printAdvice)
	}
}

func printAdvice(r *advise.Report) {
	w, m := r.Workload, r.Machine
	fmt.Printf("dataset     %s: %d-byte rows, %d-byte blocks\n", r.Dataset, w.RowBytes, w.BlockSize)
	fmt.Printf("workload    batch of %d seeds, fanouts %v; %d batches measured (host tier %s)\n", w.BatchSize, w.Fanouts, w.Batches, bytesize.Format(w.HostCache))
	var parts []string
	for _, t := range w.Tiers {
		parts = append(parts, fmt.Sprintf("%s %.0f rows (%s)", t.Tier, t.Rows, bytesize.Format(int64(t.Bytes))))
	}
	fmt.Printf("per batch   %.0f rows: %s; %.0f disk blocks in %.0f reads (%s)\n", w.Rows, strings.Join(parts, ", "), w.SSDBlocks, w.SSDReads, bytesize.Format(int64(w.SSDBytes)))
	fmt.Printf("measured    sample %.2f ms, gather %.2f ms per batch: %.0f seeds/s on this machine\n", 1e3*w.Sample, 1e3*w.Gather, w.Measured)
	src := "given/defaults"
	if m.Measured {
		src = "measured"
	}
	fmt.Printf("machine     %.0f IOPS per SSD, k %.2f, alpha %.0f us, %s %.2f GB/s, train %.2f ms, mode %s (%s); now on %d SSD(s)\n",
		m.SSDIOPS, m.BlockCost, 1e6*m.AlphaSeconds, m.Link, m.LinkBytesPS/1e9, 1e3*m.TrainSeconds, m.Mode, src, m.CurrentSSDs)
	if p := m.Probe; p != nil {
		fmt.Printf("probe       %s, %d device(s): %.0f IOPS at QD %d (%d-byte random reads, %.2f s), QD-1 latency %.0f us; host copy %.2f GB/s (%d-byte rows)\n",
			p.Backend, p.Devices, p.IOPS, p.QueueDepth, p.BlockSize, p.Seconds, 1e6*p.AlphaSeconds, p.CopyBytesPS/1e9, p.CopyRowBytes)
	}
	fmt.Printf("model       %s\n\n", r.Formula)
	fmt.Printf("  %4s %10s %9s %9s %9s %9s %9s  %-10s %11s %12s\n", "SSDs", "price", "T_ssd ms", "T_pcie ms", "sample ms", "train ms", "batch ms", "bottleneck", "seeds/s", "TPC")
	for _, c := range r.Configs {
		mark := " "
		switch {
		case c.SSDs == r.Recommended:
			mark = "*"
		case !c.InBudget:
			mark = "x"
		}
		fmt.Printf("%s %4d %10.0f %9.3f %9.3f %9.3f %9.3f %9.3f  %-10s %11.0f %12.4g\n", mark, c.SSDs, c.Price, 1e3*c.TSSD, 1e3*c.TPCIe, 1e3*c.TSample, 1e3*c.TTrain, 1e3*c.TBatch, c.Bottleneck, c.SeedsPerS, c.TPC)
	}
	fmt.Printf("\nrecommended %d SSD(s): %.0f seeds/s for %.0f, TPC %.4g (* recommended, x over budget)\n", r.Recommended, r.Best.SeedsPerS, r.Best.Price, r.Best.TPC)
	if c := r.Check; c != nil {
		fmt.Printf("check       %d fresh batches: measured %.0f seeds/s, predicted %.0f for %d SSD(s): ratio %.2f\n", c.Batches, c.Measured, c.Predicted, m.CurrentSSDs, c.Ratio)
	}
	notes := append(append(append([]string(nil), m.Notes...), r.Notes...), probeNotes(m.Probe)...)
	for _, n := range notes {
		fmt.Printf("note        %s\n", n)
	}
}

func probeNotes(p *advise.Probe) []string {
	if p == nil {
		return nil
	}
	return p.Notes
}
