package ssd

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/ingest"
)

// stripedOverTwoDevices synthesizes a dataset whose feature has three stripes: the first and
// the last on one device, the middle one on another. The devices are tmpfs (/dev/shm) and the
// test's temporary directory where those differ in st_dev; elsewhere fileDevice is replaced
// for the test to place the stripes by file descriptor parity (which the stripes' open order
// makes alternate). It returns the manifest, the feature and each stripe's bytes.
func stripedOverTwoDevices(t testing.TB) (*dataset.Manifest, *dataset.FeatureSpec, [][]byte) {
	t.Helper()
	disk := t.TempDir()
	other := disk
	if shm, err := os.MkdirTemp("/dev/shm", "tierfs-ssd-"); err == nil {
		t.Cleanup(func() { os.RemoveAll(shm) })
		if devOf(t, shm) != devOf(t, disk) {
			other = shm
		}
	}
	if other == disk {
		t.Log("no second device (/dev/shm): files placed on devices by fd parity")
		saved := fileDevice
		fileDevice = func(fd int) (uint64, error) { return uint64(fd % 2), nil }
		t.Cleanup(func() { fileDevice = saved })
	}
	devs := []string{filepath.Join(other, "a"), filepath.Join(disk, "b"), filepath.Join(other, "c")}
	for _, d := range devs {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(disk, "ds")
	m, err := ingest.Synth(ingest.SynthOptions{Nodes: 25000, AvgDegree: 1, Dim: 24, Seed: 5, Out: out, DevicePaths: devs})
	if err != nil {
		t.Fatal(err)
	}
	if m, err = dataset.Load(out); err != nil {
		t.Fatal(err)
	}
	spec, err := m.Feature("")
	if err != nil {
		t.Fatal(err)
	}
	var stripes [][]byte
	for _, p := range spec.Files {
		data, err := os.ReadFile(m.Path(p))
		if err != nil {
			t.Fatal(err)
		}
		stripes = append(stripes, data)
	}
	return m, spec, stripes
}

func devOf(t testing.TB, path string) uint64 {
	fd, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	dev, err := fileDevice(int(fd.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	return dev
}

// randomRequests draws n reads of random ranges of random stripes, within the stripes.
func randomRequests(rng *rand.Rand, stripes [][]byte, n int) []gpuio.Request {
	reqs := make([]gpuio.Request, n)
	for i := range reqs {
		k := rng.IntN(len(stripes))
		off := rng.IntN(len(stripes[k]))
		length := 1 + rng.IntN(min(9000, len(stripes[k])-off))
		reqs[i] = gpuio.Request{File: k, Offset: int64(off), Length: length, Dst: make([]byte, length)}
	}
	return reqs
}

// clone is reqs with destinations of their own.
func clone(reqs []gpuio.Request) []gpuio.Request {
	out := make([]gpuio.Request, len(reqs))
	for i, r := range reqs {
		r.Dst = make([]byte, r.Length)
		out[i] = r
	}
	return out
}

func ioBackends() []gpuio.Backend {
	backends := []gpuio.Backend{gpuio.BackendPread}
	if gpuio.Probe() == nil {
		backends = append(backends, gpuio.BackendIOUring)
	}
	return backends
}

// TestDeviceStacksMatchSharedStacks reads random ranges of stripes on two devices through
// device-affine stacks, from three goroutines at once, and through stacks shared by every file,
// against the stripes' bytes. The device-affine set has one pool a device.
func TestDeviceStacksMatchSharedStacks(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	m, spec, stripes := stripedOverTwoDevices(t)
	for _, backend := range ioBackends() {
		opt := Options{Backend: backend, Stacks: 3, QueueDepth: 8}
		byDevice, err := OpenFiles(m, spec.Files, opt)
		if err != nil {
			t.Fatal(err)
		}
		opt.SharedStacks = true
		shared, err := OpenFiles(m, spec.Files, opt)
		if err != nil {
			t.Fatal(err)
		}
		if byDevice.Devices() != 2 || byDevice.Stacks() != 4 || shared.Devices() != 1 || shared.Stacks() != 3 {
			t.Fatalf("%s: device-affine %d pools of %d stacks, shared %d of %d; want 2 of 4, 1 of 3", backend, byDevice.Devices(), byDevice.Stacks(), shared.Devices(), shared.Stacks())
		}
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for g := range errs {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(seed, uint64(g)))
				for round := range 20 {
					reqs := randomRequests(rng, stripes, 1+rng.IntN(200))
					want := clone(reqs)
					gap := 0
					if round%2 == 1 {
						gap = 4096 * rng.IntN(4)
					}
					if err := byDevice.ReadBridging(reqs, gap); err != nil {
						errs[g] = fmt.Errorf("device-affine, round %d: %w", round, err)
						return
					}
					if err := shared.ReadBridging(want, gap); err != nil {
						errs[g] = fmt.Errorf("shared, round %d: %w", round, err)
						return
					}
					for i, r := range reqs {
						ref := stripes[r.File][r.Offset : r.Offset+int64(r.Length)]
						if !bytes.Equal(r.Dst, ref) || !bytes.Equal(want[i].Dst, ref) {
							errs[g] = fmt.Errorf("round %d, request %d (file %d, %d bytes at %d): device-affine equal %v, shared equal %v",
								round, i, r.File, r.Length, r.Offset, bytes.Equal(r.Dst, ref), bytes.Equal(want[i].Dst, ref))
							return
						}
					}
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("%s: %v", backend, err)
			}
		}
		a, b := byDevice.Stats(), shared.Stats()
		if a.Requests != b.Requests || a.BytesRequested != b.BytesRequested || a.Requests == 0 {
			t.Errorf("%s: device-affine served %d requests (%d bytes), shared %d (%d)", backend, a.Requests, a.BytesRequested, b.Requests, b.BytesRequested)
		}
		byDevice.Close()
		shared.Close()
	}
}

// TestDeviceStacksErrorsMatchSharedStacks: a bad request, a read past a stripe's end, injected
// EIO and short reads (rules by file index and by path) and a stripe truncated while open fail a
// split read with the error the shared stacks give, corruption where they classify it so, while
// the other device's part of the batch is read.
func TestDeviceStacksErrorsMatchSharedStacks(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	m, spec, stripes := stripedOverTwoDevices(t)
	end := int64(len(stripes[1]))
	cases := []struct {
		name    string
		faults  *gpuio.Faults
		bad     gpuio.Request // added to the batch
		corrupt bool
	}{
		{name: "file index out of range", bad: gpuio.Request{File: 3, Length: 8, Dst: make([]byte, 8)}},
		{name: "negative offset", bad: gpuio.Request{File: 1, Offset: -4, Length: 8, Dst: make([]byte, 8)}},
		{name: "past the end of a stripe", bad: gpuio.Request{File: 1, Offset: end - 8, Length: 16, Dst: make([]byte, 16)}, corrupt: true},
		{name: "EIO by file index", faults: &gpuio.Faults{Rules: []gpuio.FaultRule{{Kind: gpuio.FaultEIO, File: 2, From: 0, To: 1, Every: 1}}}},
		{name: "short read by path", faults: &gpuio.Faults{Rules: []gpuio.FaultRule{{Kind: gpuio.FaultShort, File: -1, Path: filepath.Base(spec.Files[1]), From: 0, To: 1, Every: 1}}}, corrupt: true},
	}
	for _, backend := range ioBackends() {
		for _, c := range cases {
			var got [2]error
			at := rng.IntN(50)
			for k, shared := range []bool{false, true} {
				opt := Options{Backend: backend, Stacks: 2, QueueDepth: 16, SharedStacks: shared}
				if c.faults != nil {
					opt.Faults = &gpuio.Faults{Rules: c.faults.Rules}
				}
				f, err := OpenFiles(m, spec.Files, opt)
				if err != nil {
					t.Fatal(err)
				}
				reqs := randomRequests(rand.New(rand.NewPCG(seed, 1)), stripes, 50)
				for _, file := range []int{0, 1, 2} { // the first blocks of each stripe: where the rules strike
					reqs = append(reqs, gpuio.Request{File: file, Length: 8192, Dst: make([]byte, 8192)})
				}
				if c.bad.Dst != nil {
					reqs = slices.Insert(reqs, at, c.bad)
				}
				got[k] = f.Read(reqs)
				if c.corrupt && c.faults == nil && !shared { // the other device's part was read
					for i, r := range reqs {
						if r.File != c.bad.File && !bytes.Equal(r.Dst, stripes[r.File][r.Offset:r.Offset+int64(r.Length)]) {
							t.Errorf("%s, %s, shared %v: request %d wrong beside the failing one", backend, c.name, shared, i)
						}
					}
				}
				f.Close()
			}
			if got[0] == nil || got[1] == nil || got[0].Error() != got[1].Error() || dataset.IsCorrupt(got[0]) != c.corrupt || dataset.IsCorrupt(got[1]) != c.corrupt {
				t.Errorf("%s, %s:\n device-affine: %v\n shared:        %v\nwant the same error, corruption %v", backend, c.name, got[0], got[1], c.corrupt)
			}
		}
	}
	// A stripe on the second device cut while open: a batch over both devices fails as
	// corruption naming it, as the shared stacks fail.
	opens := [2]*Files{}
	for k, shared := range []bool{false, true} {
		f, err := OpenFiles(m, spec.Files, Options{Stacks: 2, SharedStacks: shared})
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		opens[k] = f
	}
	if err := os.Truncate(m.Path(spec.Files[1]), end/2); err != nil {
		t.Fatal(err)
	}
	var got [2]error
	for k, f := range opens {
		reqs := randomRequests(rand.New(rand.NewPCG(seed, 2)), stripes, 20)
		reqs = append(reqs, gpuio.Request{File: 1, Offset: end - 100, Length: 100, Dst: make([]byte, 100)})
		got[k] = f.Read(reqs)
	}
	for k, err := range got {
		if !dataset.IsCorrupt(err) || !strings.Contains(err.Error(), spec.Files[1]) || !strings.Contains(err.Error(), "truncated") {
			t.Errorf("shared %v: read past a stripe truncated while open: %v; want corruption naming %s", k == 1, err, spec.Files[1])
		}
	}
}

// TestDeviceStacksToDevice (GPU machines): batches of host and device destinations over stripes
// on two devices, split over the devices' stacks on one stream, land as the stripes hold them,
// through the completion kernels and through gpu-uring where its ring is available.
func TestDeviceStacksToDevice(t *testing.T) {
	if err := cuda.Load(); err != nil {
		t.Skipf("skipping GPU test: %v", err)
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	m, spec, stripes := stripedOverTwoDevices(t)
	backends := []gpuio.Backend{gpuio.BackendAuto}
	if gpuio.ProbeGPURing() == nil {
		backends = append(backends, gpuio.BackendGPUURing)
	}
	for _, backend := range backends {
		f, err := OpenFiles(m, spec.Files, Options{Backend: backend, Stacks: 2, QueueDepth: 16})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.AttachDevice(0, 0); err != nil {
			t.Fatal(err)
		}
		stream, err := cuda.NewStream(0)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(seed, 3))
		for round := range 4 {
			reqs := randomRequests(rng, stripes, 300)
			total := 0
			for _, r := range reqs {
				total += r.Length
			}
			dev, err := cuda.Malloc(0, uint64(total))
			if err != nil {
				t.Fatal(err)
			}
			at := uintptr(0)
			for i := range reqs {
				if i%3 != 0 { // a third stay host requests
					reqs[i].Dst, reqs[i].DevDst = nil, dev+at
					at += uintptr(reqs[i].Length)
				}
			}
			if err := f.ReadToDevice(reqs, uintptr(stream)); err != nil {
				t.Fatalf("%q, round %d: %v", backend, round, err)
			}
			hostAddr, host, err := cuda.HostAlloc(0, uint64(total))
			if err != nil {
				t.Fatal(err)
			}
			if err := cuda.Memcpy(0, hostAddr, dev, uint64(at), stream); err != nil {
				t.Fatal(err)
			}
			if err := cuda.SyncStream(0, stream); err != nil {
				t.Fatal(err)
			}
			at = 0
			for i, r := range reqs {
				got := r.Dst
				if got == nil {
					got = host[at : at+uintptr(r.Length)]
					at += uintptr(r.Length)
				}
				if !bytes.Equal(got, stripes[r.File][r.Offset:r.Offset+int64(r.Length)]) {
					t.Fatalf("%q, round %d, request %d (file %d, %d bytes at %d, device %v): bytes differ", backend, round, i, r.File, r.Length, r.Offset, r.Dst == nil)
				}
			}
			cuda.HostFree(0, hostAddr)
			cuda.Free(0, dev)
		}
		if st := f.Stats(); f.Devices() != 2 || st.DeviceRequests == 0 {
			t.Errorf("%q: %d device pools, %d device requests", backend, f.Devices(), st.DeviceRequests)
		}
		cuda.DestroyStream(0, stream)
		f.Close()
	}
}

// BenchmarkDeviceStacks: gathers of 1,000 random rows of a feature striped over two devices
// (stripedOverTwoDevices), 4 gathers a CPU at once, through device-affine stacks and through
// stacks shared by every file; reads/s and CPU µs a read (the process's user and system time).
func BenchmarkDeviceStacks(b *testing.B) {
	m, spec, _ := stripedOverTwoDevices(b)
	rows := int64(25000)
	for _, shared := range []bool{true, false} {
		name := "device-affine"
		if shared {
			name = "shared"
		}
		b.Run(name, func(b *testing.B) {
			f, err := OpenFiles(m, spec.Files, Options{SharedStacks: shared})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			tier := NewTier(spec, rows, f)
			var before, after unix.Rusage
			unix.Getrusage(unix.RUSAGE_SELF, &before)
			start, reads0 := time.Now(), f.Stats().Reads
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
				ids, pos := make([]int64, 1000), make([]int64, 1000)
				dst := make([]byte, 1000*spec.RowBytes)
				for i := range pos {
					pos[i] = int64(i)
				}
				for pb.Next() {
					for i := range ids {
						ids[i] = rng.Int64N(rows)
					}
					if err := tier.CopyToHost(ids, pos, dst); err != nil {
						b.Error(err)
						return
					}
				}
			})
			elapsed := time.Since(start).Seconds()
			unix.Getrusage(unix.RUSAGE_SELF, &after)
			reads := float64(f.Stats().Reads - reads0)
			cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
			b.ReportMetric(reads/elapsed, "reads/s")
			b.ReportMetric(float64(cpu.Microseconds())/max(reads, 1), "cpu-µs/read")
		})
	}
}

func TestStacksPerDevice(t *testing.T) {
	for _, c := range []struct{ stacks, devices, want int }{
		{16, 4, 4}, {16, 3, 6}, {16, 16, 2}, {2, 2, 2}, {3, 2, 2}, {1, 3, 1}, {4, 1, 4},
	} {
		if got := stacksPerDevice(c.stacks, c.devices); got != c.want {
			t.Errorf("stacksPerDevice(%d, %d) = %d, want %d", c.stacks, c.devices, got, c.want)
		}
	}
}
