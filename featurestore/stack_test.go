package featurestore

import (
	"slices"
	"testing"

	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/tiers/host"
)

// kindTier is a tier of a kind that holds capacity rows when full (tiers.Capacitor).
type kindTier struct {
	tiers.Tier
	kind     tiers.Kind
	capacity int64
}

func (k kindTier) Kind() tiers.Kind { return k.kind }
func (k kindTier) Capacity() int64  { return k.capacity }

// TestSetTierKeepsTheStackFastestFirst: whatever order tiers are set in, the stack lists them in
// stackKinds' order; setting a kind replaces its tier, nil removes it, and an empty GPU tier
// (dropEmpty) stays out of the list.
func TestSetTierKeepsTheStackFastestFirst(t *testing.T) {
	kinds := func(s *Store) []tiers.Kind {
		var ks []tiers.Kind
		for _, t := range s.tierList() {
			ks = append(ks, t.Kind())
		}
		return ks
	}
	s := &Store{}
	ssdTier, hostTier := kindTier{kind: tiers.SSD}, kindTier{kind: tiers.Host, capacity: 5}
	s.setTier(tiers.SSD, ssdTier)
	s.setTier(tiers.Host, hostTier)
	s.setTier(tiers.GPU, kindTier{kind: tiers.GPU})
	if got := kinds(s); !slices.Equal(got, []tiers.Kind{tiers.Host, tiers.SSD}) {
		t.Fatalf("stack %v after an empty GPU tier; want [host ssd]", got)
	}
	before := s.tierList()
	s.setTier(tiers.GPU, kindTier{kind: tiers.GPU, capacity: 3})
	if got := kinds(s); !slices.Equal(got, []tiers.Kind{tiers.GPU, tiers.Host, tiers.SSD}) {
		t.Fatalf("stack %v; want [gpu host ssd]", got)
	}
	if len(before) != 2 || before[0] != tiers.Tier(hostTier) {
		t.Fatalf("setTier changed a list taken before it (%v)", before)
	}
	if s.memoryRows() != 8 || s.kindRows(tiers.GPU) != 3 || s.kindRows(tiers.Host) != 5 {
		t.Fatalf("memory rows %d (gpu %d, host %d); want 8 (3, 5)", s.memoryRows(), s.kindRows(tiers.GPU), s.kindRows(tiers.Host))
	}
	s.setTier(tiers.GPU, nil)
	if got := kinds(s); !slices.Equal(got, []tiers.Kind{tiers.Host, tiers.SSD}) || s.kindRows(tiers.GPU) != 0 {
		t.Fatalf("stack %v after removing the GPU tier; want [host ssd]", got)
	}
}

// TestTierSizing: the front ends' sizing functions are the host tier's own layout and the GPU
// tier's rows alone, inverse of each other.
func TestTierSizing(t *testing.T) {
	for _, rb := range []int64{1, 8, 100, 4096} {
		for _, rows := range []int64{0, 1, 7, 1000} {
			if got, want := TierBudget(tiers.Host, rows, rb), host.BytesPerRow(rb)*rows; got != want {
				t.Errorf("TierBudget(host, %d, %d) = %d; want %d", rows, rb, got, want)
			}
			if got := TierRows(tiers.Host, TierBudget(tiers.Host, rows, rb), rb); got != rows {
				t.Errorf("TierRows(host, TierBudget(host, %d, %d)) = %d", rows, rb, got)
			}
			if got := TierRows(tiers.GPU, TierBudget(tiers.GPU, rows, rb), rb); got != rows || TierBudget(tiers.GPU, rows, rb) != rows*rb {
				t.Errorf("GPU: %d rows of %d bytes round trip to %d", rows, rb, got)
			}
		}
		if got, want := TierRows(tiers.Host, 1<<40, rb), host.CapacityRows(1<<40, rb); got != want {
			t.Errorf("TierRows(host, 1 TiB, %d) = %d; want host.CapacityRows's %d", rb, got, want)
		}
	}
	if TierRows(tiers.SSD, 1<<30, 8) != 0 || TierBudget(tiers.SSD, 10, 8) != 0 {
		t.Error("the SSD tier has a budget")
	}
	if got := TierKinds(); !slices.Equal(got, []tiers.Kind{tiers.GPU, tiers.Host, tiers.SSD}) {
		t.Errorf("TierKinds() = %v", got)
	}
}
