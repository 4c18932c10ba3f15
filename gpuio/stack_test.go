package gpuio

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testFiles writes files of the given sizes (rounded up to 4096) with random content, opens them
// O_DIRECT and returns the fds and the reference content read back with os.ReadFile.
func testFiles(tb testing.TB, seed uint64, sizes ...int) ([]int, [][]byte) {
	tb.Helper()
	tb.Logf("content seed %d", seed)
	rng := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), byte(seed >> 24)})
	dir := tb.TempDir()
	var fds []int
	var want [][]byte
	for i, size := range sizes {
		data := make([]byte, (size+4095)&^4095)
		rng.Read(data)
		path := filepath.Join(dir, fmt.Sprintf("f%d", i))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			tb.Fatal(err)
		}
		ref, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECT, 0)
		if err != nil {
			tb.Fatalf("open %s O_DIRECT: %v", path, err)
		}
		tb.Cleanup(func() { unix.Close(fd) })
		fds, want = append(fds, fd), append(want, ref)
	}
	return fds, want
}

// forEachBackend runs fn once per backend; the io_uring run is skipped when Probe fails.
func forEachBackend(t *testing.T, fn func(t *testing.T, backend Backend)) {
	for _, b := range []Backend{BackendIOUring, BackendPread} {
		t.Run(string(b), func(t *testing.T) {
			if b == BackendIOUring {
				if err := Probe(); err != nil {
					t.Skipf("io_uring unavailable: %v", err)
				}
			}
			fn(t, b)
		})
	}
}

func openStack(t *testing.T, fds []int, opts Options) *Stack {
	t.Helper()
	s, err := Open(fds, opts)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Backend != BackendAuto && opts.Backend != BackendGPUURing && s.Backend() != opts.Backend {
		t.Fatalf("Backend() = %q, want %q", s.Backend(), opts.Backend)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func req(file int, off int64, n int) Request {
	return Request{File: file, Offset: off, Length: n, Dst: make([]byte, n)}
}

func checkBytes(t *testing.T, reqs []Request, want [][]byte) {
	t.Helper()
	for i, r := range reqs {
		if exp := want[r.File][r.Offset : r.Offset+int64(r.Length)]; !bytes.Equal(r.Dst, exp) {
			t.Fatalf("request %d (file %d, offset %d, length %d): bytes differ from reference", i, r.File, r.Offset, r.Length)
		}
	}
}

// mixedRequests builds small unaligned, block-straddling, large and duplicate requests.
func mixedRequests(rng *rand.Rand, want [][]byte, n int) []Request {
	var reqs []Request
	for len(reqs) < n {
		f := rng.IntN(len(want))
		size := int64(len(want[f]))
		var off int64
		var length int
		switch rng.IntN(10) {
		case 0, 1, 2, 3: // small, unaligned
			length = 4 + rng.IntN(16<<10-4)
		case 4, 5: // straddles a block boundary
			length = 2 + rng.IntN(300)
			off = (1+rng.Int64N(size/4096-1))*4096 - int64(1+rng.IntN(length-1))
		case 6: // large: longer than MaxIOBytes, split into several reads
			length = 1<<20 + rng.IntN(4096)
		case 7: // aligned block
			length = 4096
			off = rng.Int64N(size/4096) * 4096
		default: // duplicate or overlap of an earlier request
			if len(reqs) > 0 {
				p := reqs[rng.IntN(len(reqs))]
				f, off, length = p.File, p.Offset+int64(rng.IntN(p.Length)), 1+rng.IntN(p.Length)
				size = int64(len(want[f]))
			} else {
				length = 100
			}
		}
		length = int(min(int64(length), size))
		if off == 0 || off+int64(length) > size {
			off = rng.Int64N(size - int64(length) + 1)
		}
		reqs = append(reqs, req(f, off, length))
	}
	return reqs
}

func TestMatchesReference(t *testing.T) {
	const seed = 1
	fds, want := testFiles(t, seed, 3<<20, 5<<20+100, 64<<10)
	forEachBackend(t, func(t *testing.T, backend Backend) {
		for _, noCoalesce := range []bool{false, true} {
			t.Run(fmt.Sprintf("NoCoalesce=%v", noCoalesce), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 2))
				// 16 in flight at most, but staging for only 6 reads: both limits force refills.
				s := openStack(t, fds, Options{Backend: backend, QueueDepth: 16, StagingBytes: 6 * 128 << 10, NoCoalesce: noCoalesce})
				for round := range 3 {
					reqs := mixedRequests(rng, want, 600)
					// Several Submits (one empty) before one Complete.
					for _, part := range [][]Request{reqs[:100], nil, reqs[100:101], reqs[101:]} {
						if err := s.Submit(part); err != nil {
							t.Fatal(err)
						}
					}
					if err := s.Complete(); err != nil {
						t.Fatalf("round %d: %v", round, err)
					}
					checkBytes(t, reqs, want)
				}
				st := s.Stats()
				if st.Requests != 1800 || st.Backend != backend {
					t.Fatalf("stats: %d requests, backend %q; want 1800, %q", st.Requests, st.Backend, backend)
				}
				var hist uint64
				for _, c := range st.LatencyHistogram {
					hist += c
				}
				if hist != st.Reads || st.BytesRead%4096 != 0 {
					t.Fatalf("stats: histogram holds %d reads, Reads %d; BytesRead %d, BytesRequested %d", hist, st.Reads, st.BytesRead, st.BytesRequested)
				}
				t.Logf("%+v", st)
			})
		}
	})
}

