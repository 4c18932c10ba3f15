package featurestore

import (
	"fmt"

	"github.com/tierfs/tierfs/placement"
	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/tiers/host"
)

// Sharing one host tier among the processes of a host (the ranks of a torch.distributed job on
// one machine): one process fills it in a file in shared memory with ShareHostTier, the others
// map that file with MapHostTier (host.Cache.FillShared, MapShared). The GPU tier is each
// process's own, placed with PlaceIDs as before. Naming the file, telling the processes when it is
// ready and removing it once all have mapped it are the caller's (python/tierfs/distributed.py).

// ShareHostTier refills the static host tier with ids (hottest first; the first ones its budget
// holds) in a new file at path in shared memory, which must not exist. ids must be distinct and
// in [0, NumNodes). The GPU tier keeps its rows. Gathers wait while it runs.
func (s *Store) ShareHostTier(path string, ids []int64) error {
	if err := s.needFeature("ShareHostTier"); err != nil {
		return err
	}
	return s.refillHost("ShareHostTier", func(c *host.Cache) error {
		if err := s.checkPlaceIDs("ShareHostTier", ids); err != nil {
			return err
		}
		ids = ids[:min(int64(len(ids)), s.kindRows(tiers.Host))]
		key, err := s.sharedTierKey()
		if err != nil {
			return err
		}
		return c.FillShared(nil, path, key, ids, s.ssd.Source)
	})
}

// sharedTierKey is the key a shared host tier file of this store is filled and mapped under
// (host.Cache.FillShared): the dataset's manifest fingerprint, the node type and the feature, so
// a file of another dataset, type or feature is refused, not served as this store's rows.
func (s *Store) sharedTierKey() (string, error) {
	fp, err := placement.Fingerprint(s.m.Dir())
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("dataset %016x node type %q feature %q", fp, s.NodeType(), s.spec.Name), nil
}

// MapHostTier makes the static host tier the one another process filled at path with
// ShareHostTier (rows of this store's dataset, node type and feature; the file is checked, see
// host.Cache.MapShared). The
// GPU tier keeps its rows. Gathers wait while it runs.
func (s *Store) MapHostTier(path string) error {
	if err := s.needFeature("MapHostTier"); err != nil {
		return err
	}
	return s.refillHost("MapHostTier", func(c *host.Cache) error {
		key, err := s.sharedTierKey()
		if err != nil {
			return err
		}
		return c.MapShared(path, key)
	})
}

// refillHost runs fill on the static host tier under the placement lock, once no kernel of an
// earlier gather reads it.
func (s *Store) refillHost(op string, fill func(c *host.Cache) error) error {
	leave, err := s.enter()
	if err != nil {
		return err
	}
	defer leave()
	c := s.Host()
	if c == nil {
		return fmt.Errorf("featurestore: %s: the host tier is a SIEVE cache (HostPolicy %q); only the static one is shared", op, HostSieve)
	}
	s.place.Lock()
	defer s.place.Unlock()
	s.tierGen++
	if g := s.gpu; g != nil {
		if err := g.quiesce(s); err != nil {
			return err
		}
	}
	if err := fill(c); err != nil {
		return fmt.Errorf("featurestore: %s: %w", op, err)
	}
	return nil
}
