package gpuio

import "fmt"

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
type Budget struct {
	places chan struct{} // a send takes a place, a receive gives one back
}

// NewBudget returns a budget of reads in flight (> 0).
func NewBudget(reads int) (*Budget, error) {
	if reads <= 0 {
		return nil, fmt.Errorf("gpuio: budget of %d reads in flight, want > 0", reads)
	}
	return &Budget{places: make(chan struct{}, reads)}, nil
}

// Reads is the budget's size.
func (b *Budget) Reads() int { return cap(b.places) }

// InFlight is the reads holding a place now.
func (b *Budget) InFlight() int { return len(b.places) }

func (b *Budget) tryTake() bool {
	select {
	case b.places <- struct{}{}:
		return true
	default:
		return false
	}
}

func (b *Budget) take() { b.places <- struct{}{} }
func (b *Budget) give() { <-b.places }
