// Package placement decides which nodes' topology (neighbor lists) and features (rows) live in
// GPU memory, in host memory, or stay on SSD: Hyperion's static, unified cache.
//
// The flow is: Profile pre-samples batches of seeds and counts, per node, how often its neighbor
// list and its feature row are read (Hotness); Plan turns hotness, item sizes and the memory
// budgets into a Placement under a Policy; Cost says how many bytes a placement moves over PCIe
// and reads from SSD; Save and Load keep a placement beside the dataset, versioned and tied to
// the dataset's manifest, so a changed dataset or changed inputs make it stale instead of wrong.
//
//	Profile(g topology.Graph, seeds []int64, opt ProfileOptions) (*Hotness, error)
//	SizesOf(g topology.Graph, rowBytes, indexBytes int64) (Sizes, error)
//	Plan(h *Hotness, sizes Sizes, budget Budget, policy Policy) (*Placement, error)
//	Cost(p *Placement, h *Hotness, sizes Sizes) (Traffic, error)
//	Save(dir string, h *Hotness, p *Placement) error
//	Load(dir string, want Inputs) (*Hotness, *Placement, error)
//
// PlanStore runs that flow for a feature store (the Store interface, which *featurestore.Store
// satisfies): it takes the profile's seeds from the train split, reuses a saved placement or
// profile when it still applies, plans, saves, and reports what every policy would cost;
// SavedFor finds the saved placement a store opened with given caches may follow.
//
//	PlanStore(st Store, opt PlanOptions) (*Placement, *Report, error)
//	SavedFor(dir, feature string, gpuBytes, hostBytes int64) (*Placement, error)
//
// The traffic model (per read of an item of b bytes, block size B, 64-byte PCIe transactions):
// from GPU memory it costs nothing on PCIe; from host memory ceil(b/64) transactions over PCIe;
// from SSD ceil(b/B) whole blocks read from the SSD and staged to the GPU over PCIe. Topology
// items cost IndexBytes*degree + 8 bytes (the list plus its index pointer), feature items the row.
//
// All functions are pure apart from Save, Load, PlanStore, SavedFor and the memory check
// (CheckBudgets, MemAvailable); results are deterministic for equal inputs.
package placement

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Kind is what of a node is placed: its neighbor list or its feature row.
type Kind uint8

const (
	KindTopology Kind = iota // neighbor list and index pointer
	KindFeature              // feature row
)

var kindNames = [...]string{KindTopology: "topology", KindFeature: "feature"}

func (k Kind) String() string { return enumName(kindNames[:], k, "Kind") }

// enumName is names[v], or typ(v) for a v past names.
func enumName[T ~uint8](names []string, v T, typ string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, uint8(v))
}

// Tier is where an item lives. The zero value is TierSSD: everything is on SSD unless placed.
type Tier uint8

const (
	TierSSD  Tier = iota // read from the dataset's files on demand
	TierHost             // host memory, read by the GPU over PCIe
	TierGPU              // GPU memory
	// NumTiers is the number of tiers; arrays indexed by Tier have this length.
	NumTiers = 3
)

var tierNames = [NumTiers]string{TierSSD: "ssd", TierHost: "host", TierGPU: "gpu"}

func (t Tier) String() string { return enumName(tierNames[:], t, "Tier") }

// Policy chooses how Plan fills the budgets.
type Policy uint8

const (
	// Unified (the default) lets topology and features compete for the same memory: items are
	// ranked by link transactions saved per byte of memory (SSD-link block transactions plus PCIe
	// transactions), grouped into chunks, and GPU then host are filled with whichever kind's next
	// chunk saves more.
	Unified Policy = iota
	// UnifiedPCIe is Unified scoring PCIe transactions only (Hyperion's formula): a host copy of
	// an item as large as a block saves nothing, so it ignores SSD bandwidth.
	UnifiedPCIe
	// TopologyFirst places all hot topology (hottest first), then hot features, GPU then host.
	TopologyFirst
	// FeaturesFirst places all hot features (hottest first), then hot topology, GPU then host.
	FeaturesFirst
	// DegreeRanked places features by in-degree, GPU then host, without profiling; topology stays
	// on SSD. It is what the store does when given no placement.
	DegreeRanked
	// Random places nodes' topology and features in a fixed pseudo-random order: a baseline.
	Random
	// None places nothing: everything is read from SSD.
	None
	numPolicies
)

var policyNames = [numPolicies]string{"unified", "unified-pcie", "topology-first", "features-first", "degree", "random", "none"}

func (p Policy) String() string { return enumName(policyNames[:], p, "Policy") }

