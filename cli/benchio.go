package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/internal/bytesize"
)

// ioBenchRow is one line of `tierfs bench io`: one thread count, the engine against iobench.
type ioBenchRow struct {
	Threads       int     `json:"threads"`
	Reads         uint64  `json:"reads"`
	Seconds       float64 `json:"seconds"`
	ReadsPerS     float64 `json:"reads_per_s"`
	EntersPerRead float64 `json:"enters_per_read"` // io_uring_enter calls per read (0 under SQPOLL when the poller keeps up)
	Retries       uint64  `json:"retries"`         // reads the device turned away (queue full) and the engine read again
	// CPUPerRead and SwitchesPerRead are the process's CPU time (user+system, µs) and voluntary
	// context switches per read over the run; the IOBench ones are iobench's processes'.
	CPUPerRead             float64 `json:"cpu_us_per_read"`
	SwitchesPerRead        float64 `json:"switches_per_read"`
	IOBenchReadsPer        float64 `json:"iobench_reads_per_s,omitempty"`
	IOBenchCPUPerRead      float64 `json:"iobench_cpu_us_per_read,omitempty"`
	IOBenchSwitchesPerRead float64 `json:"iobench_switches_per_read,omitempty"`
	Ratio                  float64 `json:"ratio,omitempty"` // tierfs / iobench
	IOBenchNote            string  `json:"iobench_note,omitempty"`
}

// ioTarget is one file or block device that bench io reads.
type ioTarget struct {
	path  string
	fd    int
	bytes int64
}

// openBenchTarget opens p for bench io: O_DIRECT, a regular file or a block device; anything
// else (a FIFO, which would block the open, a character device, a directory) is refused.
func openBenchTarget(p string) (int, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return -1, fmt.Errorf("bench io: open %s O_DIRECT: %w", p, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bench io: stat %s: %w", p, err)
	}
	if m := st.Mode & unix.S_IFMT; m != unix.S_IFREG && m != unix.S_IFBLK {
		unix.Close(fd)
		return -1, fmt.Errorf("bench io: %s is neither a regular file nor a block device", p)
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err == nil {
		_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
	}
	if err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bench io: fcntl %s: %w", p, err)
	}
	return fd, nil
}

