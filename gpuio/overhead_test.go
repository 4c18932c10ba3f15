package gpuio

import (
	"math/rand/v2"
	"testing"
)

// instantEngine completes every started read at the next wait without touching a disk: what is
// left is the Stack's own cost per read (planning, slots, bookkeeping, the copy to Dst).
type instantEngine struct{ started []*read }

func (e *instantEngine) start(_ *Stack, rd *read) { e.started = append(e.started, rd) }
func (e *instantEngine) flush() error             { return nil }
func (e *instantEngine) close() error             { return nil }
func (e *instantEngine) wait(done func(rd *read, n int, err error)) error {
	for _, rd := range e.started {
		done(rd, rd.length, nil)
	}
	clear(e.started)
	e.started = e.started[:0]
	return nil
}

// BenchmarkStackOverhead is `tierfs bench io`'s round (32 x QD random 4 KiB reads, NoCoalesce)
// through a Stack whose engine completes reads at once: the engine's CPU per read in user space,
// without the kernel's share. ns/op is per round of 4096 reads; ns/read is per read.
func BenchmarkStackOverhead(b *testing.B) {
	fds, _ := testFiles(b, 1, 1<<20)
	s, err := Open(fds, Options{Backend: BackendPread, QueueDepth: 128, MaxIOBytes: 4096, NoCoalesce: true})
	if err != nil {
		b.Fatal(err)
	}
	pe := s.eng
	s.eng = &instantEngine{}
	defer func() { s.eng = pe; s.Close() }()
	const batch, bs = 32 * 128, 4096
	dst := make([]byte, batch*bs)
	reqs := make([]Request, batch)
	rng := rand.New(rand.NewPCG(1, 2))
	b.SetBytes(batch * bs)
	for b.Loop() {
		b.StopTimer()
		for i := range reqs {
			reqs[i] = Request{File: 0, Offset: rng.Int64N(1<<20/bs) * bs, Length: bs, Dst: dst[i*bs : (i+1)*bs]}
		}
		b.StartTimer()
		if err := s.Submit(reqs); err != nil {
			b.Fatal(err)
		}
		if err := s.Complete(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/read")
}
