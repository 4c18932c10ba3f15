package gpuio

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Budget bounds the reads in flight of several Stacks together (Options.Budget), so concurrent
// callers share one queue depth of the disk instead of each adding its own: with one caller
// active it may have its Stack's whole QueueDepth in flight, with several they split the budget,
// and a caller whose reads finish hands the freed places on to the others. A Budget may be
// shared by Stacks on any goroutines.
//
// A Stack takes a place for every read it starts and gives it back when the read completes.
// Submit never waits for one; Complete waits, when its Stack has nothing in flight, for the
// first place that frees up (waiters are served in arrival order, before Stacks that merely
// try), so every Stack makes progress.
//
// The places are an atomic count, so a read takes and gives one without a lock (a channel's lock,
// shared by every Stack, cost each read more CPU the more Stacks read at once); only a Stack that
// waits takes the lock of the waiters' queue.
type Budget struct {
	size    int64
	used    atomic.Int64 // places taken, those handed to waiters included
	waiting atomic.Int64 // len(waiters), read without mu by the paths that do not wait

	mu      sync.Mutex
	waiters []chan struct{} // arrival order; each is handed one place
}

// NewBudget returns a budget of reads in flight (> 0).
func NewBudget(reads int) (*Budget, error) {
	if reads <= 0 {
		return nil, fmt.Errorf("gpuio: budget of %d reads in flight, want > 0", reads)
	}
	return &Budget{size: int64(reads)}, nil
}

// Reads is the budget's size.
func (b *Budget) Reads() int { return int(b.size) }

// InFlight is the reads holding a place now.
func (b *Budget) InFlight() int { return int(b.used.Load()) }

// tryTake takes a place if one is free and no Stack waits for one.
func (b *Budget) tryTake() bool {
	return b.waiting.Load() == 0 && b.takeFree()
}

func (b *Budget) takeFree() bool {
	for {
		u := b.used.Load()
		if u >= b.size {
			return false
		}
		if b.used.CompareAndSwap(u, u+1) {
			return true
		}
	}
}

// take waits for a place, behind the Stacks already waiting.
func (b *Budget) take() {
	if b.tryTake() {
		return
	}
	w := make(chan struct{}, 1)
	b.mu.Lock()
	b.waiters = append(b.waiters, w)
	b.waiting.Add(1)
	b.mu.Unlock()
	b.wake() // a place given back before w was queued saw no waiter
	<-w
}

// give gives a place back: to the first waiter, if any.
func (b *Budget) give() {
	if b.used.Add(-1) < 0 {
		panic("gpuio: a budget place given back twice")
	}
	b.wake()
}

// wake hands free places to waiters in arrival order. Every give and every new waiter calls it
// after changing the count or the queue, so no waiter is left waiting beside a free place.
func (b *Budget) wake() {
	for b.waiting.Load() > 0 {
		b.mu.Lock()
		if len(b.waiters) == 0 || !b.takeFree() {
			b.mu.Unlock()
			return
		}
		w := b.waiters[0]
		b.waiters[0] = nil
		b.waiters = b.waiters[1:]
		b.waiting.Add(-1)
		b.mu.Unlock()
		w <- struct{}{}
	}
}
