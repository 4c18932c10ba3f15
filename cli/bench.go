package cli

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/internal/bytesize"
	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/topology"
)

// benchResult is one line of `tierfs bench gather`.
type benchResult struct {
	Name          string  `json:"name"`
	Rows          int64   `json:"rows"`
	Seconds       float64 `json:"seconds"`
	RowsPerS      float64 `json:"rows_per_s"`
	GBPerS        float64 `json:"gb_per_s"` // feature bytes delivered
	DiskReads     uint64  `json:"disk_reads"`
	IOPS          float64 `json:"iops"`
	ReadAmp       float64 `json:"read_amplification,omitempty"` // bytes read from disk / bytes of rows served from disk
	ReadsPerBatch float64 `json:"reads_per_batch,omitempty"`
	GapShare      float64 `json:"gap_share,omitempty"` // share of the bytes read that bridged gaps
	HostShare     float64 `json:"host_hit_share"`
	Note          string  `json:"note,omitempty"`
}

func benchGatherCmd(fs *pflag.FlagSet) runFunc {
	base := storeFlags(fs) // every configuration's options; the tier budgets are the mixed one's
	fs.Lookup("host-cache").Usage = "host tier of the mixed configuration (default: 20% of the feature bytes)"
	fs.Lookup("host-policy").Usage = "host tier of the mixed configuration: static (placed once; the default), sieve (cache with SIEVE eviction), or static,sieve for both"
	fs.Lookup("gpu-cache").Usage = "GPU tier of the mixed configuration (default: none)"
	fs.Lookup("max-concurrent-io").Usage = "IO stacks of each configuration (default: --threads)"
	batch := fs.Int("batch", 4096, "ids per gather call")
	batches := fs.Int("batches", 100, "gather calls per configuration")
	dist := fs.String("dist", "sample", "id stream: uniform, or sample (the nodes of 2-hop neighborhoods of random seeds: the skewed stream of GNN training), zipf (Zipf ids over scattered nodes), drift (zipf whose hot set moves every --drift-every batches)")
	fs.Float64Var(&zipfS, "zipf-s", zipfS, "Zipf exponent of the zipf and drift streams (> 1)")
	fs.IntVar(&driftEvery, "drift-every", driftEvery, "batches per hot set of the drift stream")
	threads := fs.Int("threads", 1, "goroutines gathering at once")
	seed := fs.Uint64("seed", 1, "random seed of the id stream")
	asJSON := fs.String("json", "", "also write the results as JSON to this file")
	usePlacement := placementFlag(fs) // for the mixed configuration, instead of the stream's hotness
	verifyRounds := verifyRoundsFlag(fs)
	return func(pos []string) error {
		dir := pos[0]
		policy := base.HostPolicy
		if policy == "" {
			policy = featurestore.HostStatic
		}
		policies, err := hostPolicies(policy)
		if err != nil {
			return err
		}
		qd := base.QueueDepth
		if qd == 0 {
			qd = featurestore.DefaultQueueDepth
		}
		if base.MaxConcurrentIO == 0 {
			base.MaxConcurrentIO = *threads
		}
		m, err := dataset.Load(dir)
		if err != nil {
			return err
		}
		spec, err := m.Feature(base.Feature)
		if err != nil {
			return err
		}
		featBytes := spec.RowBytes * m.Nodes().Count
		hostCache := base.HostCacheBytes
		if !setFlags(fs)["host-cache"] {
			hostCache = featurestore.TierBudget(tiers.Host, m.Nodes().Count, spec.RowBytes) / 5
		}
		// plain is the options without tiers: the ssd configuration, and the helper stores.
		plain := *base
		plain.HostCacheBytes, plain.HostPolicy, plain.GPUCacheBytes = 0, "", 0
		streams, hotness, err := idStreams(dir, plain, *dist, *threads, *batches, *batch, *seed)
		if err != nil {
			return err
		}
		planned := *base
		planned.HostCacheBytes, planned.HostPolicy = hostCache, ""
		if err := withPlacement(dir, &planned, *usePlacement); err != nil {
			return err
		}
		fmt.Printf("dataset %s: %d nodes, %d-byte rows (%s of features); %s ids, %d threads x %d batches x %d ids; QD %d; %d CPUs\n",
			dir, m.Nodes().Count, spec.RowBytes, bytesize.Format(featBytes), *dist, *threads, *batches, *batch, qd, runtime.NumCPU())

		b := &gatherBench{dir: dir, rb: spec.RowBytes, streams: streams, hotness: hotness, planned: planned}
		mixedOpts := func(p string) (featurestore.Options, string) {
			mixed := *base
			mixed.HostCacheBytes, mixed.HostPolicy = hostCache, p
			note := p + " host cache " + bytesize.Format(hostCache)
			if mixed.GPUCacheBytes > 0 {
				note += ", GPU cache " + bytesize.Format(mixed.GPUCacheBytes)
			}
			return mixed, note
		}
		// report is the JSON report of the runs so far.
		report := func(policy string) map[string]any {
			return map[string]any{"dataset": dir, "dist": *dist, "batch": *batch, "batches": *batches, "threads": *threads,
				"qd": qd, "host_policy": policy, "cpus": runtime.NumCPU(), "time": time.Now().UTC().Format(time.RFC3339), "results": b.results}
		}
		if *verifyRounds != 0 {
			// The configurations that read the disk, verified and not, on the same ids.
			costs, err := compareVerify(*verifyRounds, []string{"ssd tier", "mixed"}, func(config string, verify bool) (float64, error) {
				opt, note := plain, "no host cache"
				if config == "mixed" {
					opt, note = mixedOpts(policies[0])
				}
				opt.UnverifiedReads = !verify
				if err := b.run(config, opt, fmt.Sprintf("%s, verify-reads %t", note, verify)); err != nil {
					return 0, err
				}
				return b.results[len(b.results)-1].RowsPerS, nil
			})
			if err != nil {
				return err
			}
			r := report(policies[0])
			r["verify"] = costs
			return writeJSONResults(*asJSON, r)
		}
		if err := b.run("ssd tier", plain, "no host cache"); err != nil {
			return err
		}
		for _, p := range policies {
			name := "mixed"
			if p != featurestore.HostStatic {
				name = "mixed " + p
			}
			mixed, note := mixedOpts(p)
			if err := b.run(name, mixed, note); err != nil {
				return err
			}
		}
		hostVsMemory, err := b.baselines(m, spec, plain, qd, *threads)
		if err != nil {
			return err
		}
		printGatherResults(b.results, qd, hostVsMemory)
		return writeJSONResults(*asJSON, report(policy))
	}
}

