// Package planned is the planned-epoch engine, above featurestore: planned epochs (DiskGNN's
// offline sampling and feature packing). A plan fixes, for K epochs,
// each batch's seeds (EpochOrder), its sample (drawn with BatchSampleSeed) and the feature rows
// of its sample that no memory tier holds, written contiguously into one packed file per epoch.
// Every plan also stores each batch's sample in a samples file per epoch, and serving a batch
// reads it back instead of drawing it again (samples.go); its node list is checked against
// the plan, and the packed rows come in a few large reads instead of one 4 KiB read a row.
// Epoch e is served from planned epoch e mod K (FirstEpoch 0): samples are reused across epochs.
//
// A link-prediction plan (EpochOptions.SeedEdges) is the same over batches of seed edges: each
// batch's sample is SampleFromEdges (its negatives drawn from the batch's seed), stored, packed
// and served the same way (Epochs.SampleEdges).
//
// PlanEpochs writes a plan of a featurestore.Session, OpenEpochs serves one: of one node type's
// tier stack for one fanout list, of every node type with features for fanouts per edge type;
// both take the same EpochOptions, and a plan serves only the store and options it was made for
// (ErrStalePlan names the input that differs). The engine reaches the store through its
// Internals (featurestore.StoreInternals, SessionInternals): tier snapshots under the place lock,
// the SSD tier, the host samplers, PlaceCounts and GatherDeviceVia.
//
// A plan covers the training epochs [FirstEpoch, FirstEpoch+K): planned epoch k is epoch
// FirstEpoch+k, its order EpochOrder(seeds, ShuffleSeed, FirstEpoch+k) and its batches' seeds
// BatchSampleSeed(Sample.Seed, FirstEpoch+k, b). Plans of consecutive ranges (FirstEpoch 0, K,
// 2K, ...) never repeat an epoch: a loader that plans the next range while the current one
// trains serves every epoch fresh. An epoch outside the range replays the planned epoch
// FirstEpoch + (e-FirstEpoch) mod K.
package planned

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/internal/wfs"
	"github.com/tierfs/tierfs/topology"
)

