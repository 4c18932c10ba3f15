package ingest

import (
	"errors"
	"fmt"
	"github.com/cespare/xxhash/v2"
	"math"
	"math/bits"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/internal/wfs"
)

// SynthOptions describes a synthetic dataset. Zero values take the defaults noted.
type SynthOptions struct {
	Nodes     int64
	AvgDegree float64 // edges = round(Nodes * AvgDegree)
	Dim       int64   // feature dim; 0 for no features
	DType     dataset.DType
	Classes   int // default 16
	Seed      uint64
	Out       string
	Replace   bool // replace what Out holds, as Options.Replace
	// FS is what every file of the dataset is written through (nil: the operating system's;
	// tests pass a wfs.Faulty).
	FS wfs.FS
	// DevicePaths stripes the features as in Options.DevicePaths.
	DevicePaths []string
	// Fractions of nodes in each split (defaults 0.1, 0.05, 0.05); negative means no such split.
	TrainFrac, ValFrac, TestFrac float64
	// DegreeExponent is the exponent gamma of a power-law degree distribution, P(deg = k) ~
	// k^-gamma, in [1.5, 100]: smaller is more skewed (real graphs: about 2 to 3). 0 keeps the
	// R-MAT generator, whose skew is fixed.
	DegreeExponent float64
	// Locality is the fraction of edges, in [0, 1], whose destination is drawn inside the
	// source's community: the block of CommunitySize consecutive ids holding the source.
	Locality float64
	// CommunitySize is the number of ids in a community (default 1024); only used when
	// Locality > 0.
	CommunitySize int64
	Progress      func(stage string, done, total int64)
}

// DefaultCommunitySize is SynthOptions.CommunitySize when Locality is set and it is not.
const DefaultCommunitySize = 1024

// R-MAT quadrant probabilities a, b, c (d = 1-a-b-c = 0.05), as 16-bit thresholds.
const (
	rmatA   = 0.57
	rmatAB  = 0.57 + 0.19
	rmatABC = 0.57 + 0.19 + 0.19
)

// centroidNorm is the length of each class centroid against unit noise per dimension. With
// orthogonal centroids (Dim >= Classes) and 16 classes the Bayes-optimal classifier, which is
// linear, is right about 75% of the time (2 classes: 96%, 40 classes: 63%).
const centroidNorm = 2.5

// Random streams: each kind of draw has its own, and every chunk its own substream.
const (
	streamEdges = iota + 1
	streamFeatures
	streamCentroids
	streamLabels
	streamSplits
	streamPermutation
	streamCommunity
)

// Chunk sizes of the generators (vars so tests can shrink them).
var (
	synthEdgeChunk       int64 = 1 << 18
	synthFeatureChunkMax int64 = 4 << 20 // bytes of rows per chunk
)

