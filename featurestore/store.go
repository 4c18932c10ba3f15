// Package featurestore is the store every front end calls: open a dataset, place the hottest rows
// in faster tiers, gather feature rows by node id, sample neighborhoods, report statistics.
//
// OpenSession opens a dataset as a graph session (Session): its files and IO stacks once, every
// edge type's topology, every node type's labels and splits, and one Store — a tier stack — per
// node type with features; the typed calls (Session.Gather, Labels, NewSampler, ...) name
// node types and edge types (src:rel:dst) and take ids local to their type. Open returns the
// stack of a one-type dataset (the first type with features of a several-type one) and owns its
// session: a homogeneous dataset is the one-type case of the same code.
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
// Memory a session holds, all bounded by Options (the tier budgets split over its stacks by
// feature bytes): the host tier (HostCacheBytes), the GPU tier
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
	"slices"
	"sync"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/tiers/host"
	"github.com/tierfs/tierfs/tiers/ssd"
	"github.com/tierfs/tierfs/topology"
)

// Store is one tier stack of a graph session (Session): it serves one feature of one node type
// through its tiers, and answers for that type (its labels, splits, and — in a dataset of one
// node and one edge type — its topology). Open returns the stack of a one-type dataset, which
// owns its session.
type Store struct {
	sess *Session
	nt   int  // its node type, an index into sess.nodes
	owns bool // Close closes the session (the store Open returned)
	m    *dataset.Manifest
	spec *dataset.FeatureSpec
	opt  Options

	files *ssd.Files // the session's
	// stack is the store's tiers, fastest first (stack.go; setTier changes it): the memory tiers
	// its budgets ask for (the host tier: *host.Cache, static, or *host.Sieve under HostPolicy
	// "sieve"), then ssd. It changes under place held for writing; nil without a feature.
	stack []tiers.Tier
	// ssd is the stack's last tier, the session's: the source every fill reads through.
	ssd *ssd.Tier

	graph  topology.Graph // the session's one edge type when it joins this type to itself; else nil
	labels []int64        // the session's labels of this type when in memory, else nil

	place sync.RWMutex // Place holds it for writing; gathers for reading
	// tierGen counts changes of the memory tiers' contents (fills); it
	// changes under place held for writing, so a reader holding place sees a stable value.
	tierGen uint64

	gpu    *gpuPath // nil until the GPU path starts; the stack lists its tier when it has rows
	gpuErr error    // why it could not start, once tried

	deferredMu  sync.Mutex
	deferredErr error // found on the GPU after a device gather returned; the next one returns it

	stats    counters
	guard    callGuard // the calls running; Close waits for them
	closers  []func()
	closerMu sync.Mutex
}

// ErrClosed is returned by calls on a closed Store.
var ErrClosed = errors.New("featurestore: store is closed")

// Open opens the dataset in dir and places its hottest rows in the memory tiers: the graph
// session of the dataset and its tier stack of the first node type with features (the only one
// of a one-type dataset). A dataset without node features opens as a store of its first node
// type without tiers: topology, labels, splits and sampling answer, gathers of its (absent)
// feature are errors wrapping dataset.ErrFeatureNotFound. Closing the store closes the session.
func Open(dir string, opt Options) (*Store, error) {
	ss, err := OpenSession(dir, opt)
	if err != nil {
		return nil, err
	}
	for _, n := range ss.nodes {
		if n.stack != nil {
			n.stack.owns = true
			return n.stack, nil
		}
	}
	s, err := ss.featurelessStack(0, opt)
	if err != nil {
		ss.Close()
		return nil, err
	}
	return s, nil
}

// featurelessStack is the store Open returns for a dataset without node features (PyG's Data
// with edge_index and no x): node type nt's topology, labels and splits, sampling, and the edge
// features, with no tiers; the calls that read or place the rows of its feature return
// needFeature's error. It owns the session.
func (ss *Session) featurelessStack(nt int, opt Options) (*Store, error) {
	s := &Store{sess: ss, nt: nt, owns: true, m: ss.m, spec: &dataset.FeatureSpec{}, opt: opt, files: ss.files, labels: ss.nodes[nt].labels}
	if err := s.needFeature("Open with a hotness or a saved placement"); err != nil && (opt.Hotness != nil || opt.Placement != nil) {
		return nil, err
	}
	if opt.GPUCacheBytes > 0 || opt.GPUTopology != "" {
		s.gpuErr = fmt.Errorf("featurestore: dataset %s has no node features to cache on the GPU", ss.m.Dir())
	}
	if len(ss.edges) == 1 && ss.edges[0].src == nt && ss.edges[0].dst == nt {
		s.graph = ss.edges[0].graph
	}
	return s, nil
}

