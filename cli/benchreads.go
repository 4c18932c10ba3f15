package cli

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/tiers/ssd"
)

// benchReadsCmd is `tierfs bench reads DIR`: on-demand gathers' disk part alone. For each count
// in --gathers, that many goroutines each read --batch random rows of a feature through the
// store's SSD files (ssd.Files, as a gather's SSD tier does) for --seconds; it reports the disk
// reads a second all of them reached together and the time one gather's reads took.
func benchReadsCmd(fs *pflag.FlagSet) runFunc {
	feature := fs.String("feature", "", "feature whose rows are read (default: the first)")
	gathersFlag := fs.String("gathers", "1,2,4,8", "comma-separated counts of gathers in flight at once")
	batch := fs.Int("batch", 1000, "random rows a gather reads (each a distinct disk read where rows are smaller than a block)")
	secs := fs.Float64("seconds", 3, "seconds per gather count")
	qd := fs.Int("qd", 128, "queue depth (ssd.Options.QueueDepth)")
	stacks := fs.Int("max-concurrent-io", 0, "IO stacks (ssd.Options.Stacks; default: one per CPU, as the store)")
	deviceStacks := fs.Bool("device-stacks", true, "IO stacks of each device where the stripes lie on several (false: every stack reads every file; ssd.Options.SharedStacks)")
	backend := ioBackendFlag(fs)
	seed := fs.Uint64("seed", 1, "seed of the random rows")
	profile := fs.String("profile", "", "write CPU, mutex and block profiles of the last gather count to PREFIX.{cpu,mutex,block}.pprof")
	return func(pos []string) error {
		return benchReads(pos[0], *feature, *gathersFlag, *batch, *secs, ssd.Options{Backend: gpuio.Backend(*backend), QueueDepth: *qd, Stacks: *stacks, SharedStacks: !*deviceStacks}, *seed, *profile)
	}
}

// benchReads runs bench reads on the dataset dir.
// opt holds --qd, --max-concurrent-io, --io-backend and --device-stacks.
func benchReads(dir, feature, gathersFlag string, batch int, secs float64, opt ssd.Options, seed uint64, profile string) error {
	counts, err := parseInts(gathersFlag)
	if err != nil || len(counts) == 0 {
		return fmt.Errorf("bench reads: --gathers %q: want positive integers, comma-separated", gathersFlag)
	}
	if batch <= 0 || secs <= 0 || opt.QueueDepth <= 0 || opt.Stacks < 0 {
		return errors.New("bench reads: want --batch, --seconds and --qd > 0, --max-concurrent-io >= 0")
	}
	if opt.Stacks == 0 {
		opt.Stacks = runtime.GOMAXPROCS(0)
	}
	m, err := dataset.Load(dir)
	if err != nil {
		return err
	}
	spec, err := m.Feature(feature)
	if err != nil {
		return err
	}
	files, err := ssd.OpenFiles(m, spec.Files, opt)
	if err != nil {
		return err
	}
	defer files.Close()
	stripes := make([]int, len(spec.Files))
	for k, p := range spec.Files {
		stripes[k] = files.Index(p)
	}
	rows, rb := m.Nodes().Count, spec.RowBytes
	fmt.Printf("bench reads %s: %d random %d-byte rows a gather, QD %d, %d IO stacks over %d device pool(s), %s, %.1f s a point\n",
		dir, batch, rb, opt.QueueDepth, files.Stacks(), files.Devices(), files.Backend(), secs)
	fmt.Printf("%8s %12s %14s %12s %14s\n", "gathers", "reads/s", "ms a gather", "retries", "CPU µs a read")
	for k, n := range counts {
		stopProfiles := func() error { return nil }
		if profile != "" && k == len(counts)-1 {
			if stopProfiles, err = startProfiles(profile); err != nil {
				return fmt.Errorf("bench reads: --profile %q: %w", profile, err)
			}
		}
		before := files.Stats()
		var ruBefore, ruAfter unix.Rusage
		unix.Getrusage(unix.RUSAGE_SELF, &ruBefore)
		var mu sync.Mutex
		var gathers int
		var gatherTime time.Duration
		var firstErr error
		var wg sync.WaitGroup
		start := time.Now()
		end := start.Add(time.Duration(secs * float64(time.Second)))
		for g := range n {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(seed, uint64(n)<<32|uint64(g)))
				dst := make([]byte, int64(batch)*rb)
				reqs := make([]gpuio.Request, batch)
				for first := true; first || time.Now().Before(end); first = false { // at least one gather each, however late it starts
					for i := range reqs {
						file, off := spec.Locate(rng.Int64N(rows))
						reqs[i] = gpuio.Request{File: stripes[file], Offset: off, Length: int(rb), Dst: dst[int64(i)*rb : int64(i+1)*rb]}
					}
					t0 := time.Now()
					err := files.Read(reqs)
					took := time.Since(t0)
					mu.Lock()
					gathers++
					gatherTime += took
					if err != nil && firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					if err != nil {
						return
					}
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start).Seconds()
		if err := stopProfiles(); err != nil {
			return fmt.Errorf("bench reads: --profile %q: %w", profile, err)
		}
		if firstErr != nil {
			return fmt.Errorf("bench reads: %w", firstErr)
		}
		unix.Getrusage(unix.RUSAGE_SELF, &ruAfter)
		after := files.Stats()
		cpu, _ := perRead(&ruBefore, &ruAfter, max(1, after.Reads-before.Reads))
		fmt.Printf("%8d %12.0f %14.2f %12d %14.2f\n", n, float64(after.Reads-before.Reads)/elapsed,
			gatherTime.Seconds()*1e3/float64(max(1, gathers)), after.Retries-before.Retries, cpu)
	}
	return nil
}

// startProfiles starts a CPU profile into prefix.cpu.pprof and samples every contended mutex and
// blocking event; stop ends them and writes prefix.mutex.pprof and prefix.block.pprof.
func startProfiles(prefix string) (stop func() error, err error) {
	stopCPU, err := startCPUProfile(prefix + ".cpu.pprof")
	if err != nil {
		return nil, err
	}
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(int(time.Microsecond))
	return func() error {
		stopCPU()
		runtime.SetMutexProfileFraction(0)
		runtime.SetBlockProfileRate(0)
		for _, name := range []string{"mutex", "block"} {
			f, err := os.Create(prefix + "." + name + ".pprof")
			if err != nil {
				return err
			}
			err = cmp.Or(pprof.Lookup(name).WriteTo(f, 0), f.Close())
			if err != nil {
				return err
			}
		}
		return nil
	}, nil
}
