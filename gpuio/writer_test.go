package gpuio

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

const writerTestBlocks = 256 // blocks of 4 KiB per test file

// writeTestFile makes a file of writerTestBlocks blocks of base and opens it for writing,
// O_DIRECT where the file system has it.
func writeTestFile(t *testing.T, dir, name string, base []byte) (int, string) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, base, 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_DIRECT, 0)
	if err == unix.EINVAL {
		fd, err = unix.Open(path, unix.O_RDWR, 0)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd, path
}

// randomWrites are n requests of 1..3 blocks at random distinct places of a file, from random
// places of region, a third of them placed right after the one before in the file and in region
// (so that they merge).
func randomWrites(rng *rand.Rand, region []byte, n int) []WriteRequest {
	const bs = 4096
	used := make([]bool, writerTestBlocks)
	var reqs []WriteRequest
	for len(reqs) < n {
		blocks := 1 + rng.IntN(3)
		var off, at int
		if k := len(reqs); k > 0 && rng.IntN(3) == 0 {
			prev := reqs[k-1]
			off = int(prev.Offset)/bs + len(prev.Src)/bs
			at = int(uintptr(unsafe.Pointer(&prev.Src[0]))-uintptr(unsafe.Pointer(&region[0])))/bs + len(prev.Src)/bs
		} else {
			off, at = rng.IntN(writerTestBlocks-blocks), rng.IntN(len(region)/bs-blocks)
		}
		if off+blocks > writerTestBlocks || at+blocks > len(region)/bs || slicesAny(used[off:off+blocks]) {
			continue
		}
		for b := off; b < off+blocks; b++ {
			used[b] = true
		}
		reqs = append(reqs, WriteRequest{Offset: int64(off * bs), Src: region[at*bs : (at+blocks)*bs]})
	}
	return reqs
}

func slicesAny(b []bool) bool {
	for _, v := range b {
		if v {
			return true
		}
	}
	return false
}

// TestWriterAgainstPwrite writes random requests (printed seed) through each backend and
// compares every file with one written by a plain pwrite per request.
func TestWriterAgainstPwrite(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 5))
	region := mmapRegion(t, 64*4096)
	for i := range region {
		region[i] = byte(rng.Uint32())
	}
	base := make([]byte, writerTestBlocks*4096)
	for i := range base {
		base[i] = byte(rng.Uint32())
	}
	dir := t.TempDir()
	backends := []Backend{BackendPread}
	if Probe() == nil {
		backends = append(backends, BackendIOUring)
	}
	for round := range 4 {
		reqs := randomWrites(rng, region, 10+rng.IntN(30))
		want := append([]byte(nil), base...)
		for _, r := range reqs {
			copy(want[r.Offset:], r.Src)
		}
		refFD, refPath := writeTestFile(t, dir, "ref", base)
		for _, r := range reqs {
			if n, err := unix.Pwrite(refFD, r.Src, r.Offset); err != nil || n != len(r.Src) {
				t.Fatalf("reference pwrite: %d, %v", n, err)
			}
		}
		if ref, _ := os.ReadFile(refPath); !bytes.Equal(ref, want) {
			t.Fatal("the reference file is not what its writes make")
		}
		for _, b := range backends {
			fd, path := writeTestFile(t, dir, string(b), base)
			w, err := OpenWriter([]int{fd}, region, Options{Backend: b, QueueDepth: 8, MaxIOBytes: 16 << 10})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(reqs); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			got, _ := os.ReadFile(path)
			if !bytes.Equal(got, want) {
				t.Fatalf("round %d, %s: the file differs from pwrite's", round, b)
			}
			st := w.Stats()
			if st.Requests != uint64(len(reqs)) || st.Writes > st.Requests || st.Writes < (st.BytesWritten+16<<10-1)/(16<<10) {
				t.Fatalf("%s: stats %+v for %d requests", b, st, len(reqs))
			}
			t.Logf("round %d, %s: %d requests in %d writes", round, b, st.Requests, st.Writes)
			w.Close()
		}
	}
}