// needFeature is nil for a store serving a feature, and for the store of a dataset without node
// features (featurelessStack) an error naming call and the dataset, wrapping
// dataset.ErrFeatureNotFound.
func (s *Store) needFeature(call string) error {
	if s.ssd != nil {
		return nil
	}
	return fmt.Errorf("featurestore: %s: dataset %s has no node features (it holds topology, labels and splits only): %w", call, s.m.Dir(), dataset.ErrFeatureNotFound)
}

// openStack makes the tier stack of node type nt serving feature spec with opt's budgets, and
// places it.
func (ss *Session) openStack(nt int, spec *dataset.FeatureSpec, opt Options) (_ *Store, err error) {
	s := &Store{sess: ss, nt: nt, m: ss.m, spec: spec, opt: opt, files: ss.files, labels: ss.nodes[nt].labels}
	defer func() {
		if err != nil {
			s.closeStack()
		}
	}()
	if err := s.checkPlacement(); err != nil {
		return nil, err
	}
	if len(ss.edges) == 1 && ss.edges[0].src == nt && ss.edges[0].dst == nt {
		s.graph = ss.edges[0].graph
		if err := s.cachePlanTopology(opt.Placement); err != nil {
			return nil, err
		}
	}
	h, err := newHostTier(opt.HostPolicy, spec.RowBytes, opt.HostCacheBytes, opt.CopyWorkers)
	if err != nil {
		return nil, err
	}
	s.setTier(tiers.Host, h)
	s.ssd = ss.features[featureKey(false, ss.m.NodeTypes[nt].Name, spec.Name)]
	s.setTier(tiers.SSD, s.ssd)
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

// Session is the graph session the store is a tier stack of.
func (s *Store) Session() *Session { return s.sess }

// nodeType is the store's node type.
func (s *Store) nodeType() *dataset.NodeType { return &s.m.NodeTypes[s.nt] }

// NodeType is the name of the stack's node type: what the session's typed calls name it by.
func (s *Store) NodeType() string { return s.nodeType().Name }

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
func (s *Store) NumNodes() int64 { return s.nodeType().Count }

// RowBytes is the size of one feature row.
func (s *Store) RowBytes() int64 { return s.spec.RowBytes }

// Graph is the topology, or nil when the dataset has none.
func (s *Store) Graph() topology.Graph { return s.graph }

// IOBackend says how disk reads are served ("io_uring" or "pread").
func (s *Store) IOBackend() gpuio.Backend { return s.files.Backend() }

// Host is the static host tier, or nil under HostPolicy "sieve" (see HostTier).
func (s *Store) Host() *host.Cache {
	c, _ := s.tier(tiers.Host).(*host.Cache)
	return c
}

// HostTier is the host tier as the store serves it: the static cache, or the SIEVE cache when
// Options.HostPolicy is "sieve".
func (s *Store) HostTier() tiers.Tier { return s.tier(tiers.Host) }

// enter guards a call against a concurrent Close; the returned func ends the call. Calls may
// nest; once Close has begun, enter returns ErrClosed.
func (s *Store) enter() (func(), error) {
	if !s.guard.enter() {
		return nil, ErrClosed
	}
	return s.guard.leave, nil
}

// enterFeature is needFeature(call) and enter: a call of a store with node features.
func (s *Store) enterFeature(call string) (func(), error) {
	if err := s.needFeature(call); err != nil {
		return nil, err
	}
	return s.enter()
}

// OnClose registers fn to run at the start of Close, before it waits for running calls (a mount
// of the store unmounts there).
func (s *Store) OnClose(fn func()) {
	s.closerMu.Lock()
	s.closers = append(s.closers, fn)
	s.closerMu.Unlock()
}

// Close closes the store's session when Open returned the store (a stack of a session opened
// with OpenSession closes with the session, and Close does nothing to it). Later calls get
// ErrClosed.
func (s *Store) Close() error {
	if s.owns {
		return s.sess.Close()
	}
	return nil
}

// closeStack runs the OnClose functions, waits for running calls, then releases the stack's
// memory. Later calls get ErrClosed.
func (s *Store) closeStack() {
	s.closerMu.Lock()
	closers := s.closers
	s.closers = nil
	s.closerMu.Unlock()
	for _, fn := range closers {
		fn()
	}
	if !s.guard.close() { // waits for running calls; false once another Close has done the work
		return
	}
	defer s.guard.released()
	s.stopGPU()
	for _, t := range s.stack {
		if t != tiers.Tier(s.ssd) { // the session's: it closes with the session
			closeTier(t)
		}
	}
}
