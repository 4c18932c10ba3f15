package featurestore

import (
	"errors"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/gpuio"
)

// TestStagingBudgetIsPerProcess: the sessions a process holds open together map at most half the
// memory available when the first opened; the one that would pass it is refused naming what the
// others hold, and closing one gives its share back.
func TestStagingBudgetIsPerProcess(t *testing.T) {
	avail, err := memAvailable()
	if err != nil {
		t.Skipf("no MemAvailable here: %v", err)
	}
	d := writeDataset(t, 500, 4, 1, 3, newRand(t))
	// Each session maps 40% of the budget (virtual, untouched: pread maps no ring buffers).
	const qd = 64
	stacks := int(avail / 2 * 4 / 10 / (qd * stagingBytesPerRead))
	if stacks < 1 {
		t.Skip("too little memory available to size the sessions")
	}
	opt := Options{MaxConcurrentIO: stacks, QueueDepth: qd, IOBackend: gpuio.BackendPread}
	processStaging.mu.Lock()
	before, open := processStaging.reserved, processStaging.sessions // stores other tests left open
	processStaging.mu.Unlock()
	if open > 0 {
		t.Skipf("%d stores are open in this process; the budget was measured when the first opened", open)
	}
	a, err := OpenSession(d.Dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenSession(d.Dir, opt)
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	_, err = OpenSession(d.Dir, opt)
	if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "2 stores this process has open") {
		t.Errorf("a third session of 40%% of the budget: %v, want a refusal naming the two open", err)
	}
	b.Close()
	c, err := OpenSession(d.Dir, opt)
	if err != nil {
		t.Fatalf("after closing one, a session of the same size: %v", err)
	}
	c.Close()
	a.Close()
	if processStaging.sessions != open || processStaging.reserved != before {
		t.Errorf("after closing every session the account holds %d bytes of %d sessions", processStaging.reserved, processStaging.sessions)
	}
}

// TestStagingBudgetRefusesOneTooBig: one session, or one stack, past the budget is refused naming
// its options, with the numbers.
func TestStagingBudgetRefusesOneTooBig(t *testing.T) {
	mem := func() (int64, error) { return 100 << 20, nil } // budget 50 MiB
	var acct stagingAccount
	if _, err := acct.reserve(&Options{MaxConcurrentIO: 1, QueueDepth: 1024}, mem); err == nil || !strings.Contains(err.Error(), "queue_depth 1024 × 128 KiB") {
		t.Errorf("a 128 MiB stack: %v", err)
	}
	if _, err := acct.reserve(&Options{MaxConcurrentIO: 8, QueueDepth: 64}, mem); err == nil || !strings.Contains(err.Error(), "max_concurrent_io 8 × queue_depth 64") {
		t.Errorf("8 stacks of 8 MiB: %v", err)
	}
	release, err := acct.reserve(&Options{MaxConcurrentIO: 2, QueueDepth: 64}, mem)
	if err != nil {
		t.Fatal(err)
	}
	release()
	release() // twice is once
	if acct.sessions != 0 || acct.reserved != 0 {
		t.Errorf("the account holds %d bytes of %d sessions", acct.reserved, acct.sessions)
	}
}
