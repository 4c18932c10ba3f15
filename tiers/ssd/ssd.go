// Package ssd is the slowest tier: the dataset's files, opened once with O_DIRECT (read through
// the page cache where the file system has no O_DIRECT), read by a pool of IO stacks. The tier
// holds every row; the slot of a node is its id, and a row's place on disk is FeatureSpec.Locate.
//
// Files also serve the topology and labels: any range of any file of the set goes through Read.
//
// Where the files lie on several devices, each device has its own IO stacks (device-affine
// stacks, devices.go), and a read of files on several devices is split over them.
//
// Memory: Stacks (with files on several devices, stacksPerDevice a device) × the IO stack's
// staging (gpuio.Options); nothing grows with the dataset.
package ssd

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/tiers"
)

// Options configure OpenFiles. Zero values take the defaults named on each field.
type Options struct {
	Backend gpuio.Backend // "" picks io_uring, falling back to pread
	// QueueDepth is the reads in flight of every IO stack together (a gpuio.Budget the stacks
	// share), and so at most of one; default 128. Callers reading at once split it, and the disk
	// sees one queue of this depth however many of them there are.
	QueueDepth  int
	Stacks      int  // IO stacks, so reads of this many callers run at once; default 1
	VerifyReads bool // check every block read against the dataset's checksums
	// SQPoll gives every IO stack a kernel submission-polling thread (gpuio.Options.SQPoll): no
	// system call to submit, a busy CPU per stack. Where refused the stacks run without it.
	SQPoll bool
	// Faults injects faults into every stack's reads (gpuio.Injector; tests). nil: none.
	Faults gpuio.Injector
	// CoalesceGap is gpuio.Options.CoalesceGap: ranges of a file at most this many bytes apart
	// are read by one read. -1 probes the first file of the set at open (Probe, about 1.5 s)
	// and takes the gap it recommends (Files.Probe says what it measured). Default 0.
	CoalesceGap int
	// ReadAlign is the alignment of reads. 0 keeps the dataset's block size (4 KiB). -1 takes
	// the smallest the files allow: the largest direct-IO alignment (statx STATX_DIOALIGN, else
	// the device's logical block size) of the O_DIRECT files, 512 for files read through the
	// page cache, so a 512-byte row costs a 512-byte read. A positive value, a power of two from
	// 512 to the block size, is used as it is and must be a multiple of that alignment. Under
	// VerifyReads reads stay whole dataset blocks, checksums being per block: only 0 and -1
	// (which then mean the block size) are accepted.
	ReadAlign int
	// SharedStacks has every IO stack open every file, however many devices the files lie on:
	// the layout before device-affine stacks, kept for A/B runs. By default files on several
	// devices (st_dev) get stacks of their own device (devices.go).
	SharedStacks bool
}

// MinReadAlign is the smallest read alignment (Options.ReadAlign) Files use.
const MinReadAlign = 512

// Files is a fixed set of a dataset's files and the IO stacks that read them. Read may run from
// many goroutines at once (each takes a stack); AttachDevice and Close run alone.
//
// Each stack owns its ring, staging and counters; what Reads share is one channel operation
// per call to take a stack and one to give it back, and the budget of reads in flight
// (Options.QueueDepth; two atomic operations a read). A stack copies its counters into its own
// slot (own lock, own cache lines) when given back, so Stats never stops a Read.
//
// The stacks form one pool per device the files lie on (one pool in all under
// Options.SharedStacks or where every file is on one device); a Read of files of several
// devices takes one stack of each.
type Files struct {
	paths     []string
	fds       []int
	pools     []*stackPool // one a device; pools[poolOf[i]] reads file i
	poolOf    []int
	all       []*pooledStack
	backend   gpuio.Backend
	checksums []*dataset.Checksums

	probe *DiskProbe

	// The probe modelProbe runs itself, once, where OpenFiles ran none: over the first file
	// (firstPath, firstSize bytes, opened O_DIRECT when firstDirect) with probeWith.
	modelOnce   sync.Once
	lazyProbe   *DiskProbe
	probeWith   ProbeOptions
	firstPath   string
	firstSize   int64
	firstDirect bool
}

