package featurestore

import (
	"github.com/tierfs/tierfs/tiers"
)

// TierOf names the fastest tier holding the row of id (gpu, host or ssd), read under the
// placement lock, so a concurrent Place is seen before or after, never halfway. On a closed
// store every row is on the SSD.
func (s *Store) TierOf(id int64) tiers.Kind {
	leave, err := s.enter()
	if err != nil {
		return tiers.SSD
	}
	defer leave()
	s.place.RLock()
	defer s.place.RUnlock()
	slots := []int64{-1}
	for _, t := range s.tierList() {
		if t.Lookup([]int64{id}, slots) > 0 {
			return t.Kind()
		}
	}
	return tiers.SSD
}

// TierRanges calls fn with each run [first, first+count) of consecutive node ids tier kind
// holds, ascending, until fn returns false; under the placement lock (fn must not call Place).
// A closed store holds nothing.
func (s *Store) TierRanges(kind tiers.Kind, fn func(first, count int64) bool) {
	leave, err := s.enter()
	if err != nil {
		return
	}
	defer leave()
	s.place.RLock()
	defer s.place.RUnlock()
	for _, t := range s.tierList() {
		if t.Kind() == kind {
			t.Ranges(fn)
			return
		}
	}
}
