package featurestore

import (
	"fmt"
	"sync"

	"github.com/tierfs/tierfs/internal/sysinfo"
)

// IO staging is budgeted per process: every session's IO stacks map staging at open (stacks ×
// queue depth × 128 KiB), and the sessions a process holds open together may map at most half
// the memory that was available when the first of them opened. One session too big for that is
// refused naming its options; one that would pass it beside the others is refused naming what
// they hold. Closing a session returns its share.

// stagingBytesPerRead is the IO stacks' staging per read in flight (gpuio's default largest read).
const stagingBytesPerRead = 128 << 10

// stagingAccount is a staging budget and what is reserved of it.
type stagingAccount struct {
	mu       sync.Mutex
	budget   int64 // half the memory available when the account was last empty
	reserved int64 // held by open sessions
	sessions int
}

// processStaging is the process's account, which every session reserves from.
var processStaging stagingAccount

// reserve reserves the staging opt's IO stacks map, or refuses it; the returned func gives it
// back (Session.Close). memAvailable measures the machine (sysinfo.MemAvailable).
func (ps *stagingAccount) reserve(opt *Options, memAvailable func() (int64, error)) (release func(), err error) {
	need := int64(opt.MaxConcurrentIO) * int64(opt.QueueDepth) * stagingBytesPerRead
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.sessions == 0 {
		avail, err := memAvailable()
		if err != nil {
			return func() {}, nil // not Linux's /proc: nothing to check against
		}
		ps.budget = avail / 2
	}
	if one := int64(opt.QueueDepth) * stagingBytesPerRead; one > ps.budget { // even one stack is too big
		return nil, &OptionError{Option: "queue_depth", Value: opt.QueueDepth,
			Want: fmt.Sprintf("reads in flight whose staging (queue_depth %d × 128 KiB = %d bytes a stack) fits the process's IO staging budget of %d bytes (half the memory available)", opt.QueueDepth, one, ps.budget)}
	}
	if ps.reserved+need > ps.budget {
		held := ""
		if ps.sessions > 0 {
			held = fmt.Sprintf(" beside the %d bytes the %d stores this process has open hold", ps.reserved, ps.sessions)
		}
		return nil, &OptionError{Option: "max_concurrent_io", Value: opt.MaxConcurrentIO,
			Want: fmt.Sprintf("IO stacks whose staging (max_concurrent_io %d × queue_depth %d × 128 KiB = %d bytes)%s fits the process's IO staging budget of %d bytes (half the memory available when the first opened); close stores or lower max_concurrent_io or queue_depth",
				opt.MaxConcurrentIO, opt.QueueDepth, need, held, ps.budget)}
	}
	ps.reserved += need
	ps.sessions++
	var once sync.Once
	return func() {
		once.Do(func() {
			ps.mu.Lock()
			ps.reserved -= need
			ps.sessions--
			ps.mu.Unlock()
		})
	}, nil
}

// memAvailable is what reserveStaging measures the machine by.
func memAvailable() (int64, error) { return sysinfo.MemAvailable() }