// ModelProbeBytes is the smallest first file whose disk model (Tier.DiskModel) is probed where
// OpenFiles ran no probe (Options.CoalesceGap -1): on a file this large, a plan's or a fill's
// choice between a scan and random reads, and the gaps it bridges, pay for the probe (about half
// a second of random reads, once). Smaller files take DefaultDiskModel. Tests change it.
var ModelProbeBytes int64 = 1 << 30

// pooledStack is an IO stack and the counters it had when last given back.
type pooledStack struct {
	st    *gpuio.Stack
	pool  *stackPool
	mu    sync.Mutex
	stats gpuio.Stats
	_     [64]byte // keep neighbours' locks off this cache line
}

// OpenFiles opens the files paths (relative to the dataset of m) and the IO stacks over them.
func OpenFiles(m *dataset.Manifest, paths []string, opt Options) (_ *Files, err error) {
	if opt.QueueDepth < 0 || opt.Stacks < 0 {
		return nil, fmt.Errorf("ssd: queue depth %d and IO stacks %d must not be negative", opt.QueueDepth, opt.Stacks)
	}
	if opt.CoalesceGap < -1 {
		return nil, fmt.Errorf("ssd: coalesce gap %d: want bytes >= 0, or -1 to probe the disk", opt.CoalesceGap)
	}
	if a := opt.ReadAlign; a < -1 || (a > 0 && (a < MinReadAlign || a > m.BlockSize || a&(a-1) != 0)) {
		return nil, fmt.Errorf("ssd: read alignment %d: want a power of two from %d to the block size %d, 0 for the block size or -1 for the files' smallest", a, MinReadAlign, m.BlockSize)
	}
	if opt.VerifyReads && opt.ReadAlign > 0 && opt.ReadAlign != m.BlockSize {
		return nil, fmt.Errorf("ssd: read alignment %d with verified reads: checksums cover whole %d-byte blocks", opt.ReadAlign, m.BlockSize)
	}
	f := &Files{paths: append([]string(nil), paths...)}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	align := MinReadAlign // the largest alignment any file needs
	var sizes []int64
	for _, p := range paths {
		// OpenFD refuses paths outside the dataset and anything but a regular file, without
		// blocking on a FIFO.
		direct := true
		fd, size, err := m.OpenFD(p, unix.O_DIRECT)
		if errors.Is(err, unix.EINVAL) { // file systems without O_DIRECT (tmpfs) read through the page cache
			direct = false
			fd, size, err = m.OpenFD(p, 0)
		}
		if err != nil {
			return nil, fmt.Errorf("ssd: %w", err)
		}
		f.fds, sizes = append(f.fds, fd), append(sizes, size)
		if len(f.fds) == 1 {
			f.firstPath, f.firstSize, f.firstDirect = m.Path(p), size, direct
		}
		if direct {
			align = max(align, DirectIOAlign(fd, m.BlockSize))
		}
		if err := checkSize(m, p, size); err != nil {
			return nil, err
		}
		if opt.VerifyReads {
			sums, err := m.LoadChecksums(m.File(p))
			if err != nil {
				return nil, err
			}
			f.checksums = append(f.checksums, sums)
		}
	}
	qd := opt.QueueDepth
	if qd == 0 {
		qd = 128
	}
	var verify func(int, int64, []byte) error
	if opt.VerifyReads {
		verify = func(file int, off int64, block []byte) error { return f.checksums[file].Check(off, block) }
	}
	bs := m.BlockSize
	switch {
	case opt.VerifyReads || opt.ReadAlign == 0:
	case opt.ReadAlign == -1:
		bs = min(align, m.BlockSize)
	case opt.ReadAlign%align != 0:
		return nil, fmt.Errorf("ssd: read alignment %d: the files' direct IO needs multiples of %d", opt.ReadAlign, align)
	default:
		bs = opt.ReadAlign
	}
	f.probeWith = ProbeOptions{Backend: opt.Backend, QueueDepth: qd, Align: bs, Duration: 100 * time.Millisecond}
	gap := opt.CoalesceGap
	if gap == -1 {
		if len(f.fds) == 0 {
			return nil, errors.New("ssd: no file to probe for the coalesce gap")
		}
		if f.probe, err = Probe(f.fds[0], sizes[0], ProbeOptions{Backend: opt.Backend, QueueDepth: qd, Align: bs, Duration: 250 * time.Millisecond}); err != nil {
			return nil, err
		}
		f.probe.File = m.Path(paths[0])
		gap = f.probe.Gap
		if opt.VerifyReads { // bridge whole blocks: every read stays block-aligned anyway
			gap -= gap % m.BlockSize
		}
	}
	budget, err := gpuio.NewBudget(qd)
	if err != nil {
		return nil, fmt.Errorf("ssd: %w", err)
	}
	var names []string
	if opt.Faults != nil {
		for _, p := range paths {
			names = append(names, m.Path(p))
		}
	}
	so := gpuio.Options{Backend: opt.Backend, BlockSize: bs, QueueDepth: qd, CoalesceGap: gap, Verify: verify, SQPoll: opt.SQPoll, Faults: opt.Faults, Paths: names, Budget: budget}
	if err := f.openPools(max(1, opt.Stacks), !opt.SharedStacks, so); err != nil {
		return nil, err
	}
	return f, nil
}

