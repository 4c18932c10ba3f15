package cli

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"
	"unsafe"

	"github.com/spf13/pflag"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/internal/bytesize"
	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/topology"
)

// gpuBenchResult is one line of `tierfs bench gpu`.
type gpuBenchResult struct {
	Name      string  `json:"name"`
	RowBytes  int64   `json:"row_bytes"`
	Rows      int64   `json:"rows"`
	Seconds   float64 `json:"seconds"`
	RowsPerS  float64 `json:"rows_per_s"`
	GBPerS    float64 `json:"gb_per_s"`
	IOPS      float64 `json:"iops,omitempty"`
	GPUShare  float64 `json:"gpu_hit_share,omitempty"`
	HostShare float64 `json:"host_hit_share,omitempty"`
	SMShare   float64 `json:"io_sm_share,omitempty"` // share of SMs the completion kernel's grid may occupy
	Blocks    int     `json:"blocks,omitempty"`
	// BatchMs is the mean time of one gather call; CPUSeconds the process's CPU time (user +
	// system, every thread, the SQPOLL thread included) over the timed calls; CPUPerMReads that
	// per million disk reads.
	BatchMs      float64 `json:"batch_ms"`
	CPUSeconds   float64 `json:"cpu_seconds"`
	CPUPerMReads float64 `json:"cpu_seconds_per_million_reads,omitempty"`
	Note         string  `json:"note,omitempty"`
}

// processCPUSeconds is the user + system time of every thread of this process so far.
func processCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// runBenchGPU measures the GPU path: kernels alone on synthetic tables (--kernels) and
// GatherDevice on a dataset with everything in the GPU tier, everything in the host tier,
// everything on disk, and a mixed placement.
func benchGPUCmd(fs *pflag.FlagSet) runFunc {
	base := storeFlags(fs) // every configuration's options; the tier budgets are the mixed one's
	fs.Lookup("host-cache").Usage = "host tier of the mixed configuration (default: 20% of the rows)"
	fs.Lookup("gpu-cache").Usage = "GPU tier of the mixed configuration (default: 10% of the rows)"
	fs.Lookup("gpu-topology").Usage = "not used: the sampling benchmark runs on the host and with the topology in device and pinned memory"
	fs.Lookup("max-concurrent-io").Usage = "IO stacks of each configuration (default: 1)"
	batch := fs.Int("batch", 1<<18, "ids per gather call")
	batches := fs.Int("batches", 20, "gather calls per configuration")
	ssdBatches := fs.Int("ssd-batches", 4, "gather calls of the all-on-disk configuration")
	dist := fs.String("dist", "sample", "id stream: uniform, or sample (nodes of 2-hop neighborhoods: power-law)")
	kernels := fs.Bool("kernels", false, "also time the gather kernel alone on 2 GiB device and pinned tables")
	seed := fs.Uint64("seed", 1, "random seed")
	asJSON := fs.String("json", "", "also write the results as JSON to this file")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the store configurations to this file")
	verifyRounds := verifyRoundsFlag(fs)
	return func(pos []string) error {
		if err := cuda.Load(); err != nil {
			return err
		}
		info, err := cuda.Info(base.GPUDevice)
		if err != nil {
			return err
		}
		fmt.Printf("GPU %s, %d SMs, %.1f GiB free; shim %s; %d CPUs, GOMAXPROCS %d\n", info.Name, info.SMs, float64(info.FreeBytes)/(1<<30), cuda.Path(), runtime.NumCPU(), runtime.GOMAXPROCS(0))
		var kernelResults []gpuBenchResult
		if *kernels {
			for _, rb := range []int64{64, 512, 4096} {
				rs, err := benchKernels(info, rb, *seed)
				if err != nil {
					return err
				}
				kernelResults = append(kernelResults, rs...)
			}
		}
		b, err := newGPUBench(pos[0], *base, info, *dist, *batches, *batch, *seed)
		if err != nil {
			return err
		}
		defer b.close()
		b.results = kernelResults
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
		mixed, note := b.mixedOptions(*base, setFlags(fs))
		if *verifyRounds != 0 {
			// The configurations that read the disk, verified and not, on the same ids.
			costs, err := compareVerify(*verifyRounds, []string{"ssd", "mixed"}, func(config string, verify bool) (float64, error) {
				opt, nb, what := b.plain, *ssdBatches, "every row from disk"
				if config == "mixed" {
					opt, nb, what = mixed, *batches, note
				}
				opt.UnverifiedReads = !verify
				if err := b.run(config, opt, nb, fmt.Sprintf("%s, verify-reads %t", what, verify)); err != nil {
					return 0, err
				}
				return b.results[len(b.results)-1].RowsPerS, nil
			})
			if err != nil {
				return err
			}
			return writeJSONResults(*asJSON, map[string]any{"results": b.results, "verify": costs})
		}
		if err := b.runConfigurations(mixed, note, *batches, *ssdBatches); err != nil {
			return err
		}
		if b.m.Edges() != nil {
			rs, err := benchSampling(b.dir, b.plain, *seed)
			if err != nil {
				return err
			}
			b.results = append(b.results, rs...)
		}
		return writeJSONResults(*asJSON, b.results)
	}
}

