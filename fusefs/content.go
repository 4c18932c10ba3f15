package fusefs

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"math/bits"
	"strconv"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/tiers"
)

// errCanceled is returned by computations cut short by Unmount.
var errCanceled = errors.New("fusefs: canceled by unmount")

// statsJSON is stats.json of store s: its Stats as JSON.
func statsJSON(s *featurestore.Store) ([]byte, error) {
	data, err := json.MarshalIndent(s.Stats(), "", "  ")
	return append(data, '\n'), err
}

// placementInfo is placement.json.
type placementInfo struct {
	Nodes       int64   `json:"nodes"`
	RowBytes    int64   `json:"row_bytes"`
	HostRows    int64   `json:"host_rows"`
	HostBytes   int64   `json:"host_bytes"`  // memory the host tier takes, rows and index
	HostRanges  int64   `json:"host_ranges"` // runs of consecutive node ids it holds
	HostShare   float64 `json:"host_share"`  // host_rows / nodes
	BudgetBytes *int64  `json:"budget_bytes"`
	Policy      string  `json:"policy"`
}

func (m *View) placementJSON() ([]byte, error) {
	hostStats := m.store.Stats().Tier(tiers.Host)
	p := placementInfo{
		Nodes: m.store.NumNodes(), RowBytes: m.store.RowBytes(),
		HostRows: hostStats.RowsHeld, HostBytes: hostStats.BytesHeld, Policy: "unknown",
	}
	m.store.TierRanges(tiers.Host, func(first, count int64) bool {
		p.HostRanges++
		return true
	})
	if p.Nodes > 0 {
		p.HostShare = float64(p.HostRows) / float64(p.Nodes)
	}
	if pl := m.opt.Placement; pl != nil {
		p.BudgetBytes, p.Policy = &pl.BudgetBytes, pl.Policy
	}
	data, err := json.MarshalIndent(p, "", "  ")
	return append(data, '\n'), err
}

// tierSummary is tiers/<kind>/summary.txt of store s.
func tierSummary(s *featurestore.Store, kind tiers.Kind) []byte {
	t := s.Stats().Tier(kind) // zero when the store has no such tier
	b := fmt.Appendf(nil, "tier %s\n", kind)
	if kind == tiers.GPU {
		if ok, why := s.GPUAvailable(); !ok {
			b = fmt.Appendf(b, "present no\nnote %s\n", why)
		} else {
			b = append(b, "present yes\n"...)
		}
	} else {
		b = append(b, "present yes\n"...)
	}
	return fmt.Appendf(b, "rows %d\nbytes %d\nnodes %d\nhits %d\nbytes_served %d\n",
		t.RowsHeld, t.BytesHeld, s.NumNodes(), t.Hits, t.BytesServed)
}

// tierRanges yields the runs of node ids tier kind of store s holds.
func tierRanges(s *featurestore.Store, kind tiers.Kind) func(fn func(first, count int64) bool) {
	return func(fn func(first, count int64) bool) { s.TierRanges(kind, fn) }
}

// rangesChunk is the size of the pieces ranges.txt is streamed in.
const rangesChunk = 64 << 10

// rangesText streams "first count" lines of ranges in chunks of about rangesChunk bytes. A chunk
// is valid until the next one is asked for.
func rangesText(ranges func(fn func(first, count int64) bool)) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		buf := make([]byte, 0, rangesChunk+64)
		stopped := false
		ranges(func(first, count int64) bool {
			buf = strconv.AppendInt(buf, first, 10)
			buf = append(buf, ' ')
			buf = strconv.AppendInt(buf, count, 10)
			buf = append(buf, '\n')
			if len(buf) >= rangesChunk {
				if !yield(buf) {
					stopped = true
					return false
				}
				buf = buf[:0]
			}
			return true
		})
		if !stopped && len(buf) > 0 {
			yield(buf)
		}
	}
}

// featureRow is the feature row of id, gathered through the store.
func (m *View) featureRow(id int64) ([]byte, error) {
	row := make([]byte, m.store.RowBytes())
	if err := m.store.Gather([]int64{id}, row); err != nil {
		return nil, err
	}
	return row, nil
}

