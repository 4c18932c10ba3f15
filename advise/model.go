// Package advise is tierfs's throughput-per-dollar (TPC) model, after Hyperion (ICDE 2025): given
// what one training batch asks of each tier, how fast this machine's disks, host-to-GPU link and
// training step are, and what SSDs and the machine cost, it predicts the batch time and the
// seeds/s for 1..MaxSSDs SSDs and recommends the SSD count with the best seeds/s per dollar.
//
// Model (units: seconds, bytes, disk reads; Q = number of SSDs):
//
//	T_ssd   = N_ssd / (IOPS_per_ssd * Q) + alpha
//	N_ssd   = reads + (blocks - reads) * k                   single-block-read equivalents
//	T_pcie  = (B_ssd + B_mem) / Th_link                     row bytes the link carries to the output
//	T_train = the caller's training step
//	T_sample = the measured sampling time of one batch (0: not modelled)
//
//	overlapped (Hyperion's GPU pipeline, every stage on its own engine):
//	    T_batch = max(T_ssd, T_pcie, T_sample, T_train)
//	serial (the CPU-only loader: one thread samples, then gathers; training overlaps the loader
//	through prefetch; inside a gather the host copies take every core, so the IO goroutine
//	reaps no completion while they run and the disk queue drains: measured on the 2-core
//	development VM, the sum fits and max(T_ssd, T_pcie) does not):
//	    T_batch = max(T_sample + T_ssd + T_pcie, T_train)
//
//	seeds/s = batch_size / T_batch;  price = C_ssd * Q + C_machine;  TPC = seeds/s / price
//
// N_ssd counts transactions in random single-block reads, the unit IOPS are probed in: the IO
// stack merges touching blocks into reads of up to 128 KiB, and each block past a read's first
// costs k single-block reads (k = Machine.BlockCost, probed with 8-block reads; 1 when not
// measured, i.e. N_ssd = blocks, as Hyperion counts); B counts the feature bytes of the rows the link carries: rows read from disk
// (staged in host memory, moved to the output by the completion step) plus host-tier hits.
// GPU-tier hits never cross the link. On a machine without a GPU the "link" is the host memory
// copy into the caller's buffer, and Th_link is the measured copy throughput (Machine.Link says
// which).
package advise

import (
	"errors"
	"fmt"
	"math"
)

// Mode says how the stages of a batch overlap.
type Mode string

const (
	// Overlapped is Hyperion's pipeline: T_batch = max of the stages.
	Overlapped Mode = "overlapped"
	// Serial is the CPU-only loader: T_batch = max(T_sample + T_ssd + T_pcie, T_train).
	Serial Mode = "serial"
)

// TierLoad is what one tier served per batch, on average.
type TierLoad struct {
	Tier  string  `json:"tier"` // "gpu", "host" or "ssd"
	Rows  float64 `json:"rows"`
	Bytes float64 `json:"bytes"` // feature bytes of those rows
}

// Workload is what one batch asks of the tiers, averaged over measured batches (or given by
// hand). Only BatchSize and the gpu/host/ssd loads are required.
type Workload struct {
	BatchSize int        `json:"batch_size"`                     // seeds per batch
	Fanouts   []int      `json:"fanouts,omitempty"`              // neighbors per hop
	Batches   int        `json:"batches_measured"`               // batches averaged; 0 when given by hand
	RowBytes  int64      `json:"row_bytes"`                      // bytes per feature row
	BlockSize int        `json:"block_size"`                     // disk block (O_DIRECT alignment)
	Rows      float64    `json:"rows"`                           // feature rows gathered per batch (sampled nodes)
	Tiers     []TierLoad `json:"tiers"`                          // fastest first
	SSDBlocks float64    `json:"ssd_blocks"`                     // N_ssd: disk blocks read per batch (SSDBytes / BlockSize)
	SSDReads  float64    `json:"ssd_reads"`                      // reads issued per batch (touching blocks merged)
	SSDBytes  float64    `json:"ssd_bytes_read"`                 // bytes read from disk per batch (whole blocks)
	HostCache int64      `json:"host_tier_bytes"`                // memory the host tier held while measuring
	GPUCache  int64      `json:"gpu_tier_bytes"`                 // memory the GPU tier held while measuring
	Sample    float64    `json:"sample_seconds"`                 // measured sampling time per batch (T_sample)
	Gather    float64    `json:"gather_seconds"`                 // measured gather time per batch (not a model input)
	Measured  float64    `json:"measured_seeds_per_s,omitempty"` // seeds/s of the measured sample+gather loop (not a model input)
}

