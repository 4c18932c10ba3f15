package featurestore

import (
	"errors"
	"sync"
	"testing"

	"github.com/tierfs/tierfs/topology"
)

// TestCallsDuringPlaceAndClose runs gather, sample, place and stats from many goroutines, then
// closes the store under them (run with -race): no call fails except with ErrClosed, and every
// gather that succeeded returned the right rows.
func TestCallsDuringPlaceAndClose(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 2000, 16, 2, 6, rng)
	for _, policy := range []string{HostStatic, HostSieve} {
		s, err := Open(d.Dir, Options{HostCacheBytes: 600 * (d.RowBytes + 40), HostPolicy: policy, GPUTopology: gpuTopologyIfAny()})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		stop := make(chan struct{})
		work := func(g int, call func(i int) error) {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if err := call(i); err != nil {
						if !errors.Is(err, ErrClosed) {
							errs <- err
						}
						return
					}
				}
			})
		}
		for g := range 4 {
			ids := randomIDs(rng, 300, 2000)
			work(g, func(int) error {
				got := make([]byte, int64(len(ids))*d.RowBytes)
				if err := s.Gather(ids, got); err != nil {
					return err
				}
				if want := d.Want(ids); string(got) != string(want) {
					return errors.New("gather returned wrong rows")
				}
				return nil
			})
		}
		seeds := randomIDs(rng, 64, 2000)
		work(4, func(i int) error {
			_, err := sampleOf(s, seeds, topology.SampleOptions{Fanouts: []int{5, 3}, Seed: uint64(i)})
			return err
		})
		work(5, func(i int) error {
			hot := make([]uint32, 2000)
			for v := range hot {
				hot[v] = uint32((v * (i + 1)) % 97)
			}
			return s.Place(hot)
		})
		work(6, func(int) error { s.Stats(); return nil })
		for range 20 {
			ids := randomIDs(rng, 50, 2000)
			got := make([]byte, int64(len(ids))*d.RowBytes)
			if err := s.Gather(ids, got); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("policy %s: %v", policy, err)
		}
		if err := s.Gather([]int64{1}, make([]byte, d.RowBytes)); !errors.Is(err, ErrClosed) {
			t.Errorf("gather after close: %v, want ErrClosed", err)
		}
	}
}

// TestCloseDuringGPUSampling closes a store while goroutines sample on the GPU (run under
// compute-sanitizer on the GPU machine): Close waits for them, later calls get ErrClosed.
func TestCloseDuringGPUSampling(t *testing.T) {
	requireGPU(t)
	rng := newRand(t)
	d := writeDataset(t, 3000, 4, 1, 20, rng)
	s, err := Open(d.Dir, Options{GPUTopology: "device"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		seeds := randomIDs(rng, 256, 3000)
		wg.Go(func() {
			for i := 0; ; i++ {
				if _, err := sampleOf(s, seeds, topology.SampleOptions{Fanouts: []int{10, 5}, Seed: uint64(g*1000 + i)}); err != nil {
					if !errors.Is(err, ErrClosed) {
						t.Errorf("sample: %v", err)
					}
					return
				}
			}
		})
	}
	for range 5 {
		if _, err := sampleOf(s, randomIDs(rng, 64, 3000), topology.SampleOptions{Fanouts: []int{3}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}

// gpuTopologyIfAny samples on the GPU where one is.
func gpuTopologyIfAny() string {
	if cudaPresent() {
		return "device"
	}
	return ""
}
