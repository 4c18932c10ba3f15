package featurestore

import (
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/placement"
)

// Options configure Open. The zero value opens with no host cache, io_uring where available, and
// topology in memory when it fits 1 GiB.
type Options struct {
	Feature        string // feature to serve; "" is the dataset's first
	HostCacheBytes int64  // host tier budget, rows and index together
	// HostPolicy is how the host tier is kept: "" or "static" fills it from the placement and
	// keeps it until the next Place; "sieve" makes it a cache that admits the rows gathers read
	// from disk and evicts by SIEVE (pre-filled by the placement), for access patterns that
	// drift. Host gathers use it; device gathers (GatherDevice) see only the static tier.
	HostPolicy string
	// Hotness ranks nodes for the initial placement (higher is hotter; len = node count). Nil
	// ranks by in-degree, or leaves the host tier empty when the dataset has no topology.
	Hotness []uint32
	// Placement, when set and Hotness is nil, fills the feature tiers with its memory-tier feature
	// rows (they must fit the caches), and, when the topology stays on disk, holds the neighbor
	// lists of its memory-tier topology nodes in memory. Nil keeps the behaviour above.
	Placement *placement.Placement
	// TopologyMemoryBytes: the topology is read into memory when it fits this budget, otherwise it
	// stays on disk and each sampling hop reads what it needs through the IO stack. 0 means 1 GiB;
	// negative keeps it on disk always.
	TopologyMemoryBytes int64
	IOBackend           gpuio.Backend // "" picks io_uring, falling back to pread
	QueueDepth          int           // reads in flight per IO stack; default 128
	MaxConcurrentIO     int           // IO stacks (gathers reading disk at once); default GOMAXPROCS
	VerifyReads         bool          // check every block read from disk against its checksum
	CopyWorkers         int           // goroutines copying host-tier hits; default GOMAXPROCS

	// GPUDevice is the CUDA device of the GPU tier, device gathers and GPU sampling.
	GPUDevice int
	// GPUCacheBytes is the GPU tier's budget of device memory, for rows only (its index lives in
	// host memory, 16 bytes a row). A budget > 0 starts CUDA at Open; a budget above the device's
	// free memory is an error, a missing GPU or shim is not: the store then serves from the host
	// and Stats.GPU says why.
	GPUCacheBytes int64
	// GPUTopology places the topology for GPU sampling: "" samples on the host, "device" copies
	// it into GPU memory, "pinned" into pinned host memory the GPU reads over PCIe.
	GPUTopology string
}

// DefaultTopologyMemoryBytes is the topology budget when Options leaves it 0.
const DefaultTopologyMemoryBytes = 1 << 30
