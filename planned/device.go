package planned

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"unsafe"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/tiers"
)

// Planned batches served on the GPU. GatherDevice runs the store's device gather over the batch's
// nodes with one change: what the memory tiers miss is served from the batch's packed extent
// instead of the SSD tier. The extent is read whole (one large read) into pinned memory and
// checked against the plan's xxhash64 while the split kernel copies the memory tiers' rows on the
// device; a kernel then scatters the extent's rows into the destination. The packed rows lie in
// the order of their positions in the batch, so the k-th miss by position is row k of the extent:
// no host lookup of any memory tier, no host copy of their rows, no pageable upload.

// packedTier serves a planned batch's misses from its packed extent (tiers.Tier, in place of the
// SSD tier of one device gather). Its Lookup holds every id; EnqueueToDevice takes the misses of
// one chunk of the gather at a time, in order.
type packedTier struct {
	dev, blocks int
	rowBytes    int64
	rows        int64 // the extent's rows
	buf         *packedBuf
	read        sync.WaitGroup // the extent's read and check
	readErr     error
	served      int64          // rows scattered so far (the next chunk's first extent row)
	elsewhere   *elsewhereRows // rows served elsewhere: not in the extent, left to the caller
}

var (
	_ tiers.Tier         = (*packedTier)(nil)
	_ tiers.CallerLeaver = (*packedTier)(nil)
)

// LeftToCaller counts slot 1: rows served elsewhere.
func (t *packedTier) LeftToCaller(slots []int64) int {
	n := 0
	for _, v := range slots {
		if v == 1 {
			n++
		}
	}
	return n
}

func (t *packedTier) Kind() tiers.Kind { return tiers.SSD }
func (t *packedTier) Lookup(ids []int64, slots []int64) int {
	// Every miss is a packed row (slot 0; EnqueueToDevice ranks them by position) or a row served
	// elsewhere (slot 1; EnqueueToDevice skips it).
	for i, v := range ids {
		slots[i] = 0
		if t.elsewhere.has(v) {
			slots[i] = 1
		}
	}
	return len(ids)
}
func (t *packedTier) Fill([]int64, tiers.Source) error {
	return errors.New("planned: a planned batch's packed rows are not refilled")
}
func (t *packedTier) CopyToHost([]int64, []int64, []byte) error {
	return errors.New("planned: a planned batch's packed tier serves device gathers only")
}
func (t *packedTier) Rows() int64                          { return t.rows }
func (t *packedTier) Bytes() int64                         { return 0 }
func (t *packedTier) Ranges(func(first, count int64) bool) {}

// EnqueueToDevice scatters the next len(c.Pos) extent rows to the positions c.Pos (sorted: the
// extent is in position order) of c.Dst, once the extent is read and checked.
func (t *packedTier) EnqueueToDevice(c tiers.DeviceCopy) error {
	if c.N == 0 {
		return nil
	}
	t.read.Wait()
	if t.readErr != nil {
		return t.readErr
	}
	if c.Pos == nil || len(c.Pos) != c.N || len(c.Slots) != c.N {
		return errors.New("planned: a planned batch's device copy needs its slots and positions on the host")
	}
	want := c.Pos
	if t.elsewhere != nil {
		want = make([]int64, 0, c.N)
		for k, slot := range c.Slots {
			if slot == 0 {
				want = append(want, c.Pos[k])
			}
		}
	}
	n := int64(len(want))
	first := t.served
	if first+n > t.rows {
		return fmt.Errorf("planned: the memory tiers miss more than the %d rows the plan packed for this batch", t.rows)
	}
	if n == 0 {
		return nil
	}
	pos := t.buf.pos[first : first+n]
	copy(pos, want)
	slices.Sort(pos)
	t.served += n
	return cuda.GatherRows(t.dev, t.buf.rowsAddr+uintptr(first*t.rowBytes), uint64(t.rowBytes), 0,
		t.buf.posAddr+uintptr(8*first), n, c.Dst, t.blocks, cuda.Stream(c.Stream))
}

// packedBuf is pinned memory, mapped for the device, for one batch's extent and positions.
type packedBuf struct {
	rowsAddr, posAddr uintptr
	rows              []byte
	pos               []int64
}

// packedBufs are the plan's pinned buffers, sized for its largest extent, taken one per device
// gather in flight.
type packedBufs struct {
	mu   sync.Mutex
	dev  int
	free []*packedBuf
	all  []*packedBuf
}

