package host

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/tiers"
)

// SieveIndexBytesPerRow is the bookkeeping a Sieve spends per row on top of the row itself: 8
// bytes for the id of each slot, 8 for the queue links (two int32), at most 16 for the hash table
// (int32 entries, load factor between 1/4 and 1/2) and one visited bit. SieveBytesPerRow and
// NewSieve count it; a Sieve's memory never exceeds its budget.
const SieveIndexBytesPerRow = 8 + 8 + 16 + 1

// sieveFixedBytes is the overhead a Sieve of any size may take beyond the per-row costs (the
// smallest hash table and the rounding of the visited-bit words).
const sieveFixedBytes = 16*4 + 4

// SieveBytesPerRow is the host memory one row of a Sieve costs.
func SieveBytesPerRow(rowBytes int64) int64 { return rowBytes + SieveIndexBytesPerRow }

// Sieve is a dynamic host tier: a fixed number of row slots in one mmap'ed arena (like Cache, so
// it can be pinned for the GPU), filled by admitting rows read from disk and emptied by the SIEVE
// eviction policy (Zhang et al., NSDI'24): one FIFO queue, newest at the head, a visited bit per
// row set on every hit, and a hand that walks from the tail toward the head, clearing visited
// bits until it finds an unvisited row, which it evicts; the hand stays where it stopped.
//
// Concurrency: Get, Lookup, Rows, Bytes and Ranges may run from many goroutines at once and with
// Admit. Get copies rows out under a read lock (the visited bits are set atomically), Admit
// inserts and evicts under the write lock, so a row is never overwritten while it is copied.
// Close must not run with anything else.
type Sieve struct {
	rowBytes int64
	capacity int32

	mu      sync.RWMutex
	arena   []byte          // mmap'ed, capacity*rowBytes
	ids     []int64         // id held by each slot (slots [0, n) are in use)
	prev    []int32         // toward the head (newer); -1 at the head
	next    []int32         // toward the tail (older); -1 at the tail
	visited []atomic.Uint32 // one bit per slot
	table   []int32         // open addressing, linear probing: slot, or -1 empty
	mask    uint64
	n       int32
	head    int32 // newest, -1 when empty
	tail    int32 // oldest
	hand    int32 // next eviction candidate; -1 starts at the tail

	admitted, evicted atomic.Uint64

	workers int
	dev     *devicePath // nil until AttachDevice
}

var (
	_ tiers.Tier           = (*Sieve)(nil)
	_ tiers.Holder         = (*Sieve)(nil)
	_ tiers.Admitter       = (*Sieve)(nil)
	_ tiers.DeviceAttacher = (*Sieve)(nil)
)

// NewSieve returns an empty Sieve for rows of rowBytes bytes holding as many rows as
// budgetBytes pays for at SieveBytesPerRow each (0 rows when the budget is too small: every Get
// then misses and Admit keeps nothing).
func NewSieve(rowBytes, budgetBytes int64) (*Sieve, error) {
	if rowBytes <= 0 {
		return nil, fmt.Errorf("host sieve: row size %d must be positive", rowBytes)
	}
	if budgetBytes < 0 {
		return nil, fmt.Errorf("host sieve: budget of %d bytes is negative", budgetBytes)
	}
	capacity := min(max(0, budgetBytes-sieveFixedBytes)/SieveBytesPerRow(rowBytes), math.MaxInt32/4)
	c := &Sieve{rowBytes: rowBytes, capacity: int32(capacity), head: -1, tail: -1, hand: -1}
	if capacity == 0 {
		return c, nil
	}
	arena, err := unix.Mmap(-1, 0, int(capacity*rowBytes), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("host sieve: map %d bytes for %d rows: %w", capacity*rowBytes, capacity, err)
	}
	size := uint64(16)
	if need := 2 * uint64(capacity); need > size {
		size = 1 << bits.Len64(need-1)
	}
	c.arena = arena
	c.ids = make([]int64, capacity)
	c.prev = make([]int32, capacity)
	c.next = make([]int32, capacity)
	c.visited = make([]atomic.Uint32, (capacity+31)/32)
	c.table = make([]int32, size)
	c.mask = size - 1
	for i := range c.table {
		c.table[i] = -1
	}
	return c, nil
}

