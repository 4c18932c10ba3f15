package advise

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/tiers/host"
)

// MeasureOptions configure MeasureWorkload.
type MeasureOptions struct {
	Fanouts   []int  // neighbors per hop (required)
	BatchSize int    // seeds per batch (required)
	Batches   int    // batches to run; 0: DefaultBatches
	Seed      uint64 // drives the seed order and the sampler
	// Seeds is the pool batches draw from (shuffled, then cut into batches as the loader does);
	// nil takes the dataset's "train" split, or every node when it has none.
	Seeds   []int64
	Replace bool
}

// DefaultBatches is the number of batches MeasureWorkload runs when MeasureOptions leaves it 0.
const DefaultBatches = 20

// MeasureWorkload runs the real sampler and gather of s for opt.Batches batches, one after the
// other as the CPU loader does, and averages what each tier served (from the store's Stats
// deltas around each gather), the disk reads the gathers issued, and the time sampling and
// gathering took. The per-tier counts depend on the store's caches as they are.
func MeasureWorkload(s *featurestore.Store, opt MeasureOptions) (Workload, error) {
	if len(opt.Fanouts) == 0 {
		return Workload{}, errors.New("advise: no fanouts; give one per hop, e.g. 10,5")
	}
	if opt.BatchSize <= 0 {
		return Workload{}, fmt.Errorf("advise: batch size = %d; want a positive number of seeds", opt.BatchSize)
	}
	if opt.Batches < 0 {
		return Workload{}, fmt.Errorf("advise: batches = %d is negative", opt.Batches)
	}
	if opt.Batches == 0 {
		opt.Batches = DefaultBatches
	}
	if s.Graph() == nil {
		return Workload{}, fmt.Errorf("advise: dataset %s has no topology to sample", s.Manifest().Dir())
	}
	pool := opt.Seeds
	if pool == nil {
		if _, ok := s.Manifest().Nodes().Splits["train"]; ok {
			var err error
			if pool, err = s.Session().Split(s.NodeType(), "train"); err != nil {
				return Workload{}, err
			}
		} else {
			pool = make([]int64, s.NumNodes())
			for i := range pool {
				pool[i] = int64(i)
			}
		}
	}
	if len(pool) == 0 {
		return Workload{}, errors.New("advise: no seed nodes to draw batches from")
	}
	batches := Batches(pool, opt.BatchSize, opt.Batches, opt.Seed)
	rb := s.RowBytes()
	w := Workload{BatchSize: opt.BatchSize, Fanouts: opt.Fanouts, Batches: len(batches), RowBytes: rb, BlockSize: s.Manifest().BlockSize}
	tierRows, tierBytes := map[string]float64{}, map[string]float64{}
	var order []string
	gatherer := &batchGatherer{s: s}
	defer gatherer.close()
	var sampleT, gatherT time.Duration
	var seeds int
	sp, err := s.Session().NewSampler(featurestore.SampleOptions{Fanouts: map[string][]int{"": opt.Fanouts}, Replace: opt.Replace, Seed: opt.Seed})
	if err != nil {
		return Workload{}, err
	}
	for _, batch := range batches {
		t0 := time.Now()
		typed, err := sp.Sample("", batch) // batch b draws with seed Seed + b
		if err != nil {
			return Workload{}, err
		}
		smp, _ := typed.OneType()
		sampleT += time.Since(t0)
		before := s.Stats()
		t1 := time.Now()
		if err := gatherer.gather(smp.Nodes); err != nil {
			return Workload{}, err
		}
		gatherT += time.Since(t1)
		after := s.Stats()
		seeds += len(batch)
		w.Rows += float64(len(smp.Nodes))
		w.SSDReads += float64(after.IO.Reads - before.IO.Reads)
		w.SSDBytes += float64(after.IO.BytesRead - before.IO.BytesRead)
		for _, t := range after.Tiers {
			var prev featurestore.TierStats
			for _, p := range before.Tiers {
				if p.Tier == t.Tier {
					prev = p
				}
			}
			name := string(t.Tier)
			if _, ok := tierRows[name]; !ok {
				order = append(order, name)
			}
			tierRows[name] += float64(t.Hits - prev.Hits)
			tierBytes[name] += float64(t.BytesServed - prev.BytesServed)
		}
	}
	for _, t := range s.Stats().Tiers {
		switch t.Tier {
		case "host":
			w.HostCache = t.BytesHeld
		case "gpu":
			w.GPUCache = t.BytesHeld
		}
	}
	n := float64(len(batches))
	w.Rows /= n
	w.SSDReads /= n
	w.SSDBytes /= n
	w.SSDBlocks = w.SSDBytes / float64(w.BlockSize)
	for _, name := range order {
		w.Tiers = append(w.Tiers, TierLoad{Tier: name, Rows: tierRows[name] / n, Bytes: tierBytes[name] / n})
	}
	w.Sample = sampleT.Seconds() / n
	w.Gather = gatherT.Seconds() / n
	w.Measured = float64(seeds) / (sampleT + gatherT).Seconds()
	return w, nil
}

