package gpuio

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// Stacks sharing a budget on goroutines of their own: every read delivers the reference bytes,
// a budget smaller than any Stack's queue depth (down to 1) still lets every Stack finish, and
// every place comes back, also after injected errors and refused reads.
func TestBudgetSharedByStacks(t *testing.T) {
	seed := testSeed(t)
	fds, want := testFiles(t, seed, 2<<20, 3<<20)
	forEachBackend(t, func(t *testing.T, backend Backend) {
		for _, places := range []int{1, 8, 64} {
			budget, err := NewBudget(places)
			if err != nil {
				t.Fatal(err)
			}
			eioOnFile1 := injectFunc(func(r CompletedRead) []Fault {
				if r.File == 1 {
					return []Fault{{Kind: FaultEIO}}
				}
				return nil
			})
			const stacks, rounds = 4, 3
			var wg sync.WaitGroup
			errs := make([]error, stacks)
			for g := range stacks {
				opts := Options{Backend: backend, QueueDepth: 32, Budget: budget}
				if g == 3 { // its reads of file 1 fail; the others' reads never do
					opts.Faults = eioOnFile1
				}
				s := openStack(t, fds, opts)
				if g == 2 && backend == BackendIOUring {
					rng := rand.New(rand.NewPCG(seed, 77)) // used on this goroutine only
					s.eng.(*uringEngine).refuse = func() bool { return rng.Float64() < 0.3 }
				}
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(seed, uint64(g)))
					for range rounds {
						reqs := randomBlockRequests(rng, want, 300)
						err := errors.Join(s.Submit(reqs), s.Complete())
						if g == 3 {
							if !errors.Is(err, unix.EIO) {
								errs[g] = errors.Join(errors.New("reads of file 1 under an EIO fault did not fail with EIO"), err)
								return
							}
							continue
						}
						if err != nil {
							errs[g] = err
							return
						}
						for i, r := range reqs {
							if string(r.Dst) != string(want[r.File][r.Offset:r.Offset+int64(r.Length)]) {
								errs[g] = errors.New("bytes differ from reference")
								t.Errorf("budget %d, stack %d, request %d (file %d, offset %d): bytes differ", places, g, i, r.File, r.Offset)
								return
							}
						}
					}
				})
			}
			wg.Wait()
			for g, err := range errs {
				if err != nil {
					t.Fatalf("budget %d, stack %d: %v", places, g, err)
				}
			}
			if n := budget.InFlight(); n != 0 {
				t.Fatalf("budget %d: %d places still taken after every Complete", places, n)
			}
		}
	})
}

// Close gives back the places of reads it drops or waits for.
func TestBudgetAfterClose(t *testing.T) {
	fds, want := testFiles(t, 5, 1<<20)
	budget, err := NewBudget(4)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(fds, Options{Budget: budget, QueueDepth: 16})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(randomBlockRequests(rand.New(rand.NewPCG(5, 1)), want, 100)); err != nil {
		t.Fatal(err)
	}
	if n := budget.InFlight(); n == 0 || n > 4 {
		t.Fatalf("after Submit %d places taken, want 1..4", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := budget.InFlight(); n != 0 {
		t.Fatalf("after Close %d places taken, want 0", n)
	}
	if _, err := NewBudget(0); err == nil {
		t.Fatal("a budget of 0 reads was accepted")
	}
}

// The places alone, under goroutines that take (waiting or trying) and give at random: never
// more holders than places, every waiter served, every place back at the end.
func TestBudgetPlaces(t *testing.T) {
	seed := testSeed(t)
	for _, places := range []int{1, 3, 16} {
		budget, err := NewBudget(places)
		if err != nil {
			t.Fatal(err)
		}
		var holders, most atomic.Int64
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(seed, uint64(places)<<8|uint64(g)))
				for range 2000 {
					if rng.IntN(2) == 0 {
						budget.take()
					} else if !budget.tryTake() {
						continue
					}
					h := holders.Add(1)
					for m := most.Load(); h > m && !most.CompareAndSwap(m, h); m = most.Load() {
					}
					if rng.IntN(4) == 0 {
						runtime.Gosched()
					}
					holders.Add(-1)
					budget.give()
				}
			})
		}
		wg.Wait()
		if m := most.Load(); m > int64(places) {
			t.Fatalf("budget %d: %d holders at once", places, m)
		}
		if n := budget.InFlight(); n != 0 {
			t.Fatalf("budget %d: %d places still taken", places, n)
		}
	}
}
