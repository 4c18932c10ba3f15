package gpuio

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/tierfs/tierfs/cuda"
)

// TestDeviceCompletionMatchesHost reads the same mixed requests (unaligned, straddling, split,
// overlapping) into host memory and, through the completion kernel, into device memory, with
// small staging so slots are recycled behind kernels, and several Submits before one Complete.
func TestDeviceCompletionMatchesHost(t *testing.T) {
	if err := cuda.Load(); err != nil {
		t.Skipf("skipping GPU test: %v", err)
	}
	seed := rand.Uint64()
	t.Logf("request seed %d", seed)
	fds, want := testFiles(t, seed, 3<<20, 5<<20+100, 64<<10)
	run := func(t *testing.T, backend Backend) {
		rng := rand.New(rand.NewPCG(seed, 7))
		s := openStack(t, fds, Options{Backend: backend, QueueDepth: 8, StagingBytes: 8 * 128 << 10})
		if err := s.AttachDevice(0, 0); err != nil {
			t.Fatal(err)
		}
		if on, why := s.GPURing(); backend == BackendGPUURing && !on {
			t.Fatalf("gpu-uring not active: %s", why)
		}
		stream, err := cuda.NewStream(0)
		if err != nil {
			t.Fatal(err)
		}
		defer cuda.DestroyStream(0, stream)
		for round := range 5 {
			reqs := mixedRequests(rng, want, 300)
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
				if i%3 == 0 { // a third stay host requests: mixed destinations in one batch
					continue
				}
				reqs[i].Dst, reqs[i].DevDst = nil, dev+at
				at += uintptr(reqs[i].Length)
			}
			for lo := 0; lo < len(reqs); lo += 100 {
				if err := s.Submit(reqs[lo : lo+100]); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.CompleteOn(uintptr(stream)); err != nil {
				t.Fatal(err)
			}
			hostAddr, host, err := cuda.HostAlloc(0, uint64(max(total, 1)))
			if err != nil {
				t.Fatal(err)
			}
			if err := cuda.Memcpy(0, hostAddr, dev, uint64(at), cuda.Stream(stream)); err != nil {
				t.Fatal(err)
			}
			if err := cuda.SyncStream(0, cuda.Stream(stream)); err != nil {
				t.Fatal(err)
			}
			at = 0
			for i, r := range reqs {
				exp := want[r.File][r.Offset : r.Offset+int64(r.Length)]
				got := r.Dst
				if got == nil {
					got = host[at : at+uintptr(r.Length)]
					at += uintptr(r.Length)
				}
				if !bytes.Equal(got, exp) {
					t.Fatalf("round %d request %d (file %d, offset %d, length %d, device %v): bytes differ", round, i, r.File, r.Offset, r.Length, r.Dst == nil)
				}
			}
			cuda.HostFree(0, hostAddr)
			cuda.Free(0, dev)
		}
		st := s.Stats()
		if backend == BackendGPUURing {
			if st.GPURingKernels == 0 || st.GPURingReads == 0 || st.GPURing != "active" {
				t.Errorf("stats show no gpu-uring work: %+v", st)
			}
			t.Logf("gpu-uring: %d reads in %d kernels, %d SQ wakeups, %d SQ-full waits", st.GPURingReads, st.GPURingKernels, st.GPURingWakeups, st.GPURingSQWaits)
		} else if st.CompletionKernels == 0 || st.DeviceRequests == 0 {
			t.Errorf("stats show no device work: %+v", st)
		}
	}
	forEachBackend(t, run)
	t.Run("gpu-uring", func(t *testing.T) {
		if err := ProbeGPURing(); err != nil {
			t.Skipf("gpu-uring ring unavailable: %v", err)
		}
		run(t, BackendGPUURing)
	})
}

// TestGPURingErrors: through the gpu-uring kernel, a read past a file's end is a ShortReadError
// naming the file and offset, and the Stack serves the next batch correctly.
func TestGPURingErrors(t *testing.T) {
	if err := cuda.Load(); err != nil {
		t.Skipf("skipping GPU test: %v", err)
	}
	if err := ProbeGPURing(); err != nil {
		t.Skipf("gpu-uring ring unavailable: %v", err)
	}
	seed := rand.Uint64()
	fds, want := testFiles(t, seed, 64<<10)
	s := openStack(t, fds, Options{Backend: BackendGPUURing, QueueDepth: 4})
	if err := s.AttachDevice(0, 0); err != nil {
		t.Fatal(err)
	}
	if on, why := s.GPURing(); !on {
		t.Fatalf("gpu-uring not active: %s", why)
	}
	dev, err := cuda.Malloc(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer cuda.Free(0, dev)
	end := int64(len(want[0]))
	if err := s.Submit([]Request{{File: 0, Offset: 100, Length: 50, DevDst: dev}, {File: 0, Offset: end + 8192, Length: 10, DevDst: dev + 64}}); err != nil {
		t.Fatal(err)
	}
	err = s.Complete()
	var short *ShortReadError
	if !errors.As(err, &short) || short.File != 0 || short.Offset != end+8192 {
		t.Fatalf("read past the end (offset %d of a %d-byte file): %v, want a ShortReadError at that offset", end+8192, end, err)
	}
	// Many small reads through 4 slots: slots are recycled inside one kernel.
	rng := rand.New(rand.NewPCG(seed, 3))
	var reqs []Request
	for i := range 500 {
		off := rng.Int64N(end - 16)
		reqs = append(reqs, Request{File: 0, Offset: off, Length: 16, DevDst: dev + uintptr(16*i)})
	}
	if err := s.Submit(reqs); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(); err != nil {
		t.Fatal(err)
	}
	hostAddr, host, err := cuda.HostAlloc(0, 16*500)
	if err != nil {
		t.Fatal(err)
	}
	defer cuda.HostFree(0, hostAddr)
	if err := cuda.Memcpy(0, hostAddr, dev, 16*500, 0); err != nil {
		t.Fatal(err)
	}
	if err := cuda.SyncStream(0, 0); err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		if !bytes.Equal(host[16*i:16*i+16], want[0][r.Offset:r.Offset+16]) {
			t.Fatalf("request %d (offset %d): bytes differ (seed %d)", i, r.Offset, seed)
		}
	}
}

func TestDeviceRequestNeedsDevice(t *testing.T) {
	fds, _ := testFiles(t, 3, 8192)
	s := openStack(t, fds, Options{Backend: BackendPread})
	if err := s.Submit([]Request{{File: 0, Offset: 0, Length: 10, DevDst: 0x1000}}); err == nil {
		t.Error("device request accepted by a Stack without a device")
	}
	if err := s.Submit([]Request{{File: 0, Offset: 0, Length: 10}}); err == nil {
		t.Error("request with no destination accepted")
	}
}
