package featurestore

import (
	"testing"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/tiers/host"
	"github.com/tierfs/tierfs/tiers/ssd"
)

// TestSplitMatchesReference: the parallel splitter against a plain per-id walk of the tiers, on
// random tiers and ids (repeats, every batch size around the chunk size), with and without
// position mapping.
func TestSplitMatchesReference(t *testing.T) {
	rng := newRand(t)
	const nodes = 20000
	noRows := func([]int64, []byte) error { return nil }
	for round := range 6 {
		var ts []tiers.Tier
		for k, share := range []int64{3, 5} { // two memory tiers of random, disjoint-or-not ids
			c := host.New(8)
			var ids []int64
			for v := range int64(nodes) {
				if rng.Int64N(share) == 0 && (k == 0 || rng.IntN(2) == 0) {
					ids = append(ids, v)
				}
			}
			if err := c.Fill(ids, noRows); err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ts = append(ts, c)
		}
		all := make([]int64, nodes)
		for v := range all {
			all[v] = int64(v)
		}
		last := host.New(8)
		if err := last.Fill(all, noRows); err != nil {
			t.Fatal(err)
		}
		defer last.Close()
		ts = append(ts, last)
		n := []int{0, 1, splitChunk - 1, splitChunk + 1, 5*splitChunk + 7, 40000}[round]
		ids := randomIDs(rng, n, nodes)
		var posOf []int64
		if round%2 == 1 {
			posOf = make([]int64, n)
			for i := range posOf {
				posOf[i] = int64(3*i + 1)
			}
		}
		sp := splitIDs(ids, ts, make([]int64, 2*n), posOf, 4)
		// Reference: each id to the first tier holding it, in id order within each tier.
		want := make([][2][]int64, len(ts))
		slot := []int64{0}
		for i, id := range ids {
			for ti, tier := range ts {
				if tier.Lookup([]int64{id}, slot) > 0 {
					p := int64(i)
					if posOf != nil {
						p = posOf[i]
					}
					want[ti][0] = append(want[ti][0], slot[0])
					want[ti][1] = append(want[ti][1], p)
					if int(sp.tierOf[i]) != ti {
						t.Fatalf("round %d: ids[%d] = %d split to tier %d, first holder is %d", round, i, id, sp.tierOf[i], ti)
					}
					break
				}
			}
		}
		for ti := range ts {
			if sp.count[ti] != len(want[ti][0]) {
				t.Fatalf("round %d: tier %d serves %d rows, reference %d", round, ti, sp.count[ti], len(want[ti][0]))
			}
			gs, gp := sp.slots(ti), sp.pos(ti)
			for k := range gs {
				if gs[k] != want[ti][0][k] || gp[k] != want[ti][1][k] {
					t.Fatalf("round %d tier %d pair %d: (%d, %d), reference (%d, %d)", round, ti, k, gs[k], gp[k], want[ti][0][k], want[ti][1][k])
				}
			}
		}
	}
}

// indexedTier is a host-kind tier that answers tiers.DeviceIndexer as the test says.
type indexedTier struct {
	tiers.Tier // nil: splitTiers calls only Kind, Rows and DeviceIndex
	kind       tiers.Kind
	rows       int64
	idx        cuda.TierIndex
	ok         bool
}

func (t indexedTier) Kind() tiers.Kind                    { return t.kind }
func (t indexedTier) Rows() int64                         { return t.rows }
func (t indexedTier) DeviceIndex() (cuda.TierIndex, bool) { return t.idx, t.ok }

// plainTier is a host-kind tier without the capability (as the SIEVE tier).
type plainTier struct{ tiers.Tier }

func (plainTier) Kind() tiers.Kind { return tiers.Host }

// TestSplitTiersAskTheCapability: the device split puts a tier in the kernel because the tier
// hands it an index (tiers.DeviceIndexer), in the tier's fixed place, and leaves it (and every
// slower tier) to the host splitter otherwise.
func TestSplitTiersAskTheCapability(t *testing.T) {
	idx := cuda.TierIndex{IDs: 1, Table: 2, Mask: 15, Count: 7, Rows: 3}
	for _, c := range []struct {
		name    string
		host    tiers.Tier
		covered int64
		rest    int // tiers left to the host splitter (SSD included)
	}{
		{"indexed host tier", indexedTier{kind: tiers.Host, rows: 7, idx: idx, ok: true}, 7, 1},
		{"host tier that declines", indexedTier{kind: tiers.Host, rows: 7, idx: idx}, 0, 2},
		{"host tier without the capability", plainTier{}, 0, 2},
	} {
		last := &ssd.Tier{} // the SSD tier: only its place in the list matters
		s := &Store{stack: []tiers.Tier{c.host, last}, ssd: last}
		kernel, covered, rest := s.splitTiers()
		if covered != c.covered || len(rest) != c.rest || (c.covered > 0) != (kernel[1] == idx) || kernel[0] != (cuda.TierIndex{}) {
			t.Errorf("%s: kernel %+v, covered %d, %d tiers left; want covered %d, %d left, the index in place 1 only if covered", c.name, kernel, covered, len(rest), c.covered, c.rest)
		}
		if c.rest == 2 && rest[0] != c.host {
			t.Errorf("%s: the host tier is not the first left to the host splitter", c.name)
		}
	}
}