// Batches shuffles pool by seed (a permutation, as tierfs.Loader does each epoch) and cuts it
// into count batches of size seeds, starting over with a new permutation when it runs out.
func Batches(pool []int64, size, count int, seed uint64) [][]int64 {
	rng := rand.New(rand.NewPCG(seed, 0x61647669))
	perm := make([]int64, 0, len(pool))
	var out [][]int64
	for len(out) < count {
		batch := make([]int64, 0, size)
		for len(batch) < size {
			if len(perm) == 0 {
				perm = append(perm[:0], pool...)
				rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			}
			k := min(size-len(batch), len(perm))
			batch = append(batch, perm[:k]...)
			perm = perm[k:]
		}
		out = append(out, batch)
	}
	return out
}

// Probe is what a short probe of this machine measured.
type Probe struct {
	Backend    string  `json:"io_backend"`
	Devices    int     `json:"devices"`     // distinct devices the feature files sit on
	BlockSize  int     `json:"block_size"`  // bytes per random read
	QueueDepth int     `json:"queue_depth"` // reads in flight
	Reads      uint64  `json:"reads"`       // random reads done
	Seconds    float64 `json:"seconds"`     // time they took
	IOPS       float64 `json:"iops"`        // all devices together (median of 5 windows)
	// MergedReadsPS is the reads/s of random 8-block reads; BlockCost (k) the cost of each
	// block past the first, in single-block reads: (IOPS/MergedReadsPS - 1) / 7, in [0.01, 1].
	MergedReadsPS float64  `json:"merged_reads_per_s,omitempty"`
	BlockCost     float64  `json:"block_cost,omitempty"`
	AlphaSeconds  float64  `json:"alpha_seconds"`    // mean latency of one read at queue depth 1
	CopyBytesPS   float64  `json:"copy_bytes_per_s"` // host copy of random rows into a batch buffer
	CopyRowBytes  int64    `json:"copy_row_bytes"`
	CopyWorkers   int      `json:"copy_workers"`
	PCIeProbed    bool     `json:"pcie_probed"`
	Notes         []string `json:"notes,omitempty"`
}

