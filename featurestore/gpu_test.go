package featurestore

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/topology"
)

// GPU tests run where libtierfs_cuda.so and a GPU are (make gpu-test); elsewhere they skip, and
// TestNoGPUFallsBackToHost checks the host-only behaviour instead.

// deviceGather runs GatherDevice into fresh device memory and copies the result back.
func deviceGather(t *testing.T, s *Store, ids []int64) []byte {
	t.Helper()
	return deviceRows(t, s, len(ids), func(dst, stream uintptr) error { return s.GatherDevice(ids, dst, stream) })
}

// randomIDs draws n ids, a third of them repeats of earlier ones.
func randomIDs(rng interface{ Int64N(int64) int64 }, n int, count int64) []int64 {
	ids := make([]int64, n)
	for i := range ids {
		if i > 0 && rng.Int64N(3) == 0 {
			ids[i] = ids[rng.Int64N(int64(i))]
		} else {
			ids[i] = rng.Int64N(count)
		}
	}
	return ids
}

func TestGatherDeviceMatchesHost(t *testing.T) {
	requireGPU(t)
	rng := newRand(t)
	cases := []struct {
		dtype dataset.DType
		dim   int64
	}{
		{dataset.Float32, 1}, {dataset.Int8, 7}, {dataset.Float16, 6}, {dataset.BFloat16, 64}, {dataset.Int16, 33},
		{dataset.Float32, 128}, {dataset.Int32, 100}, {dataset.Float64, 512}, {dataset.Uint8, 4096}, {dataset.Int64, 2048},
	}
	for _, c := range cases {
		rb := c.dim * int64(c.dtype.Size())
		t.Run(fmt.Sprintf("%s-%dB", c.dtype, rb), func(t *testing.T) {
			count := int64(3000)
			if rb >= 4096 {
				count = 600
			}
			d := writeTypedDataset(t, c.dtype, count, c.dim, 2, 4, rng)
			type config struct {
				gpu, host int64
				backend   gpuio.Backend
			}
			configs := []config{{0, 0, ""}, {count / 10, count / 5, ""}, {count, 0, ""}, {0, count, ""}}
			if gpuio.ProbeGPURing() == nil { // disk reads submitted by the GPU (gpu-uring)
				configs = append(configs, config{0, 0, gpuio.BackendGPUURing}, config{count / 10, count / 5, gpuio.BackendGPUURing})
			}
			for _, caches := range configs {
				s, err := Open(d.Dir, Options{GPUCacheBytes: caches.gpu * rb, HostCacheBytes: caches.host * (rb + 16), IOBackend: caches.backend, UnverifiedReads: caches.backend == gpuio.BackendGPUURing})
				if err != nil {
					t.Fatal(err)
				}
				for _, n := range []int{0, 1, 257, 5000} {
					ids := randomIDs(rng, n, count)
					got := deviceGather(t, s, ids)
					if want := d.Want(ids); !bytes.Equal(got, want) {
						t.Fatalf("caches %+v, %d ids: device gather differs from the reference (first difference at byte %d)", caches, n, firstDiff(got, want))
					}
					// A host destination on the same store: GPU-tier rows come back from the device.
					host := make([]byte, int64(n)*rb)
					if err := s.Gather(ids, host); err != nil {
						t.Fatal(err)
					}
					if want := d.Want(ids); !bytes.Equal(host, want) {
						t.Fatalf("caches %+v, %d ids: host gather on a GPU store differs from the reference (byte %d)", caches, n, firstDiff(host, want))
					}
				}
				if ok, why := s.GPUAvailable(); !ok { // started at Open or by the first device gather
					t.Fatalf("GPU path did not start: %s", why)
				}
				st := s.Stats()
				if caches.gpu > 0 && st.Tier(tiers.GPU).Hits == 0 {
					t.Errorf("caches %+v: no GPU-tier hits: %+v", caches, st.Tiers)
				}
				if caches.backend == gpuio.BackendGPUURing {
					if st.IO.GPURing != "active" || st.IO.GPURingReads == 0 {
						t.Errorf("gpu-uring store: no GPU-submitted reads: %+v", st.IO)
					}
				} else if caches.gpu == 0 && caches.host == 0 && st.IO.CompletionKernels == 0 {
					t.Errorf("no completion kernel ran for an SSD-only store: %+v", st.IO)
				}
				s.Close()
			}
		})
	}
}