// EpochOptions say what a plan is made of and where it lives. Its tagged fields are the plan
// option family (featurestore.TableOf: json name, kind, default, choices, help; the fields of
// Sample inline): tfs_epochs_open's JSON keys, `tierfs plan-epochs`' flags and Python's
// plan_epochs keywords are made from it (ARCHITECTURE.md, "Adding an option"). The untagged
// fields are a plan's data (seeds, seed edges, fanouts, rows served elsewhere), which each front
// end takes in its own form.
type EpochOptions struct {
	// Dir holds the plan: one packed file and one samples file per planned epoch, and the
	// index, written last.
	Dir string `json:"plan_dir" help:"directory for the plan (the CLI's default: DIR/plans/epochs; Python's: a temporary one, removed when the plan closes)"`
	// Seeds are the training nodes (normally the "train" split); each epoch permutes them.
	Seeds []int64
	// SeedEdges, instead of Seeds, make a link-prediction plan: batches of seed edges.
	SeedEdges *SeedEdges
	BatchSize int `json:"batch_size" default:"1024" help:"seeds per batch"`
	// DropLast drops the last batch of an epoch when it is short.
	DropLast bool `json:"drop_last" help:"drop each epoch's last short batch"`
	// Sample gives the fanouts (a Store's plan) and Replace; Sample.Seed is the sampler seed the
	// batches' seeds derive from (BatchSampleSeed); Sample.Workers only sets parallelism.
	Sample topology.SampleOptions `options:"inline"`
	// NodeType is the seeds' node type ("" for the only one); EdgeFanouts, the fanouts per edge
	// type (src:rel:dst) as NewSampler takes them, make a plan of every node type with features
	// (Sample.Fanouts stays empty).
	NodeType    string `json:"node_type" help:"the seeds' node type, of a plan with fanouts per edge type (default: the only one)"`
	EdgeFanouts map[string][]int
	// ShuffleSeed seeds the epochs' orders (EpochOrder).
	ShuffleSeed uint64 `json:"shuffle_seed" help:"seed of the epochs' orders"`
	// Epochs is K, the number of epochs to plan (1 to MaxPlannedEpochs).
	Epochs int `json:"epochs" default:"1" help:"epochs to plan (K, 1 to 1024); epoch e is served from planned epoch e mod K"`
	// DiskBudget bounds the plan's files' bytes, packed files and samples files (EpochPlanReport's
	// BytesWritten): PlanEpochs plans as many of the K epochs as fit,
	// at least one. 0 means the free space of Dir's file system: K epochs the size of the first
	// that would not fit it are refused once the first is planned.
	DiskBudget int64 `json:"disk_budget" kind:"size" help:"bound on the plan's files (packed rows and stored samples), e.g. 20GB: plan as many epochs as fit, at least one (default 0: none; epochs that would not fit the free disk are refused)"`
	// Replan makes OpenEpochs plan anew when the plan is missing or stale, instead of failing.
	Replan bool `json:"replan" default:"true" help:"plan anew when the plan is missing or stale (false: fail instead)"`
	// PlaceTiers refills the memory tiers (Place) with the rows the K planned epochs read most
	// before planning, and again, the same way, before OpenEpochs serves: the best static
	// placement for exactly the batches served (the hindsight bar of a held-out epoch). It costs
	// one sampling pass over the K epochs at each; leave it off to keep the tiers as they are.
	// The plan keeps that pass's samples (a spool, spool.go) and packs from them without
	// drawing again.
	// Rows in Elsewhere are not counted.
	PlaceTiers bool `json:"place_tiers" default:"true" help:"first refill the memory tiers with the rows the planned epochs read most, again when the plan reopens (false: keep the store's placement; a distributed store cannot place and plans without it unless asked for it, then refuses)"`
	// FirstEpoch is the training epoch planned epoch 0 is (>= 0): the plan covers epochs
	// [FirstEpoch, FirstEpoch+K). Part of the fingerprint.
	FirstEpoch int `json:"first_epoch" help:"the training epoch planned epoch 0 is: the plan covers epochs [first_epoch, first_epoch+K)"`
	// SeedOrders, instead of Seeds, give the seeds of each planned epoch in their order: Epochs
	// lists of one length, planned epoch e batching SeedOrders[e] as it is (ShuffleSeed unused).
	// A distributed rank plans its share of each epoch this way (Python's tierfs.split_seeds), so
	// its planned epoch e holds exactly the seeds its on-demand loader takes in epoch e.
	SeedOrders [][]int64
	// Elsewhere are rows that another process serves — a distributed store's rows owned by other
	// ranks, which come through the peer exchange — per packed node type ("" for a Store's one
	// type): distinct ids, ascending. A plan never packs them and never reads them from disk;
	// its gathers leave their positions in dst for the caller to fill: Gather writes
	// nothing there, GatherDevice writes nothing there unless a memory tier of the store
	// holds the row (then it writes that row). Which rows they are is part of the plan's
	// fingerprint: a plan made with another set is stale.
	Elsewhere map[string][]int64
	// PackMethod says how planning reads the rows it packs from the feature files: PackScan
	// (the rows of a window of batches in one ascending pass of large reads, DiskGNN's batched
	// packing), PackRandom (one read a row, batch by batch), or "" to choose per window and
	// node type the one the disk model (ssd.DiskModel) gives less disk time. The packed files
	// are the same either way; not part of the fingerprint.
	PackMethod string `json:"pack_method" choices:"scan|random|" help:"how planning reads the rows it packs: scan (the feature files in ascending order, large reads), random (a read a row), or empty to choose by the disk model"`
	// PackMemory bounds the distinct rows of a window (0: DefaultPackMemory): the rows of the
	// batches read at once, each once, then gathered into extents, hashed and written while the
	// next window is read, so planning holds two; a batch larger gets a window of its own. A
	// scan reads the feature files once a window. Not part of the fingerprint.
	PackMemory int64 `json:"pack_memory" kind:"size" help:"distinct rows a packing window holds (planning holds two), e.g. 1GB (default 0: 1GiB); a scan reads the feature files once a window"`

	elsewhere []*elsewhereRows // per packed stack (nil: none), resolved by check
	inMemory  []nodeSet        // per packed stack, the rows its memory tiers held as planning began
	fs        wfs.FS           // what the plan's files are written through (nil: the operating system's; tests fail its calls)
}

