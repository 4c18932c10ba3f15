package featurestore

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"

	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/placement"
	"github.com/tierfs/tierfs/tiers/ssd"
	"github.com/tierfs/tierfs/topology"
)

// Options configure Open. The zero value opens with no host cache, io_uring where available, and
// topology in memory when it fits 1 GiB.
//
// Options is the one description of a store's configuration every front end shares: a field with
// a json name is a store option, its help tag the one line a user reads about it, kind:"size" a
// byte count (front ends take "4GiB"). OptionTable lists them; the CLI makes its flags from it
// (the name with '-' for '_'), tfs_open_json and Python's tierfs.open take them by name
// (DecodeOptions), and tfs_options_json("store") hands the table to Python. Validate is the one
// place the values are checked; front ends convert their arguments and let it decide. Adding an
// option is adding a field here and its use (ARCHITECTURE.md, "Adding an option").
type Options struct {
	Feature        string `json:"feature" help:"feature to serve (default: the dataset's first)"`
	HostCacheBytes int64  `json:"host_cache" kind:"size" help:"host tier budget, rows and index, e.g. 512MB or 4GiB (default: none, every row read from disk)"`
	// HostPolicy is how the host tier is kept: "" or "static" fills it from the placement and
	// keeps it until the next Place; "sieve" makes it a cache that admits the rows gathers read
	// from disk and evicts by SIEVE (pre-filled by the placement), for access patterns that
	// drift. Every gather reads it; host gathers admit the rows they read from disk, device
	// gathers do not (their rows go from staging to the device).
	HostPolicy string `json:"host_policy" help:"how the host tier is kept: static (placed at open and by place; the default) or sieve (a cache of the rows read from disk, SIEVE eviction)"`
	// Hotness ranks nodes for the initial placement (higher is hotter; len = node count). Nil
	// ranks by in-degree, or leaves the host tier empty when the dataset has no topology.
	Hotness []uint32 `json:"-"`
	// Placement, when set and Hotness is nil, fills the feature tiers with its memory-tier feature
	// rows (they must fit the caches), and, when the topology stays on disk, holds the neighbor
	// lists of its memory-tier topology nodes in memory. Nil keeps the behaviour above.
	Placement *placement.Placement `json:"-"`
	// Faults, when set, injects IO faults into the reads of every IO stack the store opens
	// (features, topology, labels, and planned epochs' packed files): a seam for tests through
	// every layer above the stacks. Nil (the default) injects nothing. The core never reads
	// the environment; the C ABI and the CLI build it from TIERFS_FAULTS (gpuio.ParseFaults).
	Faults gpuio.Injector `json:"-"`
	// TopologyMemoryBytes: the topology is read into memory when it fits this budget, otherwise it
	// stays on disk and each sampling hop reads what it needs through the IO stack. 0 means 1 GiB;
	// negative keeps it on disk always.
	TopologyMemoryBytes int64 `json:"topology_memory" kind:"size" help:"hold the topology in memory when it fits this size (default 1GiB); -1 keeps it on disk"`
	// MaxSampleEdges bounds the edges one sample draws, all hops (and edge types) together: a
	// sample that would draw more fails before allocating, with topology.ErrSampleTooLarge
	// naming its seeds, fanouts and the bound. 0 means topology.DefaultMaxEdges (2^27). A
	// per-call SampleOptions.MaxEdges wins over it.
	MaxSampleEdges  int64         `json:"max_sample_edges" help:"the most edges one sample may draw, all hops together; a larger sample is refused before allocating (default 0: 134217728 = 2^27)"`
	IOBackend       gpuio.Backend `json:"io_backend" help:"io_uring, pread or gpu-uring (device gathers' disk reads submitted by the GPU; docs/gpu-uring.md); default: io_uring where it works, else pread"`
	QueueDepth      int           `json:"queue_depth" help:"disk reads in flight of all IO stacks together, so at most of one gather (default 128)"`
	MaxConcurrentIO int           `json:"max_concurrent_io" help:"IO stacks: gathers reading the disk at once (default: one per CPU)"`
	// UnverifiedReads skips checking blocks read from disk against the dataset's checksums. Reads
	// are checked by default (on the completion path, before any row is used; about 1-3% of
	// gather throughput, BENCHMARKS.md); labels, splits and topology are checked at open either way.
	UnverifiedReads bool `json:"unverified_reads" help:"do not check blocks read from disk against their checksums (checked by default: 1-3% of gather throughput)"`
	CopyWorkers     int  `json:"copy_workers" help:"goroutines copying host-tier rows (default: one per CPU)"`
	// CoalesceGap: disk reads of one file at most this many bytes apart become one read (the gap
	// read and discarded), up to 128 KiB. 0 (the default) merges only reads that share or touch
	// a block; -1 probes the disk at Open (about 1.5 s, `tierfs bench disk` prints the same
	// probe) and takes the gap it recommends; Stats.DiskProbe shows the measurement.
	CoalesceGap int `json:"coalesce_gap" help:"read disk ranges of a file at most this many bytes apart as one read, up to 128 KiB (default 0: only touching blocks); -1 probes the disk at open"`
	// ReadAlign is the alignment of disk reads: 0 (the default) the dataset's block size, -1 the
	// smallest the files' direct IO allows (often 512, so a 512-byte row costs a 512-byte read),
	// or a power of two from 512 to the block size. Verified reads stay whole blocks (checksums
	// cover blocks), so a value other than 0 needs UnverifiedReads.
	ReadAlign int `json:"read_align" help:"alignment of disk reads (default 0: the dataset's block size); -1: the smallest the files' direct IO allows, e.g. 512 (both need unverified_reads)"`

	// GPUDevice is the CUDA device of the GPU tier, device gathers and GPU sampling.
	GPUDevice int `json:"gpu_device" help:"CUDA device of the GPU tier, device gathers and GPU sampling"`
	// GPUCacheBytes is the GPU tier's budget of device memory, for rows only (its index takes 16
	// bytes a row in host memory and again in device memory, for the split kernel; the static
	// host tier's index is copied there too). A budget > 0 starts CUDA at Open; a budget above the device's
	// free memory is an error, a missing GPU or shim is not: the store then serves from the host
	// and Stats.GPU says why.
	GPUCacheBytes int64 `json:"gpu_cache" kind:"size" help:"GPU tier budget in device memory, e.g. 8GiB (default: none; without a GPU the store serves from the host)"`
	// GPUTopology places the topology for GPU sampling: "" samples on the host, "device" copies
	// it into GPU memory, "pinned" into pinned host memory the GPU reads over PCIe.
	GPUTopology string `json:"gpu_topology" help:"sample on the GPU with the topology in device or pinned (host) memory (default: sample on the host)"`
}

