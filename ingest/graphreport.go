package ingest

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/topology"
)

// ReportOptions configures ReportGraph. Zero values take the defaults noted.
type ReportOptions struct {
	// Fanouts lists the sampling configurations to measure (default [25,10] and [15,10,5]).
	Fanouts [][]int
	// BatchSize is the number of seeds per batch (default 1024).
	BatchSize int
	// Batches is the number of batches measured per configuration (default 8).
	Batches int
	// Seed drives the seed shuffle and the sampler.
	Seed uint64
	// CommunitySize is the block of ids whose intra-block edge fraction is reported; 0 takes the
	// community-size the dataset was synthesized with, if any.
	CommunitySize int64
}

// GraphReport is what ReportGraph measures on a dataset's topology. Degrees are in-degrees, the
// neighbor lists the sampler draws from.
type GraphReport struct {
	Nodes, Edges                    int64
	MaxDegree, P50Degree, P99Degree int64
	// Exponent is the power-law exponent gamma fitted to the degrees >= ExponentMin by maximum
	// likelihood (Clauset, Shalizi, Newman 2009, discrete approximation), ExponentMin chosen
	// to minimize the Kolmogorov-Smirnov distance; ExponentTail is the fraction of nodes in the
	// fit. 0 when too few nodes have an edge.
	Exponent     float64
	ExponentMin  int64
	ExponentTail float64
	// CommunitySize and Intra: the fraction of edges whose endpoints share a block of
	// CommunitySize ids (0 when no size is known).
	CommunitySize int64
	Intra         float64
	// Seeds names where the batch seeds came from ("train split" or "all nodes").
	Seeds   string
	Batches []BatchReport
}

// BatchReport is the neighborhood size of sampled batches under one fanout configuration.
type BatchReport struct {
	Fanouts   []int
	BatchSize int
	Batches   int
	// Distinct is the mean number of distinct nodes per batch (seeds included); Min and Max
	// over the batches.
	Distinct, Min, Max float64
	// PerHop is the mean number of nodes first reached per hop (seeds first).
	PerHop []float64
}

