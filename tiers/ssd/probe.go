package ssd

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/tierfs/tierfs/gpuio"
)

// ProbeOptions configure Probe. Zero values take the defaults named on each field.
type ProbeOptions struct {
	Backend    gpuio.Backend
	QueueDepth int           // reads in flight; default 128
	Align      int           // alignment of every read's offset; default 4096
	Duration   time.Duration // time spent reading at each size; default 300 ms
	Sizes      []int         // read sizes, multiples of Align; default Align (when < 4 KiB), 4, 16, 64, 128 KiB
	MaxGap     int           // largest gap Probe recommends; default 64 KiB (half the largest read)
	Seed       uint64        // of the random offsets
}

// ProbePoint is the random-read throughput at one read size.
type ProbePoint struct {
	Size    int     `json:"size"`
	Reads   uint64  `json:"reads"`
	Seconds float64 `json:"seconds"`
	IOPS    float64 `json:"iops"`
	MBPerS  float64 `json:"mb_per_s"`
}

// DiskProbe is what Probe measured and the gap it recommends.
//
// The model: at the probed queue depth a read of s bytes costs t(s) = ReadCost + s/BytesPerSecond
// of disk time (a least-squares line through 1/IOPS at each size). Bridging a gap of g bytes
// between two rows saves one read and reads g bytes more, so it pays while g < ReadCost ×
// BytesPerSecond: that break-even, rounded down to Align and capped at MaxGap, is Gap. It is 0
// when reads of every size cost the same per byte (no fixed cost to save).
type DiskProbe struct {
	File           string        `json:"file,omitempty"`
	Backend        gpuio.Backend `json:"backend"`
	QueueDepth     int           `json:"queue_depth"`
	Align          int           `json:"align"`
	Points         []ProbePoint  `json:"points"`
	ReadCost       float64       `json:"read_cost_seconds"` // fitted fixed cost of one read
	BytesPerSecond float64       `json:"bytes_per_second"`  // fitted transfer rate (0: size cost nothing measurable)
	Gap            int           `json:"gap"`               // recommended Options.CoalesceGap
}

// Probe measures random-read throughput of the file fd (fileBytes long, normally opened
// O_DIRECT) at each size of opt.Sizes, for opt.Duration each, and recommends a gap.
func Probe(fd int, fileBytes int64, opt ProbeOptions) (*DiskProbe, error) {
	if opt.QueueDepth < 0 || opt.Align < 0 || opt.Duration < 0 || opt.MaxGap < 0 {
		return nil, fmt.Errorf("ssd: probe: negative option (QueueDepth %d, Align %d, Duration %v, MaxGap %d)", opt.QueueDepth, opt.Align, opt.Duration, opt.MaxGap)
	}
	if opt.QueueDepth == 0 {
		opt.QueueDepth = 128
	}
	if opt.Align == 0 {
		opt.Align = 4096
	}
	if opt.Duration == 0 {
		opt.Duration = 300 * time.Millisecond
	}
	if opt.MaxGap == 0 {
		opt.MaxGap = 64 << 10
	}
	if opt.Sizes == nil {
		if opt.Align < 4096 {
			opt.Sizes = append(opt.Sizes, opt.Align)
		}
		opt.Sizes = append(opt.Sizes, 4<<10, 16<<10, 64<<10, 128<<10)
	}
	maxIO := slices.Max(opt.Sizes)
	st, err := gpuio.Open([]int{fd}, gpuio.Options{Backend: opt.Backend, BlockSize: opt.Align, QueueDepth: opt.QueueDepth, MaxIOBytes: maxIO, NoCoalesce: true})
	if err != nil {
		return nil, fmt.Errorf("ssd: probe: %w", err)
	}
	defer st.Close()
	p := &DiskProbe{Backend: st.Backend(), QueueDepth: opt.QueueDepth, Align: opt.Align}
	rng := rand.New(rand.NewPCG(opt.Seed, 0x9e3779b9))
	buf := make([]byte, maxIO)
	for _, size := range opt.Sizes {
		if size <= 0 || size%opt.Align != 0 {
			return nil, fmt.Errorf("ssd: probe: read size %d is not a positive multiple of the alignment %d", size, opt.Align)
		}
		slots := (fileBytes - int64(size)) / int64(opt.Align)
		if slots < 1 {
			continue // the file is too short for reads of this size
		}
		reqs := make([]gpuio.Request, 2*opt.QueueDepth)
		before := st.Stats().Reads
		start := time.Now()
		for time.Since(start) < opt.Duration {
			for i := range reqs {
				reqs[i] = gpuio.Request{Offset: rng.Int64N(slots+1) * int64(opt.Align), Length: size, Dst: buf[:size]}
			}
			if err := st.Submit(reqs); err != nil {
				return nil, fmt.Errorf("ssd: probe: %w", err)
			}
			if err := st.Complete(); err != nil {
				return nil, fmt.Errorf("ssd: probe: %w", err)
			}
		}
		secs := time.Since(start).Seconds()
		reads := st.Stats().Reads - before
		p.Points = append(p.Points, ProbePoint{Size: size, Reads: reads, Seconds: secs,
			IOPS: float64(reads) / secs, MBPerS: float64(reads) * float64(size) / secs / 1e6})
	}
	p.fit(opt.MaxGap)
	return p, nil
}

// fit sets ReadCost, BytesPerSecond and Gap from the points (see DiskProbe).
func (p *DiskProbe) fit(maxGap int) {
	n := float64(len(p.Points))
	if n < 2 {
		return
	}
	var sx, sy, sxx, sxy float64
	for _, pt := range p.Points {
		x, y := float64(pt.Size), 1/pt.IOPS
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return
	}
	slope := (n*sxy - sx*sy) / den
	p.ReadCost = (sy - slope*sx) / n
	switch {
	case p.ReadCost <= 0:
		p.Gap = 0
	case slope <= 0: // bigger reads cost no more: bridge as much as allowed
		p.Gap = maxGap
	default:
		p.BytesPerSecond = 1 / slope
		p.Gap = int(min(float64(maxGap), p.ReadCost*p.BytesPerSecond))
	}
	p.Gap -= p.Gap % p.Align
}
