package featurestore

import (
	"github.com/tierfs/tierfs/tiers"
)

// TierOf names the fastest tier holding the row of id (gpu, host or ssd), read under the
// placement lock, so a concurrent Place is seen before or after, never halfway.
func (s *Store) TierOf(id int64) tiers.Kind {
	s.place.RLock()
	defer s.place.RUnlock()
	slots := []int64{-1}
	if g := s.gpu; g != nil && g.tier.Slot(id) >= 0 {
		return tiers.GPU
	}
	if s.HostTier().Lookup([]int64{id}, slots) > 0 {
		return tiers.Host
	}
	return tiers.SSD
}

// TierRanges calls fn with each run [first, first+count) of consecutive node ids tier kind
// holds, ascending, until fn returns false; under the placement lock (fn must not call Place).
func (s *Store) TierRanges(kind tiers.Kind, fn func(first, count int64) bool) {
	s.place.RLock()
	defer s.place.RUnlock()
	switch kind {
	case tiers.GPU:
		if g := s.gpu; g != nil {
			g.tier.Ranges(fn)
		}
	case tiers.Host:
		s.HostTier().Ranges(fn)
	case tiers.SSD:
		if n := s.NumNodes(); n > 0 {
			fn(0, n)
		}
	}
}
