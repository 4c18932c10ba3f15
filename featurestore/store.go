// Package featurestore is the store every front end calls: open a dataset, place the hottest rows
// in faster tiers, gather feature rows by node id, sample neighborhoods, report statistics.
//
// A Store is a value (no globals): several may be open at once, on the same dataset or not. Its
// methods are safe for concurrent use, except that Place waits for running gathers and blocks new
// ones while it refills the host tier.
//
// A Store holds an ordered list of tiers (tiers.Tier): the GPU tier (tiers/gpu) when a GPU
// budget is set and a GPU is there, the host tier (tiers/host, static or SIEVE), and the SSD
// tier (tiers/ssd), which holds every row. A gather is one path: split the ids once into
// per-tier (slot, position) lists, then each tier moves its rows to the sink, a host buffer
// (Gather) or a device buffer on a stream (GatherDevice, GatherDeviceIDs).
//
// Memory a Store holds, all bounded by Options: the host tier (HostCacheBytes), the GPU tier
// (GPUCacheBytes of device memory, plus 16 bytes a row for its index in host and in device
// memory, and the same in device memory for the static host tier's index when the GPU path
// runs), the IO stacks' staging (MaxConcurrentIO × StagingBytes), and the topology when it is
// held in memory and labels (TopologyMemoryBytes); nothing grows with the dataset beyond those.
// A gather's transient memory is a few tens of bytes an id of at most MaxGatherChunk ids (larger
// batches go in chunks), besides the caller's ids and destination.
package featurestore

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/internal/sysinfo"
	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/tiers/host"
	"github.com/tierfs/tierfs/tiers/ssd"
	"github.com/tierfs/tierfs/topology"
)

// Store serves one feature of one dataset.
type Store struct {
	m    *dataset.Manifest
	spec *dataset.FeatureSpec
	opt  Options

	files      *ssd.Files // feature stripes, then indptr and indices, then labels, then splits, then the other features' stripes
	indptrFile int        // index of indptr in files, -1 without topology
	ssd        *ssd.Tier
	others     map[string]*otherFeature // the dataset's other features, by name (GatherFeature)

	graph  topology.Graph // nil without topology
	labels []int64        // in memory when they fit TopologyMemoryBytes, else nil

	place sync.RWMutex // Place holds it for writing; gathers for reading
	// tierGen counts changes of the memory tiers' contents (fills, the GPU tier's start); it
	// changes under place held for writing, so a reader holding place sees a stable value.
	tierGen uint64
	// host is the host tier: *host.Cache (static) or *host.Sieve (HostPolicy "sieve").
	host tiers.Tier

	gpu    *gpuPath // nil until the GPU path starts
	gpuErr error    // why it could not start, once tried

	deferredMu  sync.Mutex
	deferredErr error // found on the GPU after a device gather returned; the next one returns it

	faults *gpuio.Faults // TIERFS_FAULTS: injected into every IO stack's reads; nil: none

	stats    counters
	guard    callGuard // the calls running; Close waits for them
	closers  []func()
	closerMu sync.Mutex
}

// ErrClosed is returned by calls on a closed Store.
var ErrClosed = errors.New("featurestore: store is closed")

// Open opens the dataset in dir and places its hottest rows in the memory tiers.
func Open(dir string, opt Options) (_ *Store, err error) {
	if err := opt.EnsureDefaults().Validate(); err != nil {
		return nil, err
	}
	if err := checkStaging(&opt); err != nil {
		return nil, err
	}
	m, err := dataset.Load(dir)
	if err != nil {
		return nil, err
	}
	spec, err := m.Feature(opt.Feature)
	if err != nil {
		return nil, err
	}
	s := &Store{m: m, spec: spec, opt: opt, indptrFile: -1}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.host, err = newHostTier(opt.HostPolicy, spec.RowBytes, opt.HostCacheBytes, opt.CopyWorkers); err != nil {
		return nil, err
	}
	paths := append([]string(nil), spec.Files...)
	if et := m.Edges(); et != nil {
		s.indptrFile = len(paths)
		paths = append(paths, et.Indptr.File, et.Indices.File)
	}
	if l := m.Nodes().Labels; l != nil {
		paths = append(paths, l.File)
	}
	for _, name := range s.SplitNames() { // splits are read through the stacks too, so verified
		paths = append(paths, m.Nodes().Splits[name].File)
	}
	othersFirst := len(paths)
	paths = append(paths, s.otherFeaturePaths()...)
	// TIERFS_FAULTS (gpuio.ParseFaults) injects IO faults into the store's reads: a seam for
	// tests through every layer (C ABI, Python); unset in normal use.
	// Planned epochs' packed files get the same injector (rules pick files by path=).
	if s.faults, err = gpuio.ParseFaults(os.Getenv("TIERFS_FAULTS")); err != nil {
		return nil, fmt.Errorf("featurestore: TIERFS_FAULTS: %w", err)
	}
	if s.files, err = ssd.OpenFiles(m, paths, ssd.Options{Backend: opt.IOBackend, QueueDepth: opt.QueueDepth, Stacks: opt.MaxConcurrentIO, VerifyReads: opt.VerifyReads,
		CoalesceGap: opt.CoalesceGap, ReadAlign: opt.ReadAlign, Faults: s.faults}); err != nil {
		return nil, fmt.Errorf("featurestore: %w", err)
	}
	s.ssd = ssd.NewTier(spec, m.Nodes().Count, s.files)
	s.openOtherFeatures(othersFirst)
	if err := s.openGraph(); err != nil {
		return nil, err
	}
	if err := s.loadLabels(); err != nil {
		return nil, err
	}
	if opt.GPUCacheBytes > 0 || opt.GPUTopology != "" {
		if err := s.startGPU(); err != nil {
			return nil, err
		}
	}
	if err := s.Place(opt.Hotness); err != nil {
		return nil, err
	}
	return s, nil
}

