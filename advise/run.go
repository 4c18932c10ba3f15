package advise

import (
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/featurestore"
)

// Defaults of the throughputs when they are neither given nor measured: a datacenter NVMe SSD
// (4 KiB random reads), PCIe 4.0 x16 as seen by a host-to-GPU copy, and NVMe read latency.
const (
	DefaultSSDIOPS  = 800_000
	DefaultPCIeGBps = 24 // GB/s, 1e9 bytes per second
	DefaultAlphaUS  = 100
	// DefaultProbeQueueDepth is the probe's queue depth when the request gives none: the
	// store's default, so the probe sees the disk as gathers do.
	DefaultProbeQueueDepth = 128
)

// Request is everything `tierfs advise` and tfs_advise_json take (the JSON keys are the C API's
// and Python's).
type Request struct {
	Fanouts      []int   `json:"fanouts"`       // neighbors per hop (required)
	BatchSize    int     `json:"batch_size"`    // seeds per batch (required)
	Batches      int     `json:"batches"`       // batches measured; 0: DefaultBatches
	Seed         uint64  `json:"seed"`          // seed order and sampler seed
	Replace      bool    `json:"replace"`       // sample with replacement
	SSDPrice     float64 `json:"ssd_price"`     // C_ssd (required)
	MachinePrice float64 `json:"machine_price"` // C_machine (required)
	Budget       float64 `json:"budget"`        // most total price; 0: none
	MaxSSDs      int     `json:"max_ssds"`      // 0: DefaultMaxSSDs
	Measure      bool    `json:"measure"`       // probe IOPS, alpha and the host copy on this machine
	TrainMS      float64 `json:"train_ms"`      // training step per batch; 0: the loader alone
	SSDIOPS      float64 `json:"ssd_iops"`      // per SSD; 0: measured or DefaultSSDIOPS
	PCIeGBps     float64 `json:"pcie_gbps"`     // link GB/s (1e9 B/s); 0: measured host copy (no GPU) or DefaultPCIeGBps
	AlphaUS      float64 `json:"alpha_us"`      // 0: measured or DefaultAlphaUS
	BlockCost    float64 `json:"block_cost"`    // k of N_ssd; 0: measured or 1 (every block a read)
	Mode         Mode    `json:"mode"`          // "": serial (tierfs's loaders)
	CurrentSSDs  int     `json:"current_ssds"`  // 0: the devices the feature files sit on
	QueueDepth   int     `json:"queue_depth"`   // probe queue depth; 0: DefaultProbeQueueDepth (the store's)
	ProbeSeconds float64 `json:"probe_seconds"` // IOPS probe length; 0: 1 s
	Check        bool    `json:"check"`         // afterwards, time fresh batches and compare
}

// Check compares the prediction for the current SSD count with a timed run of fresh batches
// (same batch size and fanouts, another seed) of the real sample+gather loop.
type Check struct {
	Batches   int     `json:"batches"`
	Predicted float64 `json:"predicted_seeds_per_s"`
	Measured  float64 `json:"measured_seeds_per_s"`
	Ratio     float64 `json:"ratio"` // predicted / measured
}

// Report is Advice with what it was computed for.
type Report struct {
	Dataset string `json:"dataset"`
	*Advice
	Check *Check `json:"check,omitempty"`
}