// DefaultTopologyMemoryBytes is the topology budget when Options leaves it 0.
const DefaultTopologyMemoryBytes = 1 << 30

// MaxCoalesceGap is the largest CoalesceGap: the IO stacks' largest read, 128 KiB.
const MaxCoalesceGap = stagingBytesPerRead

// DefaultQueueDepth is the disk reads in flight of all IO stacks together when Options leaves
// QueueDepth 0.
const DefaultQueueDepth = 128

// GPU topology placements (Options.GPUTopology).
const (
	GPUTopologyDevice = "device" // the topology in GPU memory
	GPUTopologyPinned = "pinned" // in pinned host memory the GPU reads over PCIe
)

// ErrInvalidOption is wrapped by every error of Options.Validate (and of the sampler's options).
var ErrInvalidOption = errors.New("invalid option")

// OptionError says which option has a value it may not have. Option is the option's JSON name;
// a front end may set it to its own name for the option (a flag, a C struct field) before
// showing the error. It wraps ErrInvalidOption.
type OptionError struct {
	Option string
	Value  any
	Want   string // what the option accepts
}

func (e *OptionError) Error() string {
	v := fmt.Sprint(e.Value)
	if s, ok := e.Value.(string); ok {
		v = fmt.Sprintf("%q", s)
	} else if b, ok := e.Value.(gpuio.Backend); ok {
		v = fmt.Sprintf("%q", string(b))
	}
	return fmt.Sprintf("featurestore: option %s = %s: want %s", e.Option, v, e.Want)
}

func (e *OptionError) Unwrap() error { return ErrInvalidOption }

// EnsureDefaults replaces every zero value that stands for a default with the default itself,
// and returns o. Values that Validate rejects are left as they are.
func (o *Options) EnsureDefaults() *Options {
	if o.QueueDepth == 0 {
		o.QueueDepth = DefaultQueueDepth
	}
	if o.MaxConcurrentIO == 0 {
		o.MaxConcurrentIO = runtime.GOMAXPROCS(0)
	}
	if o.CopyWorkers == 0 {
		o.CopyWorkers = runtime.GOMAXPROCS(0)
	}
	if o.TopologyMemoryBytes == 0 {
		o.TopologyMemoryBytes = DefaultTopologyMemoryBytes
	}
	return o
}

