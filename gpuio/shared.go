package gpuio

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// Shared serves host reads of many goroutines through one Stack: one queue of reads, one queue
// depth, one ring. Every Read's reads join the same FIFO queue, and one goroutine (started by
// NewShared) keeps the Stack's queue depth full from it, reaps, verifies and scatters, so the
// disk sees one deep queue fed by every Read in flight rather than one queue per caller that
// drains at the end of each caller's batch.
//
// Read may run from any number of goroutines at once; Close runs alone, after the last Read.
// Requests must be host-bound (Dst set): device destinations need a caller's stream and go
// through a Stack of their own.
type Shared struct {
	st *Stack

	mu      sync.Mutex
	wake    *sync.Cond // the server waits on it for work or Close
	inbox   []*sharedRead
	closing bool
	stats   Stats // the Stack's counters as of the last Read answered
	exited  chan struct{}

	// Owned by the server goroutine.
	active map[*sharedRead]struct{} // planned, not yet answered
	broken error                    // the ring failed: every later Read fails with it
}

// sharedRead is one Read call: its requests, the reads of it not yet finished, and its answer.
type sharedRead struct {
	reqs    []Request
	pending int // reads queued or in flight (server only)
	err     error
	done    chan struct{} // closed once err is final and no read of it will touch Dst again
}

// errSharedClosed answers Reads queued when Close ran.
var errSharedClosed = errors.New("gpuio: Read on a closed Shared stack")

// NewShared serves Reads through st, which it owns from now on (Close closes it). st must have
// no device attached and nothing submitted.
func NewShared(st *Stack) (*Shared, error) {
	if st.dev != nil || st.inflight > 0 || st.queueHead < len(st.queue) {
		return nil, errors.New("gpuio: NewShared needs an idle Stack without a device")
	}
	q := &Shared{st: st, stats: st.Stats(), exited: make(chan struct{}), active: map[*sharedRead]struct{}{}}
	q.wake = sync.NewCond(&q.mu)
	go q.serve()
	return q, nil
}

// Read serves reqs and returns once every one is in place, or with the first error among its
// reads (then its Dst contents are unspecified; no read of it writes them after Read returns).
// Validation is all-or-nothing, as Submit's. Reads of other callers are not affected by an error
// of this one.
func (q *Shared) Read(reqs []Request) error {
	if len(reqs) == 0 {
		return nil
	}
	if err := q.st.check(reqs); err != nil {
		return err
	}
	for i, r := range reqs {
		if r.Dst == nil {
			return fmt.Errorf("gpuio: request %d: a Shared stack serves host destinations only (Dst is nil)", i)
		}
	}
	sr := &sharedRead{reqs: reqs, done: make(chan struct{})}
	q.mu.Lock()
	if q.closing {
		q.mu.Unlock()
		return errSharedClosed
	}
	q.inbox = append(q.inbox, sr)
	q.wake.Signal()
	q.mu.Unlock()
	<-sr.done
	return sr.err
}

// Stats returns the Stack's counters; they include every Read that has returned.
func (q *Shared) Stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.stats
}

// Backend reports the backend in use.
func (q *Shared) Backend() Backend { return q.st.backend }

// Close answers queued Reads with an error, waits for the reads in flight and closes the Stack.
func (q *Shared) Close() error {
	q.mu.Lock()
	if q.closing {
		q.mu.Unlock()
		<-q.exited
		return nil
	}
	q.closing = true
	q.wake.Signal()
	q.mu.Unlock()
	<-q.exited
	return q.st.Close()
}