// baselines adds the runs gather configurations are measured against to b.results: the host
// tier beside an in-memory table where the features fit memory (hostVsMemory: the median over
// the rounds of host tier rows/s / in-memory rows/s; 0 where they do not fit), and raw reads.
func (b *gatherBench) baselines(m *dataset.Manifest, spec *dataset.FeatureSpec, plain featurestore.Options, qd, threads int) (hostVsMemory float64, err error) {
	if spec.RowBytes*m.Nodes().Count*3 < int64(totalMemory()) {
		all := plain
		all.HostCacheBytes = featurestore.TierBudget(tiers.Host, m.Nodes().Count, spec.RowBytes)
		all.Hotness = b.hotness
		hostTier, mem, ratio, err := benchHostVsMemory(b.dir, all, b.streams, hostRounds)
		if err != nil {
			return 0, err
		}
		b.results = append(b.results, hostTier, mem)
		hostVsMemory = ratio
	}
	raw, err := benchRawIO(m, spec, qd, threads, b.streams)
	if err != nil {
		return 0, err
	}
	b.results = append(b.results, raw)
	return hostVsMemory, nil
}

// gatherBench is one `tierfs bench gather` run: the threads' id streams and their hotness, the
// saved placement (planned.Placement, when given) and the results so far.
type gatherBench struct {
	dir     string
	rb      int64
	streams [][][]int64
	hotness []uint32
	planned featurestore.Options
	results []benchResult
}

