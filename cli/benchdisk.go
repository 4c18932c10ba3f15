package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/internal/bytesize"
	"github.com/tierfs/tierfs/tiers/ssd"
)

// runBenchDisk is `tierfs bench disk DIR`: the disk probe the store runs for coalesce_gap -1,
// on the dataset's first feature file, printed as a table with the gap it recommends.
func benchDiskCmd(fs *pflag.FlagSet) runFunc {
	feature := fs.String("feature", "", "feature whose first file is read (default: the first)")
	backend := ioBackendFlag(fs)
	qd := fs.Int("qd", 128, "reads in flight")
	align := fs.Int("read-align", -1, "alignment of the reads: -1 the file's direct-IO alignment, else bytes (e.g. 4096)")
	perSize := fs.Duration("time", 300*time.Millisecond, "time spent at each read size")
	seed := fs.Uint64("seed", 1, "seed of the random offsets")
	asJSON := fs.String("json", "", "also write the probe as JSON to this file")
	return func(pos []string) error {
		m, err := dataset.Load(pos[0])
		if err != nil {
			return err
		}
		spec, err := m.Feature(*feature)
		if err != nil {
			return err
		}
		direct := true
		fd, size, err := m.OpenFD(spec.Files[0], unix.O_DIRECT)
		if errors.Is(err, unix.EINVAL) {
			direct = false
			fd, size, err = m.OpenFD(spec.Files[0], 0)
		}
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		a := *align
		if a == -1 {
			a = ssd.MinReadAlign
			if direct {
				a = max(a, ssd.DirectIOAlign(fd, m.BlockSize))
			}
		}
		p, err := ssd.Probe(fd, size, ssd.ProbeOptions{Backend: gpuio.Backend(*backend), QueueDepth: *qd, Align: a, Duration: *perSize, Seed: *seed})
		if err != nil {
			return err
		}
		p.File = m.Path(spec.Files[0])
		how := "O_DIRECT"
		if !direct {
			how = "page cache (no O_DIRECT here: the figures are memory's, not the disk's)"
		}
		fmt.Printf("disk probe of %s (%s): %s, QD %d, %d-byte aligned random reads, %v per size\n\n", p.File, bytesize.Format(size), how, p.QueueDepth, p.Align, *perSize)
		fmt.Printf("%10s %10s %12s %10s %14s\n", "read size", "reads", "IOPS", "MB/s", "µs/read (QD)")
		for _, pt := range p.Points {
			fmt.Printf("%10s %10d %12.0f %10.1f %14.1f\n", bytesize.Format(int64(pt.Size)), pt.Reads, pt.IOPS, pt.MBPerS, 1e6/pt.IOPS)
		}
		fmt.Printf("\nmodel: a read of s bytes costs %.1f µs + s / (%.0f MB/s) of disk time at QD %d\n", 1e6*p.ReadCost, p.BytesPerSecond/1e6, p.QueueDepth)
		fmt.Printf("recommended gap: %d bytes (--coalesce-gap %d; bridging g bytes pays while g < fixed cost x rate)\n", p.Gap, p.Gap)
		return writeJSONResults(*asJSON, map[string]any{"time": time.Now().UTC().Format(time.RFC3339), "probe": p})
	}
}
