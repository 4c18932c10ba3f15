package gpuio

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestUnalignedFileTail reads up to the last byte of files whose sizes are no BlockSize
// multiple: the aligned read covering the tail comes back short, which is fine, while a
// request past the end still fails with a short read.
func TestUnalignedFileTail(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend Backend) {
		rng := rand.New(rand.NewPCG(11, 12))
		sizes := []int{1, 4095, 4097, 100_003}
		fds, _, want := rawFiles(t, rng, sizes...)
		s, err := Open(fds, Options{Backend: backend, MaxIOBytes: 8192, QueueDepth: 4})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var reqs []Request
		for f, size := range sizes {
			reqs = append(reqs, Request{File: f, Offset: 0, Length: size}, Request{File: f, Offset: int64(size - 1), Length: 1})
			for range 20 {
				off := rng.IntN(size)
				n := 1 + rng.IntN(size-off)
				reqs = append(reqs, Request{File: f, Offset: int64(off), Length: n})
			}
		}
		readAndCheck(t, s, reqs, want)
		past := Request{File: 3, Offset: int64(sizes[3] - 2), Length: 3, Dst: make([]byte, 3)}
		if err := s.Submit([]Request{past}); err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(); err == nil || !strings.Contains(err.Error(), "short read") {
			t.Fatalf("read one byte past the end: %v; want a short read error", err)
		}
	})
}

// TestUnalignedFileTailVerify: under Verify, the read covering a file's unaligned tail comes
// back short and Verify sees its last block as far as the file goes; every other block whole.
func TestUnalignedFileTailVerify(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend Backend) {
		seed := rand.Uint64()
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 13))
		sizes := []int{1, 4095, 4097, 100_003}
		fds, _, want := rawFiles(t, rng, sizes...)
		var partial int
		verify := func(file int, off int64, block []byte) error {
			end := off + int64(len(block))
			if len(block) != 4096 && end != int64(sizes[file]) {
				t.Errorf("Verify(file %d, offset %d) got %d bytes: not a whole block nor the file's tail", file, off, len(block))
			}
			if len(block) != 4096 {
				partial++
			}
			if !bytes.Equal(block, want[file][off:end]) {
				t.Errorf("Verify(file %d, offset %d): wrong bytes", file, off)
			}
			return nil
		}
		s, err := Open(fds, Options{Backend: backend, MaxIOBytes: 8192, QueueDepth: 4, Verify: verify})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var reqs []Request
		for f, size := range sizes {
			reqs = append(reqs, Request{File: f, Offset: int64(size - 1), Length: 1})
			for range 20 {
				off := rng.IntN(size)
				reqs = append(reqs, Request{File: f, Offset: int64(off), Length: 1 + rng.IntN(size-off)})
			}
		}
		readAndCheck(t, s, reqs, want)
		if partial == 0 {
			t.Fatal("Verify never saw a file's partial last block")
		}
	})
}

// readAndCheck reads reqs (their Dst allocated here) through s and checks every one against the
// files' bytes, want.
func readAndCheck(t *testing.T, s *Stack, reqs []Request, want [][]byte) {
	t.Helper()
	for i := range reqs {
		reqs[i].Dst = make([]byte, reqs[i].Length)
	}
	if err := errors.Join(s.Submit(reqs), s.Complete()); err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		if !bytes.Equal(r.Dst, want[r.File][r.Offset:r.Offset+int64(r.Length)]) {
			t.Fatalf("request %d (file %d, offset %d, length %d): wrong bytes", i, r.File, r.Offset, r.Length)
		}
	}
}