// runBenchIO is `tierfs bench io --files A,B`: random O_DIRECT reads of one block size through
// the IO engine at 1, 4, 8, 16 threads (one Stack, so one ring, per thread; thread t reads file
// t mod len(files)), each thread count for --seconds, beside liburing's iobench run as one process
// per thread on the same files: the engine's reads/s as a fraction of the bare ring's.
func benchIOCmd(fs *pflag.FlagSet) runFunc {
	filesFlag := fs.String("files", "", "comma-separated files or block devices to read (O_DIRECT); thread t reads file t mod their count")
	threadsFlag := fs.String("threads", "1,4,8,16", "comma-separated thread counts")
	qd := fs.Int("qd", 128, "reads in flight per thread")
	bs := fs.Int("bs", 4096, "bytes per read, also their alignment")
	batch := fs.Int("batch", 0, "requests per Submit/Complete round of a thread (default 32 x --qd)")
	secs := fs.Float64("seconds", 5, "seconds per thread count and program")
	sizeMB := fs.Int64("size-mb", 0, "read only the first MiB of each file (default: all of it)")
	backend := ioBackendFlag(fs)
	sqpoll := fs.Bool("sqpoll", false, "a kernel SQ polling thread per ring (gpuio.Options.SQPoll)")
	iobench := fs.String("iobench", "", "liburing iobench binary (shared/tools/roofline/iobench.c; gpu/iobench in the GPU bundle); empty: engine only")
	seed := fs.Uint64("seed", 1, "seed of the random offsets")
	asJSON := fs.String("json", "", "also write the results as JSON to this file")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the engine run at the last thread count to this file")
	return func(pos []string) error {
		if *filesFlag == "" {
			return usageErrorf("--files is required")
		}
		threads, err := parseInts(*threadsFlag)
		if err != nil || len(threads) == 0 {
			return fmt.Errorf("bench io: --threads %q: want positive integers, comma-separated", *threadsFlag)
		}
		if *qd <= 0 || *bs <= 0 || *bs&(*bs-1) != 0 || *secs <= 0 || *batch < 0 || *sizeMB < 0 {
			return fmt.Errorf("bench io: want --qd > 0, --bs a power of two, --seconds > 0, --batch and --size-mb >= 0")
		}
		if *batch == 0 {
			*batch = 32 * *qd
		}
		targets, err := openIOTargets(*filesFlag, *sizeMB, *bs)
		defer func() {
			for _, t := range targets {
				unix.Close(t.fd)
			}
		}()
		if err != nil {
			return err
		}
		opts := gpuio.Options{Backend: gpuio.Backend(*backend), BlockSize: *bs, QueueDepth: *qd, MaxIOBytes: *bs, NoCoalesce: true, SQPoll: *sqpoll}
		probe, err := gpuio.Open([]int{targets[0].fd}, opts)
		if err != nil {
			return fmt.Errorf("bench io: %w", err)
		}
		how := fmt.Sprintf("%s, %s", probe.Backend(), probe.Mode())
		probe.Close()
		fmt.Printf("bench io: %d-byte random O_DIRECT reads, QD %d per thread, %.1f s per run, %s; %d CPUs, GOMAXPROCS %d\n",
			*bs, *qd, *secs, how, runtime.NumCPU(), runtime.GOMAXPROCS(0))
		for _, t := range targets {
			fmt.Printf("  %s: %s\n", t.path, bytesize.Format(t.bytes))
		}
		dur := time.Duration(*secs * float64(time.Second))
		var prof *os.File
		if *cpuProfile != "" {
			if prof, err = os.Create(*cpuProfile); err != nil {
				return err
			}
			defer prof.Close()
		}
		var rows []ioBenchRow
		for k, n := range threads {
			profiled := prof != nil && k == len(threads)-1
			if profiled {
				if err := pprof.StartCPUProfile(prof); err != nil {
					return err
				}
			}
			row, err := engineIO(targets, n, opts, *batch, dur, *seed)
			if profiled {
				pprof.StopCPUProfile()
			}
			if err != nil {
				return err
			}
			if *iobench != "" {
				row.IOBenchReadsPer, row.IOBenchCPUPerRead, row.IOBenchSwitchesPerRead, row.IOBenchNote = runIOBench(*iobench, targets, n, *bs, *qd, *secs)
				if row.IOBenchReadsPer > 0 {
					row.Ratio = row.ReadsPerS / row.IOBenchReadsPer
				}
			}
			rows = append(rows, row)
			line := fmt.Sprintf("  %2d threads: tierfs %.0f reads/s (%.3f enters/read, %d retried, %.2f µs CPU and %.3f context switches a read)",
				n, row.ReadsPerS, row.EntersPerRead, row.Retries, row.CPUPerRead, row.SwitchesPerRead)
			if *iobench != "" {
				line += fmt.Sprintf(", iobench %.0f (%.2f µs, %.3f) %s", row.IOBenchReadsPer, row.IOBenchCPUPerRead, row.IOBenchSwitchesPerRead, row.IOBenchNote)
			}
			fmt.Println(line)
		}
		fmt.Printf("\n%8s %16s %16s %8s %14s\n", "threads", "tierfs reads/s", "iobench reads/s", "ratio", "enters/read")
		for _, r := range rows {
			ib, ratio := "-", "-"
			if r.IOBenchReadsPer > 0 {
				ib, ratio = fmt.Sprintf("%.0f", r.IOBenchReadsPer), fmt.Sprintf("%.2f", r.Ratio)
			}
			fmt.Printf("%8d %16.0f %16s %8s %14.3f\n", r.Threads, r.ReadsPerS, ib, ratio, r.EntersPerRead)
		}
		if *asJSON != "" {
			paths := make([]string, len(targets))
			for i, t := range targets {
				paths[i] = t.path
			}
			return writeJSONResults(*asJSON, map[string]any{"time": time.Now().UTC().Format(time.RFC3339), "files": paths, "bs": *bs, "qd": *qd,
				"seconds": *secs, "engine": how, "cpus": runtime.NumCPU(), "gomaxprocs": runtime.GOMAXPROCS(0), "rows": rows})
		}
		return nil
	}
}

