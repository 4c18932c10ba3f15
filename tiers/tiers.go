// Package tiers defines the levels of tierfs's memory hierarchy. Each tier holds the feature rows
// of some nodes; the store asks every tier, fastest first, which of a batch's ids it holds, and
// the slowest tier (ssd) holds them all. Implementations: tiers/host (host memory), and the SSD
// tier inside featurestore (it needs the IO stack); a GPU tier joins with the CUDA path.
package tiers

// Kind names a tier.
type Kind string

const (
	GPU  Kind = "gpu"
	Host Kind = "host"
	SSD  Kind = "ssd"
)

// Tier is one level of the hierarchy. Lookup and Ranges are safe for concurrent use with each
// other; changing what a tier holds (Fill) is not, and the store serialises it.
type Tier interface {
	Kind() Kind
	// Lookup sets slots[i] to the slot of ids[i] in this tier, or -1 where the tier lacks it, and
	// returns the number of hits. len(slots) == len(ids).
	Lookup(ids []int64, slots []int64) int
	// Rows is the number of rows held; Bytes the memory they and the index take.
	Rows() int64
	Bytes() int64
	// Ranges calls fn with each maximal run [first, first+count) of consecutive node ids held, in
	// increasing order, until fn returns false.
	Ranges(fn func(first, count int64) bool)
}
