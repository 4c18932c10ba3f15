package gpuio

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testSeed is TIERFS_TEST_SEED when set, else a fresh seed; it is printed so a failure can be
// replayed.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("TIERFS_TEST_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("TIERFS_TEST_SEED=%q: %v", v, err)
		}
	}
	t.Logf("seed %d (replay with TIERFS_TEST_SEED=%d)", seed, seed)
	return seed
}

// rawFiles writes files of exactly the given sizes (no block multiple) and opens them O_DIRECT,
// or through the page cache where the file system has no O_DIRECT.
func rawFiles(t *testing.T, rng *rand.Rand, sizes ...int) ([]int, []string, [][]byte) {
	t.Helper()
	dir := t.TempDir()
	var fds []int
	var paths []string
	var want [][]byte
	for i, size := range sizes {
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		path := filepath.Join(dir, fmt.Sprintf("r%d", i))
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
		fds, paths, want = append(fds, fd), append(paths, path), append(want, data)
	}
	return fds, paths, want
}

// gapRequests draws n requests of kind: rows (rowBytes at row boundaries, sparse or dense),
// clustered small ranges, or a mix with ranges longer than maxIO.
func gapRequests(rng *rand.Rand, sizes []int, n, rowBytes, maxIO int) []Request {
	var reqs []Request
	kind := rng.IntN(3)
	for len(reqs) < n {
		f := rng.IntN(len(sizes))
		size := int64(sizes[f])
		var off int64
		var length int
		switch kind {
		case 0: // feature rows
			rows := size / int64(rowBytes)
			off, length = rng.Int64N(rows)*int64(rowBytes), rowBytes
		case 1: // clusters of small unaligned ranges
			base := rng.Int64N(size)
			for k := 0; k < 1+rng.IntN(8) && len(reqs) < n; k++ {
				o := min(size-1, base+rng.Int64N(64<<10))
				l := 1 + rng.IntN(min(3000, int(size-o)))
				reqs = append(reqs, Request{File: f, Offset: o, Length: l})
			}
			continue
		default: // anything, including ranges crossing MaxIOBytes and the file's last byte
			length = 1 + rng.IntN(2*maxIO+5000)
			if rng.IntN(8) == 0 {
				length = 1 + rng.IntN(600)
				off = size - int64(length)
			}
		}
		length = int(min(int64(length), size))
		if off < 0 || off+int64(length) > size || (off == 0 && kind == 2) {
			off = rng.Int64N(size - int64(length) + 1)
		}
		reqs = append(reqs, Request{File: f, Offset: off, Length: length})
	}
	for i := range reqs {
		reqs[i].Dst = make([]byte, reqs[i].Length)
	}
	return reqs
}

// preadReference reads each request on its own with pread(2) through an ordinary descriptor.
func preadReference(t *testing.T, paths []string, reqs []Request) [][]byte {
	t.Helper()
	var files []*os.File
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files = append(files, f)
	}
	out := make([][]byte, len(reqs))
	for i, r := range reqs {
		out[i] = make([]byte, r.Length)
		if _, err := files[r.File].ReadAt(out[i], r.Offset); err != nil {
			t.Fatalf("reference pread of request %d: %v", i, err)
		}
	}
	return out
}