// Index is the position of path in the set, or -1.
func (f *Files) Index(path string) int {
	for i, p := range f.paths {
		if p == path {
			return i
		}
	}
	return -1
}

// Probe is what the disk probe of OpenFiles measured (Options.CoalesceGap -1), or nil.
func (f *Files) Probe() *DiskProbe { return f.probe }

// modelProbe is the probe behind the disk model: OpenFiles's, else one run here once (100 ms a
// read size) over a first file of at least ModelProbeBytes read with O_DIRECT (through the page
// cache a probe would measure memory), else nil. A failed probe is nil: the default model.
func (f *Files) modelProbe() *DiskProbe {
	if f.probe != nil {
		return f.probe
	}
	f.modelOnce.Do(func() {
		if len(f.fds) == 0 || !f.firstDirect || f.firstSize < ModelProbeBytes {
			return
		}
		if p, err := Probe(f.fds[0], f.firstSize, f.probeWith); err == nil {
			p.File = f.firstPath
			f.lazyProbe = p
		}
	})
	return f.lazyProbe
}

// Stacks is the number of IO stacks, every device's together (Devices): how many Reads of
// files on one device each run at once.
func (f *Files) Stacks() int { return len(f.all) }

// Backend says how reads reach the disk ("io_uring" or "pread").
func (f *Files) Backend() gpuio.Backend { return f.backend }

// Read serves reqs (File indexes the set) through one of the IO stacks, waiting for a free one
// (one of each device's stacks, the devices at once, where reqs read files of several: devices.go),
// and returns once every request is in place.
func (f *Files) Read(reqs []gpuio.Request) error { return f.ReadBridging(reqs, 0) }

// ReadBridging is Read with ranges of a file at most gap bytes apart read by one read, the gap
// read (and verified under VerifyReads) and dropped (gpuio.Stack.SubmitBridging).
func (f *Files) ReadBridging(reqs []gpuio.Request, gap int) error { return f.read(reqs, gap, 0) }

// read serves reqs through one IO stack of each device they read, ranges at most gap bytes apart
// read by one read, device destinations moved by the completion kernel on stream
// (gpuio.Stack.CompleteOn).
func (f *Files) read(reqs []gpuio.Request, gap int, stream uintptr) error {
	if len(reqs) == 0 {
		return nil
	}
	if len(f.pools) > 1 {
		return f.readSplit(reqs, gap, stream)
	}
	return f.readOn(f.pools[0], reqs, gap, stream)
}