func (b *packedBufs) take(dev int, maxRows, rowBytes int64) (*packedBuf, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.all) > 0 && b.dev != dev {
		return nil, fmt.Errorf("planned: planned device gathers on GPU %d, earlier ones on GPU %d", dev, b.dev)
	}
	b.dev = dev
	if n := len(b.free); n > 0 {
		p := b.free[n-1]
		b.free = b.free[:n-1]
		return p, nil
	}
	rows := max(1, maxRows)
	ra, rv, err := cuda.HostAlloc(dev, uint64(rows*rowBytes))
	if err != nil {
		return nil, err
	}
	pa, pv, err := cuda.HostAlloc(dev, uint64(8*rows))
	if err != nil {
		cuda.HostFree(dev, ra)
		return nil, err
	}
	p := &packedBuf{rowsAddr: ra, posAddr: pa, rows: rv, pos: unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(pv))), rows)}
	b.all = append(b.all, p)
	return p, nil
}

func (b *packedBufs) put(p *packedBuf) {
	b.mu.Lock()
	b.free = append(b.free, p)
	b.mu.Unlock()
}

// close frees every buffer; none may be in use.
func (b *packedBufs) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.all {
		cuda.HostFree(b.dev, p.rowsAddr)
		cuda.HostFree(b.dev, p.posAddr)
	}
	b.all, b.free = nil, nil
}

// GatherDevice is Gather into device memory of the store's GPU: dst holds len(nodes) rows
// of ntype's RowBytesOf ("" for the only type), ordered on stream (a cudaStream_t, 0 for the
// legacy default stream). The rows the memory tiers hold are copied on the device by the split
// kernel; the rest come from the batch's packed extent, one read into pinned memory checked
// against the plan's checksum, scattered by a kernel. The call returns once the GPU is done with
// the pinned memory (the rows are in place for later work on stream). nodes must be the batch's
// sampled nodes of ntype, as the plan drew them (checked against its hash). Rows served
// elsewhere (EpochOptions.Elsewhere) are left to the caller unless a memory tier holds them.
func (p *Epochs) GatherDevice(e, b int, ntype string, nodes []int64, dst uintptr, stream uintptr) (BatchIO, error) {
	var io BatchIO
	done, pe, t, err := p.batchOfType(e, b, ntype)
	if err != nil {
		return io, err
	}
	defer done()
	if err := p.checkNodes(e, b, pe, t, nodes); err != nil {
		return io, err
	}
	s := p.src.stacks[t]
	dev, blocks, err := s.Internals().StartGPU()
	if err != nil {
		return io, err
	}
	ext := p.extent(pe, b, t)
	rb := s.RowBytes()
	path := filepath.Join(p.o.Dir, p.idx.Epochs[pe].File)
	pool := &p.device()[t]
	buf, err := pool.take(dev, p.maxRows[t], rb)
	if err != nil {
		return io, fmt.Errorf("planned: planned device gather: %w", err)
	}
	defer pool.put(buf)
	packed := &packedTier{dev: dev, blocks: blocks, rowBytes: rb, rows: ext.Rows, buf: buf}
	if t < len(p.o.elsewhere) {
		packed.elsewhere = p.o.elsewhere[t]
	}
	if ext.Rows > 0 {
		packed.read.Go(func() {
			data := buf.rows[:ext.Rows*rb]
			if io, packed.readErr = p.readExtent(pe, ext, data); packed.readErr == nil {
				packed.readErr = p.checkExtent(e, b, pe, ext, data)
			}
		})
	}
	stale := func(gen uint64) error {
		if gen != p.tierGen[t] {
			return p.refilled(e, b)
		}
		return nil
	}
	err = s.Internals().GatherDeviceVia(nodes, dst, stream, packed, stale)
	packed.read.Wait() // the read never outlives the call, error or not
	if err == nil {
		err = packed.readErr
	}
	if err == nil && packed.served != ext.Rows {
		err = p.missMismatch(e, b, packed.served, ext.Rows)
	}
	// The scatter kernel reads the pinned buffer: it goes back to the pool only once the GPU is
	// done with it (and the caller sees an error only after).
	if serr := cuda.SyncStream(dev, cuda.Stream(stream)); err == nil && serr != nil {
		err = wrapDevice(serr)
	}
	if err != nil {
		return io, fmt.Errorf("planned: epoch %d batch %d of plan %s (%s): %w", e, b, p.o.Dir, path, err)
	}
	return p.served(io, ext), nil
}

// wrapDevice wraps an error of a device gather as the store's device gathers do.
func wrapDevice(err error) error {
	if err != nil {
		return fmt.Errorf("planned: device gather: %w", err)
	}
	return nil
}

// device sets up, once, the per-type pools of pinned buffers and the most rows a batch of each
// packed type packs over every planned epoch (maxRows), and returns the pools.
func (p *Epochs) device() []packedBufs {
	p.deviceOnce.Do(func() {
		p.pinned = make([]packedBufs, len(p.src.stacks))
		p.maxRows = make([]int64, len(p.src.stacks))
		for pe := range p.idx.Epochs {
			for b := range p.idx.Batches {
				for k := range p.maxRows {
					p.maxRows[k] = max(p.maxRows[k], p.extent(pe, b, k).Rows)
				}
			}
		}
	})
	return p.pinned
}
