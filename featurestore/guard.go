package featurestore

import (
	"sync"
	"sync/atomic"
)

// callGuard lets Close wait for the calls running on a Store. Every public call that touches
// memory or files Close releases enters the guard first and leaves it when done. Calls may nest
// (a Sample's hop reads enter again): the guard is a counter, not a lock, so a nested enter never
// waits behind a waiting Close. Once Close has begun, every enter (nested ones too) fails, and
// Close waits until the count is zero. The zero value is ready to use.
type callGuard struct {
	state atomic.Int64 // calls running, plus closingBit once Close has begun

	mu     sync.Mutex
	wake   chan struct{} // made by close before closingBit is set; a token when the count drops
	closed chan struct{} // made by the first close; closed once it has released everything
}

const closingBit = 1 << 62

// enter counts a call in, or reports false once Close has begun.
func (g *callGuard) enter() bool {
	if g.state.Add(1)&closingBit != 0 {
		g.leave()
		return false
	}
	return true
}

// leave counts a call out; the last one out after Close began wakes it.
func (g *callGuard) leave() {
	if g.state.Add(-1) != closingBit {
		return
	}
	g.mu.Lock()
	select {
	case g.wake <- struct{}{}:
	default: // a token is pending already
	}
	g.mu.Unlock()
}

// close makes every later enter fail and waits for the calls running. It reports true to the
// first caller, which must release the store's resources and then call released; later callers
// wait for that and get false.
func (g *callGuard) close() bool {
	g.mu.Lock()
	if done := g.closed; done != nil {
		g.mu.Unlock()
		<-done
		return false
	}
	g.closed = make(chan struct{})
	g.wake = make(chan struct{}, 1)
	g.mu.Unlock()
	g.state.Or(closingBit)
	for g.state.Load() != closingBit {
		<-g.wake
	}
	return true
}

// released marks the close finished: waitReleased and later closes return.
func (g *callGuard) released() { close(g.closed) }

// waitReleased waits, after a failed enter, until the close has released the store's resources.
func (g *callGuard) waitReleased() {
	g.mu.Lock()
	done := g.closed
	g.mu.Unlock()
	<-done
}
