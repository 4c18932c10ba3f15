package par

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// TestInTurnRunsEveryChunkOnce: every chunk runs exactly once, on at most workers goroutines,
// each made once and done once, for random counts (none included).
func TestInTurnRunsEveryChunkOnce(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for trial := range 50 {
		workers, chunks := rng.IntN(6), rng.IntN(200)
		runs := make([]atomic.Int32, chunks)
		var made, done atomic.Int32
		err := InTurn(workers, chunks, func() (func(int) error, func(), error) {
			made.Add(1)
			return func(c int) error { runs[c].Add(1); return nil }, func() { done.Add(1) }, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for c := range runs {
			if n := runs[c].Load(); n != 1 {
				t.Fatalf("trial %d: chunk %d of %d ran %d times", trial, c, chunks, n)
			}
		}
		if m := made.Load(); m < 1 || m > int32(max(1, min(workers, chunks))) || done.Load() != m {
			t.Fatalf("trial %d: %d workers asked, %d chunks: %d made, %d done", trial, workers, chunks, m, done.Load())
		}
	}
}

// TestInTurnStopsAtTheFirstError: after a chunk fails no chunk starts, and the error returned
// is one of those that happened (the first); a failing newWorker fails the call too.
func TestInTurnStopsAtTheFirstError(t *testing.T) {
	boom := errors.New("boom")
	var mu sync.Mutex
	var after []int
	failedAt := -1
	err := InTurn(1, 100, func() (func(int) error, func(), error) {
		return func(c int) error {
			mu.Lock()
			defer mu.Unlock()
			if failedAt >= 0 {
				after = append(after, c)
			}
			if c == 10 {
				failedAt = c
				return boom
			}
			return nil
		}, nil, nil
	})
	if !errors.Is(err, boom) || len(after) != 0 {
		t.Fatalf("error %v; chunks started after the failure: %v", err, after)
	}
	if err := InTurn(3, 5, func() (func(int) error, func(), error) { return nil, nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("failing newWorker: %v", err)
	}
}
