// Package gpuio is tierfs's asynchronous IO stack: reads of arbitrary byte ranges of a fixed set
// of files, served by io_uring with O_DIRECT into registered, mmap'ed staging memory, or by pread
// where io_uring is unavailable.
//
// Submission and completion are split as in Hyperion's IOStack: Submit queues reads and hands as
// many to the kernel as the ring and staging hold, never waiting for one to finish; Complete reaps
// completions, verifies and scatters the staged bytes into each request's destination, refills the
// ring with the requests still queued, and returns once every submitted request is in place.
// Several Submit calls may precede one Complete. A later GPU completion step replaces the scatter
// with a CUDA kernel; the contract stays the same.
//
// A Stack is used by one goroutine at a time; open one Stack per concurrent gatherer.
//
// Writes go through a Writer: from one region of memory its caller registers (mmap'ed or C,
// never the Go heap), aligned for O_DIRECT, adjacent requests merged, io_uring WRITE_FIXED or
// pwrite; a failed or short write fails the requests it carried, naming file and offset.
package gpuio

import (
	"cmp"
	"fmt"
)

// Request asks for Length bytes at byte Offset of file File, delivered into Dst, or, when Dst is
// nil, into device memory at DevDst by the completion kernel (a Stack with AttachDevice).
// Offset and Length need no alignment: the stack reads the covering BlockSize-aligned range.
// A file need not be a BlockSize multiple long: a read that the end of the file cuts short is
// fine when it still holds every byte its requests want (Options.Verify then sees its last block
// partial).
type Request struct {
	File   int     // index into the fds the Stack was opened with
	Offset int64   // byte offset in that file, >= 0
	Length int     // bytes, > 0, == len(Dst) when Dst is set
	Dst    []byte  // host memory the completion copies into; the kernel never writes it
	DevDst uintptr // device address of Length bytes, used when Dst is nil
}

// Backend names how reads reach the disk.
type Backend string

const (
	BackendAuto    Backend = ""         // io_uring when the kernel allows it, else pread
	BackendIOUring Backend = "io_uring" // io_uring, READ_FIXED into registered staging buffers
	BackendPread   Backend = "pread"    // pread(2) from a few goroutines, same staging and alignment
	// BackendGPUURing: reads bound for device memory are submitted and completed by a CUDA
	// kernel through an io_uring in mapped memory that a kernel thread polls (NO_MMAP + SQPOLL,
	// Linux >= 6.5); host-bound reads, and every read where that cannot be had, go as under
	// BackendAuto (Stack.GPURing says why). Needs AttachDevice.
	BackendGPUURing Backend = "gpu-uring"
)

// Options configure a Stack. Zero values take the defaults named on each field.
type Options struct {
	Backend      Backend
	BlockSize    int // O_DIRECT alignment of offsets, lengths and buffers; default 4096
	QueueDepth   int // reads in flight at most; default 128
	MaxIOBytes   int // largest single read; longer ranges are split; default 128 KiB
	StagingBytes int // staging memory (mmap'ed); default QueueDepth*MaxIOBytes, at least MaxIOBytes
	// Coalesce merges requests whose aligned block ranges overlap or touch (same file) into one
	// read of at most MaxIOBytes, so rows sharing a block are read once. Default on; set
	// NoCoalesce to read each request on its own.
	NoCoalesce bool
	// CoalesceGap also merges ranges of one file that are at most CoalesceGap bytes apart (after
	// alignment) into one read of at most MaxIOBytes: the gap is read and discarded, one IO instead
	// of two. Worth it where reading the gap costs less than a second IO (see tiers/ssd.Probe).
	// Default 0: only overlapping or touching ranges merge. Ignored under NoCoalesce.
	CoalesceGap int
	// Verify, when set, is called once for every BlockSize-aligned block of every completed read
	// before its bytes are scattered; an error fails the Complete call that reaped it. The last
	// block of a read that the end of its file cut short is passed as far as it was read.
	Verify func(file int, blockOffset int64, block []byte) error
	// SQPoll asks for a kernel thread that polls the submission ring (IORING_SETUP_SQPOLL), so
	// a busy ring needs no io_uring_enter to submit; it burns a CPU per Stack while reads flow
	// (and for a few milliseconds after). Where the kernel refuses it the Stack runs without
	// and says why (Stack.SQPoll, Stack.Mode). Default off.
	SQPoll bool
	// Faults, when set, injects faults into the reads the Stack completes (tests; see Injector
	// and Faults). Nil, or a nil *Faults, injects nothing and costs nothing.
	Faults Injector
	// Paths, when set, names the files (Paths[i] is file i), for Faults' rules by path.
	Paths []string
	// Budget, when set, bounds the reads in flight of every Stack opened with it, together
	// (see Budget); each Stack still has at most QueueDepth in flight. Nil: no shared bound.
	Budget *Budget
}

