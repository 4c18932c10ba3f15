package featurestore

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/cuda"
)

// TestGatherMatrix checks every tier mix × host policy × destination × IO backend × id shape
// against a plain reference (the rows as written). Rows of 32 bytes take the packed host path
// to the device, rows of 384 bytes the kernel path. Device rows run where a GPU is (make
// gpu-test); elsewhere they skip and the host rows still run.
func TestGatherMatrix(t *testing.T) {
	rng := newRand(t)
	const count = 3000
	gpuErr := cuda.Load()
	mixes := []struct {
		name      string
		gpu, host float64 // shares of the rows
	}{
		{"none", 0, 0},
		{"host", 0, 0.4},
		{"gpu", 0.3, 0},
		{"gpu+host", 0.3, 0.4},
		{"all-in-memory", 0.5, 0.6},
	}
	for _, dim := range []int64{8, 96} {
		d := writeDataset(t, count, dim, 2, 6, rng)
		rb := d.RowBytes
		idSets := map[string][]int64{
			"random":   randomIDs(rng, 700, count),
			"repeated": {5, 5, 5, count - 1, 5, 0, count - 1},
			"empty":    {},
			"one":      {count / 2},
			"all":      permutation(rng.Perm(count)),
		}
		for _, mix := range mixes {
			for _, policy := range []string{HostStatic, HostSieve} {
				for _, backend := range backends(t) {
					name := fmt.Sprintf("dim%d/%s/%s/%s", dim, mix.name, policy, backend)
					opt := Options{
						GPUCacheBytes:  int64(mix.gpu*count) * rb,
						HostCacheBytes: int64(mix.host*count) * (rb + 40),
						HostPolicy:     policy,
						IOBackend:      backend,
					}
					s, err := Open(d.Dir, opt)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					for pass := range 2 { // the second pass sees what SIEVE admitted in the first
						for setName, ids := range idSets {
							got := make([]byte, int64(len(ids))*rb)
							if err := s.Gather(ids, got); err != nil {
								t.Fatalf("%s/%s host: %v", name, setName, err)
							}
							if !bytes.Equal(got, d.Want(ids)) {
								t.Fatalf("%s/%s pass %d host: rows differ from the reference at byte %d", name, setName, pass, firstDiff(got, d.Want(ids)))
							}
							if gpuErr != nil {
								continue
							}
							for _, onDevice := range []bool{false, true} {
								got := deviceGatherIDs(t, s, ids, onDevice)
								if !bytes.Equal(got, d.Want(ids)) {
									t.Fatalf("%s/%s pass %d device (ids on device %v): rows differ from the reference at byte %d", name, setName, pass, onDevice, firstDiff(got, d.Want(ids)))
								}
							}
						}
					}
					st := s.Stats()
					if mix.host > 0 && st.Tier("host").Hits == 0 {
						t.Errorf("%s: the host tier served nothing: %+v", name, st.Tiers)
					}
					if mix.gpu > 0 && gpuErr == nil && st.Tier("gpu").Hits == 0 {
						t.Errorf("%s: the GPU tier served nothing: %+v", name, st.Tiers)
					}
					if err := s.Close(); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	if gpuErr != nil {
		t.Logf("device destinations skipped: %v", gpuErr)
	}
}

// deviceGatherIDs gathers ids into device memory, with the ids in pinned host memory
// (GatherDevice) or in device memory (GatherDeviceIDs), and copies the rows back.
func deviceGatherIDs(t *testing.T, s *Store, ids []int64, onDevice bool) []byte {
	t.Helper()
	if !onDevice {
		return deviceGather(t, s, ids)
	}
	devIDs, free, err := idsOnDevice(ids)
	if err != nil {
		t.Fatal(err)
	}
	defer free()
	return deviceRows(t, s, len(ids), func(dst, stream uintptr) error { return s.GatherDeviceIDs(devIDs, len(ids), dst, stream) })
}

// idsOnDevice copies ids to new device memory (through pinned memory) and waits for the copy.
func idsOnDevice(ids []int64) (uintptr, func(), error) {
	n := uint64(8 * max(len(ids), 1))
	devIDs, err := cuda.Malloc(0, n)
	if err != nil {
		return 0, nil, err
	}
	addr, stage, err := cuda.HostAlloc(0, n)
	if err != nil {
		cuda.Free(0, devIDs)
		return 0, nil, err
	}
	defer cuda.HostFree(0, addr)
	copy(cuda.Int64s(stage, len(ids)), ids)
	err = cuda.Memcpy(0, devIDs, addr, n, 0)
	if err == nil {
		err = cuda.SyncStream(0, 0)
	}
	if err != nil {
		cuda.Free(0, devIDs)
		return 0, nil, err
	}
	return devIDs, func() { cuda.Free(0, devIDs) }, nil
}

// TestGatherDeviceIDsOutOfRange: a device id out of range is an error naming its position, now
// when the gather waits for the GPU, else from the next device call.
func TestGatherDeviceIDsOutOfRange(t *testing.T) {
	requireGPU(t)
	rng := newRand(t)
	d := writeDataset(t, 500, 96, 1, 4, rng)
	for _, gpuShare := range []int64{0, 500} { // partly on disk: waits; all on the GPU: does not
		s, err := Open(d.Dir, Options{GPUCacheBytes: gpuShare * d.RowBytes})
		if err != nil {
			t.Fatal(err)
		}
		ids := []int64{1, 2, 500, 3}
		gerr := gatherDeviceIDsErr(s, ids)
		if gpuShare == 500 && gerr == nil {
			gerr = gatherDeviceIDsErr(s, []int64{1})
		}
		if gerr == nil || !bytes.Contains([]byte(gerr.Error()), []byte("ids[2]")) {
			t.Errorf("GPU tier of %d rows: error %v, want one naming ids[2]", gpuShare, gerr)
		}
		if err := gatherDeviceIDsErr(s, []int64{1, 2}); err != nil {
			t.Errorf("a good gather after the error: %v", err)
		}
		s.Close()
	}
}

func gatherDeviceIDsErr(s *Store, ids []int64) error {
	devIDs, free, err := idsOnDevice(ids)
	if err != nil {
		return err
	}
	defer free()
	dst, err := cuda.Malloc(0, uint64(int64(len(ids))*s.RowBytes()))
	if err != nil {
		return err
	}
	defer cuda.Free(0, dst)
	err = s.GatherDeviceIDs(devIDs, len(ids), dst, 0)
	if serr := cuda.SyncStream(0, 0); err == nil && serr != nil {
		err = serr
	}
	return err
}

// BenchmarkGatherDeviceIDs: device ids, every row in the GPU tier, the host's cost per call
// (the kernels overlap the next calls); compare with python/bench/tier_bench.py.
func BenchmarkGatherDeviceIDs(b *testing.B) {
	if err := cuda.Load(); err != nil {
		b.Skip(err)
	}
	rng := newRand(b)
	d := writeDataset(b, 200000, 128, 1, 2, rng)
	s, err := Open(d.Dir, Options{GPUCacheBytes: 200000 * d.RowBytes})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, n := range []int{1, 10000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			devIDs, free, err := idsOnDevice(randomIDs(rng, n, 200000))
			if err != nil {
				b.Fatal(err)
			}
			defer free()
			dst, _ := cuda.Malloc(0, uint64(int64(n)*d.RowBytes))
			defer cuda.Free(0, dst)
			b.SetBytes(int64(n) * d.RowBytes)
			for b.Loop() {
				if err := s.GatherDeviceIDs(devIDs, n, dst, 0); err != nil {
					b.Fatal(err)
				}
			}
			cuda.SyncStream(0, 0)
		})
	}
}

// TestGatherChunked: a batch over MaxGatherChunk ids is served in chunks, host and device
// destinations, against the reference (part cached, part on disk, SIEVE admitting as it goes).
func TestGatherChunked(t *testing.T) {
	rng := newRand(t)
	const count = 5000
	d := writeDataset(t, count, 4, 2, 2, rng)
	ids := randomIDs(rng, MaxGatherChunk+777, count)
	ids[MaxGatherChunk+5] = count - 1
	for _, policy := range []string{HostStatic, HostSieve} {
		s, err := Open(d.Dir, Options{HostCacheBytes: 1000 * (d.RowBytes + 40), HostPolicy: policy, GPUCacheBytes: 500 * d.RowBytes})
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, int64(len(ids))*d.RowBytes)
		if err := s.Gather(ids, got); err != nil {
			t.Fatal(err)
		}
		if want := d.Want(ids); !bytes.Equal(got, want) {
			t.Fatalf("%s: chunked host gather differs at byte %d", policy, firstDiff(got, want))
		}
		bad := append([]int64(nil), ids...)
		bad[MaxGatherChunk+3] = count
		if err := s.Gather(bad, got); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("ids[%d]", MaxGatherChunk+3)) {
			t.Errorf("%s: bad id in the second chunk: %v", policy, err)
		}
		if cuda.Load() == nil {
			for _, onDevice := range []bool{false, true} {
				if got := deviceGatherIDs(t, s, ids, onDevice); !bytes.Equal(got, d.Want(ids)) {
					t.Fatalf("%s: chunked device gather (ids on device %v) differs at byte %d", policy, onDevice, firstDiff(got, d.Want(ids)))
				}
			}
		}
		s.Close()
	}
}
