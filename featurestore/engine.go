package featurestore

import (
	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/tiers/ssd"
)

// StoreInternals is what an engine built above the store uses of a tier stack (planned/, the
// planned-epoch engine, as placement uses placement.Store): its tiers held still with their fill
// generation (Snapshot), its feature's SSD tier (files, scan, disk model), its placement by
// counts, a device gather through another last tier, the host samplers and the checks of their
// inputs, and the close guard. Applications use the Store's own calls; these skip no check an
// engine does not make itself, and are safe for concurrent use as the Store's are.
type StoreInternals struct{ s *Store }

// Internals are the store's calls for an engine built above it (StoreInternals).
func (s *Store) Internals() StoreInternals { return StoreInternals{s} }

// SessionInternals is what an engine built above the store uses of a graph session, as
// StoreInternals of a stack: node and edge type indexes, the stacks, the options (the fault
// injector among them), the host samplers and the checks of their inputs, the close guard.
type SessionInternals struct{ ss *Session }

// Internals are the session's calls for an engine built above it (SessionInternals).
func (ss *Session) Internals() SessionInternals { return SessionInternals{ss} }

// Enter guards an engine's call against a concurrent Close of the store; the returned func ends
// the call. Calls may nest; once Close has begun, Enter returns ErrClosed.
func (x StoreInternals) Enter() (done func(), err error) { return x.s.enter() }

// NodeTypeIndex is the store's node type, an index into its session's node types (manifest
// order).
func (x StoreInternals) NodeTypeIndex() int { return x.s.nt }

// Options are the store's options (its budgets its share of the session's).
func (x StoreInternals) Options() Options { return x.s.opt }

// SSD is the SSD tier, the dataset's files of the store's feature (nil for a dataset without
// node features): RandomReads, PlanScan, Scan, DiskModel and CopyToHost read it.
func (x StoreInternals) SSD() *ssd.Tier { return x.s.ssd }

// TierSnapshot is a stack's tiers held still: the place lock held for reading and every tier
// that changes under gathers held (tiers.Holder) until Release. Nothing is placed meanwhile, so
// keep it for the length of a gather, and take no second snapshot of the same stack while
// holding one (a Place waiting between the two would hold both up).
type TierSnapshot struct {
	// Tiers are the stack's tiers, fastest first, the SSD tier last (none for a dataset
	// without node features); their slots stay valid until Release.
	Tiers []tiers.Tier
	// Gen counts the fills of the memory tiers: a snapshot of another Gen may hold other rows.
	Gen     uint64
	s       *Store
	release func()
}

// Snapshot holds the stack's tiers still (TierSnapshot) until Release.
func (x StoreInternals) Snapshot() *TierSnapshot {
	x.s.place.RLock()
	ts, release := heldTiers(x.s.tierList())
	return &TierSnapshot{Tiers: ts, Gen: x.s.tierGen, s: x.s, release: release}
}

// Release lets the tiers change again; the snapshot is not used after.
func (t *TierSnapshot) Release() {
	t.release()
	t.s.place.RUnlock()
}

// TierSplit is ids divided among a snapshot's tiers: every id goes to the first tier holding it.
type TierSplit struct{ sp *split }

// Split divides ids among the snapshot's tiers (with the store's CopyWorkers), position k of
// ids written as posOf[k] (posOf nil: k).
func (t *TierSnapshot) Split(ids, posOf []int64) TierSplit {
	return TierSplit{splitIDs(ids, t.Tiers, make([]int64, 2*len(ids)), posOf, t.s.opt.CopyWorkers)}
}

// Count is how many ids tier k serves.
func (sp TierSplit) Count(k int) int { return sp.sp.count[k] }

// Slots are tier k's slots of its ids; Pos their positions.
func (sp TierSplit) Slots(k int) []int64 { return sp.sp.slots(k) }
func (sp TierSplit) Pos(k int) []int64   { return sp.sp.pos(k) }

