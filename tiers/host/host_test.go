package host

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/cuda"
)

// Row reads the row in a slot, as the GPU path's pinning sees the arena. The tier contract
// (Lookup, CopyToHost, Ranges, ...) is checked by TestCacheConformance.
func TestRowIsTheSlotsRow(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	ids := make([]int64, 1000)
	for i := range ids {
		ids[i] = int64(i)*3 + rng.Int64N(3)
	}
	rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	c := New(8)
	defer c.Close()
	err := c.Fill(ids, func(sorted []int64, arena []byte) error {
		for i, id := range sorted {
			binary.LittleEndian.PutUint64(arena[8*i:], uint64(id))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slots := make([]int64, len(ids))
	c.Lookup(ids, slots)
	for i, id := range ids {
		if !bytes.Equal(c.Row(slots[i]), binary.LittleEndian.AppendUint64(nil, uint64(id))) {
			t.Fatalf("row of id %d (slot %d) holds %x", id, slots[i], c.Row(slots[i]))
		}
	}
	if len(c.Arena()) != len(ids)*8 {
		t.Fatalf("arena of %d bytes for %d rows of 8", len(c.Arena()), len(ids))
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

// A static tier hands the split kernel its index only once attached to a device, and never for
// rows narrower than PackBelow (those are packed for DMA).
func TestDeviceIndexNeedsADevice(t *testing.T) {
	for _, rb := range []int64{8, PackBelow} {
		c := New(rb)
		if err := c.Fill([]int64{1, 2}, func([]int64, []byte) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if idx, ok := c.DeviceIndex(); ok || idx != (cuda.TierIndex{}) {
			t.Errorf("rows of %d bytes, no device: %+v, %v", rb, idx, ok)
		}
		c.Close()
	}
}