// Kind is tiers.Host.
func (c *Sieve) Kind() tiers.Kind { return tiers.Host }

// Capacity is the number of rows the Sieve holds when full.
func (c *Sieve) Capacity() int64 { return int64(c.capacity) }

// RowBytes is the size of one row.
func (c *Sieve) RowBytes() int64 { return c.rowBytes }

// Arena is the memory all rows live in (for pinning by the GPU path).
func (c *Sieve) Arena() []byte { return c.arena }

// Rows is the number of rows held (tiers.Tier).
func (c *Sieve) Rows() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return int64(c.n)
}

// Bytes is the memory the arena and the index take (tiers.Tier); fixed at NewSieve.
func (c *Sieve) Bytes() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.bytes()
}

func (c *Sieve) bytes() int64 {
	return int64(len(c.arena)) + 8*int64(len(c.ids)) + 4*int64(len(c.prev)+len(c.next)+len(c.visited)+len(c.table))
}

// Admitted and Evicted count the rows Admit has inserted and evicted since NewSieve.
func (c *Sieve) Admitted() uint64 { return c.admitted.Load() }
func (c *Sieve) Evicted() uint64  { return c.evicted.Load() }

// find returns the slot of id, or -1. The caller holds mu (either way).
func (c *Sieve) find(id int64) int32 {
	if c.n == 0 {
		return -1
	}
	return probe(c.table, c.ids, c.mask, id)
}