// nodeSet is a set of one node type's ids: a bit per node.
type nodeSet []uint64

// newNodeSet is an empty set of ids in [0, nodes).
func newNodeSet(nodes int64) nodeSet { return make(nodeSet, (nodes+63)/64) }

func (s nodeSet) add(id int64)      { s[id>>6] |= 1 << (uint64(id) & 63) }
func (s nodeSet) has(id int64) bool { return s[id>>6]&(1<<(uint64(id)&63)) != 0 }

// memoryRows is the rows of a stack of nodes rows that the memory tiers of its snapshot hold.
func memoryRows(snap *featurestore.TierSnapshot, nodes int64) nodeSet {
	r := newNodeSet(nodes)
	ts := snap.Tiers
	for _, t := range ts[:len(ts)-1] {
		t.Ranges(func(first, count int64) bool {
			for id := first; id < first+count; id++ {
				r.add(id)
			}
			return true
		})
	}
	return r
}

// elsewhereRows is one packed node type's rows of EpochOptions.Elsewhere.
type elsewhereRows struct {
	rows  nodeSet
	count int
	sum   uint64 // xxhash64 of the ids, for the fingerprint
}

// has says whether id is served elsewhere (false for a nil set).
func (r *elsewhereRows) has(id int64) bool { return r != nil && r.rows.has(id) }

// keep is nodes without the rows of packed stack t served elsewhere, and their positions in
// nodes (nil when none is served elsewhere: nodes as they are).
func (o *EpochOptions) keep(t int, nodes []int64) (ids, pos []int64) {
	if t >= len(o.elsewhere) || o.elsewhere[t] == nil {
		return nodes, nil
	}
	el := o.elsewhere[t]
	ids, pos = make([]int64, 0, len(nodes)), make([]int64, 0, len(nodes))
	for i, v := range nodes {
		if !el.has(v) {
			ids, pos = append(ids, v), append(pos, int64(i))
		}
	}
	return ids, pos
}

// resolveElsewhere checks o.Elsewhere against src and sets o.elsewhere.
func (o *EpochOptions) resolveElsewhere(src *epochSource) error {
	o.elsewhere = nil
	if len(o.Elsewhere) == 0 {
		return nil
	}
	res := make([]*elsewhereRows, len(src.stacks))
	named := make([]bool, len(src.stacks))
	any := false
	for key, ids := range o.Elsewhere {
		t, err := src.packedType(key)
		if err != nil {
			return fmt.Errorf("planned: plan elsewhere: %w", err)
		}
		if named[t] {
			return &featurestore.OptionError{Option: "elsewhere", Value: key, Want: fmt.Sprintf("one list of rows per node type (node type %q is named twice)", src.typeName(t))}
		}
		named[t] = true
		n := src.stacks[t].NumNodes()
		r := &elsewhereRows{rows: newNodeSet(n), count: len(ids), sum: hashIDs(ids)}
		for i, v := range ids {
			if uint64(v) >= uint64(n) {
				return fmt.Errorf("planned: plan elsewhere[%q][%d] = %d is out of range [0, %d) of node type %q: %w", key, i, v, n, src.typeName(t), featurestore.ErrIDOutOfRange)
			}
			if i > 0 && v <= ids[i-1] {
				return &featurestore.OptionError{Option: "elsewhere", Value: fmt.Sprintf("[%q][%d] = %d after %d", key, i, v, ids[i-1]), Want: "distinct ids in ascending order"}
			}
			r.rows.add(v)
		}
		if len(ids) > 0 {
			res[t], any = r, true
		}
	}
	if any {
		o.elsewhere = res
	}
	return nil
}

// SeedEdges are the seed edges of a link-prediction plan (EpochOptions.SeedEdges): each epoch
// permutes their positions (EpochOrder of 0..n-1; Epochs.Seeds answers a batch's positions,
// PyG's input_id), and batch b of planned epoch e samples around its edges and draws its
// negatives as the first SampleFromEdges call of the session's Sampler of seed
// BatchSampleSeed(Sample.Seed, e, b) does, so a planned batch is exactly that on-demand batch.
type SeedEdges struct {
	// EdgeType is the seed edges' type, "src:rel:dst" ("" for the only one).
	EdgeType string
	// Src and Dst are the endpoints (ids of the edge type's src and dst node types), one each a
	// seed edge; Labels one label a seed edge, or nil.
	Src, Dst, Labels []int64
	// Link says how negatives are drawn and which edges are left out of the neighborhoods. A
	// Store's plan maps its one edge type to itself or to "" in ReverseEdgeTypes for an
	// undirected graph.
	Link featurestore.LinkOptions
}

