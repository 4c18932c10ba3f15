package advise

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/ingest"
	"github.com/tierfs/tierfs/internal/sysinfo"
)

// A batch of 1000 seeds: 1000 host hits and 2000 disk rows of 512 B in 2000 blocks (1800 reads).
func handWorkload() Workload {
	return Workload{BatchSize: 1000, RowBytes: 512, Rows: 3000, SSDBlocks: 2000, SSDReads: 1800, Tiers: []TierLoad{
		{Tier: "gpu"}, {Tier: "host", Rows: 1000, Bytes: 512_000}, {Tier: "ssd", Rows: 2000, Bytes: 1_024_000}}}
}

func handMachine() Machine {
	return Machine{SSDIOPS: 100_000, LinkBytesPS: 1e9, AlphaSeconds: 100e-6, Mode: Overlapped}
}

var handPrices = Prices{SSD: 150, Machine: 3000}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.12g, want %.12g", what, got, want)
	}
}

func TestHandComputed(t *testing.T) {
	a, err := Advise(handWorkload(), handMachine(), handPrices)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Configs) != DefaultMaxSSDs {
		t.Fatalf("%d configs, want %d (the default limit)", len(a.Configs), DefaultMaxSSDs)
	}
	// Q = 1: T_ssd = 2000/100000 + 0.0001 = 0.0201; T_pcie = 1.536e6/1e9; seeds/s = 1000/0.0201.
	c := a.Configs[0]
	near(t, "T_ssd(1)", c.TSSD, 0.0201)
	near(t, "T_pcie(1)", c.TPCIe, 0.001536)
	near(t, "T_batch(1)", c.TBatch, 0.0201)
	near(t, "seeds/s(1)", c.SeedsPerS, 1000/0.0201)
	near(t, "price(1)", c.Price, 3150)
	near(t, "TPC(1)", c.TPC, 1000/0.0201/3150)
	// Q = 8: T_ssd = 2000/800000 + 0.0001 = 0.0026.
	c = a.Configs[7]
	near(t, "T_ssd(8)", c.TSSD, 0.0026)
	near(t, "TPC(8)", c.TPC, 1000/0.0026/4200)
	if c.Bottleneck != "ssd" {
		t.Errorf("bottleneck(8) = %q, want ssd", c.Bottleneck)
	}
	// Disk-bound all the way: TPC grows with Q, so the most SSDs win.
	if a.Recommended != 8 || a.Best.SSDs != 8 {
		t.Errorf("recommended %d (best %d), want 8", a.Recommended, a.Best.SSDs)
	}
}

func TestBlockCost(t *testing.T) {
	m := handMachine()
	m.BlockCost = 0.2 // N_ssd = 1800 reads + 200 extra blocks * 0.2 = 1840
	a, err := Advise(handWorkload(), m, handPrices)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "N_ssd", a.Configs[0].NSSD, 1840)
	near(t, "T_ssd(1)", a.Configs[0].TSSD, 0.0184+0.0001)
	w := handWorkload()
	w.SSDReads = 0 // given by hand without reads: every block counts
	if got := SSDTransactions(w, 0.2); got != 2000 {
		t.Errorf("N_ssd without reads = %g, want the 2000 blocks", got)
	}
}

func TestBottleneckSwitchesToTrain(t *testing.T) {
	m := handMachine()
	m.TrainSeconds = 0.005
	a, err := Advise(handWorkload(), m, handPrices)
	if err != nil {
		t.Fatal(err)
	}
	// T_ssd(Q) = 0.02/Q + 0.0001: above 5 ms up to Q = 4 (5.1 ms), below from Q = 5 (4.1 ms).
	for _, c := range a.Configs {
		want := "ssd"
		if c.SSDs >= 5 {
			want = "train"
		}
		if c.Bottleneck != want {
			t.Errorf("Q=%d: bottleneck %q (T_ssd %g), want %q", c.SSDs, c.Bottleneck, c.TSSD, want)
		}
	}
	// TPC(4) = 1000/0.0051/3600 = 54.47 beats TPC(5) = 1000/0.005/3750 = 53.33.
	near(t, "TPC(4)", a.Configs[3].TPC, 1000/0.0051/3600)
	near(t, "TPC(5)", a.Configs[4].TPC, 1000/0.005/3750)
	if a.Recommended != 4 {
		t.Errorf("recommended %d, want 4", a.Recommended)
	}
}

func TestBottleneckSwitchesToPCIe(t *testing.T) {
	m := handMachine()
	m.LinkBytesPS = 1e8 // T_pcie = 15.36 ms
	a, err := Advise(handWorkload(), m, handPrices)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Configs[0].Bottleneck; got != "ssd" {
		t.Errorf("Q=1: %q, want ssd (20.1 ms > 15.36 ms)", got)
	}
	for _, c := range a.Configs[1:] {
		if c.Bottleneck != "pcie" {
			t.Errorf("Q=%d: %q, want pcie", c.SSDs, c.Bottleneck)
		}
		near(t, "T_batch", c.TBatch, 0.01536)
	}
	// Past Q = 2 more SSDs cost more and give nothing.
	if a.Recommended != 2 {
		t.Errorf("recommended %d, want 2", a.Recommended)
	}
	m.Link = "host-copy"
	a, _ = Advise(handWorkload(), m, handPrices)
	if got := a.Configs[1].Bottleneck; got != "host-copy" {
		t.Errorf("with Link host-copy the link stage is %q", got)
	}
}

