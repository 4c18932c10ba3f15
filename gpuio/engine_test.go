package gpuio

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// randomBlockRequests draws n requests at random offsets: whole aligned blocks and unaligned
// rows, over every file.
func randomBlockRequests(rng *rand.Rand, want [][]byte, n int) []Request {
	reqs := make([]Request, n)
	for i := range reqs {
		f := rng.IntN(len(want))
		size := int64(len(want[f]))
		if rng.IntN(2) == 0 {
			reqs[i] = req(f, rng.Int64N(size/4096)*4096, 4096)
		} else {
			n := 1 + rng.IntN(600)
			reqs[i] = req(f, rng.Int64N(size-int64(n)+1), n)
		}
	}
	return reqs
}

func needIOUring(t *testing.T) {
	t.Helper()
	if err := Probe(); err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
}

// Reads through registered files and buffers (READ_FIXED, fixed-file SQEs) deliver the bytes
// pread delivers, at random offsets.
func TestRegisteredFilesMatchPread(t *testing.T) {
	needIOUring(t)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	fds, want := testFiles(t, seed, 2<<20, 1<<20+4096, 3<<20)
	fixed := openStack(t, fds, Options{Backend: BackendIOUring, QueueDepth: 32, NoCoalesce: true})
	plain := openStack(t, fds, Options{Backend: BackendPread, QueueDepth: 32, NoCoalesce: true})
	if !strings.HasPrefix(fixed.Mode(), "registered files, registered buffers") {
		t.Fatalf("Mode() = %q, want registered files and buffers", fixed.Mode())
	}
	rng := rand.New(rand.NewPCG(seed, 3))
	for round := range 4 {
		a := randomBlockRequests(rng, want, 500)
		b := make([]Request, len(a))
		for i, r := range a {
			b[i] = req(r.File, r.Offset, r.Length)
		}
		for _, x := range []struct {
			s    *Stack
			reqs []Request
		}{{fixed, a}, {plain, b}} {
			if err := x.s.Submit(x.reqs); err != nil {
				t.Fatal(err)
			}
			if err := x.s.Complete(); err != nil {
				t.Fatalf("round %d, %s: %v", round, x.s.Backend(), err)
			}
		}
		for i := range a {
			if !bytes.Equal(a[i].Dst, b[i].Dst) {
				t.Fatalf("seed %d round %d request %d (file %d, offset %d, %d bytes): io_uring and pread differ", seed, round, i, a[i].File, a[i].Offset, a[i].Length)
			}
		}
		checkBytes(t, a, want)
	}
	if st := fixed.Stats(); st.Enters == 0 || st.Enters > st.Reads {
		t.Fatalf("%d io_uring_enter calls for %d reads: want at least one, at most one per read", st.Enters, st.Reads)
	}
}

// Reads the device turns away (EAGAIN under RWF_NOWAIT, injected here) are read again, with the
// Stack's in-flight limit lowered; every byte still arrives. A device that refuses everything
// turns NOWAIT off.
func TestRefusedReadsAreRetried(t *testing.T) {
	needIOUring(t)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	fds, want := testFiles(t, seed, 2<<20, 3<<20)
	for _, share := range []float64{0.3, 1} {
		s := openStack(t, fds, Options{Backend: BackendIOUring, QueueDepth: 64, NoCoalesce: true})
		rng := rand.New(rand.NewPCG(seed, 4))
		s.eng.(*uringEngine).refuse = func() bool { return rng.Float64() < share }
		reqs := randomBlockRequests(rng, want, 2000)
		if err := s.Submit(reqs); err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(); err != nil {
			t.Fatalf("refusing %.0f%%: %v", 100*share, err)
		}
		checkBytes(t, reqs, want)
		st := s.Stats()
		if st.Retries == 0 || st.Reads != 2000 {
			t.Fatalf("refusing %.0f%%: %d retries, %d reads; want some retries and 2000 reads", 100*share, st.Retries, st.Reads)
		}
		if share == 1 && !s.nowaitOff {
			t.Fatalf("every NOWAIT read refused, and NOWAIT is still on")
		}
		if share < 1 && s.nowaitOff {
			t.Fatalf("NOWAIT turned off though %.0f%% of reads went through", 100*(1-share))
		}
		t.Logf("refusing %.0f%%: %d retries, in-flight limit %d of %d", 100*share, st.Retries, s.limit, s.maxInflight)
	}
}

// SQPOLL: where the kernel grants it, reads match the reference; where it refuses (injected
// EPERM here), the Stack opens without it, says why, and still reads.
func TestSQPoll(t *testing.T) {
	needIOUring(t)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	fds, want := testFiles(t, seed, 2<<20)
	read := func(t *testing.T, s *Stack) {
		reqs := randomBlockRequests(rand.New(rand.NewPCG(seed, 5)), want, 1000)
		if err := s.Submit(reqs); err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(); err != nil {
			t.Fatal(err)
		}
		checkBytes(t, reqs, want)
	}
	t.Run("granted", func(t *testing.T) {
		s := openStack(t, fds, Options{Backend: BackendIOUring, QueueDepth: 32, SQPoll: true})
		on, err := s.SQPoll()
		t.Logf("SQPoll() = %v, %v; Mode %q", on, err, s.Mode())
		if on == (err != nil) {
			t.Fatalf("SQPoll() = %v, %v: want on with no error, or off with the reason", on, err)
		}
		read(t, s)
	})
	t.Run("refused", func(t *testing.T) {
		errSQPollTest = unix.EPERM
		defer func() { errSQPollTest = nil }()
		s := openStack(t, fds, Options{Backend: BackendIOUring, QueueDepth: 32, SQPoll: true})
		on, err := s.SQPoll()
		if on || !errors.Is(err, unix.EPERM) || !strings.Contains(s.Mode(), "SQPOLL refused") {
			t.Fatalf("SQPoll() = %v, %v, Mode %q: want off, EPERM, and Mode saying so", on, err, s.Mode())
		}
		read(t, s)
		off := openStack(t, fds, Options{Backend: BackendIOUring, QueueDepth: 32})
		if on, err := off.SQPoll(); on || err != nil {
			t.Fatalf("SQPoll() without the option = %v, %v", on, err)
		}
	})
}

// A file that refuses NOWAIT reads outright (EOPNOTSUPP: tmpfs opened O_DIRECT, Linux >= 6.6)
// is read without, and reads match.
func TestFileWithoutNowait(t *testing.T) {
	needIOUring(t)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	f, err := os.CreateTemp("/dev/shm", "gpuio-nowait-*")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	defer os.Remove(f.Name())
	data := make([]byte, 1<<20)
	rand.NewChaCha8([32]byte{byte(seed)}).Read(data)
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fd, err := unix.Open(f.Name(), unix.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		t.Skipf("tmpfs without O_DIRECT here: %v", err)
	}
	defer unix.Close(fd)
	s := openStack(t, []int{fd}, Options{Backend: BackendIOUring, QueueDepth: 16, NoCoalesce: true})
	want := [][]byte{data}
	for range 2 {
		reqs := randomBlockRequests(rand.New(rand.NewPCG(seed, 6)), want, 300)
		if err := s.Submit(reqs); err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(); err != nil {
			t.Fatal(err)
		}
		checkBytes(t, reqs, want)
	}
	t.Logf("%d retries, NOWAIT off for the file: %v", s.Stats().Retries, s.noNowait[0])
}