// Run measures the workload of req on s (its caches as they are), takes the throughputs from
// req, a probe of this machine (req.Measure) or the defaults, and evaluates the model.
func Run(s *featurestore.Store, req Request) (*Report, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	gpu := false
	for _, t := range s.Stats().Tiers {
		gpu = gpu || (t.Tier == "gpu" && t.BytesHeld > 0)
	}
	m := Machine{Mode: req.Mode, TrainSeconds: req.TrainMS / 1e3, CurrentSSDs: req.CurrentSSDs, Link: "pcie"}
	if m.Mode == "" {
		// tierfs's loaders sample, then gather, on one thread, overlapped with training only.
		m.Mode = Serial
		m.Notes = append(m.Notes, "the loader samples, then gathers, one batch after another while the model trains (serial mode; --mode overlapped for pipelines that overlap them)")
	}
	devices := 0
	// The probe runs first: what it maps is gone before the timed batches.
	if req.Measure {
		qd := req.QueueDepth
		if qd == 0 {
			qd = DefaultProbeQueueDepth
		}
		p, err := ProbeSSD(s.Manifest(), s.Feature(), qd, time.Duration(or(req.ProbeSeconds, 1)*float64(time.Second)))
		if err != nil {
			return nil, err
		}
		devices = p.Devices
		m.Measured, m.Probe = true, p
		m.SSDIOPS = p.IOPS / float64(max(1, p.Devices))
		m.AlphaSeconds = p.AlphaSeconds
		m.BlockCost = p.BlockCost
		if !gpu {
			p.CopyRowBytes, p.CopyWorkers = s.RowBytes(), runtime.GOMAXPROCS(0)
			if p.CopyBytesPS, err = ProbeHostCopy(s.RowBytes(), p.CopyWorkers, 500*time.Millisecond); err != nil {
				return nil, err
			}
			p.Notes = append(p.Notes, "no GPU: PCIe could not be probed; the link term is the host memory path (tier lookup and row copy into the batch buffer), measured")
			m.Link, m.LinkBytesPS = "host-copy", p.CopyBytesPS
		} else {
			p.Notes = append(p.Notes, "PCIe is not probed by this build; the link term uses pcie_gbps or its default")
		}
	} else {
		m.Notes = append(m.Notes, "throughputs from the request or the defaults (not measured on this machine)")
	}
	w, err := MeasureWorkload(s, MeasureOptions{Fanouts: req.Fanouts, BatchSize: req.BatchSize, Batches: req.Batches, Seed: req.Seed, Replace: req.Replace})
	if err != nil {
		return nil, err
	}
	if devices == 0 {
		devices = countDevices(s)
	}
	if m.CurrentSSDs == 0 {
		m.CurrentSSDs = max(1, devices)
	}
	if req.SSDIOPS != 0 || m.SSDIOPS == 0 {
		m.SSDIOPS = or(req.SSDIOPS, DefaultSSDIOPS)
	}
	if req.AlphaUS != 0 || m.AlphaSeconds == 0 {
		m.AlphaSeconds = or(req.AlphaUS, DefaultAlphaUS) / 1e6
	}
	if req.BlockCost != 0 || m.BlockCost == 0 {
		m.BlockCost = or(req.BlockCost, 1)
	}
	if req.PCIeGBps != 0 || m.LinkBytesPS == 0 {
		m.LinkBytesPS = or(req.PCIeGBps, DefaultPCIeGBps) * 1e9
		m.Link = "pcie"
	}
	a, err := Advise(w, m, Prices{SSD: req.SSDPrice, Machine: req.MachinePrice, Budget: req.Budget, MaxSSDs: req.MaxSSDs})
	if err != nil {
		return nil, err
	}
	r := &Report{Dataset: s.Manifest().Dir(), Advice: a}
	if req.Check {
		cw, err := MeasureWorkload(s, MeasureOptions{Fanouts: req.Fanouts, BatchSize: req.BatchSize, Batches: req.Batches, Seed: req.Seed + 1_000_003, Replace: req.Replace})
		if err != nil {
			return nil, err
		}
		c := &Check{Batches: cw.Batches, Measured: cw.Measured}
		if a.Current != nil {
			c.Predicted = a.Current.SeedsPerS
			c.Ratio = c.Predicted / c.Measured
		}
		r.Check = c
	}
	return r, nil
}

func or(v, def float64) float64 {
	if v != 0 {
		return v
	}
	return def
}

func checkRequest(req Request) error {
	if len(req.Fanouts) == 0 {
		return fmt.Errorf("advise: no fanouts; give one per hop, e.g. [10, 5]")
	}
	for i, f := range req.Fanouts {
		if f < -1 {
			return fmt.Errorf("advise: fanouts[%d] = %d; want -1 (every neighbor) or a count >= 0", i, f)
		}
	}
	if req.BatchSize <= 0 {
		return fmt.Errorf("advise: batch size = %d; want a positive number of seeds", req.BatchSize)
	}
	if err := checkEach(positive, []named{{"SSD price", req.SSDPrice}, {"machine price", req.MachinePrice}}); err != nil {
		return err
	}
	if err := checkEach(nonNegative, []named{{"budget", req.Budget}, {"train ms", req.TrainMS}, {"SSD IOPS", req.SSDIOPS}, {"PCIe GB/s", req.PCIeGBps}, {"alpha us", req.AlphaUS}, {"block cost", req.BlockCost}, {"probe seconds", req.ProbeSeconds}}); err != nil {
		return err
	}
	switch req.Mode {
	case "", Overlapped, Serial:
	default:
		return fmt.Errorf("advise: mode %q; want %q or %q", req.Mode, Overlapped, Serial)
	}
	switch {
	case req.Batches < 0:
		return fmt.Errorf("advise: batches = %d is negative", req.Batches)
	case req.MaxSSDs < 0:
		return fmt.Errorf("advise: max SSDs = %d; want at least 1 (0 takes %d)", req.MaxSSDs, DefaultMaxSSDs)
	case req.CurrentSSDs < 0:
		return fmt.Errorf("advise: current SSDs = %d is negative", req.CurrentSSDs)
	case req.QueueDepth < 0:
		return fmt.Errorf("advise: queue depth = %d is negative", req.QueueDepth)
	}
	if req.Budget > 0 && req.SSDPrice+req.MachinePrice > req.Budget {
		return fmt.Errorf("advise: budget %g is below the cheapest configuration, one SSD (%g) plus the machine (%g) = %g: %w",
			req.Budget, req.SSDPrice, req.MachinePrice, req.SSDPrice+req.MachinePrice, ErrBudget)
	}
	return nil
}

// countDevices is the number of distinct devices the store's feature files sit on.
func countDevices(s *featurestore.Store) int {
	devs := map[uint64]bool{}
	for _, f := range s.Feature().Files {
		var st unix.Stat_t
		if unix.Stat(s.Manifest().Path(f), &st) == nil {
			devs[st.Dev] = true
		}
	}
	return len(devs)
}