// serve is the server goroutine: it plans arriving Reads into the Stack's queue, keeps the queue
// depth full, and answers each Read when its last read is finished.
func (q *Shared) serve() {
	defer close(q.exited)
	s := q.st
	sinceRefill := 0
	done := func(rd *read, n int, ioErr error) {
		sr := rd.job
		err := s.finish(rd, n, ioErr)
		if rd.slot < 0 { // turned away by the device and queued again: not finished
			return
		}
		q.settle(sr, err)
		if sinceRefill++; sinceRefill == refillEvery {
			sinceRefill = 0
			if err := s.pump(true); err != nil {
				q.failQueued(err)
			}
		}
	}
	for {
		q.mu.Lock()
		q.stats = s.Stats()
		for !q.closing && len(q.inbox) == 0 && s.inflight == 0 && s.queueHead == len(s.queue) {
			q.wake.Wait()
		}
		arrived, closing := q.inbox, q.closing
		q.inbox = nil
		q.mu.Unlock()
		for _, sr := range arrived {
			q.start(sr)
		}
		if closing {
			q.failQueued(errSharedClosed)
			if s.inflight == 0 {
				q.mu.Lock()
				q.stats = s.Stats()
				for _, sr := range q.inbox { // arrived after the last look
					sr.err = errSharedClosed
					close(sr.done)
				}
				q.inbox = nil
				q.mu.Unlock()
				return
			}
		} else if q.broken == nil {
			if err := s.pump(true); err != nil {
				q.failQueued(err)
			}
		}
		if s.inflight == 0 {
			continue
		}
		s.reapedAt = time.Time{}
		if err := s.eng.wait(done); err != nil {
			// Reads still in flight can no longer be reaped: nothing will copy them into any Dst,
			// and every Read waiting or to come fails.
			q.broken = fmt.Errorf("gpuio: %d reads still in flight: %w", s.inflight, err)
			s.broken = q.broken
			q.failQueued(q.broken)
			for sr := range q.active {
				sr.err = errors.Join(sr.err, q.broken)
				q.answer(sr)
			}
			s.inflight = 0 // never reaped: Close leaves the staging mapped (s.broken)
		}
	}
}

// start plans sr's reads at the tail of the queue, or answers it at once when the ring is broken.
func (q *Shared) start(sr *sharedRead) {
	s := q.st
	if q.broken != nil {
		sr.err = q.broken
		close(sr.done)
		return
	}
	for _, r := range sr.reqs {
		s.stats.Requests++
		s.stats.BytesRequested += uint64(r.Length)
	}
	first := len(s.queue)
	s.plan(sr.reqs)
	for _, rd := range s.queue[first:] {
		rd.job = sr
	}
	sr.pending = len(s.queue) - first
	q.active[sr] = struct{}{}
}

// settle accounts for one finished read of sr; an error drops sr's queued reads.
func (q *Shared) settle(sr *sharedRead, err error) {
	sr.pending--
	if err != nil && sr.err == nil {
		sr.err = err
		q.dropQueued(func(rd *read) bool { return rd.job == sr }, nil)
	}
	if sr.pending == 0 {
		q.answer(sr)
	}
}

// failQueued drops every queued read, failing its Read with err.
func (q *Shared) failQueued(err error) {
	q.dropQueued(func(*read) bool { return true }, err)
}

// dropQueued removes the queued reads that match, and answers their Reads once nothing of them
// is left; with err set, a Read that lost a read fails with it (unless it failed already).
func (q *Shared) dropQueued(match func(*read) bool, err error) {
	s := q.st
	kept := s.queue[:s.queueHead]
	for _, rd := range s.queue[s.queueHead:] {
		if !match(rd) {
			kept = append(kept, rd)
			continue
		}
		sr := rd.job
		clear(rd.pieces)
		s.spare = append(s.spare, rd)
		if err != nil && sr.err == nil {
			sr.err = err
		}
		if sr.pending--; sr.pending == 0 {
			q.answer(sr)
		}
	}
	clear(s.queue[len(kept):])
	s.queue = kept
	if s.queueHead == len(s.queue) {
		s.queue, s.queueHead = s.queue[:0], 0
	}
}

// answer hands sr its result.
func (q *Shared) answer(sr *sharedRead) {
	if _, ok := q.active[sr]; !ok {
		return
	}
	delete(q.active, sr)
	q.mu.Lock()
	q.stats = q.st.Stats() // what the caller did shows in Stats once Read returns
	q.mu.Unlock()
	close(sr.done)
}