// Synth writes a deterministic synthetic dataset to opt.Out: the same options give
// byte-identical data files on the same platform.
//
// Topology: round(Nodes*AvgDegree) directed edges from R-MAT (a, b, c, d = 0.57, 0.19, 0.19,
// 0.05) over 2^ceil(log2 Nodes) ids, rejecting ids >= Nodes and self loops (parallel edges stay),
// with ids then permuted by v -> (v*P + Q) mod Nodes (P coprime to Nodes) so hub nodes are spread
// over the id range. With DegreeExponent gamma set, both endpoints are instead drawn from a
// power law over ranks (Chung-Lu): rank r with weight (r+1)^-1/(gamma-1), so the expected degree
// of rank r falls as (r+1)^-1/(gamma-1) and the degree distribution's tail as k^-gamma; ranks
// are dealt round-robin over the communities (blocks of CommunitySize consecutive ids, default
// 1024), so block b holds ranks b, b+B, b+2B, ... (B blocks), each block's ids rotated by an
// offset of its own. With Locality p, each edge's destination is, with probability p, drawn
// inside the source's block instead: power law: by the same law over the ranks within the
// block, which keeps the exponent (though not the largest hubs: a block's in-edges come from its
// own sources); R-MAT: by R-MAT's column
// bits over the block, rotated by the block's offset (this flattens R-MAT's hubs). Edges are generated in chunks, each from its own counter-based random stream
// seeded by (Seed, chunk), on all cores, and generated again for the second topology pass
// instead of being stored: memory stays at one int64 per node plus buffers.
//
// Labels: node v has class hash(Seed, v) % Classes. Features: the class centroid (a fixed random
// vector per class, orthogonal when Dim >= Classes, of length 2.5) plus approximately Gaussian
// unit noise per dimension, so a linear model on features alone reaches roughly 75% accuracy with
// 16 classes; values are rounded to nearest even for float16/bfloat16, and integer dtypes map
// [-4, 4] onto their range, clamping. Splits: each node falls in train, val or test (or none) by
// hash(Seed, v), so the split sizes are close to, not exactly, the fractions.
func Synth(opt SynthOptions) (*dataset.Manifest, error) {
	if !hostIsLittleEndian {
		return nil, errors.New("ingest: big-endian hosts are not supported")
	}
	if err := opt.setDefaults(); err != nil {
		return nil, err
	}
	numEdges := int64(math.Round(float64(opt.Nodes) * opt.AvgDegree))
	if opt.Nodes < 2 && numEdges > 0 {
		return nil, fmt.Errorf("ingest: synth: %d node(s) cannot have edges without self loops", opt.Nodes)
	}
	if err := opt.checkCapacity(numEdges); err != nil {
		return nil, err
	}
	args := opt.args()
	d := datasetWrite{fs: opt.FS, out: opt.Out, replace: opt.Replace, devicePaths: opt.DevicePaths, progress: opt.Progress, by: "tierfs synth", args: args}
	return writeDataset(d, func(tw *typeWriter, m *dataset.Manifest) error {
		opt.Out = tw.w.Dir // every file goes into the staging directory
		opt.FS = tw.w.FS
		var spec dataset.FeatureSpec
		if opt.Dim > 0 {
			var err error
			if spec, err = newFeatureSpec(tw.w.Dest, "", featureName, featureName, &featureSource{dtype: opt.DType, dim: opt.Dim}, opt.Nodes, opt.DevicePaths, tw.w.Nonce); err != nil {
				return err
			}
			if err := tw.w.Claim(spec.Files); err != nil {
				return fmt.Errorf("ingest: %w", err)
			}
			tw.stripes = append(tw.stripes, spec.Files...)
		}
		topo, err := buildTopology(opt.FS, opt.Out, newRMAT(opt, numEdges), opt.Nodes, topologyOptions{progress: opt.Progress})
		if err != nil {
			return err
		}
		et := topo.et
		m.EdgeTypes = []dataset.EdgeType{et}
		tw.files = append(tw.files, et.Indptr.File, et.Indices.File)
		nt := dataset.NodeType{Name: nodeTypeName, Count: opt.Nodes}
		if opt.Dim > 0 {
			if err := synthFeatures(opt, &spec); err != nil {
				return err
			}
			nt.Features = []dataset.FeatureSpec{spec}
			tw.files = append(tw.files, spec.Files...)
		}
		labels, splits, err := synthLabelsAndSplits(opt)
		if err != nil {
			return err
		}
		nt.Labels, nt.Splits = labels, splits
		tw.files = append(tw.files, labels.File)
		for _, name := range splitNames {
			if s, ok := splits[name]; ok {
				tw.files = append(tw.files, s.File)
			}
		}
		m.NodeTypes = []dataset.NodeType{nt}
		m.DatasetID = synthDatasetID(args) // the same options, the same dataset, byte for byte
		return nil
	})
}

// maxSynthNodes is the most nodes Synth makes.
const maxSynthNodes = 1 << 40

