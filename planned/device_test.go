package planned

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/tiers"
)

// TestPlannedDeviceGatherMatchesHost serves every planned batch with GatherDevice and compares its
// rows with the host Gather of the same batch and with the dataset, over GPU and host tiers of
// random sizes (none, some, every row), and checks that a damaged packed file is an error.
func TestPlannedDeviceGatherMatchesHost(t *testing.T) {
	requireGPU(t)
	if !gpuPresent() {
		t.Skip("skipping GPU test: no GPU")
	}
	rng := newRand(t)
	d := writeSplitDataset(t, 4000, 24, 2, 6, rng)
	rb := d.RowBytes
	for _, c := range []struct {
		name      string
		gpu, host int64
	}{{"ssd", 0, 0}, {"gpu", d.Count / 5, 0}, {"gpu+host", d.Count / 10, d.Count / 4}, {"host", 0, d.Count / 3}, {"all", d.Count, 0}} {
		s, err := featurestore.Open(d.Dir, featurestore.Options{GPUCacheBytes: c.gpu * rb, HostCacheBytes: c.host * (rb + 16)})
		if err != nil {
			t.Fatal(err)
		}
		o := epochOpts(t, d, 2)
		o.Sample.Seed, o.ShuffleSeed = rng.Uint64(), rng.Uint64()
		p, _, err := OpenEpochs(s.Session(), EpochOptions{Dir: o.Dir, Seeds: o.Seeds, BatchSize: o.BatchSize, Sample: o.Sample, ShuffleSeed: o.ShuffleSeed, Epochs: o.Epochs, Replan: true})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var packed int64
		for e := range 3 {
			for b := range p.BatchesPerEpoch() {
				host, got, io := plannedOnDevice(t, s, p, e, b)
				nodes := host.Sample.Nodes
				if !bytes.Equal(got, host.Rows) || !bytes.Equal(got, d.Want(nodes)) {
					t.Fatalf("%s: epoch %d batch %d: the device gather's %d rows differ from the host's (first difference at byte %d)", c.name, e, b, len(nodes), firstDiff(got, host.Rows))
				}
				if io.Rows != host.IO.Rows {
					t.Fatalf("%s: epoch %d batch %d: %d packed rows on the device, %d on the host", c.name, e, b, io.Rows, host.IO.Rows)
				}
				packed += io.Rows
			}
		}
		if (c.name == "all") != (packed == 0) {
			t.Fatalf("%s: %d packed rows served", c.name, packed)
		}
		// Nodes that are not the batch's are refused before anything is read.
		if p.BatchesPerEpoch() > 1 {
			other, _ := oneLoad(p, 0, 1)
			_, err := p.GatherDevice(0, 0, "", other.Sample.Nodes, 1, 0)
			var stale *StalePlanError
			if !errors.As(err, &stale) {
				t.Fatalf("%s: device gather of another batch's nodes: %v, want a StalePlanError", c.name, err)
			}
		}
		p.Close()
		s.Close()
		fmt.Printf("%s: %d packed rows served on the device\n", c.name, packed)
	}
}

// TestPlannedDeviceGatherElsewhere serves planned batches with rows served elsewhere on the GPU:
// such a row is left as it was (the 0xA5 fill) unless a memory tier holds it (then its true row),
// every other row is the dataset's, and the packed rows are the host gather's.
func TestPlannedDeviceGatherElsewhere(t *testing.T) {
	requireGPU(t)
	if !gpuPresent() {
		t.Skip("skipping GPU test: no GPU")
	}
	rng := newRand(t)
	d := writeSplitDataset(t, 4000, 24, 2, 6, rng)
	rb := d.RowBytes
	var away []int64
	for v := range d.Count {
		if rng.IntN(3) == 0 {
			away = append(away, v)
		}
	}
	fill := bytes.Repeat([]byte{0xA5}, int(rb))
	for _, c := range []struct {
		name      string
		gpu, host int64
	}{{"ssd", 0, 0}, {"gpu+host", d.Count / 10, d.Count / 4}, {"host", 0, d.Count / 3}} {
		s, err := featurestore.Open(d.Dir, featurestore.Options{GPUCacheBytes: c.gpu * rb, HostCacheBytes: c.host * (rb + 16)})
		if err != nil {
			t.Fatal(err)
		}
		o := epochOpts(t, d, 2)
		o.Sample.Seed, o.ShuffleSeed, o.Replan = rng.Uint64(), rng.Uint64(), true
		o.Elsewhere = map[string][]int64{"": away}
		p, _, err := OpenEpochs(s.Session(), o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for e := range 2 {
			for b := range p.BatchesPerEpoch() {
				host, got, io := plannedOnDevice(t, s, p, e, b)
				nodes := host.Sample.Nodes
				for i, v := range nodes {
					want := d.Want([]int64{v})
					if _, ok := slices.BinarySearch(away, v); ok && s.TierOf(v) == tiers.SSD {
						want = fill
					}
					if row := got[int64(i)*rb : int64(i+1)*rb]; !bytes.Equal(row, want) {
						t.Fatalf("%s: epoch %d batch %d: node %d at position %d: device row differs", c.name, e, b, v, i)
					}
				}
				if io.Rows != host.IO.Rows {
					t.Fatalf("%s: epoch %d batch %d: %d packed rows on the device, %d on the host", c.name, e, b, io.Rows, host.IO.Rows)
				}
			}
		}
		p.Close()
		s.Close()
	}
}

// plannedOnDevice is batch b of epoch e of p as the host serves it (Load) and its rows as
// GatherDevice writes them into device memory (copied back), with what the device gather read.
func plannedOnDevice(t *testing.T, s *featurestore.Store, p *Epochs, e, b int) (*oneBatch, []byte, BatchIO) {
	t.Helper()
	host, err := oneLoad(p, e, b)
	if err != nil {
		t.Fatal(err)
	}
	nodes := host.Sample.Nodes
	var io BatchIO
	before := ssdHits(s)
	got := deviceRows(t, s, len(nodes), func(dst, stream uintptr) (err error) {
		io, err = p.GatherDevice(e, b, "", nodes, dst, stream)
		return err
	})
	// The SSD tier's counter counts the packed rows the device gather served, never the rows it
	// left to the caller (served elsewhere).
	if hits := ssdHits(s) - before; hits != uint64(io.Rows) {
		t.Fatalf("epoch %d batch %d: the SSD tier counted %d rows of the device gather, it served %d packed rows", e, b, hits, io.Rows)
	}
	return host, got, io
}

// ssdHits is the SSD tier's served-rows counter of s.
func ssdHits(s *featurestore.Store) uint64 {
	for _, ts := range s.Stats().Tiers {
		if ts.Tier == tiers.SSD {
			return ts.Hits
		}
	}
	return 0
}
