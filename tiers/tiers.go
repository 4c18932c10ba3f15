// Package tiers is the contract every level of tierfs's memory hierarchy keeps. A tier holds the
// feature rows of some nodes, each in a slot; a gather splits its ids once into per-tier (slot,
// position) lists, fastest tier first, then asks each tier to move its rows to the sink: a host
// buffer (CopyToHost) or a device buffer on a CUDA stream (EnqueueToDevice). The slowest tier
// (ssd) holds every row and its slot of a node is the node id. Placement fills every tier the same
// way (Fill), reading rows from the tier below.
//
// Implementations: tiers/gpu (device memory), tiers/host (pinned host memory; static or SIEVE),
// tiers/ssd (the dataset's files through the IO stacks). Each passes tiers/tierstest, the
// contract checked against a plain reference.
package tiers

import "github.com/tierfs/tierfs/cuda"

// Kind names a tier.
type Kind string

const (
	GPU  Kind = "gpu"
	Host Kind = "host"
	SSD  Kind = "ssd"
)

// Tier is one level of the hierarchy.
//
// Concurrency: Lookup, CopyToHost, EnqueueToDevice, Rows, Bytes and Ranges may run from many
// goroutines at once; Fill and Close run alone (the store serialises them). A slot from Lookup
// names the same row until the next Fill, except in tiers that change while gathers run (they
// implement Holder, and a caller uses the held view from Lookup until its copies are done).
type Tier interface {
	Kind() Kind
	// Lookup sets slots[i] to the slot of ids[i], or -1 where the tier lacks it, and returns the
	// number of hits. len(slots) == len(ids).
	Lookup(ids []int64, slots []int64) int
	// Fill replaces what the tier holds with the rows of ids (any order, no duplicates; the tier
	// keeps as many as it has room for, hottest first when ids are ordered hottest first), reading
	// them through src.
	Fill(ids []int64, src Source) error
	// CopyToHost copies the row in slots[k] to row pos[k] of dst (rows of the tier's row size) for
	// every k, and returns once every row is in place.
	CopyToHost(slots []int64, pos []int64, dst []byte) error
	// EnqueueToDevice queues the copies of c on c.Stream: work queued on that stream afterwards
	// sees every row. It returns once the copies are queued (the ssd tier: once its reads are
	// reaped), without waiting for the GPU.
	EnqueueToDevice(c DeviceCopy) error
	// Rows is the number of rows held; Bytes the memory they and the index take.
	Rows() int64
	Bytes() int64
	// Ranges calls fn with each maximal run [first, first+count) of consecutive node ids held, in
	// increasing order, until fn returns false.
	Ranges(fn func(first, count int64) bool)
}

// Source reads the rows of ids (any order) into consecutive rows of rows: row k for ids[k].
type Source func(ids []int64, rows []byte) error

// DeviceCopy is one tier's share of a device gather: the row in slot Slots[k] goes to row Pos[k]
// of the device buffer Dst (rows of the tier's row size) on the tier's CUDA device, ordered on
// Stream.
// The pairs are given in host memory (Slots, Pos; nil when they exist only on the device, after a
// split on the GPU), in device memory (DevSlots, DevPos: N int64 each; 0 when absent), or both.
type DeviceCopy struct {
	N                int
	Slots, Pos       []int64
	DevSlots, DevPos uintptr
	Dst              uintptr
	Stream           uintptr
}

// Holder is implemented by tiers whose contents change while gathers run (the SIEVE host tier
// admits rows): slots from Lookup stay valid from Hold until release is called. Hold may be
// taken by many gathers at once; a caller must not Hold twice before releasing.
type Holder interface {
	// Hold returns the tier as it stays until release: the held view's methods take no lock.
	Hold() (held Tier, release func())
}

// Admitter is implemented by tiers that admit rows gathers read from a slower tier: Admit offers
// the rows of ids (row k of rows for ids[k]) except where skip[k] (skip may be nil); the tier
// keeps what its policy wants and returns how many it inserted. The caller holds nothing.
type Admitter interface {
	Admit(ids []int64, rows []byte, skip []bool) int
}

// DeviceAttacher is implemented by tiers that prepare for device copies (pinning host memory,
// scratch for packing) once the store knows its CUDA device; concurrency is how many device
// copies may run at once.
type DeviceAttacher interface {
	AttachDevice(dev, concurrency int) error
}

// DeviceIndexer is implemented by memory tiers whose index and rows the device split kernel can
// read in place (tfc_split_gather): DeviceIndex returns them as the kernel reads them, or false
// when the tier cannot be read so now (not attached to a device, or rows it packs for DMA
// instead). The descriptor stays valid until the tier's next Fill or Close; a caller holds the
// tier still (the store's place lock) while kernels read it.
type DeviceIndexer interface {
	DeviceIndex() (cuda.TierIndex, bool)
}

// CallerLeaver is implemented by a last tier of a device gather whose Lookup also takes ids it
// leaves to the caller (a planned batch's rows served elsewhere: planned's packed tier):
// LeftToCaller says how many of the slots it looked up are such, so that the store's counters
// count only the rows it serves.
type CallerLeaver interface {
	LeftToCaller(slots []int64) int
}

// Capacitor is implemented by memory tiers whose room is fixed when they are made (the GPU tier,
// the SIEVE host tier): Capacity is how many rows they hold when full. A store sizes the others
// from their budgets.
type Capacitor interface {
	Capacity() int64
}

// Sharer is implemented by tiers that may be held in a file in shared memory, filled by one
// process and mapped by others (the static host tier): SharedPath is the file's path, or "" when
// the tier is the process's own, and whether this process created it.
type Sharer interface {
	SharedPath() (path string, created bool)
}