// readOn serves reqs, all of files of pool, through one of its stacks.
func (f *Files) readOn(pool *stackPool, reqs []gpuio.Request, gap int, stream uintptr) error {
	p := <-pool.stacks
	defer f.give(p)
	st := p.st
	if err := st.SubmitBridging(reqs, gap); err != nil {
		st.CompleteOn(stream) // drain whatever was handed to the kernel before the error
		return f.classify(err)
	}
	return f.classify(st.CompleteOn(stream))
}

// classify makes a read that a file's end cut short a corruption error naming the file: every
// file of the set is at least as long as the manifest says, so it was truncated.
func (f *Files) classify(err error) error {
	var short *gpuio.ShortReadError
	if errors.As(err, &short) && short.File >= 0 && short.File < len(f.paths) {
		return fmt.Errorf("ssd: %s ends at byte %d, before the bytes a read needs (truncated?): %w: %w", f.paths[short.File], short.Offset+int64(short.Got), err, dataset.ErrCorrupt)
	}
	return err
}

// ReadToDevice serves reqs whose destinations are device memory: the completion kernel moves
// them on stream. It returns once every read is reaped and its kernel queued.
func (f *Files) ReadToDevice(reqs []gpuio.Request, stream uintptr) error {
	return f.read(reqs, 0, stream)
}

func (f *Files) give(p *pooledStack) {
	p.mu.Lock()
	p.stats = p.st.Stats()
	p.mu.Unlock()
	p.pool.stacks <- p
}

// Stats sums the counters of every IO stack, as of each one's last Read.
func (f *Files) Stats() gpuio.Stats {
	sum := gpuio.Stats{Backend: f.backend}
	for _, p := range f.all {
		p.mu.Lock()
		io := p.stats
		p.mu.Unlock()
		sum.Add(io)
	}
	return sum
}

// AttachDevice lets every IO stack complete reads into memory of CUDA device dev with kernels of
// maxBlocks blocks. No Read may run meanwhile.
func (f *Files) AttachDevice(dev, maxBlocks int) error {
	var stacks []*pooledStack
	for _, pool := range f.pools {
		for range cap(pool.stacks) {
			stacks = append(stacks, <-pool.stacks)
		}
	}
	var err error
	for _, p := range stacks {
		if err == nil && p.st.Device() < 0 {
			err = p.st.AttachDevice(dev, maxBlocks)
		}
		f.give(p)
	}
	if err != nil {
		return fmt.Errorf("ssd: %w", err)
	}
	return nil
}

// Close closes the IO stacks and the files. No Read may run meanwhile.
func (f *Files) Close() error {
	for _, pool := range f.pools {
		close(pool.stacks)
		for p := range pool.stacks {
			p.st.Close()
		}
	}
	f.pools = nil // f.all stays: Stats still answers after Close
	for _, fd := range f.fds {
		unix.Close(fd)
	}
	f.fds = nil
	return nil
}

// Tier is the SSD tier of one feature: its stripes are files of a Files set, found by path.
type Tier struct {
	spec    *dataset.FeatureSpec
	files   *Files
	nodes   int64
	stripes []int // index in files of each of the feature's stripes, in order
	fill    fillCounters
}

var _ tiers.Tier = (*Tier)(nil)

// NewTier serves the feature spec, of rows rows, from files, which must hold every stripe of it
// (spec.Files; a stripe it lacks fails every read of its rows naming file -1).
func NewTier(spec *dataset.FeatureSpec, rows int64, files *Files) *Tier {
	t := &Tier{spec: spec, files: files, nodes: rows, stripes: make([]int, len(spec.Files))}
	for k, p := range spec.Files {
		t.stripes[k] = files.Index(p)
	}
	return t
}