func (opt *SynthOptions) setDefaults() error {
	if opt.Out == "" {
		return errors.New("ingest: synth: no output directory (SynthOptions.Out)")
	}
	if opt.Nodes <= 0 {
		return fmt.Errorf("ingest: synth: Nodes %d must be positive", opt.Nodes)
	}
	if opt.Nodes > maxSynthNodes {
		return fmt.Errorf("ingest: synth: Nodes %d is over the %d (2^40) a synthetic graph may have", opt.Nodes, int64(maxSynthNodes))
	}
	if opt.AvgDegree < 0 || math.IsNaN(opt.AvgDegree) || math.IsInf(opt.AvgDegree, 0) {
		return fmt.Errorf("ingest: synth: AvgDegree %v is out of range: want a finite degree >= 0", opt.AvgDegree)
	}
	if edges := opt.AvgDegree * float64(opt.Nodes); edges > 1<<50 {
		return fmt.Errorf("ingest: synth: AvgDegree %v x %d nodes is %.3g edges, over the 2^50 a synthetic graph may have", opt.AvgDegree, opt.Nodes, edges)
	}
	if opt.Dim < 0 {
		return fmt.Errorf("ingest: synth: Dim %d is negative", opt.Dim)
	}
	if opt.DType == "" {
		opt.DType = dataset.Float32
	}
	if opt.DType.Size() == 0 {
		return fmt.Errorf("ingest: synth: unknown DType %q", opt.DType)
	}
	if opt.Classes == 0 {
		opt.Classes = 16
	}
	if opt.Classes < 1 {
		return fmt.Errorf("ingest: synth: Classes %d must be positive", opt.Classes)
	}
	if opt.Dim > 0 && int64(opt.Classes) > (1<<28)/opt.Dim { // no product that could overflow
		return fmt.Errorf("ingest: synth: %d classes x dim %d centroids do not fit in memory", opt.Classes, opt.Dim)
	}
	for _, f := range []struct {
		p   *float64
		def float64
	}{{&opt.TrainFrac, 0.1}, {&opt.ValFrac, 0.05}, {&opt.TestFrac, 0.05}} {
		if *f.p == 0 {
			*f.p = f.def
		}
	}
	// The tolerance lets fractions that add up to 1 in decimal (a preset's) pass.
	if sum := max(0, opt.TrainFrac) + max(0, opt.ValFrac) + max(0, opt.TestFrac); sum > 1+1e-9 || math.IsNaN(sum) {
		return fmt.Errorf("ingest: synth: split fractions %v + %v + %v exceed 1", opt.TrainFrac, opt.ValFrac, opt.TestFrac)
	}
	if g := opt.DegreeExponent; g != 0 && !(g >= 1.5 && g <= 100) {
		return fmt.Errorf("ingest: synth: degree-exponent %v is out of range: want 0 (R-MAT) or 1.5..100", g)
	}
	if p := opt.Locality; !(p >= 0 && p <= 1) {
		return fmt.Errorf("ingest: synth: locality %v is out of range: want a fraction of edges in [0, 1]", p)
	}
	if opt.CommunitySize < 0 || opt.CommunitySize == 1 {
		return fmt.Errorf("ingest: synth: community-size %d is out of range: want 0 (default %d) or at least 2", opt.CommunitySize, DefaultCommunitySize)
	}
	if opt.Locality > 0 && opt.CommunitySize == 0 {
		opt.CommunitySize = DefaultCommunitySize
	}
	return nil
}

// args records the options in the manifest's Created.Args.
func (opt SynthOptions) args() []string {
	a := []string{
		"nodes=" + strconv.FormatInt(opt.Nodes, 10),
		"avg-degree=" + strconv.FormatFloat(opt.AvgDegree, 'g', -1, 64),
		"dim=" + strconv.FormatInt(opt.Dim, 10),
		"dtype=" + string(opt.DType),
		"classes=" + strconv.Itoa(opt.Classes),
		"seed=" + strconv.FormatUint(opt.Seed, 10),
		"train-frac=" + strconv.FormatFloat(opt.TrainFrac, 'g', -1, 64),
		"val-frac=" + strconv.FormatFloat(opt.ValFrac, 'g', -1, 64),
		"test-frac=" + strconv.FormatFloat(opt.TestFrac, 'g', -1, 64),
	}
	if opt.DegreeExponent != 0 {
		a = append(a, "degree-exponent="+strconv.FormatFloat(opt.DegreeExponent, 'g', -1, 64))
	}
	if opt.Locality != 0 {
		a = append(a, "locality="+strconv.FormatFloat(opt.Locality, 'g', -1, 64),
			"community-size="+strconv.FormatInt(opt.CommunitySize, 10))
	}
	if len(opt.DevicePaths) > 0 {
		a = append(a, "device-paths="+strings.Join(opt.DevicePaths, ","))
	}
	return a
}

// mix64 is the splitmix64 finalizer: a bijective 64-bit hash.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// hash3 hashes (seed, stream, index) to 64 random-looking bits.
func hash3(seed, stream, index uint64) uint64 {
	return mix64(mix64(seed^mix64(stream*0x9e3779b97f4a7c15)) + index*0xd1b54a32d192ed03)
}

// counterRNG is a splitmix64 stream: output i is mix64(start + i*golden), a pure function of
// (seed, stream, chunk, i).
type counterRNG struct{ state uint64 }