// Validate checks every option on its own (what needs the dataset, such as Feature and the length
// of Hotness, Open checks). The error is an *OptionError naming the first bad option.
func (o *Options) Validate() error {
	bad := func(name string, v any, want string) error { return &OptionError{Option: name, Value: v, Want: want} }
	switch {
	case o.HostCacheBytes < 0:
		return bad("host_cache", o.HostCacheBytes, "a byte count >= 0 (0: no host tier)")
	case o.GPUCacheBytes < 0:
		return bad("gpu_cache", o.GPUCacheBytes, "a byte count >= 0 (0: no GPU tier)")
	case o.GPUDevice < 0:
		return bad("gpu_device", o.GPUDevice, "a CUDA ordinal >= 0")
	case o.QueueDepth < 0:
		return bad("queue_depth", o.QueueDepth, fmt.Sprintf("reads in flight >= 0 (0: %d)", DefaultQueueDepth))
	case o.MaxConcurrentIO < 0:
		return bad("max_concurrent_io", o.MaxConcurrentIO, "IO stacks >= 0 (0: one per CPU)")
	case o.MaxSampleEdges < 0:
		return bad("max_sample_edges", o.MaxSampleEdges, fmt.Sprintf("edges >= 0 (0: %d)", topology.DefaultMaxEdges))
	case o.CopyWorkers < 0:
		return bad("copy_workers", o.CopyWorkers, "goroutines >= 0 (0: one per CPU)")
	case o.CoalesceGap < -1 || o.CoalesceGap > MaxCoalesceGap:
		return bad("coalesce_gap", o.CoalesceGap, fmt.Sprintf("bytes from 0 to %d, or -1 to probe the disk at open", MaxCoalesceGap))
	case o.ReadAlign < -1 || (o.ReadAlign > 0 && (o.ReadAlign < ssd.MinReadAlign || o.ReadAlign&(o.ReadAlign-1) != 0)):
		return bad("read_align", o.ReadAlign, fmt.Sprintf("a power of two from %d to the dataset's block size, 0 for the block size or -1 for the smallest the files allow", ssd.MinReadAlign))
	case !o.UnverifiedReads && o.ReadAlign != 0:
		return bad("read_align", o.ReadAlign, "0 while reads are verified (checksums cover whole blocks; unverified_reads lifts it)")
	case !o.UnverifiedReads && o.IOBackend == gpuio.BackendGPUURing:
		return bad("io_backend", o.IOBackend, "io_uring or pread while reads are verified (the GPU-submitted reads are not checked against checksums; unverified_reads lifts it)")
	}
	switch o.IOBackend {
	case gpuio.BackendAuto, gpuio.BackendIOUring, gpuio.BackendPread, gpuio.BackendGPUURing:
	default:
		return bad("io_backend", o.IOBackend, fmt.Sprintf("%q, %q or %q (or empty to pick)", gpuio.BackendIOUring, gpuio.BackendPread, gpuio.BackendGPUURing))
	}
	switch o.HostPolicy {
	case "", HostStatic, HostSieve:
	default:
		return bad("host_policy", o.HostPolicy, fmt.Sprintf("%q or %q (or empty for %s)", HostStatic, HostSieve, HostStatic))
	}
	switch o.GPUTopology {
	case "", GPUTopologyDevice, GPUTopologyPinned:
	default:
		return bad("gpu_topology", o.GPUTopology, fmt.Sprintf("%q or %q (or empty to sample on the host)", GPUTopologyDevice, GPUTopologyPinned))
	}
	return nil
}

// sampleBound is the edge bound of a sample asked with maxEdges (SampleOptions.MaxEdges): that
// when set, else MaxSampleEdges (0: the topology's default).
func (o *Options) sampleBound(maxEdges int64) int64 {
	if maxEdges > 0 {
		return maxEdges
	}
	return o.MaxSampleEdges
}

// sampleTooLarge adds to err, when it is a sample past its bound, the option that sets the bound.
func sampleTooLarge(err error) error {
	if errors.Is(err, topology.ErrSampleTooLarge) {
		return fmt.Errorf("%w (the store option max_sample_edges sets the bound)", err)
	}
	return err
}

// String is the options as JSON (Hotness, Placement and Faults left out).
func (o Options) String() string {
	data, err := json.Marshal(o)
	if err != nil {
		return fmt.Sprintf("featurestore.Options{%v}", err)
	}
	return string(data)
}
