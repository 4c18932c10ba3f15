package gpuio

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseFaults(t *testing.T) {
	f, err := ParseFaults("eio:file=0:every=3; flip:prob=0.5:seed=7:from=4096:to=8192 ;delay:ms=1.5;short;eio:path=epoch-")
	if err != nil {
		t.Fatal(err)
	}
	want := []FaultRule{
		{Kind: FaultEIO, File: 0, Every: 3},
		{Kind: FaultFlip, File: -1, Every: 1, Prob: 0.5, Seed: 7, From: 4096, To: 8192},
		{Kind: FaultDelay, File: -1, Every: 1, Delay: 1500 * time.Microsecond},
		{Kind: FaultShort, File: -1, Every: 1},
		{Kind: FaultEIO, File: -1, Path: "epoch-", Every: 1},
	}
	if len(f.Rules) != len(want) {
		t.Fatalf("%d rules, want %d", len(f.Rules), len(want))
	}
	for i := range want {
		if f.Rules[i] != want[i] {
			t.Errorf("rule %d = %+v, want %+v", i, f.Rules[i], want[i])
		}
	}
	if f, err := ParseFaults("  "); f != nil || err != nil {
		t.Errorf("empty spec: %v %v", f, err)
	}
	for _, bad := range []string{"boom", "eio:file", "eio:nope=1", "eio:every=0", "flip:prob=2", "eio:file=x"} {
		if _, err := ParseFaults(bad); err == nil || !strings.Contains(err.Error(), "fault rule") {
			t.Errorf("ParseFaults(%q) = %v, want an error naming the rule", bad, err)
		}
	}
}

// TestInjectedFaults drives each fault kind through a Stack: EIO and short reads fail Complete
// naming the error, a flipped bit is caught by Verify (and is the only difference without it),
// delays change nothing; rules match by file and every-th read.
func TestInjectedFaults(t *testing.T) {
	fds, want := testFiles(t, 11, 1<<20, 64<<10)
	forEachBackend(t, func(t *testing.T, backend Backend) {
		reqs := func() []Request {
			return []Request{req(0, 10, 3*4096), req(0, 200<<10, 300<<10), req(1, 5, 100)}
		}
		run := func(spec string, verify func(int, int64, []byte) error) ([]Request, error, *Faults) {
			f, err := ParseFaults(spec)
			if err != nil {
				t.Fatal(err)
			}
			s := openStack(t, fds, Options{Backend: backend, Faults: f, Verify: verify, NoCoalesce: true, Paths: []string{"/d/a.bin", "/d/b.bin"}})
			r := reqs()
			return r, errors.Join(s.Submit(r), s.Complete()), f
		}
		if _, err, f := run("eio:file=1", nil); !errors.Is(err, unix.EIO) || f.Injected != 1 {
			t.Errorf("eio on file 1: %v (%d injected)", err, f.Injected)
		}
		if _, err, f := run("eio:path=b.bin", nil); !errors.Is(err, unix.EIO) || f.Injected != 1 {
			t.Errorf("eio on the file named b.bin: %v (%d injected)", err, f.Injected)
		}
		if _, err, f := run("eio:path=c.bin", nil); err != nil || f.Injected != 0 {
			t.Errorf("eio on a file no read touches: %v (%d injected)", err, f.Injected)
		}
		if _, err, _ := run("short:file=0", nil); err == nil || !strings.Contains(err.Error(), "short") {
			t.Errorf("short reads of file 0: %v, want a short-read error", err)
		}
		// A short read that still holds every byte its requests want is no error (a file's tail).
		r, err, _ := run("short:file=1", nil)
		if err != nil {
			t.Fatalf("a short read holding the request's bytes: %v", err)
		}
		checkBytes(t, r, want)
		verify := func(file int, off int64, block []byte) error {
			if !bytes.Equal(block, want[file][off:off+int64(len(block))]) {
				return errors.New("checksum mismatch")
			}
			return nil
		}
		if _, err, f := run("flip:every=2", verify); err == nil || !strings.Contains(err.Error(), "checksum mismatch") || f.Injected == 0 {
			t.Errorf("flipped bits under Verify: %v (%d injected)", err, f.Injected)
		}
		r, err, f := run("flip:file=0:every=1", nil)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(r[0].Dst, want[0][10:10+3*4096]) && bytes.Equal(r[1].Dst, want[0][200<<10:500<<10]) {
			t.Errorf("flip without Verify changed nothing (%d injected)", f.Injected)
		}
		if !bytes.Equal(r[2].Dst, want[1][5:105]) {
			t.Error("a flip on file 0 changed file 1's bytes")
		}
		r, err, _ = run("delay:ms=1", nil)
		if err != nil {
			t.Fatal(err)
		}
		checkBytes(t, r, want)
	})
}

// injectFunc is an Injector built by a test, as pebble's errorfs takes one.
type injectFunc func(CompletedRead) []Fault

func (f injectFunc) Inject(r CompletedRead) []Fault { return f(r) }

// TestInjectorInterface: a Stack takes any Injector through Options.Faults and tells it each
// completed read by file, path and range; a nil *Faults injects nothing.
func TestInjectorInterface(t *testing.T) {
	fds, want := testFiles(t, 12, 1<<20, 64<<10)
	forEachBackend(t, func(t *testing.T, backend Backend) {
		var mu sync.Mutex
		var seen []CompletedRead
		inj := injectFunc(func(r CompletedRead) []Fault {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, r)
			if r.Path == "/d/b.bin" {
				return []Fault{{Kind: FaultEIO}}
			}
			return nil
		})
		s := openStack(t, fds, Options{Backend: backend, Faults: inj, NoCoalesce: true, Paths: []string{"/d/a.bin", "/d/b.bin"}})
		r := []Request{req(0, 10, 4096), req(1, 5, 100)}
		if err := errors.Join(s.Submit(r), s.Complete()); !errors.Is(err, unix.EIO) {
			t.Errorf("EIO on b.bin from the test's injector: %v", err)
		}
		if len(seen) != 2 || seen[0].Length <= 0 || (seen[0].File == 1) == (seen[1].File == 1) {
			t.Errorf("the injector was told %+v; want one read of each file", seen)
		}
		var none *Faults
		s = openStack(t, fds, Options{Backend: backend, Faults: none, NoCoalesce: true})
		r = []Request{req(0, 10, 4096), req(1, 5, 100)}
		if err := errors.Join(s.Submit(r), s.Complete()); err != nil {
			t.Fatalf("a nil *Faults: %v", err)
		}
		checkBytes(t, r, want)
	})
}