func (m *View) featureText(id int64) ([]byte, error) {
	row, err := m.featureRow(id)
	if err != nil {
		return nil, err
	}
	return appendValues(nil, m.store.Feature().DType, row)
}

// appendValues appends the elements of row, little-endian values of dtype, one per line: floats
// in the shortest form that reads back to the same value of their width (float16 and bfloat16 as
// float32), integers in decimal.
func appendValues(dst []byte, dtype dataset.DType, row []byte) ([]byte, error) {
	size := dtype.Size()
	if size == 0 || len(row)%size != 0 {
		return nil, fmt.Errorf("fusefs: cannot decode %d bytes as %q", len(row), dtype)
	}
	le := binary.LittleEndian
	for off := 0; off < len(row); off += size {
		e := row[off : off+size]
		switch dtype {
		case dataset.Float32:
			dst = strconv.AppendFloat(dst, float64(math.Float32frombits(le.Uint32(e))), 'g', -1, 32)
		case dataset.Float16:
			dst = strconv.AppendFloat(dst, float64(float16ToFloat32(le.Uint16(e))), 'g', -1, 32)
		case dataset.BFloat16:
			dst = strconv.AppendFloat(dst, float64(math.Float32frombits(uint32(le.Uint16(e))<<16)), 'g', -1, 32)
		case dataset.Float64:
			dst = strconv.AppendFloat(dst, math.Float64frombits(le.Uint64(e)), 'g', -1, 64)
		case dataset.Int8:
			dst = strconv.AppendInt(dst, int64(int8(e[0])), 10)
		case dataset.Uint8:
			dst = strconv.AppendUint(dst, uint64(e[0]), 10)
		case dataset.Int16:
			dst = strconv.AppendInt(dst, int64(int16(le.Uint16(e))), 10)
		case dataset.Int32:
			dst = strconv.AppendInt(dst, int64(int32(le.Uint32(e))), 10)
		case dataset.Int64:
			dst = strconv.AppendInt(dst, int64(le.Uint64(e)), 10)
		default:
			return nil, fmt.Errorf("fusefs: cannot decode dtype %q", dtype)
		}
		dst = append(dst, '\n')
	}
	return dst, nil
}

// float16ToFloat32 converts an IEEE 754 half, exactly.
func float16ToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf, nan
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: frac * 2^-24
		v := float32(frac) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}

// neighborsBatch is how many neighbor ids neighbors.txt resolves per NeighborsAt call.
const neighborsBatch = 1 << 16

// neighborsText lists the in-neighbors of id, one per line.
func (m *View) neighborsText(id int64) ([]byte, error) {
	g := m.store.Graph()
	if g == nil {
		return nil, fmt.Errorf("fusefs: dataset %s has no topology", m.store.Manifest().Dir())
	}
	nodes := []int64{id}
	deg := make([]int64, 1)
	if err := g.Degrees(nodes, deg); err != nil {
		return nil, err
	}
	var out []byte
	pos := make([]int64, min(deg[0], neighborsBatch))
	ids := make([]int64, len(pos))
	for first := int64(0); first < deg[0]; first += neighborsBatch {
		n := min(neighborsBatch, deg[0]-first)
		for i := range n {
			pos[i] = first + i
		}
		if err := g.NeighborsAt(nodes, []int64{0, n}, pos[:n], ids[:n]); err != nil {
			return nil, err
		}
		for _, v := range ids[:n] {
			out = strconv.AppendInt(out, v, 10)
			out = append(out, '\n')
		}
	}
	return out, nil
}

// tierOf names the fastest tier holding the row of id.
func (m *View) tierOf(id int64) []byte {
	return []byte(m.store.TierOf(id) + "\n")
}

func (m *View) labelText(id int64) ([]byte, error) {
	label := make([]int64, 1)
	if err := m.store.Session().Labels(m.store.NodeType(), []int64{id}, label); err != nil {
		return nil, err
	}
	return append(strconv.AppendInt(nil, label[0], 10), '\n'), nil
}