// run times the id streams' gathers on a store opened with opt and appends the result.
func (b *gatherBench) run(name string, opt featurestore.Options, note string) error {
	opt.Hotness = b.hotness
	if b.planned.Placement != nil && opt.HostCacheBytes == b.planned.HostCacheBytes {
		opt.Placement, opt.Hotness, note = b.planned.Placement, nil, note+", saved "+b.planned.Placement.Policy.String()+" placement"
	}
	s, err := openStore(b.dir, opt)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer s.Close()
	before := s.Stats()
	took, err := timeGathers(b.streams, int(s.RowBytes()), s.Gather)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	after := s.Stats()
	r := result(name, b.streams, b.rb, took)
	r.DiskReads = after.IO.Reads - before.IO.Reads
	r.IOPS = float64(r.DiskReads) / took
	if served := (after.Tier(tiers.SSD).Hits - before.Tier(tiers.SSD).Hits) * uint64(b.rb); served > 0 {
		r.ReadAmp = float64(after.IO.BytesRead-before.IO.BytesRead) / float64(served)
	}
	r.ReadsPerBatch = float64(r.DiskReads) / float64(len(b.streams)*len(b.streams[0]))
	if read := after.IO.BytesRead - before.IO.BytesRead; read > 0 {
		r.GapShare = float64(after.IO.GapBytes-before.IO.GapBytes) / float64(read)
	}
	r.HostShare = float64(after.Tier(tiers.Host).Hits-before.Tier(tiers.Host).Hits) / float64(r.Rows)
	r.Note = fmt.Sprintf("%s, %s, %d-byte reads, gap %d", note, s.IOBackend(), after.IO.BlockSize, after.IO.CoalesceGap)
	b.results = append(b.results, r)
	return nil
}

// printGatherResults prints `bench gather`'s table and its ratios (the README and BENCHMARKS.md
// quote them; python/tests/test_readme_demo.py reads them).
func printGatherResults(results []benchResult, qd int, hostVsMemory float64) {
	fmt.Printf("\n%-22s %12s %9s %11s %11s %9s %6s %9s  %s\n", "configuration", "rows/s", "GB/s", "disk IOPS", "reads/batch", "read amp", "gaps", "host hit", "note")
	for _, r := range results {
		amp, gaps := "-", "-"
		if r.ReadAmp > 0 {
			amp, gaps = fmt.Sprintf("%.2f", r.ReadAmp), fmt.Sprintf("%.0f%%", 100*r.GapShare)
		}
		fmt.Printf("%-22s %12.0f %9.3f %11.0f %11.0f %9s %6s %8.0f%%  %s\n", r.Name, r.RowsPerS, r.GBPerS, r.IOPS, r.ReadsPerBatch, amp, gaps, 100*r.HostShare, r.Note)
	}
	byName := map[string]benchResult{}
	for _, r := range results {
		byName[r.Name] = r
	}
	fmt.Println()
	if ssd, raw := byName["ssd tier"], byName["raw io_uring"]; raw.IOPS > 0 {
		fmt.Printf("ssd tier disk IOPS / raw random-read IOPS at QD %d:   %.2f\n", qd, ssd.IOPS/raw.IOPS)
		fmt.Printf("ssd tier rows/s / raw random-read IOPS:              %.2f (rows per single-block read; >1 where reads coalesce)\n", ssd.RowsPerS/raw.IOPS)
	}
	if mem := byName["in-memory reference"]; mem.RowsPerS > 0 {
		fmt.Printf("host tier rows/s / in-memory gather rows/s:           %.2f (median of %d alternating rounds)\n", hostVsMemory, hostRounds)
		fmt.Printf("mixed rows/s / in-memory gather rows/s:               %.2f\n", byName["mixed"].RowsPerS/mem.RowsPerS)
		if sv, ok := byName["mixed sieve"]; ok {
			fmt.Printf("mixed sieve rows/s / in-memory gather rows/s:         %.2f\n", sv.RowsPerS/mem.RowsPerS)
		}
	}
}