func TestSerialMode(t *testing.T) {
	w := handWorkload()
	w.Sample = 0.002
	m := handMachine()
	m.Mode = Serial
	a, err := Advise(w, m, handPrices)
	if err != nil {
		t.Fatal(err)
	}
	// Serial: T_sample + T_ssd + T_pcie.
	near(t, "T_batch(1)", a.Configs[0].TBatch, 0.002+0.0201+0.001536)
	near(t, "T_batch(8)", a.Configs[7].TBatch, 0.002+0.0026+0.001536)
	if c := a.Configs[7]; c.Bottleneck != "ssd" {
		t.Errorf("Q=8 serial: bottleneck %q, want ssd (the largest term)", c.Bottleneck)
	}
	m.TrainSeconds = 0.01
	a, _ = Advise(w, m, handPrices)
	if c := a.Configs[7]; c.Bottleneck != "train" || c.TBatch != 0.01 {
		t.Errorf("Q=8 with a 10 ms step: %q %g, want train 0.01", c.Bottleneck, c.TBatch)
	}
	w.Sample = 0.05
	a, _ = Advise(w, m, handPrices)
	if c := a.Configs[0]; c.Bottleneck != "sample" {
		t.Errorf("50 ms sampling: bottleneck %q, want sample", c.Bottleneck)
	}
}

func TestNoDiskReadsRecommendsFewest(t *testing.T) {
	w := Workload{BatchSize: 100, Rows: 100, Tiers: []TierLoad{{Tier: "host", Rows: 100, Bytes: 51200}}}
	a, err := Advise(w, handMachine(), handPrices)
	if err != nil {
		t.Fatal(err)
	}
	if a.Recommended != 1 || a.Configs[0].TSSD != 0 || a.Configs[0].Bottleneck != "pcie" {
		t.Errorf("recommended %d, T_ssd %g, bottleneck %q; want 1, 0, pcie", a.Recommended, a.Configs[0].TSSD, a.Configs[0].Bottleneck)
	}
	if len(a.Notes) == 0 {
		t.Error("no note that SSDs add nothing")
	}
}

func TestBudgetAndLimit(t *testing.T) {
	p := handPrices
	p.Budget, p.MaxSSDs = 3450, 5 // affords up to 3 SSDs
	a, err := Advise(handWorkload(), handMachine(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Configs) != 5 {
		t.Fatalf("%d configs, want 5", len(a.Configs))
	}
	for _, c := range a.Configs {
		if c.InBudget != (c.SSDs <= 3) {
			t.Errorf("Q=%d price %g: within budget %v", c.SSDs, c.Price, c.InBudget)
		}
	}
	if a.Recommended != 3 {
		t.Errorf("recommended %d, want 3 (the most the budget affords; disk-bound)", a.Recommended)
	}
}

func TestTieGoesToFewerSSDs(t *testing.T) {
	// Train-bound: the same seeds/s for every Q, so Q = 1 has the best TPC; with the machine price
	// dwarfing the SSD price the TPCs are equal to 1e-12, and the fewest SSDs still win.
	m := handMachine()
	m.TrainSeconds = 1
	a, err := Advise(handWorkload(), m, Prices{SSD: 1e-9, Machine: 1e6})
	if err != nil {
		t.Fatal(err)
	}
	if a.Recommended != 1 {
		t.Errorf("recommended %d, want 1", a.Recommended)
	}
}

func TestErrorsNameTheNumbers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Workload, *Machine, *Prices)
		words []string
	}{
		{"zero SSD price", func(_ *Workload, _ *Machine, p *Prices) { p.SSD = 0 }, []string{"SSD price = 0"}},
		{"negative machine price", func(_ *Workload, _ *Machine, p *Prices) { p.Machine = -3 }, []string{"machine price = -3"}},
		{"zero IOPS", func(_ *Workload, m *Machine, _ *Prices) { m.SSDIOPS = 0 }, []string{"SSD IOPS = 0"}},
		{"negative link", func(_ *Workload, m *Machine, _ *Prices) { m.LinkBytesPS = -1 }, []string{"link", "-1"}},
		{"NaN alpha", func(_ *Workload, m *Machine, _ *Prices) { m.AlphaSeconds = math.NaN() }, []string{"alpha", "NaN"}},
		{"zero batch", func(w *Workload, _ *Machine, _ *Prices) { w.BatchSize = 0 }, []string{"batch size = 0"}},
		{"negative rows", func(w *Workload, _ *Machine, _ *Prices) { w.Tiers[1].Rows = -1 }, []string{"rows of tier host", "-1"}},
		{"negative slots", func(_ *Workload, _ *Machine, p *Prices) { p.MaxSSDs = -2 }, []string{"max SSDs = -2"}},
		{"slots beyond a machine", func(_ *Workload, _ *Machine, p *Prices) { p.MaxSSDs = 100_000_000 }, []string{"max SSDs = 100000000", "1 to 1024"}},
		{"bad mode", func(_ *Workload, m *Machine, _ *Prices) { m.Mode = "sideways" }, []string{"sideways"}},
		{"budget", func(_ *Workload, _ *Machine, p *Prices) { p.Budget = 3000 }, []string{"budget 3000", "150", "3150"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, m, p := handWorkload(), handMachine(), handPrices
			tc.edit(&w, &m, &p)
			_, err := Advise(w, m, p)
			if err == nil {
				t.Fatal("no error")
			}
			for _, word := range tc.words {
				if !strings.Contains(err.Error(), word) {
					t.Errorf("error %q lacks %q", err, word)
				}
			}
			if tc.name == "budget" && !errors.Is(err, ErrBudget) {
				t.Errorf("error %q is not ErrBudget", err)
			}
		})
	}
}