// Get copies the row of each held ids[i] to dst[i*rowBytes : (i+1)*rowBytes], marks it visited
// and sets hit[i]; for the others it sets hit[i] false and leaves dst alone. It returns the number
// of hits. len(hit) == len(ids) and len(dst) >= len(ids)*rowBytes.
func (c *Sieve) Get(ids []int64, dst []byte, hit []bool) int {
	rb := c.rowBytes
	if len(hit) != len(ids) || int64(len(dst)) < int64(len(ids))*rb {
		panic(fmt.Sprintf("host sieve: Get of %d ids with %d hit flags and a %d-byte destination (%d bytes per row)", len(ids), len(hit), len(dst), rb))
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	hits := 0
	for i, id := range ids {
		s := c.find(id)
		if s < 0 {
			hit[i] = false
			continue
		}
		copy(dst[int64(i)*rb:int64(i+1)*rb], c.arena[int64(s)*rb:int64(s+1)*rb])
		w, bit := &c.visited[s>>5], uint32(1)<<(s&31)
		if w.Load()&bit == 0 {
			w.Or(bit)
		}
		hit[i] = true
		hits++
	}
	return hits
}

// Lookup sets slots[i] to the slot of ids[i] or -1 and returns the number of hits (tiers.Tier).
// It does not count as an access (no visited bit is set), and a slot is only a snapshot: a later
// Admit may evict it and reuse the slot for another id. Use Get to read rows.
func (c *Sieve) Lookup(ids []int64, slots []int64) int {
	h, release := c.Hold()
	defer release()
	return h.Lookup(ids, slots)
}

// Hold keeps every slot as it is (Admit waits) until release; the held view's Lookup and copies
// take no lock of their own (tiers.Holder).
func (c *Sieve) Hold() (tiers.Tier, func()) {
	c.mu.RLock()
	return (*heldSieve)(c), c.mu.RUnlock
}

// heldSieve is a Sieve whose read lock its caller holds.
type heldSieve Sieve

var (
	_ tiers.Tier           = (*heldSieve)(nil)
	_ tiers.Tier           = (*Sieve)(nil)
	_ tiers.Holder         = (*Sieve)(nil)
	_ tiers.Admitter       = (*Sieve)(nil)
	_ tiers.DeviceAttacher = (*Sieve)(nil)
	_ tiers.Capacitor      = (*Sieve)(nil)
)

func (h *heldSieve) Kind() tiers.Kind { return tiers.Host }

func (h *heldSieve) Lookup(ids []int64, slots []int64) int {
	c := (*Sieve)(h)
	hits := 0
	for i, id := range ids {
		slots[i] = int64(c.find(id))
		if slots[i] >= 0 {
			hits++
		}
	}
	return hits
}

func (h *heldSieve) Fill([]int64, tiers.Source) error {
	return errors.New("host sieve: Fill while held")
}

// CopyToHost copies row slots[k] to row pos[k] of dst and marks each visited.
func (h *heldSieve) CopyToHost(slots []int64, pos []int64, dst []byte) error {
	c := (*Sieve)(h)
	copyRows(c.arena, c.rowBytes, slots, pos, dst, defaultWorkers(c.workers))
	c.visit(slots)
	return nil
}

// EnqueueToDevice packs the rows (they may change once released) and marks each visited.
func (h *heldSieve) EnqueueToDevice(dc tiers.DeviceCopy) error {
	c := (*Sieve)(h)
	if dc.N == 0 {
		return nil
	}
	if c.dev == nil {
		return errors.New("host sieve: device copy before AttachDevice")
	}
	if err := c.dev.pack(dc, c.rowBytes, c.arena, defaultWorkers(c.workers)); err != nil {
		return err
	}
	c.visit(dc.Slots[:dc.N])
	return nil
}

func (h *heldSieve) Rows() int64                             { return int64(h.n) }
func (h *heldSieve) Bytes() int64                            { return (*Sieve)(h).bytes() }
func (h *heldSieve) Ranges(fn func(first, count int64) bool) { (*Sieve)(h).ranges(fn) }

// visit sets the visited bit of every slot.
func (c *Sieve) visit(slots []int64) {
	for _, s := range slots {
		w, bit := &c.visited[s>>5], uint32(1)<<(s&31)
		if w.Load()&bit == 0 {
			w.Or(bit)
		}
	}
}

// CopyToHost copies row slots[k] to row pos[k] of dst (tiers.Tier). Slots come from a Lookup of
// the same Hold; outside one they may name other rows by now.
func (c *Sieve) CopyToHost(slots []int64, pos []int64, dst []byte) error {
	h, release := c.Hold()
	defer release()
	return h.CopyToHost(slots, pos, dst)
}

// EnqueueToDevice packs the rows of dc (tiers.Tier); see CopyToHost about slots.
func (c *Sieve) EnqueueToDevice(dc tiers.DeviceCopy) error {
	h, release := c.Hold()
	defer release()
	return h.EnqueueToDevice(dc)
}

// Fill empties the Sieve and admits the first Capacity rows of ids (hottest first), coldest
// first so that SIEVE evicts them first, reading them through src (tiers.Tier).
func (c *Sieve) Fill(ids []int64, src tiers.Source) error {
	c.Reset()
	rest := slices.Clone(ids[:min(int64(len(ids)), c.Capacity())])
	slices.Reverse(rest)
	rb := c.rowBytes
	const chunk = 1 << 14
	buf := make([]byte, min(chunk, len(rest))*int(rb))
	for lo := 0; lo < len(rest); lo += chunk {
		part := rest[lo:min(lo+chunk, len(rest))]
		rows := buf[:int64(len(part))*rb]
		if err := src(part, rows); err != nil {
			return err
		}
		c.Admit(part, rows, nil)
	}
	return nil
}

// SetWorkers sets how many goroutines copy rows of large batches (0: GOMAXPROCS).
func (c *Sieve) SetWorkers(n int) { c.workers = n }

// AttachDevice prepares concurrency packers for device copies on CUDA device dev (the arena is
// not read by kernels: its rows change as gathers admit).
func (c *Sieve) AttachDevice(dev, concurrency int) error {
	_, err := attach(&c.dev, dev, concurrency)
	return err
}

// Ranges calls fn with each maximal run of consecutive ids held at the time of the call,
// ascending (tiers.Tier). fn runs without the lock held.
func (c *Sieve) Ranges(fn func(first, count int64) bool) {
	c.mu.RLock()
	ids := slices.Clone(c.ids[:c.n])
	c.mu.RUnlock()
	rangesOf(ids, fn)
}

func (c *Sieve) ranges(fn func(first, count int64) bool) { rangesOf(slices.Clone(c.ids[:c.n]), fn) }

func rangesOf(ids []int64, fn func(first, count int64) bool) {
	slices.Sort(ids)
	for i := 0; i < len(ids); {
		j := i + 1
		for j < len(ids) && ids[j] == ids[j-1]+1 {
			j++
		}
		if !fn(ids[i], int64(j-i)) {
			return
		}
		i = j
	}
}

// Admit inserts the row rows[i*rowBytes : (i+1)*rowBytes] of each ids[i] not held yet, in order,
// skipping those with skip[i] true (skip may be nil; Get's hit flags fit here), each at the head of
// the queue with its visited bit clear, evicting by SIEVE when full. Ids already held (a repeat
// in ids, or a row another goroutine admitted first) are left as they are. It returns the number
// of rows inserted.
func (c *Sieve) Admit(ids []int64, rows []byte, skip []bool) int {
	rb := c.rowBytes
	if (skip != nil && len(skip) != len(ids)) || int64(len(rows)) < int64(len(ids))*rb {
		panic(fmt.Sprintf("host sieve: Admit of %d ids with %d skip flags and %d bytes of rows (%d bytes per row)", len(ids), len(skip), len(rows), rb))
	}
	if c.capacity == 0 {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.arena == nil { // closed
		return 0
	}
	inserted := 0
	for i, id := range ids {
		if (skip != nil && skip[i]) || c.find(id) >= 0 {
			continue
		}
		var s int32
		if c.n < c.capacity {
			s = c.n
			c.n++
		} else {
			s = c.evict()
		}
		c.ids[s] = id
		c.insertIndex(s)
		c.visited[s>>5].And(^(uint32(1) << (s & 31)))
		c.prev[s], c.next[s] = -1, c.head
		if c.head >= 0 {
			c.prev[c.head] = s
		}
		c.head = s
		if c.tail < 0 {
			c.tail = s
		}
		copy(c.arena[int64(s)*rb:int64(s+1)*rb], rows[int64(i)*rb:int64(i+1)*rb])
		inserted++
	}
	c.admitted.Add(uint64(inserted))
	return inserted
}

// evict removes the row SIEVE picks and returns its slot. The caller holds mu and the queue is
// not empty.
func (c *Sieve) evict() int32 {
	o := c.hand
	if o < 0 {
		o = c.tail
	}
	for {
		w, bit := &c.visited[o>>5], uint32(1)<<(o&31)
		if w.Load()&bit == 0 {
			break
		}
		w.And(^bit)
		if o = c.prev[o]; o < 0 {
			o = c.tail
		}
	}
	c.hand = c.prev[o]
	p, nx := c.prev[o], c.next[o]
	if p >= 0 {
		c.next[p] = nx
	} else {
		c.head = nx
	}
	if nx >= 0 {
		c.prev[nx] = p
	} else {
		c.tail = p
	}
	c.deleteIndex(o)
	c.evicted.Add(1)
	return o
}

// insertIndex adds slot s (ids[s] set, not present) to the hash table.
func (c *Sieve) insertIndex(s int32) {
	h := hash(c.ids[s]) & c.mask
	for c.table[h] >= 0 {
		h = (h + 1) & c.mask
	}
	c.table[h] = s
}

// deleteIndex removes slot s from the hash table by backward-shift deletion (no tombstones, so
// probe lengths do not grow with churn).
func (c *Sieve) deleteIndex(s int32) {
	i := hash(c.ids[s]) & c.mask
	for c.table[i] != s {
		i = (i + 1) & c.mask
	}
	for j := i; ; {
		j = (j + 1) & c.mask
		t := c.table[j]
		if t < 0 {
			break
		}
		// t may move back to i unless its home k lies cyclically in (i, j].
		k := hash(c.ids[t]) & c.mask
		if (i <= j && i < k && k <= j) || (i > j && (i < k || k <= j)) {
			continue
		}
		c.table[i] = t
		i = j
	}
	c.table[i] = -1
}

// Reset empties the Sieve, keeping its memory.
func (c *Sieve) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n, c.head, c.tail, c.hand = 0, -1, -1, -1
	for i := range c.table {
		c.table[i] = -1
	}
	for i := range c.visited {
		c.visited[i].Store(0)
	}
}

// Close releases the arena and the index; the Sieve then holds nothing and admits nothing.
func (c *Sieve) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	if c.dev != nil {
		err = c.dev.close()
		c.dev = nil
	}
	if c.arena != nil {
		err = errors.Join(err, unix.Munmap(c.arena))
	}
	c.arena, c.ids, c.prev, c.next, c.visited, c.table = nil, nil, nil, nil, nil, nil
	c.n, c.head, c.tail, c.hand, c.mask = 0, -1, -1, -1, 0
	return err
}