// count is the number of items the epochs permute: seed nodes, or seed edges.
func (o *EpochOptions) count() int {
	if len(o.SeedOrders) > 0 {
		return len(o.SeedOrders[0])
	}
	if o.SeedEdges != nil {
		return len(o.SeedEdges.Src)
	}
	return len(o.Seeds)
}

// epoch is the training epoch that planned epoch k of the plan is.
func (o *EpochOptions) epoch(k int) int { return o.FirstEpoch + k }

// order is the items of planned epoch k in order: seed nodes, or positions of seed edges.
func (o *EpochOptions) order(k int) []int64 {
	if o.SeedOrders != nil {
		return o.SeedOrders[k]
	}
	if o.SeedEdges == nil {
		return EpochOrder(o.Seeds, o.ShuffleSeed, o.epoch(k))
	}
	pos := make([]int64, len(o.SeedEdges.Src))
	for i := range pos {
		pos[i] = int64(i)
	}
	return EpochOrder(pos, o.ShuffleSeed, o.epoch(k))
}

// sampleSeed is the sampling seed of batch b of planned epoch k.
func (o *EpochOptions) sampleSeed(k, b int) uint64 {
	return BatchSampleSeed(o.Sample.Seed, o.epoch(k), b)
}

// ErrStalePlan is wrapped by OpenEpochs' error when the plan in the directory was made for
// another dataset, feature, options, seeds or memory-tier contents.
var ErrStalePlan = errors.New("epoch plan is stale")

// StalePlanError says which input of a plan differs. It wraps ErrStalePlan.
type StalePlanError struct {
	Dir         string
	Input       string // the first input that differs, e.g. "fanouts"
	Plan, Store string // its value in the plan and now
}

func (e *StalePlanError) Error() string {
	return fmt.Sprintf("planned: epoch plan %s is stale: %s differs (the plan has %s, now %s); plan again (Replan)", e.Dir, e.Input, e.Plan, e.Store)
}
func (e *StalePlanError) Unwrap() error { return ErrStalePlan }

