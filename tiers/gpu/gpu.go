// Package gpu is the fastest tier: the hottest feature rows in device memory of one CUDA device,
// with their index both in host memory (for splits on the host) and in device memory (for the
// split kernel, so ids already on the GPU never visit the host when every row they want is in
// a memory tier).
//
// Memory: RowBytes per row of device memory for the arena (the budget), plus the index: 16 bytes
// a row in host memory and the same again in device memory; two pinned bounce buffers of 32 MiB
// while Fill runs; per concurrent host copy, scratch sized to its batch.
package gpu

import (
	"errors"
	"fmt"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/internal/par"
	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/tiers/host"
)

// Tier is the GPU tier. Lookup, the copies, Rows, Bytes and Ranges may run concurrently; Fill and
// Close run alone, after every kernel reading the tier has finished.
type Tier struct {
	host.Index
	dev      int
	rowBytes int64
	capacity int64
	blocks   int
	arena    uintptr        // capacity rows of device memory
	split    cuda.TierIndex // the index in device memory; Rows is the arena
	scratch  chan *scratch
}

var (
	_ tiers.Tier          = (*Tier)(nil)
	_ tiers.DeviceIndexer = (*Tier)(nil)
)

// scratch is what one CopyToHost needs: slots on the device, rows gathered there, and their
// pinned copy.
type scratch struct {
	idx, rows cuda.Mirror
	stream    cuda.Stream
}

// New allocates a GPU tier of capacityRows rows of rowBytes on device dev; kernels run with
// grids of blocks blocks; concurrency host copies may run at once.
func New(dev int, rowBytes, capacityRows int64, blocks, concurrency int) (*Tier, error) {
	if rowBytes <= 0 || capacityRows < 0 {
		return nil, fmt.Errorf("gpu tier: %d rows of %d bytes", capacityRows, rowBytes)
	}
	t := &Tier{dev: dev, rowBytes: rowBytes, capacity: capacityRows, blocks: blocks, scratch: make(chan *scratch, max(1, concurrency))}
	for range cap(t.scratch) {
		t.scratch <- &scratch{}
	}
	if capacityRows > 0 {
		var err error
		if t.arena, err = cuda.Malloc(dev, uint64(capacityRows*rowBytes)); err != nil {
			return nil, fmt.Errorf("gpu tier: %d rows of %d bytes on GPU %d: %w", capacityRows, rowBytes, dev, err)
		}
	}
	return t, nil
}

// Kind is tiers.GPU.
func (t *Tier) Kind() tiers.Kind { return tiers.GPU }

// Capacity is how many rows the tier holds when full.
func (t *Tier) Capacity() int64 { return t.capacity }

// Device is the CUDA device of the tier.
func (t *Tier) Device() int { return t.dev }

// Bytes is the device memory of the arena.
func (t *Tier) Bytes() int64 { return t.capacity * t.rowBytes }

// DeviceIndex is the tier's index and arena as the split kernel reads them (tiers.DeviceIndexer);
// always there, the tier being in device memory (an empty tier has count 0).
func (t *Tier) DeviceIndex() (cuda.TierIndex, bool) { return t.split, true }

var (
	_ tiers.Tier          = (*Tier)(nil)
	_ tiers.DeviceIndexer = (*Tier)(nil)
	_ tiers.Capacitor     = (*Tier)(nil)
)

// fillBounceBytes is the size of each of Fill's two pinned bounce buffers (a variable so tests
// can make fills of a few rows take several).
var fillBounceBytes int64 = 32 << 20

// Fill loads the rows of the first Capacity ids into device memory through two pinned bounce
// buffers, each read from src and copied to the device by its own goroutine (so one is read while
// the other is copied, and the src calls overlap), and the index into device memory (tiers.Tier).
func (t *Tier) Fill(ids []int64, src tiers.Source) error {
	ids = ids[:min(int64(len(ids)), t.capacity)]
	index, err := host.NewIndex(ids)
	if err != nil {
		return fmt.Errorf("gpu tier: %w", err)
	}
	host.FreeIndex(t.dev, t.split)
	t.split = cuda.TierIndex{}
	t.Index = host.Index{}
	if err := t.load(index.IDs(), src); err != nil {
		return fmt.Errorf("gpu tier fill: %w", err)
	}
	split, err := host.UploadIndex(t.dev, &index)
	if err != nil {
		return fmt.Errorf("gpu tier: index to GPU %d: %w", t.dev, err)
	}
	split.Rows = t.arena
	t.Index, t.split = index, split
	return nil
}