func TestCoalescingReducesReads(t *testing.T) {
	fds, want := testFiles(t, 3, 1<<20)
	forEachBackend(t, func(t *testing.T, backend Backend) {
		reads := map[bool]uint64{}
		for _, noCoalesce := range []bool{false, true} {
			s := openStack(t, fds, Options{Backend: backend, NoCoalesce: noCoalesce})
			var reqs []Request
			for i := range 256 { // 256 KiB of touching 1 KiB rows, four per block
				reqs = append(reqs, req(0, int64(i)<<10, 1<<10))
			}
			if err := s.Submit(reqs); err != nil {
				t.Fatal(err)
			}
			if err := s.Complete(); err != nil {
				t.Fatal(err)
			}
			checkBytes(t, reqs, want)
			reads[noCoalesce] = s.Stats().Reads
		}
		if reads[false] != 2 || reads[true] != 256 {
			t.Fatalf("Reads: coalesced %d (want 2: 256 KiB / 128 KiB), NoCoalesce %d (want 256)", reads[false], reads[true])
		}
	})
}

func TestVerify(t *testing.T) {
	fds, want := testFiles(t, 4, 1<<20)
	forEachBackend(t, func(t *testing.T, backend Backend) {
		calls := map[int64]int{}
		failAt := int64(-1)
		errCorrupt := errors.New("checksum mismatch")
		s := openStack(t, fds, Options{Backend: backend, Verify: func(file int, off int64, block []byte) error {
			if off%4096 != 0 || !bytes.Equal(block, want[file][off:off+4096]) {
				t.Errorf("Verify(file %d, offset %d): wrong block", file, off)
			}
			calls[off]++
			if off == failAt {
				failAt = -1 // fail once
				return errCorrupt
			}
			return nil
		}})
		reqs := []Request{req(0, 10, 3*4096), req(0, 200<<10, 300<<10)}
		if err := s.Submit(reqs); err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(); err != nil {
			t.Fatal(err)
		}
		checkBytes(t, reqs, want)
		if got := uint64(len(calls)) * 4096; got != s.Stats().BytesRead {
			t.Fatalf("Verify saw %d distinct blocks (%d bytes), BytesRead %d", len(calls), got, s.Stats().BytesRead)
		}
		failAt = 300 << 10
		err := errors.Join(s.Submit(reqs), s.Complete())
		if !errors.Is(err, errCorrupt) || !strings.Contains(err.Error(), "offset 307200") {
			t.Fatalf("Complete with failing Verify: %v; want checksum mismatch at offset 307200", err)
		}
		if err := errors.Join(s.Submit(reqs), s.Complete()); err != nil {
			t.Fatalf("after a Verify error: %v", err)
		}
		checkBytes(t, reqs, want)
	})
}

