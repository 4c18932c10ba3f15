package cli

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/advise"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/tiers/ssd"
)

// fillBenchResult is `tierfs bench fill`'s report.
type fillBenchResult struct {
	Rows       int64   `json:"rows"`        // rows the memory tiers hold after a fill
	RowBytes   int64   `json:"row_bytes"`   // bytes a row
	BlocksUsed float64 `json:"blocks_used"` // share of the feature file's blocks holding a placed row
	// PlaceSeconds: Place of the hotness (ranking the rows, then filling the tiers: a plan's
	// fill_seconds); RankSeconds: the ranking alone (HottestIDs); per round.
	PlaceSeconds []float64 `json:"place_seconds"`
	RankSeconds  []float64 `json:"rank_seconds"`
	// SequentialSeconds: one sequential O_DIRECT pass over the feature file (128 KiB reads, QD
	// 128, unverified) before each round: the bound a dense fill approaches.
	SequentialSeconds []float64 `json:"sequential_seconds"`
	FileBytes         int64     `json:"file_bytes"`
	// Medians: the fill (place less rank), its placed bytes a second, the sequential pass's bytes
	// a second, and fill seconds over sequential seconds.
	FillSeconds        float64       `json:"median_fill_seconds"`
	FillMBPerS         float64       `json:"median_fill_mb_per_s"`
	SequentialMBPerS   float64       `json:"median_sequential_mb_per_s"`
	FillOverSequential float64       `json:"fill_over_sequential"`
	Fill               ssd.FillStats `json:"fill"` // every fill's, the store's opening one included
}

// benchFillCmd is `tierfs bench fill DIR`: Place of a seeded uniform random hotness (so the
// tiers take a random set of rows, as dense as their capacity) timed over rounds, with the
// ranking alone, each round after a sequential pass over the feature file, the bound a dense
// fill approaches.
func benchFillCmd(fs *pflag.FlagSet) runFunc {
	opened := storeFlags(fs)
	rounds := fs.Int("rounds", 3, "fills to time")
	seed := fs.Uint64("seed", 1, "seed of the hotness")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the rounds to this file")
	asJSON := fs.String("json", "", "also write the report as JSON to this file")
	return func(pos []string) error {
		if *rounds < 1 {
			return fmt.Errorf("--rounds %d: want at least 1", *rounds)
		}
		s, err := openStore(pos[0], *opened)
		if err != nil {
			return err
		}
		defer s.Close()
		spec := s.Feature()
		if len(spec.Files) != 1 {
			return fmt.Errorf("bench fill: feature %s has %d stripes; the sequential pass reads one file", spec.Name, len(spec.Files))
		}
		rng := rand.New(rand.NewPCG(*seed, 0))
		hot := make([]uint32, s.NumNodes())
		for i := range hot {
			hot[i] = rng.Uint32()
		}
		r := fillBenchResult{RowBytes: spec.RowBytes}
		var capacity int64
		for _, t := range s.Stats().Tiers {
			if t.Tier != tiers.SSD {
				capacity += t.Capacity
			}
		}
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
		var ranked []int64
		for round := range *rounds {
			seq, n, err := sequentialPass(s.Manifest().Path(spec.Files[0]))
			if err != nil {
				return err
			}
			start := time.Now()
			if ranked, err = s.HottestIDs(hot, capacity); err != nil {
				return err
			}
			rank := time.Since(start).Seconds()
			start = time.Now()
			if err := s.Place(hot); err != nil {
				return err
			}
			place := time.Since(start).Seconds()
			r.PlaceSeconds, r.RankSeconds = append(r.PlaceSeconds, place), append(r.RankSeconds, rank)
			r.SequentialSeconds, r.FileBytes = append(r.SequentialSeconds, seq), n
			fmt.Printf("round %d: sequential pass %.2fs (%.0f MB/s), place %.2fs, of it ranking %.2fs\n", round+1, seq, float64(n)/seq/1e6, place, rank)
		}
		st := s.Stats()
		for _, t := range st.Tiers {
			if t.Tier != tiers.SSD {
				r.Rows += t.RowsHeld
			}
		}
		r.Fill = st.Fill
		blocksPerRow := max(1, int64(s.Manifest().BlockSize)/spec.RowBytes)
		used := map[int64]bool{}
		for _, id := range ranked {
			used[id/blocksPerRow] = true
		}
		r.BlocksUsed = float64(len(used)) / float64((s.NumNodes()+blocksPerRow-1)/blocksPerRow)
		seq := advise.Median(r.SequentialSeconds)
		r.FillSeconds = advise.Median(r.PlaceSeconds) - advise.Median(r.RankSeconds)
		r.FillMBPerS, r.SequentialMBPerS = float64(r.Rows*r.RowBytes)/r.FillSeconds/1e6, float64(r.FileBytes)/seq/1e6
		r.FillOverSequential = r.FillSeconds / seq
		fmt.Printf("%d rows of %d B (%.0f%% of the file's blocks): place median %.2fs, ranking %.2fs, fill %.2fs (%.0f MB/s); sequential pass median %.2fs (%.0f MB/s); fill/sequential %.2f\n",
			r.Rows, r.RowBytes, 100*r.BlocksUsed, advise.Median(r.PlaceSeconds), advise.Median(r.RankSeconds), r.FillSeconds, r.FillMBPerS, seq, r.SequentialMBPerS, r.FillOverSequential)
		fmt.Printf("fills: %d scan chunks, %d random chunks, %d reads, %d bytes\n", r.Fill.ScanChunks, r.Fill.RandomChunks, r.Fill.Reads, r.Fill.Bytes)
		return writeJSONResults(*asJSON, r)
	}
}

// sequentialPass reads the file at path once, front to back, with O_DIRECT (through the page
// cache where the file system has none) by 128 KiB reads at queue depth 128, unverified, and
// returns the seconds it took and the bytes read.
func sequentialPass(path string) (float64, int64, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EINVAL) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("sequential pass: open %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, 0, fmt.Errorf("sequential pass: stat %s: %w", path, err)
	}
	stack, err := gpuio.Open([]int{fd}, gpuio.Options{QueueDepth: 128})
	if err != nil {
		return 0, 0, fmt.Errorf("sequential pass: %w", err)
	}
	defer stack.Close()
	// Every read at once, into one buffer reused round-robin: the queue never drains.
	const piece, window = 128 << 10, 16 << 20
	buf := make([]byte, window)
	var reqs []gpuio.Request
	for at := int64(0); at < st.Size; at += piece {
		n := min(piece, st.Size-at)
		dst := at % window
		reqs = append(reqs, gpuio.Request{Offset: at, Length: int(n), Dst: buf[dst : dst+n]})
	}
	start := time.Now()
	if err := stack.Submit(reqs); err != nil {
		stack.Complete()
		return 0, 0, fmt.Errorf("sequential pass of %s: %w", path, err)
	}
	if err := stack.Complete(); err != nil {
		return 0, 0, fmt.Errorf("sequential pass of %s: %w", path, err)
	}
	return time.Since(start).Seconds(), st.Size, nil
}