// writeJSONResults writes a benchmark's report v as indented JSON, ending in a newline, to path
// (--json); nothing when path is "".
func writeJSONResults(path string, v any) error {
	if path == "" {
		return nil
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// gpuBench is one `tierfs bench gpu` run over a dataset: its id streams and hotness, a device
// buffer and stream every configuration gathers into, and the results so far.
type gpuBench struct {
	dir     string
	m       *dataset.Manifest
	n, rb   int64
	dev     int
	plain   featurestore.Options // the options without tiers: the ssd configuration, and the helper stores
	streams [][][]int64
	hotness []uint32
	dst     uintptr
	stream  cuda.Stream
	results []gpuBenchResult
}

func newGPUBench(dir string, base featurestore.Options, info cuda.Device, dist string, batches, batch int, seed uint64) (*gpuBench, error) {
	m, err := dataset.Load(dir)
	if err != nil {
		return nil, err
	}
	spec, err := m.Feature(base.Feature)
	if err != nil {
		return nil, err
	}
	b := &gpuBench{dir: dir, m: m, n: m.Nodes().Count, rb: spec.RowBytes, dev: info.Ordinal}
	if base.MaxConcurrentIO == 0 {
		base.MaxConcurrentIO = 1
	}
	qd := base.QueueDepth
	if qd == 0 {
		qd = featurestore.DefaultQueueDepth
	}
	b.plain = base
	b.plain.HostCacheBytes, b.plain.HostPolicy, b.plain.GPUCacheBytes, b.plain.GPUTopology = 0, "", 0, ""
	if b.streams, b.hotness, err = idStreams(dir, b.plain, dist, 1, batches, batch, seed); err != nil {
		return nil, err
	}
	fmt.Printf("dataset %s: %d nodes, %d-byte rows; %s ids, %d batches x %d ids; QD %d\n", dir, b.n, b.rb, dist, batches, batch, qd)
	if b.dst, err = cuda.Malloc(b.dev, uint64(int64(batch)*b.rb)); err != nil {
		return nil, err
	}
	if b.stream, err = cuda.NewStream(b.dev); err != nil {
		cuda.Free(b.dev, b.dst)
		return nil, err
	}
	return b, nil
}

func (b *gpuBench) close() {
	cuda.DestroyStream(b.dev, b.stream)
	cuda.Free(b.dev, b.dst)
}

// mixedOptions is the mixed configuration: the flags' store options with a GPU tier of 10% and
// a host tier of 20% of the rows unless --gpu-cache or --host-cache say otherwise, and its note.
func (b *gpuBench) mixedOptions(base featurestore.Options, set map[string]bool) (featurestore.Options, string) {
	mixed, note := base, "GPU 10% + host 20% of rows, hottest first"
	mixed.GPUTopology = ""
	if !set["gpu-cache"] {
		mixed.GPUCacheBytes = b.n * b.rb / 10
	}
	if !set["host-cache"] {
		mixed.HostCacheBytes = featurestore.TierBudget(tiers.Host, b.n, b.rb) / 5
	}
	if set["gpu-cache"] || set["host-cache"] {
		note = fmt.Sprintf("GPU %s + host %s, hottest first", bytesize.Format(mixed.GPUCacheBytes), bytesize.Format(mixed.HostCacheBytes))
	}
	return mixed, note
}

// runConfigurations runs every configuration in turn: the GPU tier, the host tier, the disk
// (io_uring, and GPU-submitted reads where they work), and the mixed one (both ways).
func (b *gpuBench) runConfigurations(mixed featurestore.Options, note string, batches, ssdBatches int) error {
	with := func(gpuBytes, hostBytes int64) featurestore.Options {
		o := b.plain
		o.GPUCacheBytes, o.HostCacheBytes = gpuBytes, hostBytes
		return o
	}
	if err := b.run("gpu-tier", with(b.n*b.rb, 0), batches, "every row in device memory"); err != nil {
		return err
	}
	if err := b.run("host-tier", with(0, featurestore.TierBudget(tiers.Host, b.n, b.rb)), batches, "every row in pinned host memory, read over PCIe"); err != nil {
		return err
	}
	if err := b.run("ssd", b.plain, ssdBatches, "every row from disk: io_uring into pinned staging, completion kernel"); err != nil {
		return err
	}
	gpuRing := b.plain
	gpuRing.IOBackend, gpuRing.UnverifiedReads = gpuio.BackendGPUURing, true // the GPU-submitted reads are not checked
	if err := gpuio.ProbeGPURing(); err != nil {
		fmt.Printf("  ssd-gpu-uring  skipped: %v\n", err)
	} else if err := b.run("ssd-gpu-uring", gpuRing, ssdBatches, "every row from disk: reads submitted and completed by a GPU kernel (SQPOLL ring), unverified"); err != nil {
		return err
	}
	if err := b.run("mixed", mixed, batches, note); err != nil {
		return err
	}
	if gpuio.ProbeGPURing() == nil {
		mixed.IOBackend, mixed.UnverifiedReads = gpuio.BackendGPUURing, true
		if err := b.run("mixed-gpu-uring", mixed, batches, note+"; disk reads by the GPU, unverified"); err != nil {
			return err
		}
	}
	return nil
}

// run times nb device gathers of the id stream on a store opened with opt and appends the result.
func (b *gpuBench) run(name string, opt featurestore.Options, nb int, note string) error {
	opt.Hotness = b.hotness
	s, err := openStore(b.dir, opt)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer s.Close()
	ids := b.streams[0][:min(nb, len(b.streams[0]))]
	if err := s.GatherDevice(ids[0], b.dst, uintptr(b.stream)); err != nil { // warm up
		return err
	}
	cuda.SyncStream(b.dev, b.stream)
	before := s.Stats()
	cpu0 := processCPUSeconds()
	start := time.Now()
	var rows int64
	for _, batch := range ids {
		if err := s.GatherDevice(batch, b.dst, uintptr(b.stream)); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		rows += int64(len(batch))
	}
	if err := cuda.SyncStream(b.dev, b.stream); err != nil {
		return err
	}
	sec := time.Since(start).Seconds()
	cpu := processCPUSeconds() - cpu0
	after := s.Stats()
	r := gpuBenchResult{Name: name, RowBytes: b.rb, Rows: rows, Seconds: sec, RowsPerS: float64(rows) / sec,
		GBPerS: float64(rows*b.rb) / sec / 1e9, Note: note, Blocks: after.GPU.KernelBlocks,
		BatchMs: sec * 1000 / float64(len(ids)), CPUSeconds: cpu}
	if opt.IOBackend == gpuio.BackendGPUURing && after.IO.GPURing != "active" {
		return fmt.Errorf("%s: gpu-uring did not start: %s", name, after.IO.GPURing)
	}
	r.GPUShare = float64(after.Tier(tiers.GPU).Hits-before.Tier(tiers.GPU).Hits) / float64(rows)
	r.HostShare = float64(after.Tier(tiers.Host).Hits-before.Tier(tiers.Host).Hits) / float64(rows)
	if reads := after.IO.Reads - before.IO.Reads; reads > 0 {
		r.IOPS = float64(reads) / sec
		r.SMShare = after.GPU.CompletionSMShare
		r.CPUPerMReads = cpu / float64(reads) * 1e6
		if opt.IOBackend == gpuio.BackendGPUURing {
			info, err := cuda.Info(b.dev)
			if err == nil && info.SMs > 0 {
				r.SMShare = 1 / float64(info.SMs) // one thread block polls and copies
			}
		}
	}
	b.results = append(b.results, r)
	fmt.Printf("  %-14s %10.0f rows/s %8.2f GB/s  gpu %.2f host %.2f  iops %.0f  io SM share %.3f  %.2f ms/call  CPU %.2f s (%.1f s per M reads)  %s\n",
		name, r.RowsPerS, r.GBPerS, r.GPUShare, r.HostShare, r.IOPS, r.SMShare, r.BatchMs, r.CPUSeconds, r.CPUPerMReads, note)
	return nil
}

// benchKernels times the store's gather kernel alone, as the roofline probe does: 1M random ids
// into a 2 GiB table in device memory and in pinned host memory.
func benchKernels(info cuda.Device, rb int64, seed uint64) ([]gpuBenchResult, error) {
	dev := info.Ordinal
	const tableBytes = 2 << 30
	const n = 1 << 20
	rows := int64(tableBytes) / rb
	devTab, err := cuda.Malloc(dev, tableBytes)
	if err != nil {
		return nil, err
	}
	defer cuda.Free(dev, devTab)
	hostAddr, hostTab, err := cuda.HostAlloc(dev, tableBytes)
	if err != nil {
		return nil, err
	}
	defer cuda.HostFree(dev, hostAddr)
	for i := 0; i < len(hostTab); i += 4096 {
		hostTab[i] = byte(i >> 12)
	}
	out, err := cuda.Malloc(dev, uint64(n*rb))
	if err != nil {
		return nil, err
	}
	defer cuda.Free(dev, out)
	idsAddr, idsBuf, err := cuda.HostAlloc(dev, n*8)
	if err != nil {
		return nil, err
	}
	defer cuda.HostFree(dev, idsAddr)
	ids := unsafe.Slice((*int64)(unsafe.Pointer(&idsBuf[0])), n)
	rng := rand.New(rand.NewPCG(seed, 3))
	for i := range ids {
		ids[i] = rng.Int64N(rows)
	}
	devIDs, err := cuda.Malloc(dev, n*8)
	if err != nil {
		return nil, err
	}
	defer cuda.Free(dev, devIDs)
	if err := cuda.Memcpy(dev, devIDs, idsAddr, n*8, 0); err != nil {
		return nil, err
	}
	a, _ := cuda.NewEvent(dev)
	b, _ := cuda.NewEvent(dev)
	defer cuda.DestroyEvent(dev, a)
	defer cuda.DestroyEvent(dev, b)
	var results []gpuBenchResult
	for _, which := range []struct {
		name string
		tab  uintptr
	}{{"kernel-device", devTab}, {"kernel-pinned", hostAddr}} {
		for _, blocks := range []int{info.SMs, info.SMs * 8, info.SMs * 16} {
			if err := cuda.GatherRows(dev, which.tab, uint64(rb), devIDs, 0, n, out, blocks, 0); err != nil {
				return nil, err
			}
			cuda.Record(dev, a, 0)
			for range 5 {
				cuda.GatherRows(dev, which.tab, uint64(rb), devIDs, 0, n, out, blocks, 0)
			}
			cuda.Record(dev, b, 0)
			if err := cuda.SyncEvent(dev, b); err != nil {
				return nil, err
			}
			ms, _ := cuda.ElapsedMs(dev, a, b)
			sec := float64(ms) / 1e3
			r := gpuBenchResult{Name: which.name, RowBytes: rb, Rows: 5 * n, Seconds: sec, RowsPerS: 5 * n / sec,
				GBPerS: float64(5*n*rb) / sec / 1e9, Blocks: blocks, Note: "tfc_gather_rows alone, 256-thread blocks, ids in device memory"}
			fmt.Printf("  %-14s %5d B rows, %5d blocks: %8.1f GB/s %8.1f M rows/s\n", which.name, rb, blocks, r.GBPerS, r.RowsPerS/1e6)
			results = append(results, r)
		}
	}
	return results, nil
}

// benchSampling times 2-hop [15, 10] sampling of batches of 1024 seeds on the host and on the GPU
// with the topology in device memory and in pinned host memory (same samples every way).
func benchSampling(dir string, opt featurestore.Options, seed uint64) ([]gpuBenchResult, error) {
	var results []gpuBenchResult
	rng := rand.New(rand.NewPCG(seed, 11))
	for _, where := range []string{"", "device", "pinned"} {
		opt.GPUTopology = where
		s, err := openStore(dir, opt)
		if err != nil {
			return nil, err
		}
		n := s.NumNodes()
		batches := make([][]int64, 30)
		for b := range batches {
			batches[b] = make([]int64, 1024)
			for i := range batches[b] {
				batches[b][i] = rng.Int64N(n)
			}
		}
		sp, err := oneTypeSampler(s, topology.SampleOptions{Fanouts: []int{15, 10}, Seed: seed})
		if err == nil {
			_, err = sp.Sample("", batches[0])
		}
		if err != nil {
			s.Close()
			return nil, err
		}
		start := time.Now()
		var edges int64
		for _, b := range batches {
			out, err := sp.Sample("", b)
			if err != nil {
				s.Close()
				return nil, err
			}
			edges += int64(len(out.Row[0]))
		}
		sec := time.Since(start).Seconds()
		s.Close()
		name := "sample-host"
		if where != "" {
			name = "sample-gpu-" + where
		}
		r := gpuBenchResult{Name: name, Rows: int64(len(batches) * 1024), Seconds: sec, RowsPerS: float64(len(batches)*1024) / sec,
			Note: fmt.Sprintf("seeds/s, 2-hop [15, 10], batches of 1024 seeds, %.0f edges a batch", float64(edges)/float64(len(batches)))}
		fmt.Printf("  %-20s %10.0f seeds/s  %s\n", name, r.RowsPerS, r.Note)
		results = append(results, r)
	}
	return results, nil
}

// startCPUProfile starts a CPU profile into path (none when path is empty); stop ends it and
// closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
