package host

import (
	"testing"

	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/tiers/tierstest"
)

func TestCacheConformance(t *testing.T) {
	tierstest.Run(t, func(t *testing.T, rows [][]byte) tiers.Tier { return New(int64(len(rows[0]))) })
}

// The Sieve with room for every row, and with room for a third of them (Fill keeps the hottest,
// Admit evicts).
func TestSieveConformance(t *testing.T) {
	for _, c := range []struct {
		name     string
		num, den int64
	}{{"all", 1, 1}, {"third", 1, 3}} {
		t.Run(c.name, func(t *testing.T) {
			tierstest.Run(t, func(t *testing.T, rows [][]byte) tiers.Tier {
				rb := int64(len(rows[0]))
				s, err := NewSieve(rb, sieveFixedBytes+int64(len(rows))*c.num/c.den*SieveBytesPerRow(rb))
				if err != nil {
					t.Fatal(err)
				}
				return s
			})
		})
	}
}
