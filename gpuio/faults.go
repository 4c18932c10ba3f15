package gpuio

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// FaultKind is what an injected fault does to a completed read.
type FaultKind string

const (
	FaultEIO   FaultKind = "eio"   // the read fails with EIO
	FaultShort FaultKind = "short" // the read returns half its bytes
	FaultFlip  FaultKind = "flip"  // one bit of the bytes read is flipped
	FaultDelay FaultKind = "delay" // the read completes Delay later
)

// FaultRule injects Kind into the completed reads it matches: of file File (-1: any; the index in
// the Stack's files) whose path contains Path ("": any; Options.Paths names the files), whose
// range overlaps [From, To) (To 0: no end), and of those the Every-th (1: each; 0 counts as 1),
// or, with Prob > 0, each with that probability (seeded by Seed: the same reads every run).
// Writes, when set, makes the rule match a Writer's writes instead of reads.
type FaultRule struct {
	Kind     FaultKind
	Writes   bool
	File     int
	Path     string
	From, To int64
	Every    int
	Prob     float64
	Seed     uint64
	Delay    time.Duration
}

// Injector decides the faults a completed read suffers, as pebble's errorfs.Injector does for a
// file system: a Stack given one (Options.Faults) asks it once for every read that completed
// without error, before verifying and scattering it, and applies what it returns in order. One
// Injector may sit under many Stacks (every stack of a store), so Inject must be safe for
// concurrent use. Nothing here reads the environment: the front ends build the Injector (the
// C ABI and the CLI parse TIERFS_FAULTS with ParseFaults) and pass it in through their options.
type Injector interface {
	Inject(r CompletedRead) []Fault
}

// CompletedRead is what an Injector is told of a read: the index of its file among the Stack's
// files, the file's path (Options.Paths; "" when unnamed), and the range read. A Writer asks of
// its writes the same way, with Write set: there FaultEIO fails the write, FaultShort has it
// written half (reported short), FaultDelay delays it, and FaultFlip does nothing.
type CompletedRead struct {
	File   int
	Path   string
	Off    int64
	Length int
	Write  bool
}

// Fault is one fault applied to a completed read: Kind, and for FaultDelay how long.
type Fault struct {
	Kind  FaultKind
	Delay time.Duration
}

// Faults is the rule-driven Injector (in the spirit of pebble's errorfs) between a Stack and its
// engine: tests drive EIO, short reads, flipped bits and latency through every layer above and
// check what comes out. A nil *Faults injects nothing.
type Faults struct {
	Rules []FaultRule

	mu       sync.Mutex
	seen     []int // reads matched per rule
	rngs     []*rand.Rand
	Injected int // faults injected so far
}

// ParseFaults reads rules from spec, as the TIERFS_FAULTS environment variable holds them:
// rules separated by ";", each KIND[:key=value...] with keys file, path, from, to, every, prob,
// seed, ms (delay), op (read, the default, or write: a Writer's writes), e.g. "eio:file=0:every=3;flip:prob=0.05:seed=7;delay:ms=2" or
// "flip:path=epoch-". "" is no faults (nil).
func ParseFaults(spec string) (*Faults, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil
	}
	f := &Faults{}
	for _, rs := range strings.Split(spec, ";") {
		parts := strings.Split(strings.TrimSpace(rs), ":")
		r := FaultRule{Kind: FaultKind(parts[0]), File: -1, Every: 1}
		switch r.Kind {
		case FaultEIO, FaultShort, FaultFlip, FaultDelay:
		default:
			return nil, fmt.Errorf("gpuio: fault rule %q: kind %q is not eio, short, flip or delay", rs, parts[0])
		}
		for _, kv := range parts[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("gpuio: fault rule %q: %q is not key=value", rs, kv)
			}
			var err error
			switch k {
			case "file":
				r.File, err = strconv.Atoi(v)
			case "path":
				r.Path = v
			case "from":
				r.From, err = strconv.ParseInt(v, 10, 64)
			case "to":
				r.To, err = strconv.ParseInt(v, 10, 64)
			case "every":
				r.Every, err = strconv.Atoi(v)
			case "prob":
				r.Prob, err = strconv.ParseFloat(v, 64)
			case "seed":
				r.Seed, err = strconv.ParseUint(v, 10, 64)
			case "op":
				switch v {
				case "read", "write":
					r.Writes = v == "write"
				default:
					err = fmt.Errorf("want read or write")
				}
			case "ms":
				var ms float64
				ms, err = strconv.ParseFloat(v, 64)
				r.Delay = time.Duration(ms * float64(time.Millisecond))
			default:
				return nil, fmt.Errorf("gpuio: fault rule %q: unknown key %q (file, path, from, to, every, prob, seed, ms, op)", rs, k)
			}
			if err != nil {
				return nil, fmt.Errorf("gpuio: fault rule %q: %s=%q: %v", rs, k, v, err)
			}
		}
		if r.Every < 1 || r.Prob < 0 || r.Prob > 1 {
			return nil, fmt.Errorf("gpuio: fault rule %q: every must be >= 1 and prob in [0, 1]", rs)
		}
		f.Rules = append(f.Rules, r)
	}
	return f, nil
}

var _ Injector = (*Faults)(nil)

// Inject says which rules fire for the read r (Injector).
func (f *Faults) Inject(r CompletedRead) []Fault {
	if f == nil {
		return nil
	}
	return f.pick(r.File, r.Path, r.Off, r.Length, r.Write)
}

// pick says which rules fire for a read (or, write, a write) of file (named path) over
// [off, off+length).
func (f *Faults) pick(file int, path string, off int64, length int, write bool) []Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen == nil {
		f.seen = make([]int, len(f.Rules))
		for _, r := range f.Rules {
			f.rngs = append(f.rngs, rand.New(rand.NewPCG(r.Seed, 0x5eed)))
		}
	}
	var fire []Fault
	for i, r := range f.Rules {
		if r.Writes != write || (r.File >= 0 && r.File != file) || (r.Path != "" && !strings.Contains(path, r.Path)) ||
			off+int64(length) <= r.From || (r.To > 0 && off >= r.To) {
			continue
		}
		f.seen[i]++
		if (r.Prob > 0 && f.rngs[i].Float64() < r.Prob) || (r.Prob == 0 && f.seen[i]%r.Every == 0) {
			fire = append(fire, Fault{Kind: r.Kind, Delay: r.Delay})
			f.Injected++
		}
	}
	return fire
}

// faultEngine applies an Injector's faults to the reads its inner engine completes.
type faultEngine struct {
	engine
	s      *Stack
	faults Injector
}

func (e *faultEngine) wait(done func(rd *read, n int, err error)) error {
	return e.engine.wait(func(rd *read, n int, err error) {
		if err == nil {
			path := ""
			if rd.file < len(e.s.opts.Paths) {
				path = e.s.opts.Paths[rd.file]
			}
			for _, r := range e.faults.Inject(CompletedRead{File: rd.file, Path: path, Off: rd.off, Length: rd.length}) {
				switch r.Kind {
				case FaultEIO:
					n, err = 0, unix.EIO
				case FaultShort:
					n /= 2
				case FaultFlip:
					if n > 0 {
						at := int(uint64(rd.off) * 2654435761 % uint64(n)) // the same byte for the same read
						e.s.slots[rd.slot][at] ^= 1 << (uint(rd.off) % 8)
					}
				case FaultDelay:
					time.Sleep(r.Delay)
				}
			}
		}
		done(rd, n, err)
	})
}