func TestGatherDeviceConcurrentAndReplace(t *testing.T) {
	requireGPU(t)
	rng := newRand(t)
	d := writeDataset(t, 5000, 32, 3, 4, rng)
	s, err := Open(d.Dir, Options{GPUCacheBytes: 500 * 128, HostCacheBytes: 1000 * 144, MaxConcurrentIO: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	errs := make(chan error, 4)
	for w := range 4 {
		go func() {
			for k := range 20 {
				ids := randomIDs(rng, 2000, 5000)
				if got := deviceGather(t, s, ids); !bytes.Equal(got, d.Want(ids)) {
					errs <- fmt.Errorf("worker %d batch %d differs", w, k)
					return
				}
			}
			errs <- nil
		}()
	}
	// Re-place while gathers run: kernels of earlier gathers must not read a freed tier.
	hot := make([]uint32, 5000)
	for i := range hot {
		hot[i] = uint32(rng.Int64N(100))
	}
	if err := s.Place(hot); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestGatherDeviceErrors(t *testing.T) {
	requireGPU(t)
	rng := newRand(t)
	d := writeDataset(t, 100, 4, 1, 2, rng)
	s, err := Open(d.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.GatherDevice([]int64{1}, 0, 0); err == nil {
		t.Error("null destination accepted")
	}
	dst, _ := cuda.Malloc(0, 1024)
	defer cuda.Free(0, dst)
	if err := s.GatherDevice([]int64{1, 100}, dst, 0); !errors.Is(err, ErrIDOutOfRange) {
		t.Errorf("id 100 of 100 nodes: got %v, want ErrIDOutOfRange", err)
	}
	info, _ := cuda.Info(0)
	_, err = Open(d.Dir, Options{GPUCacheBytes: int64(info.TotalBytes) * 2})
	if err == nil || !strings.Contains(err.Error(), "free on GPU") {
		t.Errorf("GPU budget of twice the device memory: got %v, want a refusal naming the free bytes", err)
	}
}

func TestGPUSamplingMatchesHost(t *testing.T) {
	requireGPU(t)
	rng := newRand(t)
	d := writeDataset(t, 4000, 4, 1, 40, rng)
	host, err := Open(d.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	for _, where := range []string{"device", "pinned"} {
		s, err := Open(d.Dir, Options{GPUTopology: where})
		if err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); st.GPU.Topology != where {
			t.Fatalf("GPU topology %q not in use: %+v", where, st.GPU)
		}
		for _, fanouts := range [][]int{{5, 3}, {-1}, {0, 2}, {100, 70}, {25, 10, 5}} {
			for _, replace := range []bool{false, true} {
				seeds := randomIDs(rng, 300, 4000)
				opt := topology.SampleOptions{Fanouts: fanouts, Replace: replace, Seed: rng.Uint64()}
				want, err := sampleOf(host, seeds, opt)
				if err != nil {
					t.Fatal(err)
				}
				got, err := sampleOf(s, seeds, opt)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s topology, fanouts %v replace %v: GPU sample differs from the host sample", where, fanouts, replace)
				}
			}
		}
		s.Close()
	}
}

func TestNoGPUFallsBackToHost(t *testing.T) {
	if cuda.Load() == nil {
		t.Skip("a GPU is present; this checks machines without one")
	}
	rng := newRand(t)
	d := writeDataset(t, 500, 8, 1, 2, rng)
	s, err := Open(d.Dir, Options{GPUCacheBytes: 1 << 20, HostCacheBytes: 100 * 48})
	if err != nil {
		t.Fatalf("a GPU budget without a GPU must not fail Open: %v", err)
	}
	defer s.Close()
	st := s.Stats()
	if st.GPU.Available || st.GPU.Reason == "" {
		t.Errorf("stats should say the GPU path is unavailable and why: %+v", st.GPU)
	}
	ids := randomIDs(rng, 1000, 500)
	dst := make([]byte, int64(len(ids))*s.RowBytes())
	if err := s.Gather(ids, dst); err != nil || !bytes.Equal(dst, d.Want(ids)) {
		t.Fatalf("host gather without a GPU: err %v, equal %v", err, bytes.Equal(dst, d.Want(ids)))
	}
	if err := s.GatherDevice(ids, 1<<40, 0); !errors.Is(err, ErrNoGPU) {
		t.Errorf("device gather without a GPU: got %v, want ErrNoGPU", err)
	}
	if _, err := Open(d.Dir, Options{GPUTopology: "device"}); err != nil {
		t.Errorf("GPU topology without a GPU must fall back to host sampling: %v", err)
	}
}

// BenchmarkGatherDevice: batches of 262144 uniform ids, every row in the GPU tier, so the time is
// the host-side split by tier plus the kernel. Run on a GPU machine:
// featurestore.test -test.run '^$' -test.bench GatherDevice -test.cpuprofile cpu.prof
func BenchmarkGatherDevice(b *testing.B) {
	if err := cuda.Load(); err != nil {
		b.Skipf("skipping GPU benchmark: %v", err)
	}
	rng := newRand(b)
	const count, batch = 1 << 20, 1 << 18
	d := writeTypedDataset(b, dataset.Float32, count, 16, 1, 0, rng)
	s, err := Open(d.Dir, Options{GPUCacheBytes: count * 64})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ids := randomIDs(rng, batch, count)
	dst, err := cuda.Malloc(0, batch*64)
	if err != nil {
		b.Fatal(err)
	}
	defer cuda.Free(0, dst)
	b.ResetTimer()
	for range b.N {
		if err := s.GatherDevice(ids, dst, 0); err != nil {
			b.Fatal(err)
		}
	}
	cuda.SyncStream(0, 0)
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds()/1e6, "Mrows/s")
}

func cudaPresent() bool { return cuda.Load() == nil }
