package featurestore

import (
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"
)

// TestGatherTransientMemoryBounded: a gather of many times MaxGatherChunk ids holds the
// transient memory of one chunk, not of the batch (issue 15: 50M ids took 8.2 GB, ~200 B an id).
func TestGatherTransientMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("gathers 8M ids")
	}
	rng := newRand(t)
	const count = 20000
	d := writeDataset(t, count, 1, 1, 2, rng)
	s := mustOpen(t, d.Dir, Options{HostCacheBytes: count / 2 * (d.RowBytes + 40)}) // half from disk
	const n = 8 * MaxGatherChunk
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = rng.Int64N(count)
	}
	dst := make([]byte, n*d.RowBytes)
	if err := s.Gather(ids[:1000], dst[:1000*d.RowBytes]); err != nil { // warm up
		t.Fatal(err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(5)) // HeapAlloc then follows what is live
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
		}
	})
	err := s.Gather(ids, dst)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	perID := float64(peak-min(peak, base.HeapAlloc)) / n
	chunkBound := uint64(MaxGatherChunk) * 120 // ~tens of bytes an id of one chunk, with GC slack
	t.Logf("peak transient heap %.1f MiB over %d ids (%.1f B an id of the batch); bound %.1f MiB",
		float64(peak-min(peak, base.HeapAlloc))/(1<<20), n, perID, float64(chunkBound)/(1<<20))
	if peak > base.HeapAlloc+chunkBound {
		t.Fatalf("a gather of %d ids held %d bytes of transient heap, more than %d (one chunk of %d ids)", n, peak-base.HeapAlloc, chunkBound, MaxGatherChunk)
	}
	if want := d.Want(ids[:5000]); string(dst[:len(want)]) != string(want) {
		t.Fatal("rows differ from the reference")
	}
}