// stagingBytesPerRead is the IO stacks' staging per read in flight (gpuio's default largest read).
const stagingBytesPerRead = 128 << 10

// checkStaging refuses IO stacks whose staging (mapped at Open: stacks × queue depth × 128 KiB)
// would take more than half the memory the machine has available, naming both options.
func checkStaging(opt *Options) error {
	avail, err := sysinfo.MemAvailable()
	if err != nil {
		return nil // not Linux's /proc: nothing to check against
	}
	need := int64(opt.MaxConcurrentIO) * int64(opt.QueueDepth) * stagingBytesPerRead
	if one := int64(opt.QueueDepth) * stagingBytesPerRead; one > avail/2 { // even one stack is too big
		return &OptionError{Option: "queue_depth", Value: opt.QueueDepth,
			Want: fmt.Sprintf("reads in flight whose staging (queue_depth %d × 128 KiB = %d bytes a stack) fits half the %d bytes of memory available", opt.QueueDepth, one, avail)}
	}
	if need > avail/2 {
		return &OptionError{Option: "max_concurrent_io", Value: opt.MaxConcurrentIO,
			Want: fmt.Sprintf("IO stacks whose staging (max_concurrent_io %d × queue_depth %d × 128 KiB = %d bytes) fits half the %d bytes of memory available", opt.MaxConcurrentIO, opt.QueueDepth, need, avail)}
	}
	return nil
}

// read serves requests of any file of the store through the IO stacks.
func (s *Store) read(reqs []gpuio.Request) error { return s.files.Read(reqs) }

// tierList is the store's tiers, fastest first; the caller holds the place lock.
func (s *Store) tierList() []tiers.Tier {
	ts := make([]tiers.Tier, 0, 3)
	if g := s.gpu; g != nil && g.tier.Capacity() > 0 {
		ts = append(ts, g.tier)
	}
	return append(ts, s.host, s.ssd)
}

// heldTiers is tiers with every tier that changes under gathers held (tiers.Holder); release
// undoes that.
func heldTiers(ts []tiers.Tier) (held []tiers.Tier, release func()) {
	held = slices.Clone(ts)
	var releases []func()
	for i, t := range held {
		if h, ok := t.(tiers.Holder); ok {
			v, rel := h.Hold()
			held[i] = v
			releases = append(releases, rel)
		}
	}
	return held, func() {
		for _, rel := range releases {
			rel()
		}
	}
}

// Manifest is the dataset's manifest.
func (s *Store) Manifest() *dataset.Manifest { return s.m }

// Feature is the layout of the feature this store serves.
func (s *Store) Feature() *dataset.FeatureSpec { return s.spec }

// NumNodes is the number of nodes (rows).
func (s *Store) NumNodes() int64 { return s.m.Nodes().Count }

// RowBytes is the size of one feature row.
func (s *Store) RowBytes() int64 { return s.spec.RowBytes }

// Graph is the topology, or nil when the dataset has none.
func (s *Store) Graph() topology.Graph { return s.graph }

// IOBackend says how disk reads are served ("io_uring" or "pread").
func (s *Store) IOBackend() gpuio.Backend { return s.files.Backend() }

// Host is the static host tier, or nil under HostPolicy "sieve" (see HostTier).
func (s *Store) Host() *host.Cache {
	c, _ := s.host.(*host.Cache)
	return c
}

// HostTier is the host tier as the store serves it: the static cache, or the SIEVE cache when
// Options.HostPolicy is "sieve".
func (s *Store) HostTier() tiers.Tier { return s.host }

// enter guards a call against a concurrent Close; the returned func ends the call. Calls may
// nest; once Close has begun, enter returns ErrClosed.
func (s *Store) enter() (func(), error) {
	if !s.guard.enter() {
		return nil, ErrClosed
	}
	return s.guard.leave, nil
}

// OnClose registers fn to run at the start of Close, before it waits for running calls (a mount
// of the store unmounts there).
func (s *Store) OnClose(fn func()) {
	s.closerMu.Lock()
	s.closers = append(s.closers, fn)
	s.closerMu.Unlock()
}

// Close runs the OnClose functions, waits for running calls, then releases memory and files.
// Later calls get ErrClosed.
func (s *Store) Close() error {
	s.closerMu.Lock()
	closers := s.closers
	s.closers = nil
	s.closerMu.Unlock()
	for _, fn := range closers {
		fn()
	}
	if !s.guard.close() { // waits for running calls; false once another Close has done the work
		return nil
	}
	defer s.guard.released()
	s.stopGPU()
	if c, ok := s.host.(interface{ Close() error }); ok {
		c.Close()
	}
	if s.files != nil {
		s.files.Close()
	}
	return nil
}