func (m *View) nodesReadme() []byte {
	f := m.store.Feature()
	b := fmt.Appendf(nil, "nodes/<id>/ holds node <id>, for a decimal id in [0, %d). Directories are found by\n", m.store.NumNodes())
	b = append(b, "name and never listed: ls nodes/42/, cat nodes/42/feature.txt.\n\n"...)
	b = fmt.Appendf(b, "  feature.bin    the feature row of feature %q: %d x %s, %d bytes, read through the store\n", f.Name, f.Dim, f.DType, f.RowBytes)
	b = append(b, "  feature.txt    its values, one per line\n"...)
	if m.store.Graph() != nil {
		b = append(b, "  neighbors.txt  in-neighbor ids, one per line\n"...)
	}
	b = append(b, "  tier           the fastest tier holding the row: host or ssd\n"...)
	if m.store.Manifest().Nodes().Labels != nil {
		b = append(b, "  label          the node's label, -1 when unlabelled\n"...)
	}
	return b
}

// degreesChunk is how many nodes degrees.txt asks Degrees about at once.
const degreesChunk = 1 << 16

// degreesSize is the size of degrees.txt: 0 until it has been computed, so stat never starts the
// computation.
func (m *View) degreesSize() (int64, error) {
	if text := m.degreesText.Load(); text != nil {
		return int64(len(*text)), nil
	}
	return 0, nil
}

// degreesSummary is topology/degrees.txt, computed on first use by streaming in-degrees in
// chunks. Unmount cancels a computation in progress.
func (m *View) degreesSummary() ([]byte, error) {
	m.degreesMu.Lock()
	defer m.degreesMu.Unlock()
	if text := m.degreesText.Load(); text != nil {
		return *text, nil
	}
	g := m.store.Graph()
	n := m.store.NumNodes()
	if g == nil {
		note := "the dataset has no topology"
		if m.types != nil {
			note = "the dataset's topology is per edge type: see edge_types/ and types/<T>/nodes/<id>/neighbors/"
		}
		text := fmt.Appendf(nil, "nodes %d\nedges 0\nnote %s\n", n, note)
		m.degreesText.Store(&text)
		return text, nil
	}
	var hist [65]int64 // hist[b]: nodes of in-degree in [2^(b-1), 2^b); hist[0]: degree 0
	var sum int64
	minDeg, maxDeg := int64(math.MaxInt64), int64(0)
	ids := make([]int64, min(n, degreesChunk))
	deg := make([]int64, len(ids))
	for first := int64(0); first < n; first += degreesChunk {
		select {
		case <-m.closing:
			return nil, errCanceled
		default:
		}
		k := min(degreesChunk, n-first)
		for i := range k {
			ids[i] = first + i
		}
		if err := g.Degrees(ids[:k], deg[:k]); err != nil {
			return nil, err
		}
		for _, d := range deg[:k] {
			hist[bits.Len64(uint64(d))]++
			sum += d
			minDeg, maxDeg = min(minDeg, d), max(maxDeg, d)
		}
	}
	if n == 0 {
		minDeg = 0
	}
	mean := 0.0
	if n > 0 {
		mean = float64(sum) / float64(n)
	}
	b := fmt.Appendf(nil, "nodes %d\nedges %d\nmin %d\nmean %.4f\nmax %d\n# in-degree histogram: degree range, nodes\n", n, g.NumEdges(), minDeg, mean, maxDeg)
	top := bits.Len64(uint64(maxDeg))
	for bucket := 0; bucket <= top; bucket++ {
		switch bucket {
		case 0, 1:
			b = fmt.Appendf(b, "%d %d\n", bucket, hist[bucket])
		default:
			lo := int64(1) << (bucket - 1)
			b = fmt.Appendf(b, "%d-%d %d\n", lo, 2*lo-1, hist[bucket])
		}
	}
	m.degreesText.Store(&b)
	return b, nil
}
