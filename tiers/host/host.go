// Package host is the host-memory tier: a fixed set of feature rows in one mmap'ed arena (so it
// can be pinned and registered for DMA by the GPU path) and an open-addressing index from node id
// to slot. Contents are static between Fill calls.
//
// Memory: RowBytes per row for the arena plus 16 bytes per row for the index (8 for the sorted id
// list, 8 for the hash table at load factor 1/2); BytesPerRow says it, and CapacityRows turns a
// byte budget into rows.
package host

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/tiers"
)

// IndexBytesPerRow is the index overhead per cached row.
const IndexBytesPerRow = 16

// Cache is the static host tier: what Fill put there stays until the next Fill. Lookup, Row,
// Ranges and the copies may run concurrently; Fill, AttachDevice and Close may not run with
// anything else.
type Cache struct {
	Index
	rowBytes int64
	arena    []byte // mmap'ed, len(ids)*rowBytes
	workers  int
	dev      *devicePath // nil until AttachDevice
	shared   *sharedFile // the file in shared memory the index and arena live in (FillShared, MapShared); nil: private
}

// Index maps a fixed set of node ids to slots: the slot of an id is its rank among them. It is
// the lookup structure of the memory tiers (8 bytes per id plus a hash table at load factor 1/2).
// Its methods may run concurrently.
type Index struct {
	ids   []int64 // sorted node ids held; slot of ids[i] is i
	table []int32 // open addressing: index into ids, -1 empty
	mask  uint64
}

// NewIndex indexes ids (any order, no duplicates, at most math.MaxInt32/2 of them).
func NewIndex(ids []int64) (Index, error) {
	if int64(len(ids)) > math.MaxInt32/2 {
		return Index{}, fmt.Errorf("tier index: %d rows is more than one tier holds (%d)", len(ids), math.MaxInt32/2)
	}
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return Index{}, fmt.Errorf("tier index: node %d listed twice for the cache", sorted[i])
		}
	}
	size := tableSize(len(sorted))
	table := make([]int32, size)
	for i := range table {
		table[i] = -1
	}
	mask := size - 1
	for i, id := range sorted {
		h := hash(id) & mask
		for table[h] >= 0 {
			h = (h + 1) & mask
		}
		table[h] = int32(i)
	}
	return Index{ids: sorted, table: table, mask: mask}, nil
}

// tableSize is the hash table's length for n ids: a power of two, at least 16 and 2n.
func tableSize(n int) uint64 {
	size := uint64(16)
	for size < 2*uint64(n) {
		size *= 2
	}
	return size
}

// IDs are the ids held, ascending; slot i holds IDs()[i]. Callers must not modify it.
func (x *Index) IDs() []int64 { return x.ids }

// IndexBytes is the memory the index takes.
func (x *Index) IndexBytes() int64 { return 8*int64(len(x.ids)) + 4*int64(len(x.table)) }

var (
	_ tiers.Tier           = (*Cache)(nil)
	_ tiers.DeviceAttacher = (*Cache)(nil)
)

// New returns an empty host tier for rows of rowBytes bytes.
func New(rowBytes int64) *Cache { return &Cache{rowBytes: rowBytes} }

var (
	_ tiers.Tier           = (*Cache)(nil)
	_ tiers.DeviceAttacher = (*Cache)(nil)
	_ tiers.DeviceIndexer  = (*Cache)(nil)
	_ tiers.Sharer         = (*Cache)(nil)
)

// BytesPerRow is the host memory one cached row costs.
func BytesPerRow(rowBytes int64) int64 { return rowBytes + IndexBytesPerRow }

// CapacityRows is how many rows of rowBytes a budget of budget bytes holds.
func CapacityRows(budget, rowBytes int64) int64 {
	if budget <= 0 {
		return 0
	}
	return min(budget/BytesPerRow(rowBytes), math.MaxInt32/2)
}

// SetWorkers sets how many goroutines copy rows of large batches (0: GOMAXPROCS).
func (c *Cache) SetWorkers(n int) { c.workers = n }

// AttachDevice pins the arena for CUDA device dev (now and after every Fill), copies the index to
// device memory for split kernels, and prepares concurrency packers for device copies.
func (c *Cache) AttachDevice(dev, concurrency int) error {
	if fresh, err := attach(&c.dev, dev, concurrency); !fresh || err != nil {
		return err
	}
	return c.publish()
}

// publish pins the arena and uploads the index (attached tiers only).
func (c *Cache) publish() error {
	if c.dev == nil {
		return nil
	}
	if err := c.shared.pinnable(c.arena); err != nil {
		return err
	}
	if err := c.dev.register(c.arena); err != nil {
		return err
	}
	var err error
	if c.dev.index, err = UploadIndex(c.dev.dev, &c.Index); err != nil {
		return fmt.Errorf("host tier: index to GPU %d: %w", c.dev.dev, err)
	}
	return nil
}

// unpublish undoes publish.
func (c *Cache) unpublish() error {
	if c.dev == nil {
		return nil
	}
	FreeIndex(c.dev.dev, c.dev.index)
	c.dev.index = cuda.TierIndex{}
	return c.dev.unregister()
}