// EpochOrder is the order of seeds in epoch epoch: a permutation drawn by Fisher–Yates from PCG
// seeded with (shuffleSeed, epoch). It is part of the plan format: the same inputs give the same
// order in every version and front end.
func EpochOrder(seeds []int64, shuffleSeed uint64, epoch int) []int64 {
	out := slices.Clone(seeds)
	r := rand.NewPCG(shuffleSeed, uint64(epoch))
	for i := len(out) - 1; i > 0; i-- {
		j := topology.Below(r.Uint64(), uint64(i)+1, r.Uint64)
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// BatchSampleSeed is the sampling seed of batch batch of planned epoch epoch: the xxhash64 of
// (samplerSeed, epoch, batch) as little-endian uint64s.
func BatchSampleSeed(samplerSeed uint64, epoch, batch int) uint64 {
	var b [24]byte
	binary.LittleEndian.PutUint64(b[0:], samplerSeed)
	binary.LittleEndian.PutUint64(b[8:], uint64(epoch))
	binary.LittleEndian.PutUint64(b[16:], uint64(batch))
	return xxhash.Sum64(b[:])
}

// BatchesPerEpoch is the number of batches of n seeds.
func BatchesPerEpoch(n, batchSize int, dropLast bool) int {
	if batchSize < 1 {
		return 0
	}
	if dropLast {
		return n / batchSize
	}
	return (n + batchSize - 1) / batchSize
}

// batchSeeds is batch b of order.
func batchSeeds(order []int64, batchSize, b int) []int64 {
	return order[b*batchSize : min((b+1)*batchSize, len(order))]
}

// hashIDs is the xxhash64 of ids as little-endian int64s.
func hashIDs(ids []int64) uint64 { return xxhash.Sum64(dataset.BytesOf(ids)) }

// check validates o for a plan of src; its errors are *OptionError, or name the bad seed.
func (o *EpochOptions) check(src *epochSource) error {
	switch {
	case o.Dir == "":
		return &featurestore.OptionError{Option: "plan_dir", Value: `""`, Want: "a directory for the plan"}
	case o.Epochs < 1 || o.Epochs > MaxPlannedEpochs:
		return &featurestore.OptionError{Option: "planned_epochs", Value: o.Epochs, Want: fmt.Sprintf("epochs to plan from 1 to %d", MaxPlannedEpochs)}
	case o.FirstEpoch < 0 || o.FirstEpoch > MaxFirstEpoch:
		return &featurestore.OptionError{Option: "first_epoch", Value: o.FirstEpoch, Want: fmt.Sprintf("the training epoch of planned epoch 0, from 0 to %d", MaxFirstEpoch)}
	case o.BatchSize < 1:
		return &featurestore.OptionError{Option: "batch_size", Value: o.BatchSize, Want: "seeds per batch >= 1"}
	case o.DiskBudget < 0:
		return &featurestore.OptionError{Option: "plan_disk_budget", Value: o.DiskBudget, Want: "bytes >= 0 (0: no bound)"}
	case o.PackMethod != "" && o.PackMethod != PackScan && o.PackMethod != PackRandom:
		return &featurestore.OptionError{Option: "pack_method", Value: o.PackMethod, Want: fmt.Sprintf("%q, %q or \"\" (choose by the disk model)", PackScan, PackRandom)}
	case o.PackMemory < 0:
		return &featurestore.OptionError{Option: "pack_memory", Value: o.PackMemory, Want: fmt.Sprintf("bytes >= 0 (0: %d)", DefaultPackMemory)}
	case o.SeedEdges != nil && len(o.Seeds) > 0:
		return &featurestore.OptionError{Option: "seeds", Value: len(o.Seeds), Want: "none with seed edges: a plan's batches are of seed nodes or of seed edges"}
	case o.SeedOrders != nil && (len(o.Seeds) > 0 || o.SeedEdges != nil):
		return &featurestore.OptionError{Option: "seed_orders", Value: len(o.SeedOrders), Want: "seed orders alone: not with seeds or seed edges"}
	case o.SeedOrders != nil && len(o.SeedOrders) != o.Epochs:
		return &featurestore.OptionError{Option: "seed_orders", Value: len(o.SeedOrders), Want: fmt.Sprintf("one order per planned epoch (%d)", o.Epochs)}
	case BatchesPerEpoch(o.count(), o.BatchSize, o.DropLast) == 0:
		what := "seeds"
		if o.SeedEdges != nil {
			what = "seed_edges"
		}
		return &featurestore.OptionError{Option: what, Value: o.count(), Want: fmt.Sprintf("at least one batch of %d %s (drop_last %v)", o.BatchSize, strings.ReplaceAll(what, "_", " "), o.DropLast)}
	}
	if !src.typed { // one stack: sourceOf picked it by NodeType, for one fanout list
		sp, err := src.ss.NewSampler(featurestore.SampleOptions{Fanouts: map[string][]int{"": o.Sample.Fanouts}, Replace: o.Sample.Replace, Seed: o.Sample.Seed, Workers: o.Sample.Workers})
		if err != nil {
			return err
		}
		src.sampler = sp
	}
	for _, s := range src.stacks {
		if s.Internals().Options().HostPolicy == featurestore.HostSieve {
			return &featurestore.OptionError{Option: "host_policy", Value: featurestore.HostSieve, Want: "static: a plan packs the rows the memory tiers miss, so they must not change under gathers"}
		}
	}
	if err := o.resolveElsewhere(src); err != nil {
		return err
	}
	if o.SeedEdges != nil {
		if err := src.checkSeedEdges(o.SeedEdges); err != nil {
			return fmt.Errorf("planned: plan seed edges: %w", err)
		}
		return nil
	}
	for e, ord := range o.SeedOrders {
		if len(ord) != len(o.SeedOrders[0]) {
			return &featurestore.OptionError{Option: "seed_orders", Value: fmt.Sprintf("epoch %d: %d seeds", e, len(ord)), Want: fmt.Sprintf("as many seeds as epoch 0's %d (every epoch has the same batches)", len(o.SeedOrders[0]))}
		}
		if err := src.ss.Internals().CheckIDs(src.seedType, fmt.Sprintf("seed_orders[%d]", e), ord); err != nil {
			return fmt.Errorf("planned: plan seeds: %w", err)
		}
	}
	if err := src.ss.Internals().CheckIDs(src.seedType, "seeds", o.Seeds); err != nil {
		return fmt.Errorf("planned: plan seeds: %w", err)
	}
	return nil
}

// MaxPlannedEpochs bounds K: each planned epoch is sampled and packed into its own files before
// the first is served.
const MaxPlannedEpochs = 1024

// MaxFirstEpoch bounds EpochOptions.FirstEpoch (epochs are uint64 in BatchSampleSeed and
// EpochOrder; this keeps FirstEpoch+K an int on every platform).
const MaxFirstEpoch = 1 << 30

// planInputs is the fingerprint of a plan: everything its contents depend on. Per packed node
// type (in the plan's order): its name and feature, row bytes and memory tiers' contents.
type planInputs struct {
	Dataset     string           `json:"dataset_fingerprint"` // placement.Fingerprint, hex
	SeedType    string           `json:"seed_type"`
	NodeTypes   []string         `json:"node_types"`
	Features    []string         `json:"features"`
	RowBytes    []int64          `json:"row_bytes"`
	Fanouts     []int            `json:"fanouts,omitempty"`      // a Store's plan
	EdgeFanouts map[string][]int `json:"edge_fanouts,omitempty"` // a Session's plan, per edge type
	Replace     bool             `json:"replace"`
	BatchSize   int              `json:"batch_size"`
	DropLast    bool             `json:"drop_last"`
	Seeds       string           `json:"seeds"`                // count and hex xxhash64
	SeedEdges   string           `json:"seed_edges,omitempty"` // a link plan's: edge type, count, hash of src, dst and labels
	Link        string           `json:"link,omitempty"`       // a link plan's link options
	SamplerSeed uint64           `json:"sampler_seed"`
	ShuffleSeed uint64           `json:"shuffle_seed"`
	Epochs      int              `json:"epochs"`       // K asked for
	FirstEpoch  int              `json:"first_epoch"`  // the training epoch of planned epoch 0 (absent: 0)
	MemoryTiers []string         `json:"memory_tiers"` // rows held and hex hash of the ids
	// Per packed type: the rows served elsewhere, count and hex hash ("0" for none); nil when
	// no type has any.
	Elsewhere []string `json:"elsewhere,omitempty"`
}

// planInputs is the fingerprint of o on src now, snaps every stack's tiers held still
// (snapshots).
func (src *epochSource) planInputs(o *EpochOptions, fp uint64, snaps []*featurestore.TierSnapshot) planInputs {
	in := planInputs{
		Dataset: fmt.Sprintf("%016x", fp), SeedType: src.ss.Manifest().NodeTypes[src.seedType].Name,
		Fanouts: slices.Clone(o.Sample.Fanouts), EdgeFanouts: o.EdgeFanouts, Replace: o.Sample.Replace,
		BatchSize: o.BatchSize, DropLast: o.DropLast,
		Seeds:       fmt.Sprintf("%d:%016x", len(o.Seeds), hashIDs(o.Seeds)),
		SamplerSeed: o.Sample.Seed, ShuffleSeed: o.ShuffleSeed, Epochs: o.Epochs, FirstEpoch: o.FirstEpoch,
	}
	if se := o.SeedEdges; se != nil {
		d := xxhash.New()
		for _, a := range [][]int64{se.Src, se.Dst, se.Labels} {
			d.Write(dataset.BytesOf(a))
		}
		in.SeedEdges = fmt.Sprintf("%s:%d:%v:%016x", src.edgeTypeKey(se.EdgeType), len(se.Src), se.Labels != nil, d.Sum64())
		in.Link = fmt.Sprintf("%+v", se.Link)
	}
	if o.SeedOrders != nil {
		d := xxhash.New()
		for _, ord := range o.SeedOrders {
			d.Write(dataset.BytesOf(ord))
		}
		in.Seeds = fmt.Sprintf("%d orders of %d:%016x", len(o.SeedOrders), o.count(), d.Sum64())
	}
	for t, r := range o.elsewhere {
		if in.Elsewhere == nil {
			in.Elsewhere = make([]string, len(src.stacks))
		}
		in.Elsewhere[t] = "0"
		if r != nil {
			in.Elsewhere[t] = fmt.Sprintf("%d:%016x", r.count, r.sum)
		}
	}
	for t, s := range src.stacks {
		in.NodeTypes = append(in.NodeTypes, src.typeName(t))
		in.Features = append(in.Features, s.Feature().Name)
		in.RowBytes = append(in.RowBytes, s.RowBytes())
		in.MemoryTiers = append(in.MemoryTiers, memoryTierHash(snaps[t]))
	}
	return in
}

// snapshots holds every stack's tiers still (featurestore.TierSnapshot: the place lock held for
// reading) until release.
func (src *epochSource) snapshots() (snaps []*featurestore.TierSnapshot, release func()) {
	snaps = make([]*featurestore.TierSnapshot, len(src.stacks))
	for t, s := range src.stacks {
		snaps[t] = s.Internals().Snapshot()
	}
	return snaps, func() {
		for _, snap := range snaps {
			snap.Release()
		}
	}
}

// diff names the first input where a plan's fingerprint p differs from now, or "".
func (p planInputs) diff(now planInputs) (input, plan, store string) {
	type field struct {
		name string
		a, b any
	}
	for _, f := range []field{
		{"dataset (manifest fingerprint)", p.Dataset, now.Dataset},
		{"seeds' node type", p.SeedType, now.SeedType},
		{"node types packed", p.NodeTypes, now.NodeTypes},
		{"feature", p.Features, now.Features},
		{"row bytes", p.RowBytes, now.RowBytes},
		{"fanouts", p.Fanouts, now.Fanouts},
		{"fanouts per edge type", p.EdgeFanouts, now.EdgeFanouts},
		{"replace", p.Replace, now.Replace},
		{"batch size", p.BatchSize, now.BatchSize},
		{"drop_last", p.DropLast, now.DropLast},
		{"seeds (count:hash)", p.Seeds, now.Seeds},
		{"seed edges (edge type:count:labels:hash)", p.SeedEdges, now.SeedEdges},
		{"link options", p.Link, now.Link},
		{"sampler seed", p.SamplerSeed, now.SamplerSeed},
		{"shuffle seed", p.ShuffleSeed, now.ShuffleSeed},
		{"epochs", p.Epochs, now.Epochs},
		{"first epoch", p.FirstEpoch, now.FirstEpoch},
		{"memory tiers' contents (rows:hash)", p.MemoryTiers, now.MemoryTiers},
		{"rows served elsewhere (rows:hash per packed node type)", p.Elsewhere, now.Elsewhere},
	} {
		if a, b := fmt.Sprint(f.a), fmt.Sprint(f.b); a != b {
			return f.name, a, b
		}
	}
	return "", "", ""
}

// memoryTierHash is "rows:hash" of the node ids the memory tiers of snap hold (their union, as
// sorted runs).
func memoryTierHash(snap *featurestore.TierSnapshot) string {
	ts := snap.Tiers
	var runs [][2]int64
	for _, t := range ts[:len(ts)-1] {
		t.Ranges(func(first, count int64) bool {
			runs = append(runs, [2]int64{first, count})
			return true
		})
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i][0] < runs[j][0] })
	d := xxhash.New()
	var rows int64
	var buf [16]byte
	flush := func(r [2]int64) {
		binary.LittleEndian.PutUint64(buf[0:], uint64(r[0]))
		binary.LittleEndian.PutUint64(buf[8:], uint64(r[1]))
		d.Write(buf[:])
		rows += r[1]
	}
	var cur [2]int64
	have := false
	for _, r := range runs {
		if have && r[0] <= cur[0]+cur[1] {
			cur[1] = max(cur[1], r[0]+r[1]-cur[0])
			continue
		}
		if have {
			flush(cur)
		}
		cur, have = r, true
	}
	if have {
		flush(cur)
	}
	return fmt.Sprintf("%d:%016x", rows, d.Sum64())
}