// ReportGraph reads dir's topology into memory and measures its degree distribution and the
// distinct nodes that uniform neighbor sampling (without replacement, as topology.SampleNeighbors)
// touches per batch, seeds drawn without repetition from a shuffle of the train split (all nodes
// when there is none). Memory: the CSC plus the samples.
func ReportGraph(dir string, opt ReportOptions) (*GraphReport, error) {
	if opt.Fanouts == nil {
		opt.Fanouts = [][]int{{25, 10}, {15, 10, 5}}
	}
	if opt.BatchSize == 0 {
		opt.BatchSize = 1024
	}
	if opt.Batches == 0 {
		opt.Batches = 8
	}
	if opt.BatchSize < 0 || opt.Batches < 0 || opt.CommunitySize < 0 {
		return nil, fmt.Errorf("ingest: report: batch size %d, batches %d, community size %d: want positive values", opt.BatchSize, opt.Batches, opt.CommunitySize)
	}
	m, err := dataset.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("ingest: report: %w", err)
	}
	et := m.Edges()
	if et == nil {
		return nil, fmt.Errorf("ingest: report: dataset %s has no topology", dir)
	}
	n := m.Nodes().Count
	indptr := make([]int64, n+1)
	if err := readArray(m.Path(et.Indptr.File), dataset.BytesOf(indptr)); err != nil {
		return nil, err
	}
	var g *topology.CSC
	var idx32 []int32
	var idx64 []int64
	if et.Indices.DType == dataset.Int32 {
		idx32 = make([]int32, et.Count)
		err = readArray(m.Path(et.Indices.File), dataset.BytesOf(idx32))
	} else {
		idx64 = make([]int64, et.Count)
		err = readArray(m.Path(et.Indices.File), dataset.BytesOf(idx64))
	}
	if err == nil {
		g, err = topology.NewCSC(indptr, idx32, idx64)
	}
	if err != nil {
		return nil, fmt.Errorf("ingest: report: topology of %s: %w", dir, err)
	}

	r := &GraphReport{Nodes: n, Edges: et.Count}
	r.degreeStats(indptr)
	r.CommunitySize = opt.CommunitySize
	if r.CommunitySize == 0 && m.Created.By == "tierfs synth" {
		for _, a := range m.Created.Args {
			if v, ok := strings.CutPrefix(a, "community-size="); ok {
				r.CommunitySize, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	if r.CommunitySize > 0 && et.Count > 0 {
		var intra int64
		for v := range n {
			for i := indptr[v]; i < indptr[v+1]; i++ {
				u := int64(0)
				if idx32 != nil {
					u = int64(idx32[i])
				} else {
					u = idx64[i]
				}
				if u/r.CommunitySize == v/r.CommunitySize {
					intra++
				}
			}
		}
		r.Intra = float64(intra) / float64(et.Count)
	}

	seeds, err := reportSeeds(m, opt.Seed)
	if err != nil {
		return nil, err
	}
	r.Seeds = "all nodes"
	if seeds != nil {
		r.Seeds = "train split"
	} else {
		seeds = make([]int64, n)
		for v := range seeds {
			seeds[v] = int64(v)
		}
		shuffle(seeds, opt.Seed)
	}
	for _, fanouts := range opt.Fanouts {
		b := BatchReport{Fanouts: fanouts, BatchSize: opt.BatchSize, PerHop: make([]float64, len(fanouts)+1), Min: math.Inf(1)}
		for i := 0; i < opt.Batches && len(seeds) > 0; i++ {
			lo := (i * opt.BatchSize) % len(seeds)
			batch := seeds[lo:min(lo+opt.BatchSize, len(seeds))]
			s, err := topology.SampleNeighbors(g, batch, topology.SampleOptions{Fanouts: fanouts, Seed: opt.Seed + uint64(i)})
			if err != nil {
				return nil, fmt.Errorf("ingest: report: %w", err)
			}
			d := float64(len(s.Nodes))
			b.Distinct += d
			b.Min, b.Max = min(b.Min, d), max(b.Max, d)
			for h, c := range s.NodesPerHop {
				b.PerHop[h] += float64(c)
			}
			b.Batches++
		}
		if b.Batches > 0 {
			b.Distinct /= float64(b.Batches)
			for h := range b.PerHop {
				b.PerHop[h] /= float64(b.Batches)
			}
		}
		r.Batches = append(r.Batches, b)
	}
	return r, nil
}

// reportSeeds is the train split shuffled, or nil when the dataset has none.
func reportSeeds(m *dataset.Manifest, seed uint64) ([]int64, error) {
	s, ok := m.Nodes().Splits["train"]
	if !ok || s.Count == 0 {
		return nil, nil
	}
	ids := make([]int64, s.Count)
	if err := readArray(m.Path(s.File), dataset.BytesOf(ids)); err != nil {
		return nil, err
	}
	shuffle(ids, seed)
	return ids, nil
}

// shuffle permutes ids by Fisher-Yates from a counter-based stream.
func shuffle(ids []int64, seed uint64) {
	rng := newCounterRNG(seed, streamSplits, math.MaxUint64)
	for i := len(ids) - 1; i > 0; i-- {
		j := int(rng.next() % uint64(i+1))
		ids[i], ids[j] = ids[j], ids[i]
	}
}

// readArray fills dst from the start of the little-endian array file path.
func readArray(path string, dst []byte) error {
	f, err := openInput(path)
	if err != nil {
		return fmt.Errorf("ingest: report: %w", err)
	}
	defer f.Close()
	if _, err := io.ReadFull(f, dst); err != nil {
		return fmt.Errorf("ingest: report: read %s: %w", path, err)
	}
	return nil
}

// degreeStats fills the degree summary and the power-law fit from indptr.
func (r *GraphReport) degreeStats(indptr []int64) {
	n := int64(len(indptr) - 1)
	if n == 0 {
		return
	}
	deg := make([]int64, n)
	for v := range deg {
		deg[v] = indptr[v+1] - indptr[v]
	}
	slices.Sort(deg)
	r.MaxDegree, r.P50Degree, r.P99Degree = deg[n-1], deg[n/2], deg[min(n-1, n*99/100)]
	r.Exponent, r.ExponentMin, r.ExponentTail = fitPowerLaw(deg, r.P99Degree)
}

// fitPowerLaw fits P(k) ~ k^-gamma to the sorted degrees: for each candidate k_min (a distinct
// degree >= 1, at most maxMin, with at least 50 nodes at or above it) gamma is the discrete
// maximum-likelihood approximation 1 + n / sum ln(k / (k_min - 1/2)), and the k_min whose fit has
// the smallest Kolmogorov-Smirnov distance to the empirical tail wins. It returns gamma, k_min and
// the fraction of nodes in the tail; zeros when no candidate qualifies.
func fitPowerLaw(sorted []int64, maxMin int64) (gamma float64, kMin int64, tail float64) {
	const minTail = 50
	var vals []int64
	var counts []float64
	for i := 0; i < len(sorted); {
		j := i
		for j < len(sorted) && sorted[j] == sorted[i] {
			j++
		}
		if sorted[i] >= 1 {
			vals, counts = append(vals, sorted[i]), append(counts, float64(j-i))
		}
		i = j
	}
	// Suffix sums of counts and of count * ln(k).
	k := len(vals)
	cnt, lns := make([]float64, k+1), make([]float64, k+1)
	for i := k - 1; i >= 0; i-- {
		cnt[i] = cnt[i+1] + counts[i]
		lns[i] = lns[i+1] + counts[i]*math.Log(float64(vals[i]))
	}
	best := math.Inf(1)
	for i := 0; i < k && vals[i] <= max(maxMin, 1) && cnt[i] >= minTail; i++ {
		nt := cnt[i]
		shift := math.Log(float64(vals[i]) - 0.5)
		denom := lns[i] - nt*shift
		if denom <= 0 {
			continue
		}
		g := 1 + nt/denom
		var d float64
		for j := i; j < k; j++ {
			model := math.Exp((1 - g) * (math.Log(float64(vals[j])-0.5) - shift)) // P(X >= vals[j])
			d = max(d, math.Abs(cnt[j]/nt-model))
		}
		if d < best {
			best, gamma, kMin, tail = d, g, vals[i], nt/float64(len(sorted))
		}
	}
	return gamma, kMin, tail
}

// Write prints the report as a few aligned lines.
func (r *GraphReport) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "graph         %d nodes, %d edges (average in-degree %.2f)\n", r.Nodes, r.Edges, float64(r.Edges)/float64(max(1, r.Nodes)))
	fmt.Fprintf(&b, "in-degree     max %d, p50 %d, p99 %d; power-law fit gamma %.2f over degrees >= %d (%.1f%% of nodes)\n",
		r.MaxDegree, r.P50Degree, r.P99Degree, r.Exponent, r.ExponentMin, 100*r.ExponentTail)
	if r.CommunitySize > 0 {
		fmt.Fprintf(&b, "locality      %.3f of edges inside blocks of %d ids\n", r.Intra, r.CommunitySize)
	}
	for _, s := range r.Batches {
		hops := make([]string, len(s.PerHop))
		for i, h := range s.PerHop {
			hops[i] = strconv.FormatFloat(h, 'f', 0, 64)
		}
		fanouts := make([]string, len(s.Fanouts))
		for i, f := range s.Fanouts {
			fanouts[i] = strconv.Itoa(f)
		}
		fmt.Fprintf(&b, "sample        fanouts [%s] batch %d (seeds: %s): %.0f distinct nodes per batch (min %.0f, max %.0f over %d batches; per hop %s)\n",
			strings.Join(fanouts, ","), s.BatchSize, r.Seeds, s.Distinct, s.Min, s.Max, s.Batches, strings.Join(hops, " + "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
