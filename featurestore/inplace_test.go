package featurestore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
)

// TestInPlaceGathers reads in-place features (rows of 4 B, 100 B, odd sizes and over 4 KiB, at
// a header offset no block multiple, in a file whose last block is partial) through every
// path: SSD reads on each backend, verified or not, at the block size or the smallest
// alignment, host-tier fills, GatherFeature and, where a GPU is, device gathers and GPU-tier
// fills; each against the rows as written (planned epochs' packed reads: planned's
// TestInPlacePlannedEpochs).
func TestInPlaceGathers(t *testing.T) {
	rng := newRand(t)
	gpuErr := cuda.Load()
	for _, sh := range []struct {
		dtype dataset.DType
		dim   int64
	}{{dataset.Float32, 1}, {dataset.Int8, 100}, {dataset.Int16, 51}, {dataset.Float64, 3}, {dataset.Float32, 1100}, {dataset.Uint8, 4099}} {
		count := int64(200 + rng.IntN(900))
		d := writeInPlaceDataset(t, sh.dtype, count, sh.dim, rng)
		rb := d.RowBytes
		ids := append(randomIDs(rng, 300, count), 0, count-1, count-1, count/2)
		all := backends(t)
		if gpuErr == nil { // device gathers whose reads the GPU submits (short at the file's end)
			all = append(all, gpuio.BackendGPUURing)
		}
		for _, backend := range all {
			for _, c := range []struct {
				name string
				opt  Options
			}{
				{"ssd", Options{}},
				{"unverified", Options{UnverifiedReads: true}},
				{"align-min", Options{ReadAlign: -1, UnverifiedReads: true}},
				{"host", Options{HostCacheBytes: count / 3 * (rb + 40)}},
				{"host-verified-sieve", Options{HostCacheBytes: count / 2 * (rb + 40), HostPolicy: HostSieve}},
				{"gpu+host", Options{GPUCacheBytes: count / 4 * rb, HostCacheBytes: count / 3 * (rb + 40)}},
			} {
				name := fmt.Sprintf("%s_x%d/%s/%s", sh.dtype, sh.dim, backend, c.name)
				if (c.opt.GPUCacheBytes > 0 || backend == gpuio.BackendGPUURing) && gpuErr != nil ||
					backend == gpuio.BackendGPUURing && c.name != "ssd" && c.name != "gpu+host" {
					continue
				}
				opt := c.opt
				opt.IOBackend = backend
				opt.UnverifiedReads = opt.UnverifiedReads || backend == gpuio.BackendGPUURing // GPU-submitted reads are not checked
				s, err := Open(d.Dir, opt)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				for pass := range 2 {
					got := make([]byte, int64(len(ids))*rb)
					if err := s.Gather(ids, got); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if !bytes.Equal(got, d.Want(ids)) {
						t.Fatalf("%s pass %d: rows differ from the file's at byte %d", name, pass, firstDiff(got, d.Want(ids)))
					}
				}
				gy := make([]byte, int64(len(ids))*d.YRB)
				if err := s.Session().Gather("", "y", ids, gy); err != nil {
					t.Fatalf("%s: Session.Gather: %v", name, err)
				}
				for i, id := range ids {
					if !bytes.Equal(gy[int64(i)*d.YRB:int64(i+1)*d.YRB], d.YRows[id*d.YRB:(id+1)*d.YRB]) {
						t.Fatalf("%s: GatherFeature y row %d (node %d) differs", name, i, id)
					}
				}
				if gpuErr == nil {
					for _, onDevice := range []bool{false, true} {
						if got := deviceGatherIDs(t, s, ids, onDevice); !bytes.Equal(got, d.Want(ids)) {
							t.Fatalf("%s: device gather (ids on device %v) differs at byte %d", name, onDevice, firstDiff(got, d.Want(ids)))
						}
					}
				}
				st := s.Stats()
				if c.opt.HostCacheBytes > 0 && st.Tier("host").Hits == 0 {
					t.Errorf("%s: the host tier served nothing", name)
				}
				if c.opt.GPUCacheBytes > 0 && st.Tier("gpu").Hits == 0 {
					t.Errorf("%s: the GPU tier served nothing", name)
				}
				if backend == gpuio.BackendGPUURing && (st.IO.GPURing != "active" || st.IO.GPURingReads == 0) {
					t.Errorf("%s: no GPU-submitted reads: %+v", name, st.IO)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if gpuErr != nil {
		t.Logf("device gathers and GPU tiers skipped: %v", gpuErr)
	}
}

// TestInPlaceFileChangedOrCorrupt: a store refuses an in-place file changed since ingest, naming
// it; a flipped byte (size and time kept) is an error under verified reads, never wrong rows.
func TestInPlaceFileChangedOrCorrupt(t *testing.T) {
	rng := newRand(t)
	d := writeInPlaceDataset(t, dataset.Int8, 500, 100, rng)
	st, _ := os.Stat(d.XPath)
	raw, _ := os.ReadFile(d.XPath)
	last := int64(len(raw)) - 1 // in the partial last block: the last row's last byte
	raw[last] ^= 1
	os.WriteFile(d.XPath, raw, 0o644)
	os.Chtimes(d.XPath, st.ModTime(), st.ModTime())
	s, err := Open(d.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Gather([]int64{d.Count - 1}, make([]byte, d.RowBytes))
	if !errors.Is(err, dataset.ErrCorrupt) {
		t.Fatalf("verified gather of a flipped byte: %v, want a corruption error", err)
	}
	s.Close()
	os.Chtimes(d.XPath, st.ModTime(), st.ModTime().Add(2*time.Second))
	if _, err := Open(d.Dir, Options{}); err == nil || !errors.Is(err, dataset.ErrCorrupt) || !strings.Contains(err.Error(), d.XPath) || !strings.Contains(err.Error(), "changed after ingest") {
		t.Fatalf("open with a changed in-place file: %v", err)
	}
}
