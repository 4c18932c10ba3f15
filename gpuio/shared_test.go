package gpuio

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

func openShared(t *testing.T, fds []int, opts Options) *Shared {
	t.Helper()
	st, err := Open(fds, opts)
	if err != nil {
		t.Fatal(err)
	}
	q, err := NewShared(st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := q.Close(); err != nil {
			t.Error(err)
		}
	})
	return q
}

// readersAtOnce runs readers goroutines, each calling Read rounds times with the requests
// build makes for it, and returns each call's error by reader and round.
func readersAtOnce(q *Shared, readers, rounds int, build func(reader, round int) []Request) [][]error {
	errs := make([][]error, readers)
	var wg sync.WaitGroup
	for g := range readers {
		errs[g] = make([]error, rounds)
		wg.Go(func() {
			for k := range rounds {
				errs[g][k] = q.Read(build(g, k))
			}
		})
	}
	wg.Wait()
	return errs
}

// Many readers at once, a queue shallower than what they ask for together: every Read returns
// exactly the bytes a plain read of the file gives (unaligned, straddling, large, duplicate).
func TestSharedMatchesReference(t *testing.T) {
	seed := testSeed(t)
	fds, want := testFiles(t, seed, 3<<20, 5<<20+100, 64<<10)
	forEachBackend(t, func(t *testing.T, backend Backend) {
		q := openShared(t, fds, Options{Backend: backend, QueueDepth: 16})
		const readers, rounds = 8, 6
		reqs := make([][][]Request, readers)
		for g := range reqs {
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			for range rounds {
				reqs[g] = append(reqs[g], mixedRequests(rng, want, 20+rng.IntN(200)))
			}
		}
		errs := readersAtOnce(q, readers, rounds, func(g, k int) []Request { return reqs[g][k] })
		for g := range readers {
			for k := range rounds {
				if errs[g][k] != nil {
					t.Fatalf("reader %d, round %d: %v", g, k, errs[g][k])
				}
				checkBytes(t, reqs[g][k], want)
			}
		}
		st := q.Stats()
		var n uint64
		for g := range reqs {
			for _, r := range reqs[g] {
				n += uint64(len(r))
			}
		}
		if st.Requests != n || st.Reads == 0 {
			t.Fatalf("stats: %d requests, %d reads; want %d requests and some reads", st.Requests, st.Reads, n)
		}
	})
}

// A failing read fails only the Read it serves: readers of file 0 get their bytes while readers
// of file 1 get the injected error (EIO, a short read, a bit flip caught by Verify).
func TestSharedErrorsStayWithTheirRead(t *testing.T) {
	seed := testSeed(t)
	fds, want := testFiles(t, seed, 2<<20, 2<<20)
	verify := func(file int, off int64, block []byte) error {
		if !bytes.Equal(block, want[file][off:off+int64(len(block))]) {
			return errors.New("checksum mismatch")
		}
		return nil
	}
	forEachBackend(t, func(t *testing.T, backend Backend) {
		for _, c := range []struct {
			fault FaultKind
			want  string
		}{{FaultEIO, "EIO"}, {FaultShort, "short"}, {FaultFlip, "checksum mismatch"}} {
			faults := injectFunc(func(r CompletedRead) []Fault {
				if r.File == 1 {
					return []Fault{{Kind: c.fault}}
				}
				return nil
			})
			q := openShared(t, fds, Options{Backend: backend, QueueDepth: 8, NoCoalesce: true, Faults: faults, Verify: verify})
			const readers, rounds = 6, 4
			reqs := make([][][]Request, readers)
			for g := range reqs {
				rng := rand.New(rand.NewPCG(seed, uint64(g)))
				for range rounds {
					var rs []Request
					for range 40 {
						file := g % 2 // even readers read file 0 only, odd ones file 1
						rs = append(rs, req(file, rng.Int64N(int64(len(want[file]))-4096), 4096))
					}
					reqs[g] = append(reqs[g], rs)
				}
			}
			errs := readersAtOnce(q, readers, rounds, func(g, k int) []Request { return reqs[g][k] })
			for g := range readers {
				for k := range rounds {
					err := errs[g][k]
					if g%2 == 0 {
						if err != nil {
							t.Fatalf("%s on file 1: reader %d of file 0, round %d: %v", c.fault, g, k, err)
						}
						checkBytes(t, reqs[g][k], want)
					} else if err == nil || !strings.Contains(err.Error(), c.want) {
						t.Fatalf("%s on file 1: reader %d of file 1, round %d: %v, want an error saying %q", c.fault, g, k, err, c.want)
					}
				}
			}
			// The stack stays usable after errors.
			r := []Request{req(0, 12345, 777)}
			if err := q.Read(r); err != nil {
				t.Fatal(err)
			}
			checkBytes(t, r, want)
		}
	})
}

// Reads the device turns away (EAGAIN under RWF_NOWAIT) go in again, under many readers.
func TestSharedRefusedReadsAreRetried(t *testing.T) {
	needIOUring(t)
	seed := testSeed(t)
	fds, want := testFiles(t, seed, 2<<20, 3<<20)
	st, err := Open(fds, Options{Backend: BackendIOUring, QueueDepth: 32, NoCoalesce: true})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 4))
	st.eng.(*uringEngine).refuse = func() bool { // called on the server goroutine only
		mu.Lock()
		defer mu.Unlock()
		return rng.Float64() < 0.3
	}
	q, err := NewShared(st)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	reqs := make([][]Request, 4)
	for g := range reqs {
		reqs[g] = randomBlockRequests(rand.New(rand.NewPCG(seed, uint64(10+g))), want, 500)
	}
	for g, errs := range readersAtOnce(q, len(reqs), 1, func(g, _ int) []Request { return reqs[g] }) {
		if errs[0] != nil {
			t.Fatalf("reader %d: %v", g, errs[0])
		}
		checkBytes(t, reqs[g], want)
	}
	if s := q.Stats(); s.Retries == 0 || s.Reads != 2000 {
		t.Fatalf("%d retries, %d reads; want some retries and 2000 reads", s.Retries, s.Reads)
	}
}

// Bad requests fail before anything is queued, naming the request; Read after Close fails;
// Close twice is fine; a Stack that is in use is refused.
func TestSharedErrorsAndClose(t *testing.T) {
	fds, want := testFiles(t, 3, 64<<10)
	st, err := Open(fds, Options{})
	if err != nil {
		t.Fatal(err)
	}
	q, err := NewShared(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		r    Request
		want string
	}{
		{req(1, 0, 10), "request 1: file index 1 out of range"},
		{Request{File: 0, Offset: 0, Length: 10, DevDst: 0x1000}, "request 1: device destination"},
		{req(0, -1, 10), "request 1: negative offset"},
	} {
		if err := q.Read([]Request{req(0, 0, 10), c.r}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.r, err, c.want)
		}
	}
	r := []Request{req(0, 100, 5000)}
	if err := q.Read(r); err != nil {
		t.Fatal(err)
	}
	checkBytes(t, r, want)
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if err := q.Read([]Request{req(0, 0, 10)}); !errors.Is(err, errSharedClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
	if err := q.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	busy, err := Open(fds, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if err := busy.Submit([]Request{req(0, 0, 10)}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewShared(busy); err == nil {
		t.Fatal("NewShared took a Stack with reads submitted")
	}
	if err := busy.Complete(); err != nil {
		t.Fatal(err)
	}
}
