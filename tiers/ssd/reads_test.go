package ssd

import (
	"bytes"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
)

// TestReadAlignAndGap reads random rows with every combination of read alignment, gap and
// verification, against the rows as written. Under VerifyReads reads stay whole blocks and a
// flipped byte, in a row or in a bridged gap, is still corruption.
func TestReadAlignAndGap(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	m, rows := writeFeatures(t, 3001, 128, 1, rng) // 512-byte rows; the file is no block multiple
	spec := &m.Nodes().Features[0]
	for _, verify := range []bool{false, true} {
		for _, align := range []int{0, -1, 512, 2048} {
			for _, gap := range []int{0, 512 * rng.IntN(20), -1} {
				f, err := OpenFiles(m, spec.Files, Options{Backend: gpuio.BackendPread, VerifyReads: verify, ReadAlign: align, CoalesceGap: gap})
				if verify && align > 0 && align != m.BlockSize {
					if err == nil || !strings.Contains(err.Error(), "verified") {
						t.Fatalf("read alignment %d with verify: %v, want an error", align, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("verify %v, align %d, gap %d: %v", verify, align, gap, err)
				}
				tier := NewTier(spec, 3001, f)
				ids := make([]int64, 500)
				pos := make([]int64, len(ids))
				for i := range ids {
					ids[i], pos[i] = rng.Int64N(3001), int64(i)
				}
				dst := make([]byte, len(ids)*512)
				if err := tier.CopyToHost(ids, pos, dst); err != nil {
					t.Fatal(err)
				}
				for i, id := range ids {
					if !bytes.Equal(dst[i*512:(i+1)*512], rows[id*512:(id+1)*512]) {
						t.Fatalf("verify %v, align %d, gap %d: row %d wrong", verify, align, gap, id)
					}
				}
				st := f.Stats()
				if verify && (st.BlockSize != m.BlockSize || st.BytesRead%uint64(m.BlockSize) != 0 && st.BytesRead != uint64(spec.ContentBytesOfFile(0))) {
					t.Fatalf("verified reads of %d-byte blocks, %d bytes", st.BlockSize, st.BytesRead)
				}
				if !verify && align == 512 && gap == 0 && st.BytesRead > st.BytesRequested+512 {
					t.Fatalf("512-byte alignment: %d bytes read for %d requested", st.BytesRead, st.BytesRequested)
				}
				t.Logf("verify %v, align %d, gap %d (stack %d, %d): %d reads, %d bytes for %d (gaps %d)", verify, align, gap, st.BlockSize, st.CoalesceGap, st.Reads, st.BytesRead, st.BytesRequested, st.GapBytes)
				f.Close()
			}
		}
	}
	// Corrupt the byte after row 10, in the gap between rows 0 and 20 in one block: a verified
	// read bridging that gap fails.
	path := m.Path(spec.Files[0])
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[11*512] ^= 0xff
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFiles(m, spec.Files, Options{Backend: gpuio.BackendPread, VerifyReads: true, CoalesceGap: 8192})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dst := make([]byte, 2*512)
	err = NewTier(spec, 3001, f).CopyToHost([]int64{0, 20}, []int64{0, 1}, dst)
	if !dataset.IsCorrupt(err) {
		t.Fatalf("read over a corrupt gap with verify: %v, want corruption", err)
	}
}

func TestProbeRecommendsAGap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m, _ := writeFeatures(t, 4096, 128, 1, rng)
	fd, size, err := m.OpenFD(stripe(m), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer os.NewFile(uintptr(fd), "").Close()
	p, err := Probe(fd, size, ProbeOptions{QueueDepth: 8, Duration: 20 * time.Millisecond, Align: 512})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Points) != 5 || p.Gap < 0 || p.Gap > 64<<10 || p.Gap%512 != 0 {
		t.Fatalf("probe %+v", p)
	}
	t.Logf("%+v", p)
	if _, err := Probe(fd, size, ProbeOptions{Align: 512, Sizes: []int{1000}}); err == nil {
		t.Fatal("probe with a size no multiple of the alignment: no error")
	}
}
