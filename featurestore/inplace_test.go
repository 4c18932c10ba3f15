package featurestore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
)

// writeNpyPadded writes a C-order .npy of rows (count x rowBytes of descr, shape) whose header
// is padded by pad extra spaces, so the data starts at an arbitrary offset; it returns that
// offset.
func writeNpyPadded(t *testing.T, path, descr string, shape string, rows []byte, pad int) int64 {
	t.Helper()
	header := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape) + strings.Repeat(" ", pad) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(header)))
	b.WriteString(header)
	off := int64(b.Len())
	b.Write(rows)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return off
}

// inPlaceData is a test dataset whose feature x (d.rows) and second feature y (yRows) are .npy
// files read in place, outside the dataset directory.
type inPlaceData struct {
	*testData
	xPath string
	yRows []byte
	yRB   int64
}

// writeInPlaceDataset writes writeDatasetOf's dataset, then commits it again with x and a
// second feature y (float32 x 3) read in place from .npy files with random header lengths.
func writeInPlaceDataset(t *testing.T, dtype dataset.DType, count, dim int64, rng *rand.Rand) *inPlaceData {
	t.Helper()
	d := writeDatasetOf(t, dtype, count, dim, 1, 6, true, rng)
	in := t.TempDir()
	descr := map[dataset.DType]string{dataset.Float32: "<f4", dataset.Float16: "<f2", dataset.Float64: "<f8", dataset.Int8: "|i1",
		dataset.Uint8: "|u1", dataset.Int16: "<i2", dataset.Int32: "<i4", dataset.Int64: "<i8"}[dtype]
	p := &inPlaceData{testData: d, xPath: filepath.Join(in, "x.npy"), yRB: 12}
	xOff := writeNpyPadded(t, p.xPath, descr, fmt.Sprintf("(%d, %d)", count, dim), d.Rows, rng.IntN(200))
	p.yRows = make([]byte, count*p.yRB)
	for i := range p.yRows {
		p.yRows[i] = byte(rng.Uint32())
	}
	yPath := filepath.Join(in, "y.npy")
	yOff := writeNpyPadded(t, yPath, "<f4", fmt.Sprintf("(%d, 3)", count), p.yRows, rng.IntN(200))
	m, err := dataset.Load(d.Dir)
	if err != nil {
		t.Fatal(err)
	}
	x, err := dataset.NewInPlaceFeatureSpec("x", dtype, dim, count, p.xPath, xOff, m.BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	y, err := dataset.NewInPlaceFeatureSpec("y", dataset.Float32, 3, count, yPath, yOff, m.BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	old := m.Nodes().Features[0].Files[0]
	m.NodeTypes[0].Features = []dataset.FeatureSpec{x, y}
	var files []string
	for _, f := range m.Files {
		if f.Path != old {
			files = append(files, f.Path)
		}
	}
	os.Remove(m.Path(old))
	os.Remove(m.Path(old) + dataset.ChecksumSuffix)
	if err := dataset.Commit(m, append(files, p.xPath, yPath), "test-in-place", nil); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestInPlaceGathers reads in-place features (rows of 4 B, 100 B, odd sizes and over 4 KiB, at
// a header offset no block multiple, in a file whose last block is partial) through every
// path: SSD reads on each backend, verified or not, at the block size or the smallest
// alignment, host-tier fills, GatherFeature, planned epochs' packed reads and, where a GPU is,
// device gathers and GPU-tier fills; each against the rows as written.
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
				gy := make([]byte, int64(len(ids))*d.yRB)
				if err := s.GatherFeature("y", ids, gy); err != nil {
					t.Fatalf("%s: GatherFeature: %v", name, err)
				}
				for i, id := range ids {
					if !bytes.Equal(gy[int64(i)*d.yRB:int64(i+1)*d.yRB], d.yRows[id*d.yRB:(id+1)*d.yRB]) {
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
				if c.name == "host" { // planned epochs pack rows read from the in-place file
					o := epochOpts(t, d.testData, 1)
					if _, err := s.PlanEpochs(o); err != nil {
						t.Fatalf("%s: PlanEpochs: %v", name, err)
					}
					p, _, err := s.OpenEpochs(o)
					if err != nil {
						t.Fatalf("%s: OpenEpochs: %v", name, err)
					}
					for b := range BatchesPerEpoch(len(d.Train), o.BatchSize, o.DropLast) {
						got, err := p.Load(0, b)
						if err != nil {
							t.Fatalf("%s: epoch batch %d: %v", name, b, err)
						}
						if !bytes.Equal(got.Rows, d.Want(got.Sample.Nodes)) {
							t.Fatalf("%s: planned batch %d: rows differ", name, b)
						}
					}
					p.Close()
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
	st, _ := os.Stat(d.xPath)
	raw, _ := os.ReadFile(d.xPath)
	last := int64(len(raw)) - 1 // in the partial last block: the last row's last byte
	raw[last] ^= 1
	os.WriteFile(d.xPath, raw, 0o644)
	os.Chtimes(d.xPath, st.ModTime(), st.ModTime())
	s, err := Open(d.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Gather([]int64{d.Count - 1}, make([]byte, d.RowBytes))
	if !errors.Is(err, dataset.ErrCorrupt) {
		t.Fatalf("verified gather of a flipped byte: %v, want a corruption error", err)
	}
	s.Close()
	os.Chtimes(d.xPath, st.ModTime(), st.ModTime().Add(2*time.Second))
	if _, err := Open(d.Dir, Options{}); err == nil || !errors.Is(err, dataset.ErrCorrupt) || !strings.Contains(err.Error(), d.xPath) || !strings.Contains(err.Error(), "changed after ingest") {
		t.Fatalf("open with a changed in-place file: %v", err)
	}
}