func newCounterRNG(seed, stream, chunk uint64) counterRNG {
	return counterRNG{hash3(seed, stream, chunk)}
}

func (r *counterRNG) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	return mix64(r.state)
}

// normal returns an approximately standard normal value: the Irwin-Hall sum of four 16-bit
// uniforms, centred and scaled to unit variance (integer arithmetic, so identical everywhere).
func (r *counterRNG) normal() float32 {
	x := r.next()
	sum := int32(x&0xffff) + int32(x>>16&0xffff) + int32(x>>32&0xffff) + int32(x>>48)
	const scale = 1.7320508075688772 / 65536    // sqrt(12/4) per unit of 2^16
	return float32(float32(sum-131070) * scale) // mean of the sum is 4 * 65535/2
}

// rmat generates the synthetic edge list; it is an edgeSource whose scans regenerate the same
// edges. Despite the name it also draws the power-law (DegreeExponent) graphs.
type rmat struct {
	seed             uint64
	nodes, edges     int64
	scale            int
	permMul, permAdd uint64
	thresholds       [3]uint64
	// Power law (alpha > 0): rank r has weight (r+1)^-alpha, alpha = 1/(gamma-1).
	alpha float64
	top   float64 // (nodes+1)^(1-alpha), or log(nodes+1) when alpha is 1
	// Communities: blocks of community ids, the last one holding rem (0: all full); local is
	// the probability an edge stays in its source's block, as a 53-bit threshold.
	local      uint64
	community  int64
	fullBlocks int64
	rem        int64
	localTop   float64 // powerTop of a full block
}