// TestGapCoalescingMatchesReference serves random request sets with random gaps, alignments and
// largest reads, and compares every byte with a pread of each request. Bridging gaps never adds
// reads, bridges at most CoalesceGap bytes per read saved, and with no gap reads nothing extra;
// SubmitBridging's gap reads as the same CoalesceGap does.
func TestGapCoalescingMatchesReference(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 31))
	sizes := []int{3<<20 + 1234, 777_777, 4096*50 + 512}
	fds, paths, _ := rawFiles(t, rng, sizes...)
	forEachBackend(t, func(t *testing.T, backend Backend) {
		for trial := range 8 {
			bs := []int{512, 1024, 4096}[rng.IntN(3)]
			maxIO := []int{8 << 10, 32 << 10, 128 << 10}[rng.IntN(3)]
			gap := []int{0, bs, rng.IntN(maxIO), 4096 * (1 + rng.IntN(16)), 1 << 20}[rng.IntN(5)]
			rowBytes := []int{512, 128, 2048, 5000}[rng.IntN(4)]
			reqs := gapRequests(rng, sizes, 1+rng.IntN(3000), rowBytes, maxIO)
			desc := fmt.Sprintf("trial %d: BlockSize %d, MaxIOBytes %d, CoalesceGap %d, %d requests (rows of %d)", trial, bs, maxIO, gap, len(reqs), rowBytes)
			ref := preadReference(t, paths, reqs)
			// The gap as the Stack's option, and as SubmitBridging's for one call.
			var plain, merged, bridged Stats
			for _, v := range []struct {
				option, call int
				stats        *Stats
			}{{0, 0, &plain}, {gap, 0, &merged}, {0, gap, &bridged}} {
				s, err := Open(fds, Options{Backend: backend, BlockSize: bs, MaxIOBytes: maxIO, QueueDepth: 8, CoalesceGap: v.option})
				if err != nil {
					t.Fatalf("%s: %v", desc, err)
				}
				for i := range reqs {
					clear(reqs[i].Dst)
				}
				err = errors.Join(s.SubmitBridging(reqs, v.call), s.Complete())
				*v.stats = s.Stats()
				s.Close()
				if err != nil {
					t.Fatalf("%s, gap %d (option) %d (call): %v", desc, v.option, v.call, err)
				}
				for i, r := range reqs {
					if !bytes.Equal(r.Dst, ref[i]) {
						t.Fatalf("%s, gap %d (option) %d (call): request %d (file %d, offset %d, length %d) differs from pread", desc, v.option, v.call, i, r.File, r.Offset, r.Length)
					}
				}
			}
			if bridged.Reads != merged.Reads || bridged.BytesRead != merged.BytesRead || bridged.GapBytes != merged.GapBytes {
				t.Fatalf("%s: SubmitBridging made %d reads of %d bytes (gaps %d), the Stack with the gap as its option %d of %d (gaps %d)",
					desc, bridged.Reads, bridged.BytesRead, bridged.GapBytes, merged.Reads, merged.BytesRead, merged.GapBytes)
			}
			switch {
			case plain.GapBytes != 0:
				t.Fatalf("%s: %d gap bytes with CoalesceGap 0", desc, plain.GapBytes)
			case merged.Reads > plain.Reads:
				t.Fatalf("%s: %d reads with the gap, %d without", desc, merged.Reads, plain.Reads)
			case merged.GapBytes > uint64(gap)*(plain.Reads-merged.Reads):
				t.Fatalf("%s: %d gap bytes for %d reads saved", desc, merged.GapBytes, plain.Reads-merged.Reads)
			case merged.BytesRead > merged.Reads*uint64(maxIO):
				t.Fatalf("%s: %d bytes in %d reads: a read longer than MaxIOBytes", desc, merged.BytesRead, merged.Reads)
			case merged.BytesRead > plain.BytesRead+merged.GapBytes:
				t.Fatalf("%s: %d bytes read with the gap, %d without + %d of gaps", desc, merged.BytesRead, plain.BytesRead, merged.GapBytes)
			}
			t.Logf("%s: reads %d -> %d, bytes read %d -> %d (gaps %d)", desc, plain.Reads, merged.Reads, plain.BytesRead, merged.BytesRead, merged.GapBytes)
		}
	})
}

// TestRowReadsAtSmallAlignment: 512-byte rows read at a 512-byte alignment cost 512 bytes each.
func TestRowReadsAtSmallAlignment(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	fds, _, want := rawFiles(t, rng, 1<<20)
	forEachBackend(t, func(t *testing.T, backend Backend) {
		for _, bs := range []int{512, 4096} {
			s := openStack(t, fds, Options{Backend: backend, BlockSize: bs})
			var reqs []Request
			for i := range 64 { // every 16th row: no two share a 4 KiB block
				reqs = append(reqs, req(0, int64(i)*16*512, 512))
			}
			if err := errors.Join(s.Submit(reqs), s.Complete()); err != nil {
				t.Fatal(err)
			}
			checkBytes(t, reqs, want)
			if st := s.Stats(); st.BytesRead != uint64(64*bs) || st.Reads != 64 || st.BlockSize != bs {
				t.Fatalf("BlockSize %d: %d reads of %d bytes in all, stats block size %d; want 64 of %d", bs, st.Reads, st.BytesRead, st.BlockSize, 64*bs)
			}
		}
	})
}

// TestGapMerges: rows 8 KiB apart merge under a gap of 4 KiB into reads of at most MaxIOBytes,
// and the gap bytes are counted.
func TestGapMerges(t *testing.T) {
	fds, want := testFiles(t, 8, 1<<20)
	s := openStack(t, fds, Options{Backend: BackendPread, CoalesceGap: 4096, MaxIOBytes: 64 << 10})
	var reqs []Request
	for i := range 64 { // a 512-byte row every 8 KiB over 512 KiB
		reqs = append(reqs, req(0, int64(i)*8192+100, 512))
	}
	if err := errors.Join(s.Submit(reqs), s.Complete()); err != nil {
		t.Fatal(err)
	}
	checkBytes(t, reqs, want)
	// 64 KiB reads hold 8 rows (7 gaps of 4 KiB and the last row's block): 8 reads.
	if st := s.Stats(); st.Reads != 8 || st.GapBytes != 8*7*4096 || st.BytesRead != 8*(8*4096+7*4096) {
		t.Fatalf("stats %+v; want 8 reads, %d gap bytes, %d bytes read", st, 8*7*4096, 8*(8*4096+7*4096))
	}
	if _, err := Open(fds, Options{CoalesceGap: -1}); err == nil {
		t.Fatal("Open with CoalesceGap -1: no error")
	}
}