// Tier returns the load of the named tier (zero when absent).
func (w *Workload) Tier(name string) TierLoad {
	for _, t := range w.Tiers {
		if t.Tier == name {
			return t
		}
	}
	return TierLoad{Tier: name}
}

// Machine holds the throughputs of the model.
type Machine struct {
	SSDIOPS      float64  `json:"ssd_iops"`         // random reads/s of ONE SSD at the block size and queue depth
	LinkBytesPS  float64  `json:"link_bytes_per_s"` // Th_link: PCIe host-to-GPU bytes/s, or host copy bytes/s without a GPU
	Link         string   `json:"link"`             // "pcie" or "host-copy"
	AlphaSeconds float64  `json:"alpha_seconds"`    // fixed SSD latency per batch (one read's latency)
	BlockCost    float64  `json:"block_cost"`       // k: cost of a merged read's extra block, in single-block reads; 0 takes 1
	TrainSeconds float64  `json:"train_seconds"`    // training step per batch; 0: loading only
	Mode         Mode     `json:"mode"`             // how stages overlap; "" is Overlapped
	CurrentSSDs  int      `json:"current_ssds"`     // SSDs the dataset sits on now (for the measured comparison)
	Measured     bool     `json:"measured"`         // throughputs probed on this machine (else given)
	Probe        *Probe   `json:"probe,omitempty"`  // what --measure saw
	Notes        []string `json:"notes,omitempty"`
}

// Prices and limits of the configurations considered.
type Prices struct {
	SSD     float64 `json:"ssd"`      // C_ssd, per SSD
	Machine float64 `json:"machine"`  // C_machine, everything but the SSDs
	Budget  float64 `json:"budget"`   // most total price allowed; 0: none
	MaxSSDs int     `json:"max_ssds"` // slots for SSDs; 0: DefaultMaxSSDs; at most MaxSSDSlots
}

// DefaultMaxSSDs is the SSD slot limit when Prices.MaxSSDs is 0.
const DefaultMaxSSDs = 8

// MaxSSDSlots is the most SSD slots Advise evaluates (one configuration each): more than any one
// machine holds, and a bound on the advice's size.
const MaxSSDSlots = 1024

// Config is the prediction for one SSD count.
type Config struct {
	SSDs       int     `json:"ssds"`
	NSSD       float64 `json:"n_ssd"` // single-block-read equivalents per batch
	Price      float64 `json:"price"`
	TSSD       float64 `json:"t_ssd_s"`
	TPCIe      float64 `json:"t_pcie_s"` // the link term (host copy without a GPU)
	TSample    float64 `json:"t_sample_s"`
	TTrain     float64 `json:"t_train_s"`
	TBatch     float64 `json:"t_batch_s"`
	Bottleneck string  `json:"bottleneck"` // "ssd", "pcie" (or "host-copy"), "sample" or "train"
	SeedsPerS  float64 `json:"seeds_per_s"`
	TPC        float64 `json:"tpc"` // seeds/s per unit of price
	InBudget   bool    `json:"within_budget"`
}

