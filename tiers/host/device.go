package host

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/tiers"
)

// Rows narrower than PackBelow bytes reach the device by packing: CPU workers copy them into
// pinned chunks of packChunkBytes, DMA moves each chunk, and a kernel scatters it in device
// memory. PCIe then carries full-width transfers instead of one small read per row, which a
// kernel reading the pinned tier row by row cannot fill. Wider rows of the static tier are read
// by a kernel straight from the pinned arena (UVA).
const (
	PackBelow      = 256
	packChunkBytes = 8 << 20
)

// copyRows copies row slots[k] of arena to row pos[k] of dst for every k, with up to workers
// goroutines when the batch is large enough to pay for them.
func copyRows(arena []byte, rb int64, slots, pos []int64, dst []byte, workers int) {
	copyRange := func(lo, hi int) {
		for k := lo; k < hi; k++ {
			s, i := slots[k], pos[k]
			copy(dst[i*rb:(i+1)*rb], arena[s*rb:(s+1)*rb])
		}
	}
	parallel(len(slots), int64(len(slots))*rb, workers, copyRange)
}

// parallel runs fn over [0, n) in up to workers contiguous parts when bytes is worth it.
func parallel(n int, bytes int64, workers int, fn func(lo, hi int)) {
	if workers < 2 || bytes < 1<<20 || n < 2 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		wg.Go(func() { fn(lo, min(lo+chunk, n)) })
	}
	wg.Wait()
}

func defaultWorkers(n int) int {
	if n > 0 {
		return n
	}
	return runtime.GOMAXPROCS(0)
}

// devicePath is what a host tier holds once attached to a CUDA device: a pool of packers, and
// for the static tier the arena pinned and mapped and a device copy of its index.
type devicePath struct {
	dev     int
	blocks  int
	packers chan *packer

	base, devAddr uintptr        // the arena as registered, and its device address (0: none)
	index         cuda.TierIndex // the index in device memory (UploadIndex); Rows unset
}

// packer is the scratch of one packed device copy: two pinned/device chunk pairs used in turn.
type packer struct {
	buf  [2]cuda.Mirror
	done [2]cuda.Event
	used [2]bool
}

func newDevicePath(dev, concurrency int) (*devicePath, error) {
	info, err := cuda.Info(dev)
	if err != nil {
		return nil, fmt.Errorf("host tier: %w", err)
	}
	d := &devicePath{dev: dev, blocks: info.SMs * 16, packers: make(chan *packer, max(1, concurrency))}
	for range cap(d.packers) {
		d.packers <- &packer{}
	}
	return d, nil
}

// attach sets *d to a new device path unless it has one; fresh says it made one.
func attach(d **devicePath, dev, concurrency int) (fresh bool, err error) {
	if *d != nil {
		return false, nil
	}
	if *d, err = newDevicePath(dev, concurrency); err != nil {
		return false, err
	}
	return true, nil
}

// pack delivers rows rowAt(c.Slots[k]) to rows c.Pos[k] of c.Dst, chunk by chunk on c.Stream.
// It needs the slots in host memory and the positions on the device.
func (d *devicePath) pack(c tiers.DeviceCopy, rb int64, arena []byte, workers int) error {
	if len(c.Slots) < c.N || c.DevPos == 0 {
		return fmt.Errorf("host tier: packed device copy of %d rows needs slots in host memory and positions on the device", c.N)
	}
	p := <-d.packers
	defer func() { d.packers <- p }()
	dev, st := d.dev, cuda.Stream(c.Stream)
	for b := range p.buf {
		if err := p.buf[b].Ensure(dev, packChunkBytes, packChunkBytes); err != nil {
			return err
		}
		if p.done[b] == 0 {
			var err error
			if p.done[b], err = cuda.NewEvent(dev); err != nil {
				return err
			}
		}
	}
	chunkRows := max(1, int(packChunkBytes/rb))
	for ch, k0 := 0, 0; k0 < c.N; ch, k0 = ch+1, k0+chunkRows {
		k1 := min(k0+chunkRows, c.N)
		b := ch % 2
		if p.used[b] {
			if err := cuda.SyncEvent(dev, p.done[b]); err != nil {
				return err
			}
		}
		buf := p.buf[b].Host
		n := k1 - k0
		parallel(n, int64(n)*rb, workers, func(lo, hi int) {
			for j := lo; j < hi; j++ {
				src := c.Slots[k0+j] * rb
				copy(buf[int64(j)*rb:int64(j+1)*rb], arena[src:src+rb])
			}
		})
		if err := cuda.Memcpy(dev, p.buf[b].Dev, p.buf[b].HostAddr, uint64(int64(n)*rb), st); err != nil {
			return err
		}
		if err := cuda.GatherRows(dev, p.buf[b].Dev, uint64(rb), 0, c.DevPos+uintptr(k0*8), int64(n), c.Dst, d.blocks, st); err != nil {
			return err
		}
		if err := cuda.Record(dev, p.done[b], st); err != nil {
			return err
		}
		p.used[b] = true
	}
	return nil
}

