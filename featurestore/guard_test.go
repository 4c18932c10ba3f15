package featurestore

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierfs/tierfs/topology"
)

// Gathers, samples (with hop reads from disk, which enter the guard again), labels and stats run
// from many goroutines while two goroutines close the store: nothing panics or races, every call
// either succeeds or fails with ErrClosed, and after Close every call fails with ErrClosed.
func TestCloseWhileCalling(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 4000, 8, 2, 6, rng)
	for round := range 4 {
		s, err := Open(d.Dir, Options{HostCacheBytes: 4000 * 48 / 4, TopologyMemoryBytes: -1, MaxConcurrentIO: 2, QueueDepth: 16})
		if err != nil {
			t.Fatal(err)
		}
		sp, err := s.Session().NewSampler(SampleOptions{Fanouts: map[string][]int{"": {5, 3}}, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		var closed atomic.Bool
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range 8 {
			wg.Go(func() {
				<-start
				ids := []int64{int64(g), 3999, 17, int64(100 * g)}
				dst := make([]byte, int64(len(ids))*d.RowBytes)
				labels := make([]int64, len(ids))
				for i := 0; !closed.Load(); i++ {
					var err error
					switch (g + i) % 5 {
					case 0:
						err = s.Gather(ids, dst)
					case 1:
						_, err = sampleOf(s, ids, topology.SampleOptions{Fanouts: []int{4, 2}, Seed: uint64(i)})
					case 2:
						err = s.Session().Labels("", ids, labels)
					case 3:
						s.Stats()
					case 4:
						_, err = sp.Sample("", ids)
					}
					if err != nil && !errors.Is(err, ErrClosed) {
						t.Errorf("round %d, goroutine %d, call %d: %v", round, g, i, err)
						return
					}
				}
			})
		}
		close(start)
		time.Sleep(time.Duration(round) * 5 * time.Millisecond)
		var closers sync.WaitGroup
		for range 2 {
			closers.Go(func() {
				if err := s.Close(); err != nil {
					t.Error(err)
				}
			})
		}
		closers.Wait()
		closed.Store(true)
		wg.Wait()

		ids := []int64{0}
		for name, call := range map[string]func() error{
			"Gather": func() error { return s.Gather(ids, make([]byte, d.RowBytes)) },
			"Sample": func() error {
				_, err := sampleOf(s, ids, topology.SampleOptions{Fanouts: []int{2}})
				return err
			},
			"Sampler.Sample": func() error { _, err := sp.Sample("", ids); return err },
			"Labels":         func() error { return s.Session().Labels("", ids, make([]int64, 1)) },
			"Split": func() error {
				_, err := s.Session().Split("", "train")
				return err
			},
			"Place": func() error { return s.Place(nil) },
		} {
			if err := call(); !errors.Is(err, ErrClosed) {
				t.Errorf("%s after Close: %v, want ErrClosed", name, err)
			}
		}
		if st := s.Stats(); st.Tier("host").RowsHeld != 0 {
			t.Errorf("Stats after Close: the host tier holds %d rows", st.Tier("host").RowsHeld)
		}
		if err := s.Close(); err != nil {
			t.Errorf("Close again: %v", err)
		}
	}
}

// A nested enter never waits behind a Close that waits for the outer call.
func TestGuardNestedEnterDuringClose(t *testing.T) {
	var g callGuard
	if !g.enter() {
		t.Fatal("enter of an open guard failed")
	}
	done := make(chan bool)
	go func() { done <- g.close() }()
	for g.state.Load()&closingBit == 0 {
		time.Sleep(time.Millisecond)
	}
	if g.enter() {
		t.Fatal("enter after close began succeeded")
	}
	select {
	case <-done:
		t.Fatal("close returned while a call was running")
	case <-time.After(10 * time.Millisecond):
	}
	g.leave()
	if !<-done {
		t.Fatal("the first close reported false")
	}
	second := make(chan bool)
	go func() { second <- g.close() }()
	select {
	case <-second:
		t.Fatal("a second close returned before the first one released")
	case <-time.After(10 * time.Millisecond):
	}
	g.released()
	if <-second {
		t.Fatal("the second close reported true")
	}
	g.waitReleased()
}