// PlaceCounts is Place(counts) with rows of equal count ranked as Place(nil) ranks them (the
// applied placement's memory rows first, in its order; else by in-degree; else by how often the
// type's nodes are neighbors), not by id: rows that the counted batches read equally often are
// interchangeable for those batches, and the prior picks the ones other batches read more.
func (x StoreInternals) PlaceCounts(counts []uint32) error { return x.s.placeCounts(counts) }

// StartGPU starts the store's GPU path if a device call has not yet (no change of the tiers'
// contents) and answers its CUDA device and the thread blocks its kernels launch; ErrNoGPU
// without one.
func (x StoreInternals) StartGPU() (dev, blocks int, err error) {
	g, err := x.s.ensureGPU()
	if err != nil {
		return -1, 0, err
	}
	return g.dev, g.blocks, nil
}

// GatherDeviceVia is GatherDevice of ids with last serving what the memory tiers miss, in place
// of the SSD tier (a planned batch's packed rows; a tiers.CallerLeaver leaves some to the
// caller). check runs under the place lock, with the memory tiers' generation, before any id is
// split: its error stops the gather.
func (x StoreInternals) GatherDeviceVia(ids []int64, dst, stream uintptr, last tiers.Tier, check func(gen uint64) error) error {
	return x.s.gatherDeviceVia(ids, 0, len(ids), dst, stream, &deviceVia{last: last, check: func() error { return check(x.s.tierGen) }})
}

// Enter guards an engine's call against a concurrent Close of the session, as
// StoreInternals.Enter.
func (x SessionInternals) Enter() (done func(), err error) { return x.ss.enter() }

// Options are the session's options (Options.Faults its fault injector: an engine's own IO
// stacks inject it too).
func (x SessionInternals) Options() Options { return x.ss.opt }

// NodeTypeIndex is the index of node type name ("" for the only one) in the session's node
// types (manifest order); an unknown name is dataset.ErrTypeNotFound.
func (x SessionInternals) NodeTypeIndex(name string) (int, error) { return x.ss.nodeTypeOf(name) }

// EdgeTypeIndex is the index of edge type key ("src:rel:dst", "" for the only one) in the
// session's edge types (manifest order); an unknown key is dataset.ErrTypeNotFound.
func (x SessionInternals) EdgeTypeIndex(key string) (int, error) { return x.ss.edgeTypeOf(key) }

// EdgeTypeEnds are the node types (indexes, as NodeTypeIndex) of edge type e's src and dst.
func (x SessionInternals) EdgeTypeEnds(e int) (src, dst int) {
	return x.ss.edges[e].src, x.ss.edges[e].dst
}

// Stacks are the tier stacks of the node types with features, in node type order.
func (x SessionInternals) Stacks() []*Store {
	var out []*Store
	for _, n := range x.ss.nodes {
		if n.stack != nil {
			out = append(out, n.stack)
		}
	}
	return out
}

// CheckIDs checks ids of node type nt (its what names them in errors): ErrIDOutOfRange for an
// id outside [0, count).
func (x SessionInternals) CheckIDs(nt int, what string, ids []int64) error {
	return x.ss.checkTypedIDs(nt, what, ids)
}

// HostSampler is sp with the seed seed and workers goroutines, its calls counting from none,
// drawing on the host topology where it is in memory, even with Options.GPUTopology (the same
// samples: the GPU draws what the host would): for an engine that draws several batches at once,
// each on its goroutines, where the GPU sampler draws one hop at a time for every caller.
func (x SessionInternals) HostSampler(sp *Sampler, seed uint64, workers int) *Sampler {
	opt := sp.opt
	opt.Seed, opt.Workers = seed, workers
	return &Sampler{ss: sp.ss, opt: opt, fanouts: sp.fanouts, weights: sp.weights, weight: sp.weight, times: sp.times, time: sp.time, tstrat: sp.tstrat, onHost: true}
}

// CheckSeedEdges checks seed edges of edge type edgeType, their labels and link options (what
// Sampler.SampleFromEdges checks).
func (x SessionInternals) CheckSeedEdges(edgeType string, src, dst, labels []int64, link LinkOptions) error {
	_, _, err := x.ss.checkSeedEdges(edgeType, src, dst, labels, link)
	return err
}