// Policies lists every policy, Unified first.
func Policies() []Policy {
	out := make([]Policy, numPolicies)
	for i := range out {
		out[i] = Policy(i)
	}
	return out
}

// ParsePolicy maps a policy name (as String writes it; "" is Unified) to its Policy.
func ParsePolicy(name string) (Policy, error) {
	if name == "" {
		return Unified, nil
	}
	if i := slices.Index(policyNames[:], strings.ToLower(name)); i >= 0 {
		return Policy(i), nil
	}
	return 0, fmt.Errorf("placement: unknown policy %q; want one of %s", name, strings.Join(policyNames[:], ", "))
}

// Hotness counts, per node, how often sampling read its neighbor list (Topology) and its feature
// row (Feature). Counts saturate at math.MaxUint32. The other fields record how it was measured.
type Hotness struct {
	Topology  []uint32
	Feature   []uint32
	Batches   int   // batches sampled
	Seeds     int64 // seeds sampled, over all batches
	Fanouts   []int
	BatchSize int
	Replace   bool
	// Convergence is the held-out estimate after every epoch but the first (Profile); a saved
	// profile does not keep it.
	Convergence []EpochEstimate
}

// NumNodes is the number of nodes counted.
func (h *Hotness) NumNodes() int64 { return int64(len(h.Feature)) }

func (h *Hotness) validate() error {
	if h == nil {
		return errors.New("placement: hotness is nil")
	}
	if len(h.Topology) != len(h.Feature) {
		return fmt.Errorf("placement: hotness has %d topology counts but %d feature counts", len(h.Topology), len(h.Feature))
	}
	if h.Batches < 0 {
		return fmt.Errorf("placement: hotness has %d batches, a negative count", h.Batches)
	}
	return nil
}

// Default sizes.
const (
	DefaultBlockSize  = 4096
	DefaultChunkBytes = 64 << 10
	DefaultIndexBytes = 8
	// CacheLine is the PCIe transaction size the model counts in.
	CacheLine = 64
	// PointerBytes is what an index pointer (indptr entry) costs a topology item.
	PointerBytes = 8
)

// Sizes are the byte sizes of every item.
type Sizes struct {
	RowBytes   int64   // one feature row; > 0
	IndexBytes int64   // one neighbor id; 0 means DefaultIndexBytes
	Degrees    []int64 // in-degree of every node; topology item of v is IndexBytes*Degrees[v] + PointerBytes
	BlockSize  int64   // SSD read unit; 0 means DefaultBlockSize
	// FeatureOverhead and TopologyOverhead are memory a cached item costs beyond its bytes (the
	// index of the tier holding it, e.g. host.IndexBytesPerRow). They count against the budgets,
	// never as traffic.
	FeatureOverhead, TopologyOverhead int64
}

func (s Sizes) withDefaults() Sizes {
	if s.IndexBytes == 0 {
		s.IndexBytes = DefaultIndexBytes
	}
	if s.BlockSize == 0 {
		s.BlockSize = DefaultBlockSize
	}
	return s
}

func (s Sizes) validate(n int64) error {
	switch {
	case s.RowBytes <= 0:
		return fmt.Errorf("placement: row size %d bytes; want > 0", s.RowBytes)
	case s.IndexBytes <= 0:
		return fmt.Errorf("placement: index size %d bytes; want > 0", s.IndexBytes)
	case s.BlockSize <= 0:
		return fmt.Errorf("placement: SSD block size %d bytes; want > 0", s.BlockSize)
	case s.FeatureOverhead < 0 || s.TopologyOverhead < 0:
		return fmt.Errorf("placement: per-item overheads %d (feature) and %d (topology) bytes must not be negative", s.FeatureOverhead, s.TopologyOverhead)
	case int64(len(s.Degrees)) != n:
		return fmt.Errorf("placement: sizes have %d degrees but hotness counts %d nodes", len(s.Degrees), n)
	}
	for v, d := range s.Degrees {
		if d < 0 {
			return fmt.Errorf("placement: degree of node %d is %d, negative", v, d)
		}
	}
	return nil
}

// bytes is the size of item (v, k) in the traffic model.
func (s *Sizes) bytes(v int64, k Kind) int64 {
	if k == KindFeature {
		return s.RowBytes
	}
	return s.IndexBytes*s.Degrees[v] + PointerBytes
}

// memory is what caching item (v, k) costs against a budget.
func (s *Sizes) memory(v int64, k Kind) int64 {
	if k == KindFeature {
		return s.RowBytes + s.FeatureOverhead
	}
	return s.bytes(v, k) + s.TopologyOverhead
}

