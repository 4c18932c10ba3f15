package featurestore

import (
	"fmt"

	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/tiers/host"
)

// Host-tier policies (Options.HostPolicy).
const (
	// HostStatic fills the host tier once from the placement (the default; Place refills it).
	HostStatic = "static"
	// HostSieve makes the host tier a cache: Place pre-fills it with the hottest rows, Gather
	// admits every row it reads from disk, and SIEVE evicts (for access patterns that drift).
	HostSieve = "sieve"
)

// newHostTier returns the host tier of a policy.
func newHostTier(policy string, rowBytes, budget int64, workers int) (tiers.Tier, error) {
	switch policy {
	case "", HostStatic:
		c := host.New(rowBytes)
		c.SetWorkers(workers)
		return c, nil
	case HostSieve:
		c, err := host.NewSieve(rowBytes, budget)
		if err != nil {
			return nil, fmt.Errorf("featurestore: %w", err)
		}
		c.SetWorkers(workers)
		return c, nil
	}
	return nil, fmt.Errorf("featurestore: HostPolicy %q: want %q (the default) or %q", policy, HostStatic, HostSieve)
}
