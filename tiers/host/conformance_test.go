package host

import (
	"fmt"
	"os"
	"path/filepath"
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

// The shared backing: each Fill makes a new shared tier file with FillShared in one Cache and
// maps it with MapShared in another (as the other processes of a host do), removes the file and
// the creator, and the suite checks the mapped tier.
func TestSharedCacheConformance(t *testing.T) {
	tierstest.Run(t, func(t *testing.T, rows [][]byte) tiers.Tier {
		return &mappedShared{Cache: New(int64(len(rows[0]))), dir: shmDir(t)}
	})
}

type mappedShared struct {
	*Cache
	dir   string
	fills int
}

func (m *mappedShared) Fill(ids []int64, load tiers.Source) error {
	m.fills++
	path := filepath.Join(m.dir, fmt.Sprintf("tier-%d", m.fills))
	creator := New(m.rowBytes)
	defer creator.Close()
	if err := creator.FillShared(nil, path, "k", ids, load); err != nil {
		return err
	}
	defer os.Remove(path)
	return m.MapShared(path, "k")
}
