package embedding

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// BenchmarkStep is one training step of a batch of 1,024 random rows (a gather, then an Adam step
// of their distinct rows) on a table of 200,000 × 64 with its Adam state (160 MB) behind a cache
// of 32 MiB, a fifth of it: most rows miss, and each miss evicts a dirty page.
func BenchmarkStep(b *testing.B) { benchLoop(b, true) }

// BenchmarkGather is BenchmarkStep's gathers alone: clean pages, reads only.
func BenchmarkGather(b *testing.B) { benchLoop(b, false) }

func benchLoop(b *testing.B, step bool) {
	dir := filepath.Join(b.TempDir(), "t")
	spec := Spec{Rows: 200_000, Dim: 64, Optimizer: Optimizer{Name: "adam"}, Init: Init{Kind: "normal"}}
	if err := Create(nil, dir, spec); err != nil {
		b.Fatal(err)
	}
	tb, err := Open(dir, Options{HostCacheBytes: 32 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer tb.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]float32, 1024*64)
	ids := make([]int64, 1024)
	b.ResetTimer()
	for range b.N {
		for i := range ids {
			ids[i] = rng.Int64N(spec.Rows)
		}
		if err := tb.Gather(ids, out); err != nil {
			b.Fatal(err)
		}
		if !step {
			continue
		}
		u := unique(append([]int64(nil), ids...))
		if err := tb.Apply(u, out[:len(u)*64]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	st := tb.Stats()
	b.ReportMetric(float64(st.PagesRead)/float64(b.N), "pages-read/op")
	b.ReportMetric(float64(st.PagesWritten)/float64(b.N), "pages-written/op")
	b.ReportMetric(float64(st.WriteIOs)/float64(b.N), "write-ios/op") // adjacent pages merge
	b.ReportMetric(float64(st.Hits)/float64(st.Hits+st.Misses), "hit-ratio")
	b.ReportMetric(float64(st.PagesRead)/b.Elapsed().Seconds(), "pages-read/s")
	b.Logf("direct IO %v", tb.Info().DirectIO)
}