// ProbeSSD measures random-read IOPS of the feature files of spec through a bare IO stack
// (gpuio, O_DIRECT, BlockSize reads at random block offsets, no coalescing, qd in flight) for
// about dur (the median of 5 windows), and the mean latency of one read at queue depth 1 (the model's alpha).
func ProbeSSD(m *dataset.Manifest, spec *dataset.FeatureSpec, qd int, dur time.Duration) (*Probe, error) {
	if qd <= 0 {
		qd = 64
	}
	bs := m.BlockSize
	p := &Probe{BlockSize: bs, QueueDepth: qd}
	var fds []int
	var blocks []int64
	devs := map[uint64]bool{}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, f := range spec.Files {
		path := m.Path(f)
		fd, _, err := m.OpenFD(f, unix.O_DIRECT)
		if errors.Is(err, unix.EINVAL) {
			fd, _, err = m.OpenFD(f, 0)
			p.Notes = append(p.Notes, path+": no O_DIRECT on this file system; reads go through the page cache and the IOPS are not the disk's")
		}
		if err != nil {
			return nil, fmt.Errorf("advise: probe: open %s: %w", path, err)
		}
		fds = append(fds, fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return nil, fmt.Errorf("advise: probe: stat %s: %w", path, err)
		}
		devs[st.Dev] = true
		blocks = append(blocks, max(1, st.Size/int64(bs)))
	}
	p.Devices = len(devs)
	st, err := gpuio.Open(fds, gpuio.Options{BlockSize: bs, QueueDepth: qd, NoCoalesce: true})
	if err != nil {
		return nil, fmt.Errorf("advise: probe: %w", err)
	}
	defer st.Close()
	p.Backend = string(st.Backend())
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	buf := make([]byte, bs)
	random := func(n int) []gpuio.Request {
		reqs := make([]gpuio.Request, n)
		for i := range reqs {
			f := rng.IntN(len(fds))
			reqs[i] = gpuio.Request{File: f, Offset: rng.Int64N(blocks[f]) * int64(bs), Length: bs, Dst: buf}
		}
		return reqs
	}
	run := func(reqs []gpuio.Request) error {
		if err := st.Submit(reqs); err != nil {
			st.Complete()
			return fmt.Errorf("advise: probe: %w", err)
		}
		if err := st.Complete(); err != nil {
			return fmt.Errorf("advise: probe: %w", err)
		}
		return nil
	}
	// alpha: one read at a time.
	const latencyReads = 200
	start := time.Now()
	for range latencyReads {
		if err := run(random(1)); err != nil {
			return nil, err
		}
	}
	p.AlphaSeconds = time.Since(start).Seconds() / latencyReads
	// IOPS: batches of 8*qd reads keep the queue full but for each batch's tail. The median of
	// probeWindows windows resists a neighbour's burst on a shared machine.
	var rates []float64
	window := dur / probeWindows
	for range probeWindows {
		before := st.Stats().Reads
		start := time.Now()
		for time.Since(start) < window {
			if err := run(random(8 * qd)); err != nil {
				return nil, err
			}
		}
		took := time.Since(start).Seconds()
		p.Seconds += took
		rates = append(rates, float64(st.Stats().Reads-before)/took)
	}
	p.IOPS = Median(rates)
	// k: the cost of a merged read's extra blocks, from reads of mergedBlocks blocks.
	if mb := mergedBlocks * bs; mb <= 128<<10 {
		big := make([]byte, mb)
		var bigRates []float64
		for range 2 {
			before := st.Stats().Reads
			start := time.Now()
			for time.Since(start) < window {
				reqs := random(4 * qd)
				for i := range reqs {
					f := reqs[i].File
					reqs[i].Offset = rng.Int64N(max(1, blocks[f]/mergedBlocks)) * int64(mb)
					reqs[i].Length, reqs[i].Dst = mb, big
				}
				if err := run(reqs); err != nil {
					return nil, err
				}
			}
			took := time.Since(start).Seconds()
			p.Seconds += took
			bigRates = append(bigRates, float64(st.Stats().Reads-before)/took)
		}
		p.MergedReadsPS = max(bigRates[0], bigRates[1])
		p.BlockCost = min(1, max(0.01, (p.IOPS/p.MergedReadsPS-1)/(mergedBlocks-1)))
	}
	p.Reads = st.Stats().Reads - latencyReads
	return p, nil
}

// mergedBlocks is the size in blocks of the long reads that measure a merged read's cost.
const mergedBlocks = 8

// probeWindows is the number of windows a probe's time is cut into; it reports their median.
const probeWindows = 5

