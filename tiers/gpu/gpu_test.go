package gpu

import (
	"testing"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/tiers/tierstest"
)

// The GPU tier with room for every row, with room for a third of them (Fill keeps the
// hottest), and filled through bounce buffers of a few rows. It runs where libtierfs_cuda.so and a GPU are (make gpu-test); elsewhere it skips.
func TestConformance(t *testing.T) {
	if err := cuda.Load(); err != nil {
		t.Skipf("skipping GPU test: %v", err)
	}
	for _, c := range []struct {
		name     string
		num, den int64
		bounce   int64
	}{{"all", 1, 1, 0}, {"third", 1, 3, 0}, {"all, bounce buffers of 1 KiB", 1, 1, 1 << 10}} {
		t.Run(c.name, func(t *testing.T) {
			if c.bounce > 0 { // fills of many bounce buffers, both goroutines reading
				defer func(b int64) { fillBounceBytes = b }(fillBounceBytes)
				fillBounceBytes = c.bounce
			}
			tierstest.Run(t, func(t *testing.T, rows [][]byte) tiers.Tier {
				tier, err := New(0, int64(len(rows[0])), int64(len(rows))*c.num/c.den, 64, 2)
				if err != nil {
					t.Fatal(err)
				}
				return tier
			})
		})
	}
}