// Advice is the model's answer.
type Advice struct {
	Formula     string   `json:"formula"`
	Units       string   `json:"units"`
	Workload    Workload `json:"workload"`
	Machine     Machine  `json:"machine"`
	Prices      Prices   `json:"prices"`
	Configs     []Config `json:"configs"`
	Recommended int      `json:"recommended_ssds"`
	Best        Config   `json:"recommended"`
	// Current is the configuration the dataset sits on now (Machine.CurrentSSDs), when within
	// the limit: its seeds/s is what a run on this machine should see.
	Current *Config  `json:"current,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}

// ErrBudget is wrapped by the error of a budget that affords no configuration.
var ErrBudget = errors.New("budget affords no configuration")

func positive(name string, v float64) error {
	if !(v > 0) || math.IsInf(v, 0) {
		return fmt.Errorf("advise: %s = %g; want a positive number", name, v)
	}
	return nil
}

func nonNegative(name string, v float64) error {
	if !(v >= 0) || math.IsInf(v, 0) {
		return fmt.Errorf("advise: %s = %g; want zero or a positive number", name, v)
	}
	return nil
}

// named is a number with its name in the errors.
type named struct {
	name string
	v    float64
}

// checkEach is the first error of check (positive or nonNegative) on the numbers vs.
func checkEach(check func(name string, v float64) error, vs []named) error {
	for _, c := range vs {
		if err := check(c.name, c.v); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the inputs, naming the first bad number.
func validate(w Workload, m Machine, p Prices) error {
	if w.BatchSize <= 0 {
		return fmt.Errorf("advise: batch size = %d; want a positive number of seeds", w.BatchSize)
	}
	for _, t := range w.Tiers {
		if err := nonNegative("rows of tier "+t.Tier, t.Rows); err != nil {
			return err
		}
		if err := nonNegative("bytes of tier "+t.Tier, t.Bytes); err != nil {
			return err
		}
	}
	if err := checkEach(nonNegative, []named{{"ssd blocks per batch", w.SSDBlocks}, {"ssd reads per batch", w.SSDReads}, {"sample seconds", w.Sample}, {"alpha seconds", m.AlphaSeconds}, {"block cost", m.BlockCost}, {"train seconds", m.TrainSeconds}, {"budget", p.Budget}}); err != nil {
		return err
	}
	if err := checkEach(positive, []named{{"SSD IOPS", m.SSDIOPS}, {"link throughput (bytes/s)", m.LinkBytesPS}, {"SSD price", p.SSD}, {"machine price", p.Machine}}); err != nil {
		return err
	}
	if p.MaxSSDs < 0 || p.MaxSSDs > MaxSSDSlots {
		return fmt.Errorf("advise: max SSDs = %d; want 1 to %d SSD slots (0 takes %d)", p.MaxSSDs, MaxSSDSlots, DefaultMaxSSDs)
	}
	switch m.Mode {
	case "", Overlapped, Serial:
	default:
		return fmt.Errorf("advise: mode %q; want %q or %q", m.Mode, Overlapped, Serial)
	}
	return nil
}

// Predict evaluates one SSD count.
func Predict(w Workload, m Machine, p Prices, q int) Config {
	ssd, host := w.Tier("ssd"), w.Tier("host")
	c := Config{SSDs: q, Price: p.SSD*float64(q) + p.Machine, TSample: w.Sample, TTrain: m.TrainSeconds}
	c.NSSD = SSDTransactions(w, m.BlockCost)
	c.TSSD = c.NSSD/(m.SSDIOPS*float64(q)) + m.AlphaSeconds
	if c.NSSD == 0 {
		c.TSSD = 0 // no disk read, no latency to pay
	}
	c.TPCIe = (ssd.Bytes + host.Bytes) / m.LinkBytesPS
	link := "pcie"
	if m.Link == "host-copy" {
		link = "host-copy"
	}
	// Ties go to the stage named first: ssd, link, sample, train.
	type stage struct {
		name string
		t    float64
	}
	largest := func(st ...stage) stage {
		b := st[0]
		for _, s := range st[1:] {
			if s.t > b.t {
				b = s
			}
		}
		return b
	}
	io := largest(stage{"ssd", c.TSSD}, stage{link, c.TPCIe})
	if m.Mode == Serial {
		load := w.Sample + c.TSSD + c.TPCIe
		c.TBatch = max(load, c.TTrain)
		if c.TTrain > load {
			c.Bottleneck = "train"
		} else {
			c.Bottleneck = largest(io, stage{"sample", c.TSample}).name
		}
	} else {
		b := largest(io, stage{"sample", c.TSample}, stage{"train", c.TTrain})
		c.TBatch, c.Bottleneck = b.t, b.name
	}
	if c.TBatch > 0 {
		c.SeedsPerS = float64(w.BatchSize) / c.TBatch
	} else {
		c.SeedsPerS = math.Inf(1)
	}
	c.TPC = c.SeedsPerS / c.Price
	c.InBudget = p.Budget == 0 || c.Price <= p.Budget
	return c
}

// SSDTransactions is N_ssd: reads + (blocks - reads) * k, in single-block random reads. A
// workload without a read count (given by hand) counts every block as a read; k = 0 takes 1.
func SSDTransactions(w Workload, k float64) float64 {
	if k == 0 {
		k = 1
	}
	if w.SSDReads <= 0 || w.SSDReads > w.SSDBlocks {
		return w.SSDBlocks
	}
	return w.SSDReads + (w.SSDBlocks-w.SSDReads)*k
}

// Advise evaluates 1..MaxSSDs SSDs and recommends the count with the best TPC within the budget
// (ties go to fewer SSDs). It fails on zero or negative prices, sizes and throughputs, and on a
// budget that affords not even one SSD.
func Advise(w Workload, m Machine, p Prices) (*Advice, error) {
	if err := validate(w, m, p); err != nil {
		return nil, err
	}
	if p.MaxSSDs == 0 {
		p.MaxSSDs = DefaultMaxSSDs
	}
	if m.Mode == "" {
		m.Mode = Overlapped
	}
	if p.Budget > 0 && p.SSD+p.Machine > p.Budget {
		return nil, fmt.Errorf("advise: budget %g is below the cheapest configuration, one SSD (%g) plus the machine (%g) = %g: %w",
			p.Budget, p.SSD, p.Machine, p.SSD+p.Machine, ErrBudget)
	}
	a := &Advice{
		Formula:  formula(m.Mode),
		Units:    "time in seconds; N_ssd in random single-block reads (block = the dataset's block size); link term in bytes over bytes/s; prices in the caller's currency; TPC in seeds/s per unit of price",
		Workload: w, Machine: m, Prices: p,
	}
	best := -1
	for q := 1; q <= p.MaxSSDs; q++ {
		c := Predict(w, m, p, q)
		a.Configs = append(a.Configs, c)
		if c.InBudget && (best < 0 || c.TPC > a.Configs[best].TPC*(1+1e-12)) {
			best = q - 1
		}
		if q == m.CurrentSSDs {
			cc := c
			a.Current = &cc
		}
	}
	a.Best = a.Configs[best]
	a.Recommended = a.Best.SSDs
	if w.Tier("ssd").Rows == 0 {
		a.Notes = append(a.Notes, "no row came from disk in the measured batches: SSDs add price, not speed; the recommendation is the fewest")
	}
	return a, nil
}

func formula(m Mode) string {
	const common = "T_ssd = N_ssd/(IOPS*Q) + alpha, N_ssd = reads + (blocks - reads)*k; T_pcie = (B_ssd + B_mem)/Th_link; TPC = batch_size/(T_batch*(C_ssd*Q + C_machine))"
	if m == Serial {
		return "T_batch = max(T_sample + T_ssd + T_pcie, T_train); " + common
	}
	return "T_batch = max(T_ssd, T_pcie, T_sample, T_train); " + common
}