// idStreams makes each thread's batches of ids, and for the sample stream the hotness a
// pre-sampling pass over other seeds counts (what the host tier is then filled by).
func idStreams(dir string, opt featurestore.Options, dist string, threads, batches, batch int, seed uint64) ([][][]int64, []uint32, error) {
	s, err := openStore(dir, opt)
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	n := s.NumNodes()
	rng := rand.New(rand.NewPCG(seed, 7))
	streams := make([][][]int64, threads)
	switch dist {
	case "uniform":
		for t := range streams {
			for range batches {
				ids := make([]int64, batch)
				for i := range ids {
					ids[i] = rng.Int64N(n)
				}
				streams[t] = append(streams[t], ids)
			}
		}
		return streams, nil, nil
	case "sample":
		if s.Graph() == nil {
			return nil, nil, fmt.Errorf("--dist sample needs a dataset with topology")
		}
		// Seeds per batch such that a 2-hop [10, 5] neighborhood holds about batch nodes.
		draw := func() ([]int64, error) {
			seeds := make([]int64, max(1, batch/40))
			for i := range seeds {
				seeds[i] = rng.Int64N(n)
			}
			out, err := sampleOnce(s, seeds, topology.SampleOptions{Fanouts: []int{10, 5}, Seed: rng.Uint64()})
			if err != nil {
				return nil, err
			}
			return out.Nodes, nil
		}
		hot := make([]uint32, n)
		for range threads * batches {
			ids, err := draw()
			if err != nil {
				return nil, nil, err
			}
			for _, id := range ids {
				hot[id]++
			}
		}
		for t := range streams {
			for range batches {
				ids, err := draw()
				if err != nil {
					return nil, nil, err
				}
				streams[t] = append(streams[t], ids)
			}
		}
		return streams, hot, nil
	}
	if dist == "zipf" || dist == "drift" {
		return zipfStreams(n, dist == "drift", threads, batches, batch, rng)
	}
	return nil, nil, fmt.Errorf("--dist %q: want uniform, sample, zipf or drift", dist)
}