// register pins arena for the device (no-op when empty).
func (d *devicePath) register(arena []byte) error {
	if len(arena) == 0 {
		return nil
	}
	base := uintptr(unsafe.Pointer(&arena[0]))
	devAddr, err := cuda.HostRegister(d.dev, base, uint64(len(arena)))
	if err != nil {
		return fmt.Errorf("host tier: pin %d bytes for GPU %d: %w", len(arena), d.dev, err)
	}
	d.base, d.devAddr = base, devAddr
	return nil
}

func (d *devicePath) unregister() error {
	if d.base == 0 {
		return nil
	}
	base := d.base
	d.base, d.devAddr = 0, 0
	if err := cuda.HostUnregister(d.dev, base); err != nil {
		return fmt.Errorf("host tier: unpin: %w", err)
	}
	return nil
}

// close waits for the packers' last copies and frees everything.
func (d *devicePath) close() error {
	err := d.unregister()
	FreeIndex(d.dev, d.index)
	d.index = cuda.TierIndex{}
	close(d.packers)
	for p := range d.packers {
		for b := range p.buf {
			if p.used[b] {
				err = errors.Join(err, cuda.SyncEvent(d.dev, p.done[b]))
			}
			p.buf[b].Free(d.dev)
			if p.done[b] != 0 {
				cuda.DestroyEvent(d.dev, p.done[b])
			}
		}
	}
	return err
}

// UploadIndex copies x to device memory of dev, as split kernels read it (cuda.TierIndex; Rows
// is the caller's to set): 8 bytes a row and 4 a table entry. Free it with FreeIndex.
func UploadIndex(dev int, x *Index) (cuda.TierIndex, error) {
	t := cuda.TierIndex{Mask: x.mask, Count: int64(len(x.ids))}
	if t.Count == 0 {
		return t, nil
	}
	var err error
	if t.IDs, err = upload(dev, dataset.BytesOf(x.ids)); err != nil {
		return cuda.TierIndex{}, err
	}
	if t.Table, err = upload(dev, dataset.BytesOf(x.table)); err != nil {
		cuda.Free(dev, t.IDs)
		return cuda.TierIndex{}, err
	}
	return t, nil
}

// FreeIndex frees what UploadIndex allocated (nothing for an empty index).
func FreeIndex(dev int, t cuda.TierIndex) {
	if t.IDs != 0 {
		cuda.Free(dev, t.IDs)
	}
	if t.Table != 0 {
		cuda.Free(dev, t.Table)
	}
}

// upload copies b to new device memory through a pinned bounce buffer and waits for it.
func upload(dev int, b []byte) (uintptr, error) {
	const chunk = 32 << 20
	ptr, err := cuda.Malloc(dev, uint64(len(b)))
	if err != nil {
		return 0, err
	}
	bounceAddr, bounce, err := cuda.HostAlloc(dev, uint64(min(chunk, len(b))))
	if err != nil {
		cuda.Free(dev, ptr)
		return 0, err
	}
	defer cuda.HostFree(dev, bounceAddr)
	for lo := 0; lo < len(b); lo += chunk {
		n := copy(bounce, b[lo:min(lo+chunk, len(b))])
		err := cuda.Memcpy(dev, ptr+uintptr(lo), bounceAddr, uint64(n), 0)
		if err == nil {
			err = cuda.SyncStream(dev, 0)
		}
		if err != nil {
			cuda.Free(dev, ptr)
			return 0, err
		}
	}
	return ptr, nil
}

// DeviceIndex is the tier's index and rows as the split kernel reads them in place
// (tiers.DeviceIndexer): false when the tier is not attached to a device or its rows are
// narrower than PackBelow (those are packed for DMA, not read row by row over PCIe).
func (c *Cache) DeviceIndex() (cuda.TierIndex, bool) {
	d := c.dev
	if d == nil || c.rowBytes < PackBelow {
		return cuda.TierIndex{}, false
	}
	t := d.index
	t.Rows = d.devAddr
	return t, true
}