// TestWriterFaults: a write that fails or comes up short fails exactly the requests it carries,
// naming the file and offset; the others are written.
func TestWriterFaults(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 6))
	region := mmapRegion(t, 64*4096)
	for i := range region {
		region[i] = byte(rng.Uint32())
	}
	base := make([]byte, writerTestBlocks*4096)
	dir := t.TempDir()
	backends := []Backend{BackendPread}
	if Probe() == nil {
		backends = append(backends, BackendIOUring)
	}
	for _, b := range backends {
		for _, kind := range []FaultKind{FaultEIO, FaultShort} {
			fd, path := writeTestFile(t, dir, string(b)+string(kind), base)
			faults := &Faults{Rules: []FaultRule{{Kind: kind, Writes: true, File: -1, Every: 2}, {Kind: FaultEIO, File: -1, Every: 1}}}
			w, err := OpenWriter([]int{fd}, region, Options{Backend: b, NoCoalesce: true, Faults: faults, Paths: []string{path}})
			if err != nil {
				t.Fatal(err)
			}
			reqs := randomWrites(rng, region, 20)
			err = w.Write(reqs)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "and 9 more writes failed") {
				t.Fatalf("%s %s: Write = %v, want 10 failures naming %s", b, kind, err, path)
			}
			got, _ := os.ReadFile(path)
			failed := 0
			for _, r := range reqs {
				written := bytes.Equal(got[r.Offset:r.Offset+int64(len(r.Src))], r.Src)
				if r.Err == nil && !written {
					t.Fatalf("%s %s: request at %d has no error and was not written", b, kind, r.Offset)
				}
				if r.Err != nil {
					failed++
					if !strings.Contains(r.Err.Error(), "offset "+strconv.FormatInt(r.Offset, 10)) {
						t.Fatalf("%s %s: %v does not name offset %d", b, kind, r.Err, r.Offset)
					}
					if kind == FaultEIO && !errors.Is(r.Err, unix.EIO) {
						t.Fatalf("%s: %v is no EIO", b, r.Err)
					}
				}
			}
			if failed != 10 || w.Stats().Failed != 10 {
				t.Fatalf("%s %s: %d requests failed (stats %+v), want every second of 20", b, kind, failed, w.Stats())
			}
			w.Close()
		}
	}
}

// TestWriterRefusals: requests outside the region (a Go slice), unaligned or overlapping are
// refused before anything is written.
func TestWriterRefusals(t *testing.T) {
	region := mmapRegion(t, 8*4096)
	fd, _ := writeTestFile(t, t.TempDir(), "f", make([]byte, writerTestBlocks*4096))
	w, err := OpenWriter([]int{fd}, region, Options{Backend: BackendPread})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for name, tc := range map[string]struct {
		reqs []WriteRequest
		want string
	}{
		"go slice":  {[]WriteRequest{{Src: make([]byte, 4096)}}, "not in the Writer's region"},
		"unaligned": {[]WriteRequest{{Offset: 512, Src: region[:4096]}}, "multiple of 4096"},
		"short src": {[]WriteRequest{{Src: region[:100]}}, "multiple of 4096"},
		"overlap":   {[]WriteRequest{{Offset: 8192, Src: region[:8192]}, {Offset: 12288, Src: region[8192:12288]}}, "overlap"},
		"file":      {[]WriteRequest{{File: 1, Src: region[:4096]}}, "out of range"},
	} {
		if err := w.Write(tc.reqs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
		for i, r := range tc.reqs {
			if r.Err == nil {
				t.Errorf("%s: request %d has no error", name, i)
			}
		}
	}
	if w.Stats().Writes != 0 {
		t.Errorf("refused requests were written: %+v", w.Stats())
	}
}

func mmapRegion(t *testing.T, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}