// timeGathers runs each thread's batches through gather, threads at once, and returns seconds.
func timeGathers(streams [][][]int64, rowBytes int, gather func([]int64, []byte) error) (float64, error) {
	var wg sync.WaitGroup
	errs := make([]error, len(streams))
	start := time.Now()
	for t, batches := range streams {
		wg.Go(func() {
			var dst []byte
			for _, ids := range batches {
				if need := len(ids) * rowBytes; cap(dst) < need {
					dst = make([]byte, need)
				}
				if err := gather(ids, dst[:len(ids)*rowBytes]); err != nil {
					errs[t] = err
					return
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start).Seconds()
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return took, nil
}

func result(name string, streams [][][]int64, rowBytes int64, seconds float64) benchResult {
	var rows int64
	for _, batches := range streams {
		for _, ids := range batches {
			rows += int64(len(ids))
		}
	}
	return benchResult{Name: name, Rows: rows, Seconds: seconds, RowsPerS: float64(rows) / seconds, GBPerS: float64(rows*rowBytes) / seconds / 1e9}
}

// hostRounds is how many times `bench gather` times the host tier and the in-memory reference,
// alternately: one round of each takes well under a second at the demo's size, where load from
// other processes on a small shared machine swung a single pair's ratio from 0.16 to 7.
const hostRounds = 5

// benchHostVsMemory times gathers of the same ids from the host tier of a store with every row
// cached (opt) and from a plain in-memory copy of every row (the memcpy-bound reference the host
// tier is judged against), alternately for rounds rounds, so that load from other processes
// falls on both alike. Each result's rows/s is its median round; ratio is the median of the
// rounds' host / in-memory ratios.
func benchHostVsMemory(dir string, opt featurestore.Options, streams [][][]int64, rounds int) (hostTier, mem benchResult, ratio float64, err error) {
	s, err := openStore(dir, opt)
	if err != nil {
		return hostTier, mem, 0, fmt.Errorf("host tier: %w", err)
	}
	defer s.Close()
	n, rb := s.NumNodes(), s.RowBytes()
	all := make([]byte, n*rb)
	const chunk = 1 << 14
	ids := make([]int64, 0, chunk)
	for lo := int64(0); lo < n; lo += chunk {
		ids = ids[:0]
		for v := lo; v < min(lo+chunk, n); v++ {
			ids = append(ids, v)
		}
		if err := s.Gather(ids, all[lo*rb:(lo+int64(len(ids)))*rb]); err != nil {
			return hostTier, mem, 0, fmt.Errorf("in-memory reference: %w", err)
		}
	}
	copyRows := func(ids []int64, dst []byte) error {
		for i, id := range ids {
			copy(dst[int64(i)*rb:int64(i+1)*rb], all[id*rb:(id+1)*rb])
		}
		return nil
	}
	before := s.Stats()
	hostSecs, memSecs, ratios := make([]float64, rounds), make([]float64, rounds), make([]float64, rounds)
	for r := range rounds {
		if hostSecs[r], err = timeGathers(streams, int(rb), s.Gather); err != nil {
			return hostTier, mem, 0, fmt.Errorf("host tier: %w", err)
		}
		if memSecs[r], err = timeGathers(streams, int(rb), copyRows); err != nil {
			return hostTier, mem, 0, fmt.Errorf("in-memory reference: %w", err)
		}
		ratios[r] = memSecs[r] / hostSecs[r] // rows/s of the host tier over the reference's
	}
	after := s.Stats()
	hostTier = result("host tier", streams, rb, median(hostSecs))
	hostTier.DiskReads = (after.IO.Reads - before.IO.Reads) / uint64(rounds)
	hostTier.IOPS = float64(hostTier.DiskReads) / hostTier.Seconds
	hostTier.HostShare = float64(after.Tier(tiers.Host).Hits-before.Tier(tiers.Host).Hits) / float64(int64(rounds)*hostTier.Rows)
	hostTier.Note = fmt.Sprintf("every row cached, %s, median of %d rounds", s.IOBackend(), rounds)
	mem = result("in-memory reference", streams, rb, median(memSecs))
	mem.Note = fmt.Sprintf("plain copy from one []byte holding every row, median of %d rounds", rounds)
	return hostTier, mem, median(ratios), nil
}

// median of xs (not empty); xs is sorted in place.
func median(xs []float64) float64 {
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

// benchRawIO issues one uncoalesced block read per id of the stream, at random block offsets of
// the feature files, through a bare IO stack: the disk's random-read limit at this block size
// and queue depth, with none of the store's work.
func benchRawIO(m *dataset.Manifest, spec *dataset.FeatureSpec, qd, threads int, streams [][][]int64) (benchResult, error) {
	var fds []int
	var blocks []int64
	for _, p := range spec.Files {
		fd, _, err := m.OpenFD(p, unix.O_DIRECT)
		if err != nil {
			return benchResult{}, err
		}
		defer unix.Close(fd)
		fds = append(fds, fd)
		blocks = append(blocks, m.File(p).Bytes/int64(m.BlockSize))
	}
	bs := m.BlockSize
	var reads, total uint64
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(streams))
	start := time.Now()
	for t, batches := range streams {
		wg.Go(func() {
			st, err := gpuio.Open(fds, gpuio.Options{BlockSize: bs, QueueDepth: qd, NoCoalesce: true})
			if err != nil {
				errs[t] = err
				return
			}
			defer st.Close()
			rng := rand.New(rand.NewPCG(uint64(t), 99))
			buf := make([]byte, bs)
			for _, ids := range batches {
				reqs := make([]gpuio.Request, len(ids))
				for i := range reqs {
					f := rng.IntN(len(fds))
					reqs[i] = gpuio.Request{File: f, Offset: rng.Int64N(max(1, blocks[f])) * int64(bs), Length: bs, Dst: buf}
				}
				if err := st.Submit(reqs); err != nil {
					errs[t] = err
					return
				}
				if err := st.Complete(); err != nil {
					errs[t] = err
					return
				}
			}
			mu.Lock()
			reads += st.Stats().Reads
			total += uint64(st.Stats().Requests)
			mu.Unlock()
		})
	}
	wg.Wait()
	took := time.Since(start).Seconds()
	for _, err := range errs {
		if err != nil {
			return benchResult{}, err
		}
	}
	return benchResult{Name: "raw io_uring", Rows: int64(total), Seconds: took, RowsPerS: float64(total) / took,
		GBPerS: float64(reads) * float64(bs) / took / 1e9, DiskReads: reads, IOPS: float64(reads) / took,
		Note: fmt.Sprintf("%d-byte random O_DIRECT reads, no coalescing", bs)}, nil
}

func totalMemory() uint64 {
	var info unix.Sysinfo_t
	if unix.Sysinfo(&info) != nil {
		return 0
	}
	return info.Totalram * uint64(info.Unit)
}

func int64sAsBytes(v []int64) []byte {
	out := make([]byte, 8*len(v))
	for i, x := range v {
		for b := range 8 {
			out[8*i+b] = byte(uint64(x) >> (8 * b))
		}
	}
	return out
}
