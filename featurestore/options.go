package featurestore

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"

	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/placement"
	"github.com/tierfs/tierfs/tiers/ssd"
)

// Options configure Open. The zero value opens with no host cache, io_uring where available, and
// topology in memory when it fits 1 GiB.
//
// Options is the one description of a store's configuration every front end shares: the JSON
// names below are the keys of Python's tierfs.open, the CLI's flags (with '-' for '_') and, but
// for the _bytes suffixes and device, the fields of the C API's tfs_open_options. Validate is the
// one place the values are checked; front ends convert their arguments and let it decide.
type Options struct {
	Feature        string `json:"feature"`    // feature to serve; "" is the dataset's first
	HostCacheBytes int64  `json:"host_cache"` // host tier budget, rows and index together
	// HostPolicy is how the host tier is kept: "" or "static" fills it from the placement and
	// keeps it until the next Place; "sieve" makes it a cache that admits the rows gathers read
	// from disk and evicts by SIEVE (pre-filled by the placement), for access patterns that
	// drift. Every gather reads it; host gathers admit the rows they read from disk, device
	// gathers do not (their rows go from staging to the device).
	HostPolicy string `json:"host_policy"`
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
	TopologyMemoryBytes int64         `json:"topology_memory"`
	IOBackend           gpuio.Backend `json:"io_backend"`        // "" picks io_uring, falling back to pread; "gpu-uring": device gathers' disk reads submitted by the GPU
	QueueDepth          int           `json:"queue_depth"`       // reads in flight per IO stack; default 128
	MaxConcurrentIO     int           `json:"max_concurrent_io"` // IO stacks (gathers reading disk at once); default GOMAXPROCS
	VerifyReads         bool          `json:"verify_reads"`      // check every block read from disk against its checksum
	CopyWorkers         int           `json:"copy_workers"`      // goroutines copying host-tier hits; default GOMAXPROCS
	// CoalesceGap: disk reads of one file at most this many bytes apart become one read (the gap
	// read and discarded), up to 128 KiB. 0 (the default) merges only reads that share or touch
	// a block; -1 probes the disk at Open (about 1.5 s, `tierfs bench disk` prints the same
	// probe) and takes the gap it recommends; Stats.DiskProbe shows the measurement.
	CoalesceGap int `json:"coalesce_gap"`
	// ReadAlign is the alignment of disk reads: 0 (the default) the dataset's block size, -1 the
	// smallest the files' direct IO allows (often 512, so a 512-byte row costs a 512-byte read),
	// or a power of two from 512 to the block size. With VerifyReads reads stay whole blocks:
	// -1 then means the block size, and other values are refused.
	ReadAlign int `json:"read_align"`

	// GPUDevice is the CUDA device of the GPU tier, device gathers and GPU sampling.
	GPUDevice int `json:"gpu_device"`
	// GPUCacheBytes is the GPU tier's budget of device memory, for rows only (its index takes 16
	// bytes a row in host memory and again in device memory, for the split kernel; the static
	// host tier's index is copied there too). A budget > 0 starts CUDA at Open; a budget above the device's
	// free memory is an error, a missing GPU or shim is not: the store then serves from the host
	// and Stats.GPU says why.
	GPUCacheBytes int64 `json:"gpu_cache"`
	// GPUTopology places the topology for GPU sampling: "" samples on the host, "device" copies
	// it into GPU memory, "pinned" into pinned host memory the GPU reads over PCIe.
	GPUTopology string `json:"gpu_topology"`
}

// DefaultTopologyMemoryBytes is the topology budget when Options leaves it 0.
const DefaultTopologyMemoryBytes = 1 << 30

// MaxCoalesceGap is the largest CoalesceGap: the IO stacks' largest read, 128 KiB.
const MaxCoalesceGap = stagingBytesPerRead

// DefaultQueueDepth is the reads in flight per IO stack when Options leaves QueueDepth 0.
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
	case o.CopyWorkers < 0:
		return bad("copy_workers", o.CopyWorkers, "goroutines >= 0 (0: one per CPU)")
	case o.CoalesceGap < -1 || o.CoalesceGap > MaxCoalesceGap:
		return bad("coalesce_gap", o.CoalesceGap, fmt.Sprintf("bytes from 0 to %d, or -1 to probe the disk at open", MaxCoalesceGap))
	case o.ReadAlign < -1 || (o.ReadAlign > 0 && (o.ReadAlign < ssd.MinReadAlign || o.ReadAlign&(o.ReadAlign-1) != 0)):
		return bad("read_align", o.ReadAlign, fmt.Sprintf("a power of two from %d to the dataset's block size, 0 for the block size or -1 for the smallest the files allow", ssd.MinReadAlign))
	case o.VerifyReads && o.ReadAlign > 0:
		return bad("read_align", o.ReadAlign, "0 or -1 with verify_reads (verified reads are whole blocks)")
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

// String is the options as JSON (Hotness, Placement and Faults left out).
func (o Options) String() string {
	data, err := json.Marshal(o)
	if err != nil {
		return fmt.Sprintf("featurestore.Options{%v}", err)
	}
	return string(data)
}
