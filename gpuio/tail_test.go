package gpuio

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestUnalignedFileTail reads up to the last byte of files whose sizes are no BlockSize
// multiple: the aligned read covering the tail comes back short, which is fine, while a
// request past the end still fails with a short read.
func TestUnalignedFileTail(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend Backend) {
		rng := rand.New(rand.NewPCG(11, 12))
		sizes := []int{1, 4095, 4097, 100_003}
		fds, want := unalignedFiles(t, rng, sizes)
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
		fds, want := unalignedFiles(t, rng, sizes)
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
		if partial == 0 {
			t.Fatal("Verify never saw a file's partial last block")
		}
	})
}

// unalignedFiles writes one file of random bytes per size and opens each O_DIRECT where the file
// system allows it: the fds (closed when t ends) and the bytes each holds.
func unalignedFiles(t *testing.T, rng *rand.Rand, sizes []int) (fds []int, want [][]byte) {
	t.Helper()
	dir := t.TempDir()
	for i, size := range sizes {
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		path := filepath.Join(dir, "f"+string(rune('a'+i)))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECT, 0)
		if errors.Is(err, unix.EINVAL) {
			fd, err = unix.Open(path, unix.O_RDONLY, 0)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		fds, want = append(fds, fd), append(want, data)
	}
	return fds, want
}
