package featurestore

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tierfs/tierfs/gpuio"
)

// Gather writes the feature row of ids[i] to dst[i*RowBytes : (i+1)*RowBytes] for every i.
// len(dst) must be len(ids)*RowBytes; ids may repeat and come in any order. Ids are split by tier:
// disk reads for the rows no faster tier holds are submitted first, host-tier hits are copied
// while they are in flight, and Gather returns once every row is in place. On error dst holds
// partial results.
func (s *Store) Gather(ids []int64, dst []byte) error {
	leave, err := s.enter()
	if err != nil {
		return err
	}
	defer leave()
	rb := s.spec.RowBytes
	if int64(len(dst)) != int64(len(ids))*rb {
		return fmt.Errorf("featurestore: gather of %d ids needs a %d-byte destination (%d bytes per row), got %d bytes", len(ids), int64(len(ids))*rb, rb, len(dst))
	}
	if err := s.checkIDs(ids); err != nil {
		return err
	}
	start := time.Now()
	s.place.RLock()
	defer s.place.RUnlock()
	if s.dyn != nil {
		return s.gatherDynamic(ids, dst, start)
	}

	slots := make([]int64, len(ids))
	hostHits := s.host.Lookup(ids, slots)
	// Rows of the GPU tier (when the GPU path runs) come back from device memory: their slot is
	// marked gpuSlot, gpuPos lists where they go and gpuSlots where they are.
	var gpuPos []int
	var gpuSlots []int64
	if g := s.gpu; g != nil && g.tier.Rows() > 0 && hostHits < len(ids) {
		for i, id := range ids {
			if slots[i] < 0 {
				if slot := g.tier.Slot(id); slot >= 0 {
					slots[i] = gpuSlot
					gpuPos, gpuSlots = append(gpuPos, i), append(gpuSlots, slot)
				}
			}
		}
	}
	var reqs []gpuio.Request
	if miss := len(ids) - hostHits - len(gpuPos); miss > 0 {
		reqs = make([]gpuio.Request, 0, miss)
		for i, id := range ids {
			if slots[i] == -1 {
				file, off := s.spec.Locate(id)
				reqs = append(reqs, gpuio.Request{File: file, Offset: off, Length: int(rb), Dst: dst[int64(i)*rb : int64(i+1)*rb]})
			}
		}
	}
	var ioErr, gpuErr error
	var ioDone sync.WaitGroup
	if len(reqs) > 0 {
		ioDone.Go(func() { ioErr = s.read(reqs) })
	}
	if len(gpuPos) > 0 {
		ioDone.Go(func() { gpuErr = s.copyGPUHitsToHost(gpuSlots, gpuPos, dst) })
	}
	if hostHits > 0 {
		s.copyHostHits(slots, dst)
	}
	ioDone.Wait()
	s.stats.gpuHits.Add(uint64(len(gpuPos)))
	s.stats.gather(len(ids), hostHits, len(reqs), rb, time.Since(start))
	if err := errors.Join(ioErr, gpuErr); err != nil {
		return fmt.Errorf("featurestore: gather: %w", err)
	}
	return nil
}

// gpuSlot marks, in Gather's slots, a row the GPU tier serves.
const gpuSlot = -2

// checkIDs rejects ids outside [0, NumNodes) naming the first bad one.
func (s *Store) checkIDs(ids []int64) error {
	n := s.NumNodes()
	for i, id := range ids {
		if uint64(id) >= uint64(n) {
			return fmt.Errorf("featurestore: ids[%d] = %d is out of range [0, %d): %w", i, id, n, ErrIDOutOfRange)
		}
	}
	return nil
}

// copyHostHits copies the rows of every slot >= 0 to its place in dst, with CopyWorkers
// goroutines when the batch is large enough to pay for them.
func (s *Store) copyHostHits(slots []int64, dst []byte) {
	rb := s.spec.RowBytes
	copyRange := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if slot := slots[i]; slot >= 0 {
				copy(dst[int64(i)*rb:int64(i+1)*rb], s.host.Row(slot))
			}
		}
	}
	workers := s.opt.CopyWorkers
	if bytes := int64(len(slots)) * rb; bytes < 1<<20 || workers < 2 {
		copyRange(0, len(slots))
		return
	}
	var wg sync.WaitGroup
	chunk := (len(slots) + workers - 1) / workers
	for lo := 0; lo < len(slots); lo += chunk {
		hi := min(lo+chunk, len(slots))
		wg.Go(func() { copyRange(lo, hi) })
	}
	wg.Wait()
}