// Median is the median of v (0 for none); v is left as it is.
func Median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ProbeHostCopy measures the bytes/s of the host tier's gather path on this machine: a host tier
// of about 128 MiB of rows of rowBytes (larger than caches, like a real one) is filled with
// bytes, then batches of 8192 random ids held there are looked up and their rows copied into a
// batch buffer, with workers goroutines for batches of 1 MiB or more, as Store.Gather copies
// host-tier hits, for about dur (the median of 5 windows). Without a GPU this is the model's link throughput: every row
// of a batch, from host tier or disk staging, crosses host memory this way. It makes the host
// tier itself (tiers/host), not a Store: it measures that tier's lookup and row copies on
// synthetic rows, before any dataset is opened, and nothing else a store's gather would add.
func ProbeHostCopy(rowBytes int64, workers int, dur time.Duration) (float64, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	rowBytes = max(rowBytes, 1)
	rows := max(1, (128<<20)/rowBytes)
	ids := make([]int64, rows)
	for i := range ids {
		ids[i] = int64(i)
	}
	c := host.New(rowBytes)
	defer c.Close()
	if err := c.Fill(ids, func(_ []int64, arena []byte) error {
		for i := range arena { // real pages, not the shared zero page
			arena[i] = byte(i)
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("advise: probe: %w", err)
	}
	const batchRows = 8192
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	dst := make([]byte, batchRows*rowBytes)
	batch := make([]int64, batchRows)
	var rates []float64
	for range probeWindows {
		var total int64
		start := time.Now()
		for time.Since(start) < dur/probeWindows {
			for i := range batch {
				batch[i] = rng.Int64N(rows)
			}
			slots := make([]int64, len(batch))
			c.Lookup(batch, slots)
			copyRange := func(lo, hi int) {
				for i := lo; i < hi; i++ {
					if slot := slots[i]; slot >= 0 {
						copy(dst[int64(i)*rowBytes:int64(i+1)*rowBytes], c.Row(slot))
					}
				}
			}
			if batchRows*rowBytes < 1<<20 || workers < 2 {
				copyRange(0, batchRows)
			} else {
				var wg sync.WaitGroup
				chunk := (batchRows + workers - 1) / workers
				for lo := 0; lo < batchRows; lo += chunk {
					wg.Go(func() { copyRange(lo, min(lo+chunk, batchRows)) })
				}
				wg.Wait()
			}
			total += batchRows * rowBytes
		}
		rates = append(rates, float64(total)/time.Since(start).Seconds())
	}
	return Median(rates), nil
}

// batchGatherer gathers as a training loop would: into device memory when the store's GPU path
// runs with a GPU tier (its rows then cross no link), else into host memory; buffers are reused.
type batchGatherer struct {
	s      *featurestore.Store
	host   []byte
	dev    uintptr
	devLen uint64
}

func (g *batchGatherer) gather(ids []int64) error {
	need := int64(len(ids)) * g.s.RowBytes()
	if ok, _ := g.s.GPUAvailable(); !ok || g.s.Stats().Tier(tiers.GPU).RowsHeld == 0 {
		if int64(cap(g.host)) < need {
			g.host = make([]byte, need)
		}
		return g.s.Gather(ids, g.host[:need])
	}
	dev := g.s.GPUDevice()
	if uint64(need) > g.devLen || g.dev == 0 {
		g.close()
		var err error
		if g.dev, err = cuda.Malloc(dev, uint64(max(need, 16))); err != nil {
			return err
		}
		g.devLen = uint64(max(need, 16))
	}
	if err := g.s.GatherDevice(ids, g.dev, 0); err != nil {
		return err
	}
	return cuda.SyncStream(dev, 0)
}

func (g *batchGatherer) close() {
	if g.dev != 0 {
		cuda.Free(g.s.GPUDevice(), g.dev)
		g.dev, g.devLen = 0, 0
	}
}
