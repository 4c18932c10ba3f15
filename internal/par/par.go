// Package par runs numbered pieces of work on a few goroutines.
package par

import (
	"sync"
	"sync/atomic"
)

// InTurn runs do(c) for every chunk c in [0, chunks) on up to workers goroutines (at least one),
// each taking the next chunk in turn until none is left. Each goroutine first calls newWorker
// for its own do (its buffers, its stream) and a done that runs when it stops (nil: nothing).
// After the first error, of newWorker or of a chunk, no goroutine takes another chunk, and
// InTurn returns that error once every goroutine has stopped.
func InTurn(workers, chunks int, newWorker func() (do func(c int) error, done func(), err error)) error {
	var (
		next     atomic.Int64
		failed   atomic.Bool
		firstErr error
		once     sync.Once
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		once.Do(func() { firstErr = err })
		failed.Store(true)
	}
	for range max(1, min(workers, chunks)) {
		wg.Go(func() {
			do, done, err := newWorker()
			if err != nil {
				fail(err)
				return
			}
			if done != nil {
				defer done()
			}
			for !failed.Load() {
				c := int(next.Add(1) - 1)
				if c >= chunks {
					return
				}
				if err := do(c); err != nil {
					fail(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}
