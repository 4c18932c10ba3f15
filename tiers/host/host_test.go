package host

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestLookupAgainstMap(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, n := range []int{0, 1, 7, 1000, 50000} {
		held := map[int64]bool{}
		var ids []int64
		for len(ids) < n {
			id := rng.Int64N(int64(4 * n))
			if !held[id] {
				held[id] = true
				ids = append(ids, id)
			}
		}
		c := New(8)
		err := c.Fill(ids, func(sorted []int64, arena []byte) error {
			for i, id := range sorted {
				binary.LittleEndian.PutUint64(arena[8*i:], uint64(id))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		probe := make([]int64, 4*n+10)
		for i := range probe {
			probe[i] = int64(i) - 5
		}
		slots := make([]int64, len(probe))
		hits := c.Lookup(probe, slots)
		if hits != n || c.Rows() != int64(n) {
			t.Fatalf("n=%d: %d hits, %d rows", n, hits, c.Rows())
		}
		for i, id := range probe {
			if (slots[i] >= 0) != held[id] {
				t.Fatalf("n=%d: id %d slot %d, held %v", n, id, slots[i], held[id])
			}
			if slots[i] >= 0 && !bytes.Equal(c.Row(slots[i]), binary.LittleEndian.AppendUint64(nil, uint64(id))) {
				t.Fatalf("n=%d: row of id %d holds %x", n, id, c.Row(slots[i]))
			}
		}
		var covered int64
		last := int64(-2)
		c.Ranges(func(first, count int64) bool {
			if first <= last+1 {
				t.Fatalf("ranges not maximal or not increasing: %d after %d", first, last)
			}
			for id := first; id < first+count; id++ {
				if !held[id] {
					t.Fatalf("range [%d,+%d) covers %d, not held", first, count, id)
				}
			}
			covered += count
			last = first + count - 1
			return true
		})
		if covered != int64(n) {
			t.Fatalf("ranges cover %d of %d", covered, n)
		}
		c.Close()
	}
}

func TestFillRejectsDuplicates(t *testing.T) {
	err := New(4).Fill([]int64{3, 1, 3}, func([]int64, []byte) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "node 3") {
		t.Fatalf("got %v", err)
	}
}

func TestCapacityRows(t *testing.T) {
	if got := CapacityRows(1<<20, 496); got != 2048 {
		t.Fatalf("1 MiB of 496-byte rows: %d", got)
	}
	if CapacityRows(0, 4) != 0 || CapacityRows(-5, 4) != 0 {
		t.Fatal("non-positive budget must hold nothing")
	}
}