func TestBatchesCoverThePool(t *testing.T) {
	pool := []int64{10, 11, 12, 13, 14, 15, 16}
	b := Batches(pool, 3, 4, 1)
	if len(b) != 4 {
		t.Fatalf("%d batches", len(b))
	}
	seen := map[int64]int{}
	for _, batch := range b[:2] {
		if len(batch) != 3 {
			t.Fatalf("batch of %d", len(batch))
		}
		for _, id := range batch {
			seen[id]++
		}
	}
	for id, n := range seen { // the first 6 ids come from one permutation: no repeats
		if n != 1 {
			t.Errorf("id %d drawn %d times in the first permutation", id, n)
		}
	}
}

// TestMeasureAndRun measures a small synthetic dataset with no cache and with every row cached,
// and runs the whole advice (with a short probe) on it.
func TestMeasureAndRun(t *testing.T) {
	dir := t.TempDir()
	if _, err := ingest.Synth(ingest.SynthOptions{Nodes: 4000, AvgDegree: 6, Dim: 32, DType: dataset.Float32, Seed: 3, Out: dir}); err != nil {
		t.Fatal(err)
	}
	opt := MeasureOptions{Fanouts: []int{4, 3}, BatchSize: 64, Batches: 4, Seed: 5}
	for _, all := range []bool{false, true} {
		fo := featurestore.Options{}
		if all {
			fo.HostCacheBytes = 1 << 30
		}
		s, err := featurestore.Open(dir, fo)
		if err != nil {
			t.Fatal(err)
		}
		w, err := MeasureWorkload(s, opt)
		if err != nil {
			s.Close()
			t.Fatal(err)
		}
		host, ssd := w.Tier("host"), w.Tier("ssd")
		if w.Batches != 4 || w.Rows < 64 || w.RowBytes != 128 || w.Sample <= 0 || w.Measured <= 0 {
			t.Errorf("workload %+v", w)
		}
		if math.Abs(host.Rows+ssd.Rows-w.Rows) > 1e-9 || math.Abs(ssd.Bytes-128*ssd.Rows) > 1e-6 {
			t.Errorf("tier rows %g + %g != %g rows, or ssd bytes %g", host.Rows, ssd.Rows, w.Rows, ssd.Bytes)
		}
		if all && (ssd.Rows != 0 || w.SSDReads != 0) {
			t.Errorf("every row cached, yet %g rows from disk in %g reads", ssd.Rows, w.SSDReads)
		}
		if !all && (host.Rows != 0 || w.SSDReads == 0 || w.SSDReads > ssd.Rows || w.SSDBlocks < w.SSDReads) {
			t.Errorf("no cache: %g host rows, %g reads for %g disk rows", host.Rows, w.SSDReads, ssd.Rows)
		}
		if !all {
			r, err := Run(s, Request{Fanouts: opt.Fanouts, BatchSize: 64, Batches: 2, SSDPrice: 150, MachinePrice: 3000, MaxSSDs: 3,
				Measure: true, ProbeSeconds: 0.1, Check: true})
			if err != nil {
				s.Close()
				t.Fatal(err)
			}
			p := r.Machine.Probe
			if p == nil || p.IOPS <= 0 || p.AlphaSeconds <= 0 || p.Devices < 1 || r.Current == nil || r.Check == nil || r.Check.Ratio <= 0 {
				t.Errorf("report %+v, probe %+v", r, p)
			}
			if r.Machine.Link != "host-copy" || r.Machine.Mode != Serial || p.CopyBytesPS <= 0 {
				t.Errorf("CPU-only machine: link %q mode %q copy %g", r.Machine.Link, r.Machine.Mode, p.CopyBytesPS)
			}
			if _, err := Run(s, Request{Fanouts: []int{4}, BatchSize: 8, SSDPrice: 150, MachinePrice: 3000, Budget: 100}); !errors.Is(err, ErrBudget) {
				t.Errorf("budget 100: %v", err)
			}
		}
		s.Close()
	}
}

func TestMemAvailable(t *testing.T) {
	n, err := sysinfo.MemAvailable()
	if err != nil {
		t.Skip(err)
	}
	if n <= 0 {
		t.Errorf("MemAvailable %d", n)
	}
}
