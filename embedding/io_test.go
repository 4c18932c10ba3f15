package embedding

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/tierfs/tierfs/featurestore/featurestoretest"
	"github.com/tierfs/tierfs/gpuio"
)

// TestBackendsAgree trains two copies of one table, one read and written back through io_uring
// and one through pread and pwrite, on the same random batches (printed seed), with a checkpoint half way: every gather and,
// after a reopen, every slot agree bit for bit. A cache of 8 pages evicts a dirty page on nearly
// every miss; one of 5 MiB holds more pages than the write-back buffer, so one call's write-backs
// go in several rounds.
func TestBackendsAgree(t *testing.T) {
	if err := gpuio.Probe(); err != nil {
		t.Skipf("no io_uring: %v", err)
	}
	rng := featurestoretest.NewRand(t)
	for _, tc := range []struct {
		name       string
		rows       int64
		cache      int64
		batch, ops int
	}{{"cache 8 pages", 3_000, 8 * pageUnit, 200, 30}, {"cache 5 MiB", 60_000, 5 << 20, 25_000, 6}} {
		t.Run(tc.name, func(t *testing.T) {
			spec := Spec{Rows: tc.rows, Dim: 16, Optimizer: Optimizer{Name: "adam"}, Init: Init{Kind: "normal", Seed: rng.Uint64()}}
			backends := []gpuio.Backend{gpuio.BackendIOUring, gpuio.BackendPread}
			var dirs [2]string
			var tbs [2]*Table
			for i, b := range backends {
				dirs[i] = filepath.Join(t.TempDir(), "t")
				if err := Create(nil, dirs[i], spec); err != nil {
					t.Fatal(err)
				}
				tb, err := Open(dirs[i], Options{HostCacheBytes: tc.cache, IOBackend: b})
				if err != nil {
					t.Fatal(err)
				}
				tbs[i] = tb
			}
			defer func() {
				for _, tb := range tbs {
					tb.Close()
				}
			}()
			var outs [2][]float32
			for op := range tc.ops {
				ids := make([]int64, tc.batch)
				for i := range ids {
					ids[i] = rng.Int64N(tc.rows)
				}
				u := unique(append([]int64(nil), ids...))
				grads := make([]float32, len(u)*spec.Dim)
				for i := range grads {
					grads[i] = float32(rng.NormFloat64())
				}
				for i, tb := range tbs {
					outs[i] = make([]float32, len(ids)*spec.Dim)
					if err := tb.Gather(ids, outs[i]); err != nil {
						t.Fatalf("%s: %v", backends[i], err)
					}
					if err := tb.Apply(u, grads); err != nil {
						t.Fatalf("%s: %v", backends[i], err)
					}
					if op == tc.ops/2 {
						if err := tb.Checkpoint(); err != nil {
							t.Fatalf("%s: %v", backends[i], err)
						}
					}
				}
				sameBits(t, "gather", outs[0], outs[1])
			}
			for i, tb := range tbs {
				if got := tb.c.stack.Backend(); got != backends[i] {
					t.Fatalf("the %s table read through %s", backends[i], got)
				}
				if got := tb.c.writer.Backend(); got != backends[i] {
					t.Fatalf("the %s table wrote through %s", backends[i], got)
				}
				if st := tb.Stats(); st.PagesWritten == 0 || st.Evictions == 0 || st.WriteIOs == 0 || st.WriteIOs > st.PagesWritten {
					t.Fatalf("%s: no write-backs: %+v", backends[i], st)
				}
				if err := tb.Checkpoint(); err != nil {
					t.Fatal(err)
				}
				tb.Close()
				tb, err := Open(dirs[i], Options{IOBackend: backends[i]})
				if err != nil {
					t.Fatal(err)
				}
				tbs[i] = tb
				all := make([]int64, tc.rows)
				for r := range all {
					all[r] = int64(r)
				}
				outs[i] = make([]float32, len(all)*tb.Info().SlotFloats)
				if err := tb.ReadSlots(all, outs[i]); err != nil {
					t.Fatal(err)
				}
			}
			sameBits(t, "slots", outs[0], outs[1])
		})
	}
}

func sameBits(t *testing.T, what string, a, b []float32) {
	t.Helper()
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("%s: value %d: io_uring %g, pread %g", what, i, a[i], b[i])
		}
	}
}