// epochIndex is the plan's index file, written last.
type epochIndex struct {
	Version  int         `json:"version"`
	Inputs   planInputs  `json:"inputs"`
	Planned  int         `json:"planned_epochs"`
	Batches  int         `json:"batches_per_epoch"`
	Epochs   []epochFile `json:"epochs"`
	PlanSecs float64     `json:"plan_seconds"`
}

// epochFile is one planned epoch's packed file and its batches' extents: batch b's rows of
// packed node type t are extent b*T+t of T types, the T extents of a batch one after another.
// It also lists the epoch's samples file and one record in it per batch.
type epochFile struct {
	File    string        `json:"file"` // relative to the plan directory
	Bytes   int64         `json:"bytes"`
	Batches []batchExtent `json:"batches"`
	// Samples is the samples file (relative to the plan directory), SampleBytes its size,
	// SampleRecords batch b's record at index b.
	Samples       string         `json:"samples,omitempty"`
	SampleBytes   int64          `json:"sample_bytes,omitempty"`
	SampleRecords []sampleRecord `json:"sample_records,omitempty"`
}

// batchExtent is where a batch's packed rows of one node type are: Rows rows from byte Offset
// (4 KiB-aligned), their xxhash64 (Sum), and the xxhash64 of the batch's sampled nodes of that
// type (Nodes: Sample.Nodes for one type).
type batchExtent struct {
	Offset int64  `json:"offset"`
	Rows   int64  `json:"rows"`
	Sum    uint64 `json:"sum"`
	Nodes  uint64 `json:"nodes"`
}

