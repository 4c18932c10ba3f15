// Package featurestore is the store every front end calls: open a dataset, place the hottest rows
// in faster tiers, gather feature rows by node id, sample neighborhoods, report statistics.
//
// A Store is a value (no globals): several may be open at once, on the same dataset or not. Its
// methods are safe for concurrent use, except that Place waits for running gathers and blocks new
// ones while it refills the host tier.
//
// Memory a Store holds, all bounded by Options: the host tier (HostCacheBytes), the IO stacks'
// staging (MaxConcurrentIO × StagingBytes), and the topology when it is held in memory
// and labels (TopologyMemoryBytes); nothing grows with the dataset beyond those, except the per-batch buffers
// a call needs for its own ids.
package featurestore

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/tiers/host"
	"github.com/tierfs/tierfs/topology"
)

// Store serves one feature of one dataset.
type Store struct {
	m    *dataset.Manifest
	spec *dataset.FeatureSpec
	opt  Options

	paths      []string // files read through the IO stacks: feature stripes, then indptr and indices, then labels
	fds        []int    // paths opened with O_DIRECT
	indptrFile int      // index of indptr in fds, -1 without topology
	stacks     chan *gpuio.Stack
	backend    gpuio.Backend
	checksums  []*dataset.Checksums // per fd, when VerifyReads

	graph  topology.Graph // nil without topology
	labels []int64        // in memory when they fit TopologyMemoryBytes, else nil

	place sync.RWMutex // Place holds it for writing; gathers for reading
	host  *host.Cache
	dyn   *host.Sieve // the host tier under HostPolicy "sieve" (host then stays empty); nil when static

	gpu    *gpuState // nil until the GPU path starts
	gpuErr error     // why it could not start, once tried

	stats    counters
	guard    callGuard // the calls running; Close waits for them
	closers  []func()
	closerMu sync.Mutex
}

// ErrClosed is returned by calls on a closed Store.
var ErrClosed = errors.New("featurestore: store is closed")

// Open opens the dataset in dir and places its hottest rows in the host tier.
func Open(dir string, opt Options) (_ *Store, err error) {
	if err := opt.EnsureDefaults().Validate(); err != nil {
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
	s := &Store{m: m, spec: spec, opt: opt, indptrFile: -1, host: host.New(spec.RowBytes)}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.dyn, err = newDynamicHost(opt.HostPolicy, spec.RowBytes, opt.HostCacheBytes); err != nil {
		return nil, err
	}
	s.paths = append([]string(nil), spec.Files...)
	if et := m.Edges(); et != nil {
		s.indptrFile = len(s.paths)
		s.paths = append(s.paths, et.Indptr.File, et.Indices.File)
	}
	if l := m.Nodes().Labels; l != nil {
		s.paths = append(s.paths, l.File)
	}
	for _, p := range s.paths {
		fd, err := unix.Open(m.Path(p), unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.EINVAL) { // file systems without O_DIRECT (tmpfs) read through the page cache
			fd, err = unix.Open(m.Path(p), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			return nil, fmt.Errorf("featurestore: open %s: %w", m.Path(p), &os.PathError{Op: "open", Path: m.Path(p), Err: err})
		}
		s.fds = append(s.fds, fd)
		if opt.VerifyReads {
			sums, err := m.LoadChecksums(m.File(p))
			if err != nil {
				return nil, err
			}
			s.checksums = append(s.checksums, sums)
		}
	}
	if err := s.openStacks(); err != nil {
		return nil, err
	}
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

func (s *Store) openStacks() error {
	qd := s.opt.QueueDepth
	if qd == 0 {
		qd = 128
	}
	var verify func(int, int64, []byte) error
	if s.opt.VerifyReads {
		verify = func(file int, off int64, block []byte) error { return s.checksums[file].Check(off, block) }
	}
	s.stacks = make(chan *gpuio.Stack, s.opt.MaxConcurrentIO)
	for range s.opt.MaxConcurrentIO {
		st, err := gpuio.Open(s.fds, gpuio.Options{Backend: s.opt.IOBackend, BlockSize: s.m.BlockSize, QueueDepth: qd, Verify: verify})
		if err != nil {
			return fmt.Errorf("featurestore: %w", err)
		}
		s.backend = st.Backend()
		s.stacks <- st
	}
	return nil
}

// read serves requests through one of the store's IO stacks, waiting for a free one.
func (s *Store) read(reqs []gpuio.Request) error {
	if len(reqs) == 0 {
		return nil
	}
	st := <-s.stacks
	defer func() {
		s.stats.noteIO(st)
		s.stacks <- st
	}()
	if err := st.Submit(reqs); err != nil {
		st.Complete() // drain whatever was handed to the kernel before the error
		return err
	}
	return st.Complete()
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
func (s *Store) IOBackend() gpuio.Backend { return s.backend }

// Host is the host tier.
func (s *Store) Host() *host.Cache { return s.host }

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
	if s.stacks != nil {
		close(s.stacks)
		for st := range s.stacks {
			st.Close()
		}
	}
	s.host.Close()
	if s.dyn != nil {
		s.dyn.Close()
	}
	for _, fd := range s.fds {
		unix.Close(fd)
	}
	return nil
}
