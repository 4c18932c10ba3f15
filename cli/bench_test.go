package cli

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/tiers"
)

// TestBenchHostVsMemory: the host tier of a store holding every row serves every id of the
// stream from memory, the results count each round's rows once, and the ratio is positive.
func TestBenchHostVsMemory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	stdout := os.Stdout
	os.Stdout, _ = os.Open(os.DevNull)
	err := execute([]string{"synth", "--nodes", "3000", "--avg-degree", "4", "--dim", "16", "--seed", "3", "--out", dir})
	os.Stdout = stdout
	if err != nil {
		t.Fatal(err)
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	streams := make([][][]int64, 2)
	rows := int64(0)
	for i := range streams {
		for range 3 {
			ids := make([]int64, 1+rng.IntN(500))
			for j := range ids {
				ids[j] = rng.Int64N(3000)
			}
			streams[i] = append(streams[i], ids)
			rows += int64(len(ids))
		}
	}
	opt := featurestore.Options{HostCacheBytes: featurestore.TierBudget(tiers.Host, 3000, 64)}
	hostTier, mem, ratio, err := benchHostVsMemory(dir, opt, streams, 3)
	if err != nil {
		t.Fatal(err)
	}
	if hostTier.Rows != rows || mem.Rows != rows {
		t.Errorf("rows: host tier %d, in-memory %d, want %d each", hostTier.Rows, mem.Rows, rows)
	}
	if hostTier.HostShare != 1 || hostTier.DiskReads != 0 {
		t.Errorf("host tier: host share %v, %d disk reads; want 1 and 0", hostTier.HostShare, hostTier.DiskReads)
	}
	if !(ratio > 0) || !(hostTier.RowsPerS > 0) || !(mem.RowsPerS > 0) {
		t.Errorf("ratio %v, host tier %v rows/s, in-memory %v rows/s: want positive", ratio, hostTier.RowsPerS, mem.RowsPerS)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}, {[]float64{0.2, 7, 0.16, 0.6, 0.62}, 0.6}} {
		if got := median(c.xs); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}

// TestBenchReads: bench reads prints a row per gather count with reads counted, and refuses a
// bad --gathers naming it.
func TestBenchReads(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = out
	err = execute([]string{"synth", "--nodes", "3000", "--avg-degree", "4", "--dim", "16", "--seed", "3", "--out", dir})
	if err == nil {
		err = execute([]string{"bench", "reads", dir, "--gathers", "1,3", "--batch", "50", "--seconds", "0.2", "--qd", "8"})
	}
	os.Stdout = stdout
	out.Close()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, n := range []string{"1", "3"} {
		found := false
		for _, line := range strings.Split(text, "\n") {
			f := strings.Fields(line)
			if len(f) == 5 && f[0] == n {
				found = true
				if r, err := strconv.ParseFloat(f[1], 64); err != nil || r <= 0 {
					t.Errorf("%s gathers: reads/s %q, want > 0", n, f[1])
				}
			}
		}
		if !found {
			t.Errorf("no row for %s gathers in:\n%s", n, text)
		}
	}
	if err := execute([]string{"bench", "reads", dir, "--gathers", "2,x"}); err == nil || !strings.Contains(err.Error(), `--gathers "2,x"`) {
		t.Errorf("bad --gathers: %v", err)
	}
}
