package cli

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"

	"github.com/tierfs/tierfs/advise"
)

// plotAdvice is a small advice whose points hit several bottlenecks (ssd at few SSDs, then the
// link, then training) and whose last counts are over the budget.
func plotAdvice(t *testing.T, maxSSDs int) *advise.Advice {
	t.Helper()
	w := advise.Workload{BatchSize: 1024, Fanouts: []int{10, 5}, RowBytes: 512, Rows: 3000, SSDBlocks: 400, SSDReads: 360,
		Tiers: []advise.TierLoad{{Tier: "gpu"}, {Tier: "host", Rows: 1000, Bytes: 512_000}, {Tier: "ssd", Rows: 2000, Bytes: 1_024_000}}}
	m := advise.Machine{SSDIOPS: 100_000, LinkBytesPS: 1e9, Link: "pcie", AlphaSeconds: 100e-6, TrainSeconds: 1.2e-3, Mode: advise.Overlapped}
	a, err := advise.Advise(w, m, advise.Prices{SSD: 150, Machine: 3000, Budget: 4000, MaxSSDs: maxSSDs})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: not a PNG: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() != 1000 || b.Dy() != 750 {
		t.Fatalf("%s: %dx%d pixels, want 1000x750", path, b.Dx(), b.Dy())
	}
}

func TestWritePlot(t *testing.T) {
	a := plotAdvice(t, 8)
	necks := map[string]bool{}
	over := false
	for _, c := range a.Configs {
		necks[c.Bottleneck] = true
		over = over || !c.InBudget
	}
	if len(necks) < 2 || !over {
		t.Fatalf("the test advice should show several bottlenecks and a budget: %v, over budget %v", necks, over)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "tpc.png")
	if err := writePlot(path, "data/g", a); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, path)

	// One configuration, and many: the axes still have a range and the ticks stay few.
	for _, n := range []int{1, 200} {
		p := filepath.Join(dir, "n.png")
		if err := writePlot(p, "", plotAdvice(t, n)); err != nil {
			t.Fatalf("%d SSDs: %v", n, err)
		}
		checkPNG(t, p)
	}
	if ts := integerTicks(0.5, 200.5); countLabels(ts) > 11 {
		t.Errorf("integer ticks over 1..200: %d labels, want at most 11", countLabels(ts))
	}
	for _, c := range []struct {
		hi   float64
		want []string
	}{{275_000, []string{"0", "50k", "100k", "150k", "200k", "250k"}}, {0.9, []string{"0", "0.2", "0.4", "0.6", "0.8"}}, {3.3e7, []string{"0", "5M", "10M", "15M", "20M", "25M", "30M"}}} {
		var got []string
		for _, tk := range siTicks(0, c.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("siTicks(0, %g) labels %v, want %v", c.hi, got, c.want)
		}
	}
}

func countLabels(ts []plot.Tick) int {
	n := 0
	for _, t := range ts {
		if t.Label != "" {
			n++
		}
	}
	return n
}

func TestWritePlotBadPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no-such-dir", "tpc.png")
	err := writePlot(path, "data/g", plotAdvice(t, 4))
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("writePlot(%s) = %v, want an error naming the path", path, err)
	}
}