func newRMAT(opt SynthOptions, edges int64) *rmat {
	seed, nodes := opt.Seed, opt.Nodes
	g := &rmat{seed: seed, nodes: nodes, edges: edges}
	g.scale = bits.Len64(uint64(nodes - 1)) // ceil(log2 nodes)
	for i, p := range []float64{rmatA, rmatAB, rmatABC} {
		g.thresholds[i] = uint64(math.Round(p * 65536))
	}
	if opt.DegreeExponent != 0 {
		g.alpha = 1 / (opt.DegreeExponent - 1)
		g.top = g.powerTop(nodes)
	}
	if opt.Locality > 0 || opt.DegreeExponent != 0 {
		g.local = uint64(math.Round(opt.Locality * (1 << 53)))
		g.community = opt.CommunitySize
		if g.community == 0 {
			g.community = DefaultCommunitySize
		}
		g.community = min(g.community, nodes)
		g.fullBlocks, g.rem = nodes/g.community, nodes%g.community
		g.localTop = g.powerTop(g.community)
	}
	n := uint64(nodes)
	g.permMul, g.permAdd = 1, 0
	if n > 2 {
		h := hash3(seed, streamPermutation, 0)
		g.permMul = 2 + h%(n-2)
		for gcd(g.permMul, n) != 1 {
			g.permMul++
			if g.permMul >= n {
				g.permMul = 1
			}
		}
		g.permAdd = hash3(seed, streamPermutation, 1) % n
	}
	return g
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func (g *rmat) name() string { return "synthetic R-MAT graph" }
func (g *rmat) count() int64 { return g.edges }

// permute is the id bijection v -> (v*permMul + permAdd) mod nodes.
func (g *rmat) permute(v uint64) int64 {
	n := uint64(g.nodes)
	if n <= 1<<32 {
		return int64((v*g.permMul%n + g.permAdd) % n)
	}
	hi, lo := bits.Mul64(v, g.permMul)
	r := bits.Rem64(hi, lo, n)
	return int64((r + g.permAdd) % n)
}

// powerTop is the upper end of the inverse-CDF range for ranks [0, n).
func (g *rmat) powerTop(n int64) float64 {
	if g.alpha == 1 {
		return math.Log(float64(n) + 1)
	}
	return math.Pow(float64(n)+1, 1-g.alpha)
}

// powerRank draws a rank in [0, n) with weight about (r+1)^-alpha: it inverts the CDF of the
// density (x+1)^-alpha on [0, n) and rounds down; top is powerTop(n).
func (g *rmat) powerRank(rng *counterRNG, n int64, top float64) int64 {
	u := float64(rng.next()>>11) / (1 << 53)
	var x float64
	if g.alpha == 1 {
		x = math.Exp(u*top) - 1
	} else {
		x = math.Pow((1-u)+u*top, 1/(1-g.alpha)) - 1
	}
	return min(max(int64(x), 0), n-1)
}

// rmatPair draws one R-MAT cell (s, d) over 2^scale ids, which may be out of range.
func (g *rmat) rmatPair(rng *counterRNG) (s, d uint64) {
	ta, tab, tabc := g.thresholds[0], g.thresholds[1], g.thresholds[2]
	var word uint64
	left := 0
	for range g.scale {
		if left == 0 {
			word, left = rng.next(), 4
		}
		u := word & 0xffff
		word >>= 16
		left--
		s <<= 1
		d <<= 1
		switch {
		case u < ta:
		case u < tab:
			d |= 1
		case u < tabc:
			s |= 1
		default:
			s |= 1
			d |= 1
		}
	}
	return s, d
}

// place is the id of position j (in rank order) of block b: rotated by the block's offset.
func (g *rmat) place(b, j int64) int64 {
	first := b * g.community
	size := min(g.community, g.nodes-first)
	off := int64(hash3(g.seed, streamCommunity, uint64(b)) % uint64(size))
	return first + (j+off)%size
}

// rankID is the id of power-law rank r: ranks are dealt round-robin over the blocks (the
// partial last block only while it has room), so rank b + j*B is position j of block b.
func (g *rmat) rankID(r int64) int64 {
	if g.rem > 0 {
		all := g.fullBlocks + 1
		if r < g.rem*all {
			return g.place(r%all, r/all)
		}
		r -= g.rem * all
		return g.place(r%g.fullBlocks, g.rem+r/g.fullBlocks)
	}
	return g.place(r%g.fullBlocks, r/g.fullBlocks)
}

// source draws an edge's source id.
func (g *rmat) source(rng *counterRNG) int64 {
	if g.alpha > 0 {
		return g.rankID(g.powerRank(rng, g.nodes, g.top))
	}
	for {
		if s, _ := g.rmatPair(rng); s < uint64(g.nodes) {
			return g.permute(s)
		}
	}
}

// inCommunity draws a destination in the block of s by the generator's own law: power-law
// ranks within the block (which follow the global ranks), or R-MAT column bits.
func (g *rmat) inCommunity(rng *counterRNG, s int64) int64 {
	b := s / g.community
	size := min(g.community, g.nodes-b*g.community)
	if g.alpha > 0 {
		top := g.localTop
		if size != g.community {
			top = g.powerTop(size)
		}
		return g.place(b, g.powerRank(rng, size, top))
	}
	for {
		_, d := g.rmatPair(rng)
		if j := int64(d >> (g.scale - bits.Len64(uint64(size-1)))); j < size {
			return g.place(b, j)
		}
	}
}

// fill generates the edges of chunk c.
func (g *rmat) fill(c int64, src, dst []int64) {
	rng := newCounterRNG(g.seed, streamEdges, uint64(c))
	n := uint64(g.nodes)
	for i := range src {
		if g.alpha == 0 && g.local == 0 { // the original R-MAT stream, byte for byte
			for {
				s, d := g.rmatPair(&rng)
				if s < n && d < n && s != d {
					src[i], dst[i] = g.permute(s), g.permute(d)
					break
				}
			}
			continue
		}
		local := g.local > 0 && rng.next()>>11 < g.local
		for {
			var s, d int64
			switch {
			case local:
				s = g.source(&rng)
				d = g.inCommunity(&rng, s)
			case g.alpha > 0:
				s = g.source(&rng)
				d = g.rankID(g.powerRank(&rng, g.nodes, g.top))
			default:
				rs, rd := g.rmatPair(&rng)
				if rs >= n || rd >= n {
					continue
				}
				s, d = g.permute(rs), g.permute(rd)
			}
			if s != d {
				src[i], dst[i] = s, d
				break
			}
		}
	}
}

func (g *rmat) scan(fn func(first int64, src, dst []int64) error) error {
	type chunk struct{ src, dst []int64 }
	chunks := (g.edges + synthEdgeChunk - 1) / synthEdgeChunk
	return orderedParallel(chunks,
		func() *chunk {
			return &chunk{make([]int64, synthEdgeChunk), make([]int64, synthEdgeChunk)}
		},
		func(c int64, b *chunk) {
			n := min(synthEdgeChunk, g.edges-c*synthEdgeChunk)
			b.src, b.dst = b.src[:n], b.dst[:n]
			g.fill(c, b.src, b.dst)
		},
		func(c int64, b *chunk) error {
			return fn(c*synthEdgeChunk, b.src, b.dst)
		})
}

// orderedParallel produces chunks 0..n-1 on all cores and consumes them in order on the calling
// goroutine. Each worker owns a few buffers, so memory stays bounded; a consume error stops
// everything and is returned.
func orderedParallel[B any](n int64, newBuf func() *B, produce func(c int64, b *B), consume func(c int64, b *B) error) error {
	workers := int64(max(1, runtime.GOMAXPROCS(0)))
	workers = max(1, min(workers, n))
	const perWorker = 3
	done := make(chan struct{})
	out := make([]chan *B, workers)
	free := make([]chan *B, workers)
	var wg sync.WaitGroup
	for w := range workers {
		out[w] = make(chan *B, perWorker)
		free[w] = make(chan *B, perWorker)
		for range perWorker {
			free[w] <- newBuf()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := w; c < n; c += workers {
				var b *B
				select {
				case b = <-free[w]:
				case <-done:
					return
				}
				produce(c, b)
				select {
				case out[w] <- b:
				case <-done:
					return
				}
			}
		}()
	}
	var err error
	for c := int64(0); c < n; c++ {
		b := <-out[c%workers]
		err = consume(c, b)
		free[c%workers] <- b
		if err != nil {
			break
		}
	}
	close(done)
	wg.Wait()
	return err
}

// synthClass is the class of node v.
func synthClass(seed uint64, v int64, classes int) int64 {
	return int64(hash3(seed, streamLabels, uint64(v)) % uint64(classes))
}

// synthCentroids returns classes x dim float32 centroids of length centroidNorm: Gram-Schmidt
// orthogonalized random vectors when dim >= classes, plain random directions otherwise.
func synthCentroids(seed uint64, classes int, dim int64) []float32 {
	c64 := make([]float64, int64(classes)*dim)
	for k := range classes {
		rng := newCounterRNG(seed, streamCentroids, uint64(k))
		row := c64[int64(k)*dim : int64(k+1)*dim]
		for j := range row {
			row[j] = float64(rng.normal())
		}
		if dim >= int64(classes) {
			for p := range k {
				prev := c64[int64(p)*dim : int64(p+1)*dim]
				var dot float64
				for j := range row {
					dot += float64(row[j] * prev[j]) // explicit rounding: no fused multiply-add
				}
				for j := range row {
					row[j] -= float64(dot * prev[j])
				}
			}
		}
		var norm float64
		for j := range row {
			norm += float64(row[j] * row[j])
		}
		norm = math.Sqrt(norm)
		for j := range row {
			if norm > 0 {
				row[j] /= norm
			}
		}
	}
	out := make([]float32, len(c64))
	for i, v := range c64 {
		out[i] = float32(v * centroidNorm)
	}
	return out
}

// synthFeatures writes the feature rows: centroid of the node's class plus noise, each chunk of
// rows from its own random stream.
func synthFeatures(opt SynthOptions, spec *dataset.FeatureSpec) error {
	w, err := dataset.NewFeatureWriter(opt.FS, opt.Out, spec)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	centroids := synthCentroids(opt.Seed, opt.Classes, opt.Dim)
	rowBytes := spec.RowBytes
	chunkRows := max(1, synthFeatureChunkMax/rowBytes)
	chunks := (opt.Nodes + chunkRows - 1) / chunkRows
	type chunk struct {
		rows []byte
		vals []float32
	}
	err = orderedParallel(chunks,
		func() *chunk {
			return &chunk{make([]byte, chunkRows*rowBytes), make([]float32, opt.Dim)}
		},
		func(c int64, b *chunk) {
			first := c * chunkRows
			n := min(chunkRows, opt.Nodes-first)
			rng := newCounterRNG(opt.Seed, streamFeatures, uint64(c))
			for i := range n {
				cls := synthClass(opt.Seed, first+i, opt.Classes)
				centroid := centroids[cls*opt.Dim : (cls+1)*opt.Dim]
				for j := range b.vals {
					b.vals[j] = centroid[j] + rng.normal()
				}
				encodeValues(b.rows[i*rowBytes:(i+1)*rowBytes], b.vals, opt.DType)
			}
		},
		func(c int64, b *chunk) error {
			n := min(chunkRows, opt.Nodes-c*chunkRows)
			if err := w.WriteRows(b.rows[:n*rowBytes]); err != nil {
				return fmt.Errorf("ingest: %w", err)
			}
			report(opt.Progress, "features", c*chunkRows+n, opt.Nodes)
			return nil
		})
	if cerr := w.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("ingest: %w", cerr)
	}
	return err
}