func TestErrors(t *testing.T) {
	fds, want := testFiles(t, 5, 64<<10, 8<<10)
	forEachBackend(t, func(t *testing.T, backend Backend) {
		s := openStack(t, fds, Options{Backend: backend})
		good := req(1, 100, 50)
		for _, tc := range []struct {
			bad  Request
			want string
		}{
			{req(2, 0, 10), "request 1: file index 2 out of range"},
			{req(-1, 0, 10), "request 1: file index -1 out of range"},
			{req(0, -5, 10), "request 1: negative offset -5"},
			{Request{File: 0, Offset: 0, Length: 0}, "request 1: length 0"},
			{Request{File: 0, Offset: 0, Length: 8, Dst: make([]byte, 7)}, "request 1: len(Dst) 7 != Length 8"},
		} {
			err := s.Submit([]Request{good, tc.bad})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "gpuio: ") {
				t.Errorf("Submit(%+v): %v; want error containing %q", tc.bad, err, tc.want)
			}
		}
		if err := s.Complete(); err != nil || s.Stats().Requests != 0 {
			t.Fatalf("after rejected Submits: Complete %v, %d requests counted; want nothing queued", err, s.Stats().Requests)
		}
		// Reads past EOF, alone and coalesced with good requests, in one Complete.
		reqs := []Request{req(0, 1000, 10), req(1, 8<<10, 1), req(0, 60<<10, 8<<10), req(0, 0, 4096)}
		for i := range 50 {
			reqs = append(reqs, req(0, int64(i)*1000, 500))
		}
		if err := s.Submit(reqs); err != nil {
			t.Fatal(err)
		}
		err := s.Complete()
		if err == nil || !strings.Contains(err.Error(), "short read of file") {
			t.Fatalf("reading past EOF: %v; want a short read error", err)
		}
		t.Log(err)
		// The stack still works.
		reqs = mixedRequests(rand.New(rand.NewPCG(5, 5)), want, 200)
		if err := errors.Join(s.Submit(append(reqs, good)), s.Complete()); err != nil {
			t.Fatal(err)
		}
		checkBytes(t, append(reqs, good), want)
	})
}

func TestBadFDReportsErrno(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend Backend) {
		dir, err := unix.Open(t.TempDir(), unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(dir)
		s := openStack(t, []int{dir}, Options{Backend: backend})
		err = errors.Join(s.Submit([]Request{req(0, 4096, 10)}), s.Complete())
		if !errors.Is(err, unix.EISDIR) || !strings.Contains(err.Error(), "EISDIR") || !strings.Contains(err.Error(), "file 0 at offset 4096") {
			t.Fatalf("reading a directory: %v; want EISDIR naming file and offset", err)
		}
	})
}

func TestOpenAndClose(t *testing.T) {
	fds, _ := testFiles(t, 6, 1<<20)
	if _, err := Open(fds, Options{BlockSize: 3000}); err == nil || !strings.Contains(err.Error(), "3000") {
		t.Fatalf("Open with BlockSize 3000: %v", err)
	}
	if _, err := Open(fds, Options{Backend: "spdk"}); err == nil {
		t.Fatal("Open with an unknown backend succeeded")
	}
	s, err := Open(fds, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if wantIOUring := Probe() == nil; (s.Backend() == BackendIOUring) != wantIOUring || s.Stats().Backend != s.Backend() {
		t.Fatalf("BackendAuto chose %q (stats %q); Probe ok: %v", s.Backend(), s.Stats().Backend, wantIOUring)
	}
	t.Logf("BackendAuto chose %s", s.Backend())
	// Close with reads in flight and queued must wait for them and not crash.
	var reqs []Request
	for i := range 1000 {
		reqs = append(reqs, req(0, int64(i%256)*4096, 4096))
	}
	if err := s.Submit(reqs); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(reqs[:1]); err == nil {
		t.Fatal("Submit after Close succeeded")
	}
}

// BenchmarkRandomRead4K reads random 4 KiB blocks of a 256 MiB O_DIRECT file at queue depth 128.
func BenchmarkRandomRead4K(b *testing.B) {
	const fileSize, batch = 256 << 20, 1024
	fds, _ := testFiles(b, 7, fileSize)
	for _, backend := range []Backend{BackendIOUring, BackendPread} {
		b.Run(string(backend), func(b *testing.B) {
			if err := Probe(); backend == BackendIOUring && err != nil {
				b.Skipf("io_uring unavailable: %v", err)
			}
			s, err := Open(fds, Options{Backend: backend, QueueDepth: 128, NoCoalesce: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			rng := rand.New(rand.NewPCG(7, 7))
			reqs := make([]Request, batch)
			for i := range reqs {
				reqs[i] = req(0, 0, 4096)
			}
			b.SetBytes(4096)
			b.ResetTimer()
			begin := time.Now()
			for done := 0; done < b.N; done += batch {
				n := min(batch, b.N-done)
				for i := range reqs[:n] {
					reqs[i].Offset = rng.Int64N(fileSize/4096) * 4096
				}
				if err := errors.Join(s.Submit(reqs[:n]), s.Complete()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(begin).Seconds(), "IOPS")
		})
	}
}

// Forcing io_uring where it does not work is an unsupported operation, not an IO error.
func TestForcedIOUringUnavailable(t *testing.T) {
	perr := Probe()
	if perr == nil {
		t.Skip("io_uring works here")
	}
	fds, _ := testFiles(t, 1, 4096)
	_, err := Open(fds, Options{Backend: BackendIOUring})
	if !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Open forcing io_uring where Probe says %v: %v, want errors.ErrUnsupported", perr, err)
	}
}
