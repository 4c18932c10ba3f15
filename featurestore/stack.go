package featurestore

import (
	"io"
	"slices"

	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/tiers/host"
)

// A Store's tiers are one list, fastest first (Store.stack): the memory tiers its budgets ask
// for, then the SSD tier, which holds every row. Everything that walks the tiers (the splitters,
// Place, stats, the device split, the mount's tiers/) walks that list and asks a tier what it can
// do by optional interface (tiers.Holder, Admitter, DeviceAttacher, DeviceIndexer, Capacitor,
// Sharer) or by its Kind, never by its concrete type; only the code that makes a tier (newHostTier,
// startGPU, resizeStacks) names one. A new kind of tier is a row of stackKinds and its maker.

// tierKind is one kind of tier a stack may hold: the option that is its budget, and how a budget
// turns into rows and rows into a budget (all nil for the SSD tier, which has no budget and holds
// every row).
type tierKind struct {
	kind   tiers.Kind
	budget func(*Options) int64
	// rows is how many rows of rowBytes a budget holds; bytes the budget rows of rowBytes take.
	rows  func(budget, rowBytes int64) int64
	bytes func(rows, rowBytes int64) int64
	// dropEmpty: a tier of this kind that holds no row when full leaves the list (a GPU path with
	// no GPU budget keeps its tier for its lifecycle, but gathers never see it).
	dropEmpty bool
}

// stackKinds are the kinds of tier a stack may hold, in the stack's order (fastest first).
var stackKinds = [...]tierKind{
	{kind: tiers.GPU, budget: func(o *Options) int64 { return o.GPUCacheBytes },
		rows:  func(budget, rb int64) int64 { return max(0, budget) / rb },
		bytes: func(rows, rb int64) int64 { return rows * rb }, dropEmpty: true},
	{kind: tiers.Host, budget: func(o *Options) int64 { return o.HostCacheBytes },
		rows:  host.CapacityRows,
		bytes: func(rows, rb int64) int64 { return rows * host.BytesPerRow(rb) }},
	{kind: tiers.SSD},
}

// kindOf is the row of stackKinds of kind k, and its place there (-1 when k is none of them).
func kindOf(k tiers.Kind) (tierKind, int) {
	i := slices.IndexFunc(stackKinds[:], func(tk tierKind) bool { return tk.kind == k })
	if i < 0 {
		return tierKind{kind: k}, -1
	}
	return stackKinds[i], i
}

// TierKinds are the kinds of tier a Store's stack may hold, fastest first (the tiers Stats
// reports, present or not).
func TierKinds() []tiers.Kind {
	ks := make([]tiers.Kind, len(stackKinds))
	for i, tk := range stackKinds {
		ks[i] = tk.kind
	}
	return ks
}

// TierBudget is the budget (bytes, as its option in Options takes them) that a memory tier of
// kind needs to hold rows rows of rowBytes: HostCacheBytes for tiers.Host counts the index with
// the rows, GPUCacheBytes for tiers.GPU the rows alone. It is 0 for a kind without a budget (SSD).
func TierBudget(kind tiers.Kind, rows, rowBytes int64) int64 {
	tk, _ := kindOf(kind)
	if tk.bytes == nil || rows <= 0 || rowBytes <= 0 {
		return 0
	}
	return tk.bytes(rows, rowBytes)
}

// TierRows is how many rows of rowBytes a budget of budget bytes holds in a memory tier of kind
// (before the dataset's row count bounds it); 0 for a kind without a budget (SSD).
func TierRows(kind tiers.Kind, budget, rowBytes int64) int64 {
	tk, _ := kindOf(kind)
	if tk.rows == nil || budget <= 0 || rowBytes <= 0 {
		return 0
	}
	return tk.rows(budget, rowBytes)
}

// setTier puts t, a tier of kind, in the stack in its kind's place, replacing the tier of that
// kind (t nil removes it); a tier of a dropEmpty kind that holds no row when full is left out.
// This is the one place the list changes. The caller holds the place lock for writing, or owns
// the store (before Open returns it).
func (s *Store) setTier(kind tiers.Kind, t tiers.Tier) {
	tk, at := kindOf(kind)
	stack := slices.DeleteFunc(slices.Clone(s.stack), func(x tiers.Tier) bool { return x.Kind() == kind })
	if t == nil || at < 0 {
		s.stack = stack
		return
	}
	if c, ok := t.(tiers.Capacitor); ok && tk.dropEmpty && c.Capacity() == 0 {
		s.stack = stack
		return
	}
	i := slices.IndexFunc(stack, func(x tiers.Tier) bool {
		_, place := kindOf(x.Kind())
		return place > at
	})
	if i < 0 {
		i = len(stack)
	}
	s.stack = slices.Insert(stack, i, t)
}

// tierList is the store's tiers, fastest first (nil for a dataset without node features); the
// caller holds the place lock.
func (s *Store) tierList() []tiers.Tier { return s.stack }

// tier is the stack's tier of kind, or nil.
func (s *Store) tier(kind tiers.Kind) tiers.Tier {
	for _, t := range s.stack {
		if t.Kind() == kind {
			return t
		}
	}
	return nil
}

// capacityRows is how many rows tier t of the stack holds when full: the rows it was made for
// (tiers.Capacitor), else what its kind's budget holds, at most every row; every row for the SSD.
func (s *Store) capacityRows(t tiers.Tier) int64 {
	if c, ok := t.(tiers.Capacitor); ok {
		return c.Capacity()
	}
	tk, _ := kindOf(t.Kind())
	if tk.budget == nil {
		return s.NumNodes()
	}
	return TierRows(t.Kind(), tk.budget(&s.opt), s.spec.RowBytes)
}

// kindRows is capacityRows of the stack's tier of kind, 0 when the stack has none.
func (s *Store) kindRows(kind tiers.Kind) int64 {
	if t := s.tier(kind); t != nil {
		return s.capacityRows(t)
	}
	return 0
}

// memoryRows is how many rows the memory tiers (every tier but the last) hold when full.
func (s *Store) memoryRows() int64 {
	var rows int64
	for i, t := range s.stack {
		if i < len(s.stack)-1 {
			rows += s.capacityRows(t)
		}
	}
	return rows
}

// closeTier closes t when it holds memory to release (an io.Closer).
func closeTier(t tiers.Tier) {
	if c, ok := t.(io.Closer); ok {
		c.Close()
	}
}