// synthLabelsAndSplits writes labels.bin and the split id files in one pass over the nodes.
func synthLabelsAndSplits(opt SynthOptions) (*dataset.LabelSpec, map[string]dataset.IDsSpec, error) {
	labels, err := createInt64s(opt.FS, filepath.Join(opt.Out, labelsFile))
	if err != nil {
		return nil, nil, err
	}
	fracs := []float64{opt.TrainFrac, opt.ValFrac, opt.TestFrac}
	writers := make([]*int64Writer, len(splitNames))
	closeAll := func() error {
		err := labels.close()
		for _, w := range writers {
			if w != nil {
				if cerr := w.close(); err == nil {
					err = cerr
				}
			}
		}
		return err
	}
	var bounds [3]float64 // cumulative upper bounds of train, val, test in [0, 1)
	var acc float64
	for i, name := range splitNames {
		acc += max(0, fracs[i])
		bounds[i] = acc
		if fracs[i] < 0 {
			continue
		}
		if writers[i], err = createInt64s(opt.FS, filepath.Join(opt.Out, name+".ids")); err != nil {
			closeAll()
			return nil, nil, err
		}
	}
	for v := int64(0); v < opt.Nodes && err == nil; v++ {
		err = labels.put(synthClass(opt.Seed, v, opt.Classes))
		u := float64(hash3(opt.Seed, streamSplits, uint64(v))>>11) / (1 << 53)
		for i := range splitNames {
			if u < bounds[i] {
				if writers[i] != nil && err == nil {
					err = writers[i].put(v)
				}
				break
			}
		}
		if v&0xfffff == 0xfffff {
			report(opt.Progress, "labels", v+1, opt.Nodes)
		}
	}
	if cerr := closeAll(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, nil, err
	}
	report(opt.Progress, "labels", opt.Nodes, opt.Nodes)
	splits := map[string]dataset.IDsSpec{}
	for i, name := range splitNames {
		if writers[i] != nil {
			splits[name] = dataset.IDsSpec{ArraySpec: dataset.ArraySpec{File: name + ".ids", DType: dataset.Int64}, Count: writers[i].n}
		}
	}
	return &dataset.LabelSpec{ArraySpec: dataset.ArraySpec{File: labelsFile, DType: dataset.Int64}, NumClasses: int64(opt.Classes)}, splits, nil
}