// Fill replaces the tier's contents with the rows of ids (any order, no duplicates): it maps a new
// arena and calls load with the ids sorted and the arena to fill, row i of arena for ids[i]. No
// kernel of an earlier device copy may still read the tier.
func (c *Cache) Fill(ids []int64, load tiers.Source) error {
	index, err := NewIndex(ids)
	if err != nil {
		return fmt.Errorf("host tier: %w", err)
	}
	sorted := index.ids
	var arena []byte
	if n := int64(len(sorted)) * c.rowBytes; n > 0 {
		var err error
		arena, err = unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return fmt.Errorf("host tier: map %d bytes for %d rows: %w", n, len(sorted), err)
		}
		if err := load(sorted, arena); err != nil {
			unix.Munmap(arena)
			return err
		}
	}
	err = c.unpublish()
	c.release()
	c.Index, c.arena = index, arena
	return errors.Join(err, c.publish())
}

// CopyToHost copies row slots[k] to row pos[k] of dst (tiers.Tier).
func (c *Cache) CopyToHost(slots []int64, pos []int64, dst []byte) error {
	copyRows(c.arena, c.rowBytes, slots, pos, dst, defaultWorkers(c.workers))
	return nil
}

// EnqueueToDevice queues the copies of dc (tiers.Tier): rows of PackBelow bytes or more are read
// by a kernel from the pinned arena (positions and slots on the device), narrower ones packed
// (slots in host memory, positions on the device).
func (c *Cache) EnqueueToDevice(dc tiers.DeviceCopy) error {
	if dc.N == 0 {
		return nil
	}
	d := c.dev
	if d == nil {
		return errors.New("host tier: device copy before AttachDevice")
	}
	if c.rowBytes < PackBelow || dc.DevSlots == 0 {
		return d.pack(dc, c.rowBytes, c.arena, defaultWorkers(c.workers))
	}
	return cuda.GatherRows(d.dev, d.devAddr, uint64(c.rowBytes), dc.DevSlots, dc.DevPos, int64(dc.N), dc.Dst, d.blocks, cuda.Stream(dc.Stream))
}

func hash(id int64) uint64 {
	x := uint64(id)
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return x
}

var (
	_ tiers.Tier           = (*Cache)(nil)
	_ tiers.DeviceAttacher = (*Cache)(nil)
	_ tiers.DeviceIndexer  = (*Cache)(nil)
)

// Kind is tiers.Host.
func (c *Cache) Kind() tiers.Kind { return tiers.Host }

// Slot returns the slot of id, or -1.
func (x *Index) Slot(id int64) int64 {
	if len(x.ids) == 0 {
		return -1
	}
	return int64(probe(x.table, x.ids, x.mask, id))
}

// probe is the slot of id in table, an open-addressing (linear probing) table of slots of ids
// (-1 empty) of mask+1 entries, or -1.
func probe(table []int32, ids []int64, mask uint64, id int64) int32 {
	for h := hash(id) & mask; ; h = (h + 1) & mask {
		s := table[h]
		if s < 0 {
			return -1
		}
		if ids[s] == id {
			return s
		}
	}
}

// Lookup sets slots[i] to the slot of ids[i] or -1 and returns the number of hits (tiers.Tier).
func (x *Index) Lookup(ids []int64, slots []int64) int {
	hits := 0
	for i, id := range ids {
		slots[i] = x.Slot(id)
		if slots[i] >= 0 {
			hits++
		}
	}
	return hits
}

// Row is the bytes of the row in slot.
func (c *Cache) Row(slot int64) []byte { return c.arena[slot*c.rowBytes : (slot+1)*c.rowBytes] }

// Arena is the memory all rows live in (for pinning by the GPU path).
func (c *Cache) Arena() []byte { return c.arena }

// Rows is the number of ids held (tiers.Tier).
func (x *Index) Rows() int64 { return int64(len(x.ids)) }

// Bytes implements tiers.Tier.
func (c *Cache) Bytes() int64 { return int64(len(c.arena)) + c.IndexBytes() }

// Ranges calls fn with each maximal run of consecutive ids held, ascending (tiers.Tier).
func (x *Index) Ranges(fn func(first, count int64) bool) {
	for i := 0; i < len(x.ids); {
		j := i + 1
		for j < len(x.ids) && x.ids[j] == x.ids[j-1]+1 {
			j++
		}
		if !fn(x.ids[i], int64(j-i)) {
			return
		}
		i = j
	}
}

// release unmaps the arena (or the shared file); the tier is then empty.
func (c *Cache) release() error {
	var err error
	if c.shared != nil {
		err = unix.Munmap(c.shared.mem)
	} else if c.arena != nil {
		err = unix.Munmap(c.arena)
	}
	c.Index, c.arena, c.shared = Index{}, nil, nil
	return err
}

// Close releases the arena and the device path; the tier is then empty.
func (c *Cache) Close() error {
	var err error
	if c.dev != nil {
		err = errors.Join(c.unpublish(), c.dev.close())
		c.dev = nil
	}
	return errors.Join(err, c.release())
}