// epochIndexVersion is the index format this package writes and reads.
// Version 3 added the samples files of plans of seed nodes of one node type; version 4 stores
// every plan's samples (link and Session plans too) in records of one format (samples.go);
// version 5 stores node, local and edge ids narrower where they fit (a record's coding); version
// 6 binds the checksums to their place (bind). A version 4 plan is read as it is: its records
// are version 5 records of coding 0; versions 4 and 5 are read unbound.
const (
	epochIndexVersion       = 6
	oldestEpochIndexVersion = 4
	boundEpochIndexVersion  = 6
)

// Checksums bound to their place (index version 6): the index stores each extent's and each
// sample record's xxhash64 XORed with a key of the plan (the xxhash64 of its inputs as the index
// lists them: the dataset's fingerprint, the options, the memory tiers' contents), the planned
// epoch, the batch and the packed type (an extent) or the record kind. So an epoch entry moved
// to another place of the index with its files moved along (or copied over another), a batch's
// extent or record moved to another batch or type, and an epoch spliced in from another plan
// or another dataset (its entry and its files) fail their checks on the read that touches
// them, as a flipped bit does, instead of serving another epoch's, batch's or plan's sample and
// rows. Serving sees the plain checksums: openPlan unbinds what it read.

// bind XORs every checksum of idx with its place's key: binding twice unbinds. The planner
// binds the index it writes, openPlan unbinds the one it reads (of version 6 and later).
func (idx *epochIndex) bind() error {
	in, err := json.Marshal(idx.Inputs)
	if err != nil {
		return fmt.Errorf("planned: epoch plan inputs: %w", err)
	}
	plan := xxhash.Sum64(in)
	key := func(kind byte, e, i int) uint64 {
		var b [25]byte
		binary.LittleEndian.PutUint64(b[0:], plan)
		b[8] = kind
		binary.LittleEndian.PutUint64(b[9:], uint64(e))
		binary.LittleEndian.PutUint64(b[17:], uint64(i))
		return xxhash.Sum64(b[:])
	}
	for e := range idx.Epochs {
		ef := &idx.Epochs[e]
		for x := range ef.Batches {
			ef.Batches[x].Sum ^= key('x', e, x) // extent x = batch x/T's of type x%T
		}
		for b := range ef.SampleRecords {
			ef.SampleRecords[b].Sum ^= key('s', e, b)
		}
	}
	return nil
}

// EpochIndexFile is the name of a plan's index in its directory.
const EpochIndexFile = "epochs.json"

// packedFile is the name of planned epoch e's packed file.
func packedFile(e int) string { return fmt.Sprintf("epoch-%04d.packed", e) }

// samplesFile is the name of planned epoch e's samples file.
func samplesFile(e int) string { return fmt.Sprintf("epoch-%04d.samples", e) }

// packAlign is the alignment of every batch's extent in a packed file (O_DIRECT).
const packAlign = 4096

func alignUp64(x int64) int64 { return (x + packAlign - 1) &^ (packAlign - 1) }