// checkCapacity refuses a graph whose bookkeeping exceeds the memory available or whose files
// exceed the free space where they go (the output's file system, and each device path's share
// of the features), naming the options, before anything is generated.
func (opt *SynthOptions) checkCapacity(numEdges int64) error {
	if err := checkNodes(opt.Nodes, fmt.Sprintf("synth --nodes %d", opt.Nodes)); err != nil {
		return err
	}
	idx := int64(4)
	if opt.Nodes > math.MaxInt32 {
		idx = 8
	}
	features := opt.Nodes * opt.Dim * int64(opt.DType.Size())
	rest := numEdges*idx + 24*opt.Nodes // indices, indptr, labels and split ids at most
	what := fmt.Sprintf("synth --nodes %d --avg-degree %g --dim %d (%d edges)", opt.Nodes, opt.AvgDegree, opt.Dim, numEdges)
	if len(opt.DevicePaths) == 0 {
		return checkSpace(filepath.Dir(filepath.Clean(opt.Out)), features+rest, what)
	}
	for _, p := range opt.DevicePaths {
		if err := checkSpace(p, features/int64(len(opt.DevicePaths)), what+"'s feature stripes"); err != nil {
			return err
		}
	}
	return checkSpace(filepath.Dir(filepath.Clean(opt.Out)), rest, what)
}

// synthDatasetID is the dataset id of a synthetic graph: the xxhash64 of its options (seed
// included), so that synth is deterministic to the last byte of its checksum sidecars (bound to
// the id, format version 7) while graphs of other options differ.
func synthDatasetID(args []string) string {
	return fmt.Sprintf("%016x", xxhash.Sum64String("tierfs synth\x00"+strings.Join(args, "\x00")))
}
