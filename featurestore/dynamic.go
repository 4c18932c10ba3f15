package featurestore

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tierfs/tierfs/gpuio"
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

// newDynamicHost returns the host cache of a dynamic policy, or nil for the static one.
func newDynamicHost(policy string, rowBytes, budget int64) (*host.Sieve, error) {
	switch policy {
	case "", HostStatic:
		return nil, nil
	case HostSieve:
		c, err := host.NewSieve(rowBytes, budget)
		if err != nil {
			return nil, fmt.Errorf("featurestore: %w", err)
		}
		return c, nil
	}
	return nil, fmt.Errorf("featurestore: HostPolicy %q: want %q (the default) or %q", policy, HostStatic, HostSieve)
}

// HostTier is the host tier as the store serves it: the static cache, or the SIEVE cache when
// Options.HostPolicy is "sieve".
func (s *Store) HostTier() tiers.Tier {
	if s.dyn != nil {
		return s.dyn
	}
	return s.host
}

// placeDynamic is Place under a dynamic host policy: ids (hottest first) go to the GPU tier as
// usual, the next ones that fit pre-fill the cache, coldest admitted first so that SIEVE evicts
// them first. The caller holds the place lock.
func (s *Store) placeDynamic(ids []int64, gpuRows int64) error {
	g := min(gpuRows, int64(len(ids)))
	if err := s.fillTiers(ids[:g], gpuRows); err != nil {
		return err
	}
	s.dyn.Reset()
	rest := ids[g:]
	rest = slices.Clone(rest[:min(int64(len(rest)), s.dyn.Capacity())])
	slices.Reverse(rest)
	rb := s.spec.RowBytes
	const chunk = 1 << 14
	buf := make([]byte, min(chunk, len(rest))*int(rb))
	for lo := 0; lo < len(rest); lo += chunk {
		part := rest[lo:min(lo+chunk, len(rest))]
		rows := buf[:int64(len(part))*rb]
		if err := s.loadRows(part, rows); err != nil {
			return err
		}
		s.dyn.Admit(part, rows, nil)
	}
	return nil
}

// gatherDynamic is Gather under a dynamic host policy; the caller holds the place lock for
// reading and has checked ids and dst. Hits are copied out of the cache first (with CopyWorkers
// goroutines for large batches), then the misses are read from disk and admitted once the read
// is complete, so a row is in the cache only after it is whole.
func (s *Store) gatherDynamic(ids []int64, dst []byte, start time.Time) error {
	rb := s.spec.RowBytes
	hit := make([]bool, len(ids))
	hostHits := 0
	workers := s.opt.CopyWorkers
	if int64(len(ids))*rb < 1<<20 || workers < 2 {
		hostHits = s.dyn.Get(ids, dst, hit)
	} else {
		var wg sync.WaitGroup
		var mu sync.Mutex
		chunk := (len(ids) + workers - 1) / workers
		for lo := 0; lo < len(ids); lo += chunk {
			hi := min(lo+chunk, len(ids))
			wg.Go(func() {
				n := s.dyn.Get(ids[lo:hi], dst[int64(lo)*rb:int64(hi)*rb], hit[lo:hi])
				mu.Lock()
				hostHits += n
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	var reqs []gpuio.Request
	if miss := len(ids) - hostHits; miss > 0 {
		reqs = make([]gpuio.Request, 0, miss)
		for i, id := range ids {
			if !hit[i] {
				file, off := s.spec.Locate(id)
				reqs = append(reqs, gpuio.Request{File: file, Offset: off, Length: int(rb), Dst: dst[int64(i)*rb : int64(i+1)*rb]})
			}
		}
	}
	err := s.read(reqs)
	if err == nil && len(reqs) > 0 {
		s.dyn.Admit(ids, dst, hit)
	}
	s.stats.gather(len(ids), hostHits, len(reqs), rb, time.Since(start))
	if err != nil {
		return fmt.Errorf("featurestore: gather: %w", err)
	}
	return nil
}