// Stats counts what a Stack did since it was opened.
type Stats struct {
	Backend        Backend `json:"backend"`
	Requests       uint64  `json:"requests"`        // requests submitted
	Reads          uint64  `json:"reads"`           // reads issued to the kernel (after coalescing and splitting)
	BytesRequested uint64  `json:"bytes_requested"` // sum of request lengths
	BytesRead      uint64  `json:"bytes_read"`      // bytes read from disk (aligned); BytesRead/BytesRequested is read amplification
	GapBytes       uint64  `json:"gap_bytes"`       // bytes planned into reads only to bridge gaps (Options.CoalesceGap), part of BytesRead
	// BlockSize and CoalesceGap are the options the Stack runs with (defaults filled in): the
	// alignment of every read, and the gap it bridges.
	BlockSize   int `json:"block_size"`
	CoalesceGap int `json:"coalesce_gap"`
	// Retries counts reads the device turned away for want of queue slots and that were read
	// again (not part of Reads).
	Retries uint64 `json:"retries"`
	// Enters counts io_uring_enter calls (0 for pread): Enters/Reads is syscalls per read.
	Enters uint64 `json:"enters"`
	// DeviceRequests counts requests delivered to device memory, CompletionKernels the
	// completion kernels launched for them.
	DeviceRequests    uint64 `json:"device_requests"`
	CompletionKernels uint64 `json:"completion_kernels"`
	// GPURing is "active" when BackendGPUURing serves device requests, the reason it does not
	// where it was asked for and fell back, or empty. GPURingReads counts the reads its kernels
	// submitted and reaped (part of Reads), GPURingKernels the kernels, GPURingWakeups the times
	// the host woke the sleeping SQ thread, GPURingSQWaits the times a kernel found the SQ full.
	GPURing        string `json:"gpu_uring,omitempty"`
	GPURingReads   uint64 `json:"gpu_uring_reads,omitempty"`
	GPURingKernels uint64 `json:"gpu_uring_kernels,omitempty"`
	GPURingWakeups uint64 `json:"gpu_uring_wakeups,omitempty"`
	GPURingSQWaits uint64 `json:"gpu_uring_sq_waits,omitempty"`
	// LatencyHistogram[i] counts reads whose submit-to-reap latency was in [2^i, 2^(i+1)) µs
	// (bucket 0 also holds < 1 µs, the last bucket everything longer).
	LatencyHistogram [LatencyBuckets]uint64 `json:"latency_histogram_us_log2"`
}

// Add counts o's requests and reads into s, as the stacks serving one set of files sum theirs:
// counters and the latency histogram add; BlockSize and CoalesceGap, the stacks' shared options,
// become o's; GPURing keeps s's where set. Backend stays s's.
func (s *Stats) Add(o Stats) {
	s.BlockSize, s.CoalesceGap = o.BlockSize, o.CoalesceGap
	s.GapBytes += o.GapBytes
	s.Requests += o.Requests
	s.Reads += o.Reads
	s.Retries += o.Retries
	s.Enters += o.Enters
	s.BytesRequested += o.BytesRequested
	s.BytesRead += o.BytesRead
	s.DeviceRequests += o.DeviceRequests
	s.CompletionKernels += o.CompletionKernels
	s.GPURing = cmp.Or(s.GPURing, o.GPURing)
	s.GPURingReads += o.GPURingReads
	s.GPURingKernels += o.GPURingKernels
	s.GPURingWakeups += o.GPURingWakeups
	s.GPURingSQWaits += o.GPURingSQWaits
	for i, n := range o.LatencyHistogram {
		s.LatencyHistogram[i] += n
	}
}

// ReadAmplification is BytesRead/BytesRequested (0 before any request).
func (s Stats) ReadAmplification() float64 {
	if s.BytesRequested == 0 {
		return 0
	}
	return float64(s.BytesRead) / float64(s.BytesRequested)
}

// LatencyBuckets is the number of power-of-two microsecond buckets in Stats.LatencyHistogram.
const LatencyBuckets = 24

// ShortReadError is a read that the end of its file cut short of the bytes it needed (a file
// shorter than its caller believes).
type ShortReadError struct {
	File      int   // index into the Stack's fds
	Offset    int64 // of the read
	Want, Got int   // bytes
}

func (e *ShortReadError) Error() string {
	return fmt.Sprintf("gpuio: short read of file %d at offset %d: want %d bytes, got %d (past end of file?)", e.File, e.Offset, e.Want, e.Got)
}