// Budget is the memory Plan may fill.
type Budget struct {
	GPUBytes   int64 `json:"gpu_bytes"`   // GPU memory for topology and features together; >= 0
	HostBytes  int64 `json:"host_bytes"`  // host memory for topology and features together; >= 0
	ChunkBytes int64 `json:"chunk_bytes"` // Unified's unit of decision; 0 means DefaultChunkBytes
}

func (b Budget) withDefaults() Budget {
	if b.ChunkBytes == 0 {
		b.ChunkBytes = DefaultChunkBytes
	}
	return b
}

func (b Budget) validate() error {
	if b.GPUBytes < 0 || b.HostBytes < 0 {
		return fmt.Errorf("placement: budget of %d GPU bytes and %d host bytes; neither may be negative", b.GPUBytes, b.HostBytes)
	}
	if b.ChunkBytes <= 0 {
		return fmt.Errorf("placement: chunk of %d bytes; want > 0", b.ChunkBytes)
	}
	return nil
}

// Placement is the tier of every node's topology and feature. It is immutable once made and safe
// for concurrent reads.
type Placement struct {
	Policy Policy
	Budget Budget // as planned, defaults applied
	// Sizes the plan was made for (Degrees dropped).
	RowBytes, IndexBytes, BlockSize   int64
	FeatureOverhead, TopologyOverhead int64

	tiers []uint8            // per node: topology tier in bits 0-1, feature tier in bits 2-3
	items [2][NumTiers]int64 // per kind and tier: items placed
	mem   [2][NumTiers]int64 // per kind and tier: memory taken, overheads included
}

// NumNodes is the number of nodes placed.
func (p *Placement) NumNodes() int64 { return int64(len(p.tiers)) }

// Tier is where node v's item of kind k lives. v must be in [0, NumNodes).
func (p *Placement) Tier(v int64, k Kind) Tier { return Tier(p.tiers[v]>>(2*k)) & 3 }

// Nodes returns, ascending, the nodes whose item of kind k lives in tier t.
func (p *Placement) Nodes(k Kind, t Tier) []int64 {
	var out []int64
	if t != TierSSD {
		out = make([]int64, 0, p.items[k][t])
	}
	for v := range p.tiers {
		if p.Tier(int64(v), k) == t {
			out = append(out, int64(v))
		}
	}
	return out
}

// Used is the number of items of kind k in tier t and the memory they take (overheads
// included; for TierSSD the items the memory tiers do not hold, and 0 bytes).
func (p *Placement) Used(k Kind, t Tier) (items, bytes int64) {
	if t == TierSSD {
		return p.NumNodes() - p.items[k][TierGPU] - p.items[k][TierHost], 0
	}
	return p.items[k][t], p.mem[k][t]
}

// String summarises the placement.
func (p *Placement) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s placement of %d nodes (GPU %d B, host %d B):", p.Policy, p.NumNodes(), p.Budget.GPUBytes, p.Budget.HostBytes)
	for _, k := range []Kind{KindTopology, KindFeature} {
		fmt.Fprintf(&b, " %s gpu %d/%d B host %d/%d B;", k, p.items[k][TierGPU], p.mem[k][TierGPU], p.items[k][TierHost], p.mem[k][TierHost])
	}
	return strings.TrimSuffix(b.String(), ";")
}

func newPlacement(n int64, policy Policy, budget Budget, s Sizes) *Placement {
	return &Placement{
		Policy: policy, Budget: budget,
		RowBytes: s.RowBytes, IndexBytes: s.IndexBytes, BlockSize: s.BlockSize,
		FeatureOverhead: s.FeatureOverhead, TopologyOverhead: s.TopologyOverhead,
		tiers: make([]uint8, n),
	}
}

// set places item (v, k), which must still be on SSD, in tier t costing mem bytes.
func (p *Placement) set(v int64, k Kind, t Tier, mem int64) {
	p.tiers[v] |= uint8(t) << (2 * k)
	p.items[k][t]++
	p.mem[k][t] += mem
}

// recount checks every tier byte and recomputes the per-tier item counts (after Load; memory
// totals come from the file's header, since degrees are not stored).
func (p *Placement) recount() error {
	p.items = [2][NumTiers]int64{}
	for v, b := range p.tiers {
		if b>>4 != 0 || b&3 == 3 || (b>>2)&3 == 3 {
			return fmt.Errorf("tier byte %#x of node %d is not a valid pair of tiers", b, v)
		}
		for _, k := range []Kind{KindTopology, KindFeature} {
			p.items[k][p.Tier(int64(v), k)]++
		}
	}
	return nil
}