// openIOTargets opens the comma-separated files (or block devices) for O_DIRECT reads of bs
// bytes, each read over its first sizeMB MiB (0: all of it) cut to whole reads. The targets it
// opened come back with an error too, for the caller to close.
func openIOTargets(files string, sizeMB int64, bs int) ([]ioTarget, error) {
	var targets []ioTarget
	for _, p := range strings.Split(files, ",") {
		fd, err := openBenchTarget(p)
		if err != nil {
			return targets, err
		}
		targets = append(targets, ioTarget{path: p, fd: fd})
		size, err := unix.Seek(fd, 0, 2) // files and block devices alike
		if err != nil {
			return targets, fmt.Errorf("bench io: size of %s: %w", p, err)
		}
		if sizeMB > 0 {
			size = min(size, sizeMB<<20)
		}
		size -= size % int64(bs)
		if size < int64(bs) {
			return targets, fmt.Errorf("bench io: %s holds less than one %d-byte read", p, bs)
		}
		targets[len(targets)-1].bytes = size
	}
	return targets, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%q is no positive integer", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// engineIO runs n threads for dur, each with its own Stack over every target, reading random
// blocks of target t mod len(targets) in rounds of batch requests.
func engineIO(targets []ioTarget, n int, opts gpuio.Options, batch int, dur time.Duration, seed uint64) (ioBenchRow, error) {
	fds := make([]int, len(targets))
	for i, t := range targets {
		fds[i] = t.fd
	}
	stacks := make([]*gpuio.Stack, n)
	defer func() {
		for _, st := range stacks {
			if st != nil {
				st.Close()
			}
		}
	}()
	for t := range stacks {
		st, err := gpuio.Open(fds, opts)
		if err != nil {
			return ioBenchRow{}, fmt.Errorf("bench io: %w", err)
		}
		stacks[t] = st
	}
	bs := opts.BlockSize
	var wg sync.WaitGroup
	errs := make([]error, n)
	var start time.Time
	ready := make(chan struct{})
	for t, st := range stacks {
		wg.Go(func() {
			file := t % len(targets)
			blocks := targets[file].bytes / int64(bs)
			rng := rand.New(rand.NewPCG(seed, uint64(t)))
			dst := make([]byte, batch*bs)
			reqs := make([]gpuio.Request, batch)
			<-ready
			end := start.Add(dur)
			for time.Now().Before(end) {
				for i := range reqs {
					reqs[i] = gpuio.Request{File: file, Offset: rng.Int64N(blocks) * int64(bs), Length: bs, Dst: dst[i*bs : (i+1)*bs]}
				}
				if err := st.Submit(reqs); err != nil {
					errs[t] = err
					st.Complete()
					return
				}
				if err := st.Complete(); err != nil {
					errs[t] = err
					return
				}
			}
		})
	}
	var before, after unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &before)
	start = time.Now()
	close(ready)
	wg.Wait()
	took := time.Since(start).Seconds()
	unix.Getrusage(unix.RUSAGE_SELF, &after)
	if err := errors.Join(errs...); err != nil {
		return ioBenchRow{}, fmt.Errorf("bench io: %w", err)
	}
	row := ioBenchRow{Threads: n, Seconds: took}
	var enters uint64
	for _, st := range stacks {
		row.Reads += st.Stats().Reads
		enters += st.Stats().Enters
		row.Retries += st.Stats().Retries
	}
	row.ReadsPerS = float64(row.Reads) / took
	if row.Reads > 0 {
		row.EntersPerRead = float64(enters) / float64(row.Reads)
		row.CPUPerRead, row.SwitchesPerRead = perRead(&before, &after, row.Reads)
	}
	return row, nil
}

var iobenchIOPS = regexp.MustCompile(`([0-9.]+) IOPS`)

// runIOBench runs n iobench processes at once, process p on target p mod len(targets), and sums
// the IOPS they print; on failure it returns 0 and why.
func runIOBench(bin string, targets []ioTarget, n, bs, qd int, secs float64) (readsPerS, cpuPerRead, switchesPerRead float64, note string) {
	cmds := make([]*exec.Cmd, n)
	outs := make([]bytes.Buffer, n)
	for p := range cmds {
		t := targets[p%len(targets)]
		cmds[p] = exec.Command(bin, t.path, strconv.FormatInt(t.bytes>>20, 10), strconv.Itoa(bs), strconv.Itoa(qd), strconv.FormatFloat(secs, 'f', -1, 64))
		cmds[p].Stdout, cmds[p].Stderr = &outs[p], &outs[p]
	}
	for p, c := range cmds {
		if err := c.Start(); err != nil {
			for _, c := range cmds[:p] {
				c.Process.Kill()
				c.Wait()
			}
			return 0, 0, 0, fmt.Sprintf("(iobench did not start: %v)", err)
		}
	}
	var sum, reads float64
	var used unix.Rusage
	var why []string
	for p, c := range cmds {
		err := c.Wait()
		if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
			used.Utime.Usec += ru.Utime.Sec*1e6 + ru.Utime.Usec
			used.Stime.Usec += ru.Stime.Sec*1e6 + ru.Stime.Usec
			used.Nvcsw += ru.Nvcsw
		}
		m := iobenchIOPS.FindSubmatch(outs[p].Bytes())
		if err != nil || m == nil {
			line, _ := bufio.NewReader(&outs[p]).ReadString('\n')
			why = append(why, fmt.Sprintf("process %d: %v %s", p, err, strings.TrimSpace(line)))
			continue
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		sum += v
		reads += v * secs
	}
	if len(why) > 0 {
		return 0, 0, 0, "(iobench failed: " + strings.Join(why, "; ") + ")"
	}
	cpuPerRead, switchesPerRead = perRead(&unix.Rusage{}, &used, uint64(max(reads, 1)))
	return sum, cpuPerRead, switchesPerRead, ""
}

// perRead is the CPU time (µs) and voluntary context switches per read between two rusages.
func perRead(before, after *unix.Rusage, reads uint64) (cpuUs, switches float64) {
	us := func(t unix.Timeval) float64 { return float64(t.Sec)*1e6 + float64(t.Usec) }
	cpu := us(after.Utime) - us(before.Utime) + us(after.Stime) - us(before.Stime)
	return cpu / float64(reads), float64(after.Nvcsw-before.Nvcsw) / float64(reads)
}

// ioBackendFlag adds --io-backend to the flags of a benchmark that reads through the IO engine.
func ioBackendFlag(fs *pflag.FlagSet) *string {
	return fs.String("io-backend", "", "io_uring or pread (default: io_uring where it works)")
}