// Kind is tiers.SSD.
func (t *Tier) Kind() tiers.Kind { return tiers.SSD }

// Lookup sets slots[i] = ids[i]: the tier holds every row.
func (t *Tier) Lookup(ids []int64, slots []int64) int {
	copy(slots, ids)
	return len(ids)
}

// Fill does nothing: the tier holds every row.
func (t *Tier) Fill([]int64, tiers.Source) error { return nil }

// CopyToHost reads the rows of node ids slots[k] into row pos[k] of dst.
func (t *Tier) CopyToHost(slots []int64, pos []int64, dst []byte) error {
	rb := t.spec.RowBytes
	reqs := make([]gpuio.Request, len(slots))
	for k, id := range slots {
		file, off := t.spec.Locate(id)
		i := pos[k]
		reqs[k] = gpuio.Request{File: t.stripes[file], Offset: off, Length: int(rb), Dst: dst[i*rb : (i+1)*rb]}
	}
	if err := t.files.Read(reqs); err != nil {
		return fmt.Errorf("ssd tier: %w", err)
	}
	return nil
}

// EnqueueToDevice reads the rows of node ids c.Slots into pinned staging and has the completion
// kernel move them to rows c.Pos of c.Dst on c.Stream; the pairs must be in host memory.
func (t *Tier) EnqueueToDevice(c tiers.DeviceCopy) error {
	if c.N == 0 {
		return nil
	}
	if len(c.Slots) < c.N || len(c.Pos) < c.N {
		return fmt.Errorf("ssd tier: device copy of %d rows needs its ids and positions in host memory", c.N)
	}
	rb := t.spec.RowBytes
	reqs := make([]gpuio.Request, c.N)
	for k, id := range c.Slots[:c.N] {
		file, off := t.spec.Locate(id)
		reqs[k] = gpuio.Request{File: t.stripes[file], Offset: off, Length: int(rb), DevDst: c.Dst + uintptr(c.Pos[k]*rb)}
	}
	if err := t.files.ReadToDevice(reqs, c.Stream); err != nil {
		return fmt.Errorf("ssd tier: %w", err)
	}
	return nil
}

// Rows is the dataset's node count.
func (t *Tier) Rows() int64 { return t.nodes }

// Bytes is the size of the feature's stripes.
func (t *Tier) Bytes() int64 {
	var b int64
	for k := range t.spec.Files {
		b += t.spec.ContentBytesOfFile(k)
	}
	return b
}

// Ranges calls fn(0, nodes) once.
func (t *Tier) Ranges(fn func(first, count int64) bool) {
	if t.nodes > 0 {
		fn(0, t.nodes)
	}
}

// DirectIOAlign is the alignment O_DIRECT reads of fd need: statx's STATX_DIOALIGN (the larger
// of the offset and memory alignments), else the logical block size of the file's device from
// sysfs, else fallback.
func DirectIOAlign(fd, fallback int) int {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_DIOALIGN, &stx); err == nil &&
		stx.Mask&unix.STATX_DIOALIGN != 0 && stx.Dio_offset_align > 0 {
		return int(max(stx.Dio_offset_align, stx.Dio_mem_align))
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil {
		dev := fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
		for _, p := range []string{dev + "/queue/logical_block_size", dev + "/../queue/logical_block_size"} { // a disk, a partition
			if data, err := os.ReadFile(p); err == nil {
				if n, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && n > 0 {
					return n
				}
			}
		}
	}
	return fallback
}

// checkSize fails, as corruption, when the file of path p (a regular file of size bytes) is
// shorter than the manifest says.
func checkSize(m *dataset.Manifest, p string, size int64) error {
	mf := m.File(p)
	if mf == nil {
		return nil
	}
	if size < mf.Bytes {
		return fmt.Errorf("ssd: %s has %d bytes, the manifest says %d (truncated): %w", m.Path(p), size, mf.Bytes, dataset.ErrCorrupt)
	}
	return nil
}