// load reads the rows of sorted (row k to arena row k) a bounce buffer at a time, by two
// goroutines, each with its own bounce buffer and stream, taking the next buffer's rows in turn;
// after the first error none takes more.
func (t *Tier) load(sorted []int64, src tiers.Source) error {
	if len(sorted) == 0 {
		return nil // no rows: no bounce buffer, no stream
	}
	rb := t.rowBytes
	chunkRows := max(1, fillBounceBytes/rb)
	chunks := (int64(len(sorted)) + chunkRows - 1) / chunkRows
	return par.InTurn(2, int(chunks), func() (func(int) error, func(), error) {
		bounceAddr, bounce, err := cuda.HostAlloc(t.dev, uint64(min(chunkRows, int64(len(sorted)))*rb))
		if err != nil {
			return nil, nil, err
		}
		stream, err := cuda.NewStream(t.dev)
		if err != nil {
			cuda.HostFree(t.dev, bounceAddr)
			return nil, nil, err
		}
		done := func() {
			cuda.DestroyStream(t.dev, stream)
			cuda.HostFree(t.dev, bounceAddr)
		}
		do := func(c int) error {
			lo := int64(c) * chunkRows
			part := sorted[lo:min(lo+chunkRows, int64(len(sorted)))]
			n := int64(len(part)) * rb
			if err := src(part, bounce[:n]); err != nil {
				return err
			}
			if err := cuda.Memcpy(t.dev, t.arena+uintptr(lo*rb), bounceAddr, uint64(n), stream); err != nil {
				return err
			}
			return cuda.SyncStream(t.dev, stream)
		}
		return do, done, nil
	})
}

// CopyToHost gathers the rows of slots in device memory, copies them to pinned memory and from
// there to rows pos[k] of dst (tiers.Tier).
func (t *Tier) CopyToHost(slots []int64, pos []int64, dst []byte) error {
	n := len(slots)
	if n == 0 {
		return nil
	}
	sc := <-t.scratch
	defer func() { t.scratch <- sc }()
	dev, rb := t.dev, t.rowBytes
	if sc.stream == 0 {
		var err error
		if sc.stream, err = cuda.NewStream(dev); err != nil {
			return fmt.Errorf("gpu tier rows to the host: %w", err)
		}
	}
	need := n * 8
	if err := sc.idx.Ensure(dev, need, need+need/2); err != nil {
		return fmt.Errorf("gpu tier rows to the host: %w", err)
	}
	need = n * int(rb)
	if err := sc.rows.Ensure(dev, need, need+need/2); err != nil {
		return fmt.Errorf("gpu tier rows to the host: %w", err)
	}
	copy(cuda.Int64s(sc.idx.Host, n), slots)
	bytes := uint64(int64(n) * rb)
	err := cuda.Memcpy(dev, sc.idx.Dev, sc.idx.HostAddr, uint64(n*8), sc.stream)
	if err == nil {
		err = cuda.GatherRows(dev, t.arena, uint64(rb), sc.idx.Dev, 0, int64(n), sc.rows.Dev, t.blocks, sc.stream)
	}
	if err == nil {
		err = cuda.Memcpy(dev, sc.rows.HostAddr, sc.rows.Dev, bytes, sc.stream)
	}
	if serr := cuda.SyncStream(dev, sc.stream); err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("gpu tier rows to the host: %w", err)
	}
	for k, i := range pos {
		copy(dst[i*rb:(i+1)*rb], sc.rows.Host[int64(k)*rb:int64(k+1)*rb])
	}
	return nil
}

// EnqueueToDevice queues the gather kernel over the pairs on the device (tiers.Tier).
func (t *Tier) EnqueueToDevice(c tiers.DeviceCopy) error {
	if c.N == 0 {
		return nil
	}
	if c.DevSlots == 0 || c.DevPos == 0 {
		return fmt.Errorf("gpu tier: device copy of %d rows needs its slots and positions on the device", c.N)
	}
	return cuda.GatherRows(t.dev, t.arena, uint64(t.rowBytes), c.DevSlots, c.DevPos, int64(c.N), c.Dst, t.blocks, cuda.Stream(c.Stream))
}

// Close frees the tier's device and pinned memory.
func (t *Tier) Close() error {
	var err error
	close(t.scratch)
	for sc := range t.scratch {
		sc.idx.Free(t.dev)
		sc.rows.Free(t.dev)
		if sc.stream != 0 {
			err = errors.Join(err, cuda.DestroyStream(t.dev, sc.stream))
		}
	}
	host.FreeIndex(t.dev, t.split)
	if t.arena != 0 {
		err = errors.Join(err, cuda.Free(t.dev, t.arena))
	}
	t.arena, t.split, t.Index = 0, cuda.TierIndex{}, host.Index{}
	return err
}
