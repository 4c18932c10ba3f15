package planned

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/topology"
)

// samplePlan is a plan of one of the kinds beyond a Store's plan of seed nodes: a Store's link
// plan, a Session's plan of seed nodes, a Session's link plan.
type samplePlan struct {
	name string
	o    EpochOptions
	plan func(o EpochOptions) (*EpochPlanReport, error)
	open func(o EpochOptions) (*Epochs, *EpochPlanReport, error)
}

// randomLink is random link options for seed edges (labels only where they may be given).
func randomLink(rng *rand.Rand, reverse map[string]string) featurestore.LinkOptions {
	l := featurestore.LinkOptions{ExcludeSeedEdges: rng.IntN(2) == 0, StrictNegatives: rng.IntN(3) == 0}
	switch rng.IntN(3) {
	case 1:
		l.Negatives, l.NegAmount = topology.BinaryNegatives, 0.5+2*rng.Float64()
	case 2:
		l.Negatives, l.NegAmount = topology.TripletNegatives, float64(1+rng.IntN(3))
	}
	if l.ExcludeSeedEdges && rng.IntN(2) == 0 {
		l.ReverseEdgeTypes = reverse
	}
	return l
}

// samplePlans are the three kinds of plan over random graphs with random options (K epochs each),
// planned into directories under t's temporary directory; cache scales the memory tiers (0:
// none, 1: about a third of the rows).
func samplePlans(t *testing.T, rng *rand.Rand, k int, cache int64) []samplePlan {
	t.Helper()
	d := writeDataset(t, 800+rng.Int64N(1500), 8, 1+rng.IntN(2), 2+rng.IntN(6), rng)
	s := mustOpen(t, d.Dir, featurestore.Options{HostCacheBytes: cache * (d.RowBytes + 16) * d.Count / 3})
	t.Cleanup(func() { s.Close() })
	n := 150 + rng.IntN(250)
	se := &SeedEdges{Src: make([]int64, n), Dst: make([]int64, n), Link: randomLink(rng, map[string]string{"": ""})}
	for i := range n {
		se.Src[i], se.Dst[i] = rng.Int64N(d.Count), rng.Int64N(d.Count)
	}
	if se.Link.Negatives != topology.TripletNegatives && rng.IntN(2) == 0 {
		se.Labels = make([]int64, n)
		for i := range se.Labels {
			se.Labels[i] = rng.Int64N(4)
		}
	}
	storeLink := EpochOptions{Dir: filepath.Join(t.TempDir(), "store-link"), SeedEdges: se, BatchSize: 20 + rng.IntN(60), DropLast: rng.IntN(2) == 0,
		Sample:      topology.SampleOptions{Fanouts: []int{1 + rng.IntN(5), rng.IntN(5) - 1}, Seed: rng.Uint64(), Replace: rng.IntN(2) == 0},
		ShuffleSeed: rng.Uint64(), Epochs: k}

	h := writeHetero(t, rng)
	var all int64
	for _, nt := range h.Manifest.NodeTypes {
		all += nt.Count * (h.RowBytes[nt.Name] + 16)
	}
	ss, err := featurestore.OpenSession(h.Dir, featurestore.Options{HostCacheBytes: cache * all / 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	nodes := heteroEpochOpts(t, ss, h, k, rng)
	nodes.Dir = filepath.Join(t.TempDir(), "session-nodes")
	link := heteroEpochOpts(t, ss, h, k, rng)
	link.Dir, link.Seeds, link.NodeType = filepath.Join(t.TempDir(), "session-link"), nil, ""
	e := rng.IntN(len(h.Manifest.EdgeTypes))
	key := h.Manifest.EdgeTypes[e].Key()
	var reverse map[string]string
	for _, r := range h.Manifest.EdgeTypes {
		if r.Src == h.Manifest.EdgeTypes[e].Dst && r.Dst == h.Manifest.EdgeTypes[e].Src {
			reverse = map[string]string{key: r.Key()}
		}
	}
	src, dst := randomSeedEdges(h, e, 100+rng.IntN(150), rng)
	link.SeedEdges = &SeedEdges{EdgeType: key, Src: src, Dst: dst, Link: randomLink(rng, reverse)}
	t.Logf("store link: %d nodes, %d seed edges, batch %d, fanouts %v, link %+v, labels %v; session link: %s, %d seed edges, link %+v",
		d.Count, n, storeLink.BatchSize, storeLink.Sample.Fanouts, se.Link, se.Labels != nil, key, len(src), link.SeedEdges.Link)
	return []samplePlan{
		{"store link", storeLink, planOf(s), openOf(s)},
		{"session nodes", nodes, planSessionOf(ss), openSessionOf(ss)},
		{"session link", link, planSessionOf(ss), openSessionOf(ss)},
	}
}

// served is batch b of epoch e's sample as p serves it (the method of its kind), and as p draws
// it again.
func served(p *Epochs, e, b int) (seeds []int64, got, redrawn any, err error) {
	_, d, err := p.draw(e, b)
	if err != nil {
		return nil, nil, nil, err
	}
	switch {
	case p.Link() && p.Hetero():
		seeds, got, err = p.SampleEdges(e, b)
		redrawn = d.heteroLink
	case p.Link():
		var ls *topology.LinkSample
		if seeds, ls, err = oneEdges(p, e, b); err == nil {
			// Sample serves the link sample's node sample.
			var smp *topology.Sample
			if _, smp, err = oneSample(p, e, b); err == nil && !reflect.DeepEqual(smp, &ls.Sample) {
				err = fmt.Errorf("Sample differs from SampleEdges' node sample")
			}
		}
		got, redrawn = ls, d.link
	default:
		seeds, got, err = p.Sample(e, b)
		redrawn = d.hetero
	}
	return seeds, got, redrawn, err
}

// samplesBytes is the bytes of the samples files and of the packed files of plan directory dir.
func samplesBytes(t *testing.T, dir string, planned int) (samples, packed int64) {
	t.Helper()
	for e := range planned {
		for name, n := range map[string]*int64{samplesFile(e): &samples, packedFile(e): &packed} {
			st, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			*n += st.Size()
		}
	}
	return samples, packed
}

// TestStoredLinkAndHeteroSamplesEqualRedrawn plans a Store's link plan, a Session's plan of seed
// nodes and a Session's link plan of random graphs with random options (negatives, labels,
// exclusion, memory tiers, PlaceTiers) and checks, for every batch of every planned epoch and a
// replayed one, served from several goroutines at once, that the sample read from the samples
// file (SampleEdges and Sample) is reflect.DeepEqual to the
// plan's re-draw of the batch (the on-demand comparisons are the epochlink and epochhetero
// tests, which serve the same stored samples). The report's SampleBytes are the samples files'
// bytes, counted in BytesWritten, and Stats counts every record read.
func TestStoredLinkAndHeteroSamplesEqualRedrawn(t *testing.T) {
	rng := newRand(t)
	const k = 2
	for _, c := range samplePlans(t, rng, k, rng.Int64N(2)) {
		t.Run(strings.ReplaceAll(c.name, " ", "-"), func(t *testing.T) {
			o := c.o
			o.PlaceTiers = rng.IntN(2) == 0
			rep, err := c.plan(o)
			if err != nil {
				t.Fatal(err)
			}
			files, packed := samplesBytes(t, o.Dir, k)
			if rep.SampleBytes == 0 || rep.SampleBytes != files || rep.BytesWritten != files+packed {
				t.Fatalf("report: %d sample bytes, %d written; the samples files hold %d bytes, the packed %d", rep.SampleBytes, rep.BytesWritten, files, packed)
			}
			p, again, err := c.open(o)
			if err != nil || again != nil {
				t.Fatalf("open: %v (replanned %v)", err, again != nil)
			}
			defer p.Close()
			nb := p.BatchesPerEpoch()
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			for w := range 4 {
				wg.Go(func() {
					for e := range k + 1 {
						for b := w; b < nb; b += 4 {
							seeds, got, redrawn, err := served(p, e, b)
							if err != nil {
								errs <- fmt.Errorf("epoch %d batch %d: %w", e, b, err)
								return
							}
							if want, _ := p.Seeds(e, b); !slices.Equal(seeds, want) {
								errs <- fmt.Errorf("epoch %d batch %d: seeds differ", e, b)
								return
							}
							if !reflect.DeepEqual(got, redrawn) {
								errs <- fmt.Errorf("epoch %d batch %d: the stored sample differs from the plan's re-draw", e, b)
								return
							}
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			// Every batch of the k planned epochs read once, planned epoch 0 again (the replay); a
			// Store's link plan reads each twice (SampleEdges and Sample).
			first, _ := samplesBytes(t, o.Dir, 1)
			want := rep.SampleBytes + first
			if c.o.SeedEdges != nil && !p.Hetero() {
				want *= 2
			}
			if st := p.Stats(); st.SampleBytesRead != want {
				t.Fatalf("stats: %d sample bytes read, want %d", st.SampleBytesRead, want)
			}
			t.Logf("%d batches an epoch, %d sample bytes, %d packed rows, place tiers %v", nb, rep.SampleBytes, rep.RowsPacked, o.PlaceTiers)
		})
	}
}

// TestSpooledLinkAndHeteroPlansEqualRedrawn: with PlaceTiers, the three kinds of plan take their
// samples from the placement pass's spool and write byte for byte the plan made by drawing
// every batch twice, drawing nothing in the packing pass.
func TestSpooledLinkAndHeteroPlansEqualRedrawn(t *testing.T) {
	rng := newRand(t)
	k := 1 + rng.IntN(2)
	for _, c := range samplePlans(t, rng, k, 1) {
		t.Run(strings.ReplaceAll(c.name, " ", "-"), func(t *testing.T) {
			plan := func(dir string, spool bool) *EpochPlanReport {
				spoolSamples = spool
				defer func() { spoolSamples = true }()
				o := c.o
				o.Dir, o.PlaceTiers = dir, true
				rep, err := c.plan(o)
				if err != nil {
					t.Fatal(err)
				}
				return rep
			}
			twice := plan(filepath.Join(t.TempDir(), "twice"), false)
			once := plan(filepath.Join(t.TempDir(), "spooled"), true)
			if once.SampleSeconds != 0 || twice.SampleSeconds <= 0 || once.SampleBytes != twice.SampleBytes || once.RowsPacked != twice.RowsPacked {
				t.Fatalf("spooled: %d sample bytes, %d rows, packing pass sampled %.6fs (want 0); drawn twice: %d, %d, %.6fs",
					once.SampleBytes, once.RowsPacked, once.SampleSeconds, twice.SampleBytes, twice.RowsPacked, twice.SampleSeconds)
			}
			a, b := planFiles(t, once.Dir), planFiles(t, twice.Dir)
			if len(a) != 2*k+1 || len(b) != len(a) {
				t.Fatalf("%d files spooled, %d drawn twice; want %d", len(a), len(b), 2*k+1)
			}
			for name, data := range a {
				if !bytes.Equal(data, b[name]) {
					t.Fatalf("%s differs: %d bytes spooled, %d drawn twice", name, len(data), len(b[name]))
				}
			}
		})
	}
}

// TestCorruptLinkAndHeteroSamplesAreCaught flips a byte of one batch's record in each kind of
// plan: serving that batch fails with dataset.ErrCorrupt naming the samples file, the epoch and
// the batch; the other batches are served.
func TestCorruptLinkAndHeteroSamplesAreCaught(t *testing.T) {
	rng := newRand(t)
	for _, c := range samplePlans(t, rng, 2, 0) {
		t.Run(strings.ReplaceAll(c.name, " ", "-"), func(t *testing.T) {
			o := c.o
			if _, err := c.plan(o); err != nil {
				t.Fatal(err)
			}
			var idx epochIndex
			data, err := os.ReadFile(filepath.Join(o.Dir, EpochIndexFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &idx); err != nil {
				t.Fatal(err)
			}
			pe, bad := rng.IntN(2), rng.IntN(idx.Batches)
			r := idx.Epochs[pe].SampleRecords[bad]
			path := filepath.Join(o.Dir, samplesFile(pe))
			file, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			at := r.Offset + rng.Int64N(r.Length)
			file[at] ^= 1 << rng.IntN(8)
			if err := os.WriteFile(path, file, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("flipped byte %d of %s (batch %d's record at %d, %d bytes)", at, path, bad, r.Offset, r.Length)
			p, _, err := c.open(o)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			for b := range idx.Batches {
				_, _, _, err := served(p, pe+2, b) // epoch pe+2 replays planned epoch pe
				if b != bad {
					if err != nil {
						t.Fatalf("intact batch %d: %v", b, err)
					}
					continue
				}
				name := fmt.Sprintf("epoch %d batch %d", pe+2, b)
				if !errors.Is(err, dataset.ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), name) {
					t.Fatalf("corrupt record: %v; want ErrCorrupt naming %s and %s", err, path, name)
				}
			}
		})
	}
}

// TestLinkAndHeteroPlanDiskBudgetCountsSamples: for each kind of plan, a budget that holds an
// epoch's packed rows but not its samples is refused, naming the bytes its samples need; one
// that holds both plans the epoch.
func TestLinkAndHeteroPlanDiskBudgetCountsSamples(t *testing.T) {
	rng := newRand(t)
	for _, c := range samplePlans(t, rng, 1, 0) {
		t.Run(strings.ReplaceAll(c.name, " ", "-"), func(t *testing.T) {
			checkBudgetCountsSamples(t, c.o, c.plan, nil)
		})
	}
}

// TestVersion3PlanIndexIsStale: a link plan's index of version 3 (which stored no samples for
// link plans) is a stale plan naming the plan, the index version and the version read now;
// Replan plans anew.
func TestVersion3PlanIndexIsStale(t *testing.T) {
	rng := newRand(t)
	c := samplePlans(t, rng, 1, 0)[0]
	if _, err := c.plan(c.o); err != nil {
		t.Fatal(err)
	}
	setIndexVersion(t, c.o.Dir, 3)
	_, _, err := c.open(c.o)
	var se *StalePlanError
	if !errors.As(err, &se) || se.Input != "index version" || se.Plan != "3" || se.Store != fmt.Sprintf("%d to %d", oldestEpochIndexVersion, epochIndexVersion) ||
		!strings.Contains(err.Error(), c.o.Dir) {
		t.Fatalf("a version 3 index: %v", err)
	}
	p, rep, err := c.open(withReplan(c.o))
	if err != nil || rep == nil {
		t.Fatalf("replan over a version 3 index: %v", err)
	}
	p.Close()
}

// TestVersion4PlanIsRead: a plan written as version 4 wrote it (coding 0, index version 4) is
// served as it is, every batch reflect.DeepEqual to its re-draw, for every kind of plan; the same
// plan written now has samples files smaller by 4 bytes a node, 4 an edge's Row and Col and 4 its
// edge id.
func TestVersion4PlanIsRead(t *testing.T) {
	rng := newRand(t)
	for _, c := range samplePlans(t, rng, 1, 0) {
		t.Run(strings.ReplaceAll(c.name, " ", "-"), func(t *testing.T) {
			now := c.o
			now.Dir = c.o.Dir + "-now"
			if _, err := c.plan(now); err != nil {
				t.Fatal(err)
			}
			narrowRecords = false
			_, err := c.plan(c.o)
			narrowRecords = true
			if err != nil {
				t.Fatal(err)
			}
			setIndexVersion(t, c.o.Dir, 4)
			p, rep, err := c.open(c.o)
			if err != nil || rep != nil {
				t.Fatalf("a version 4 plan: %v (planned again: %v)", err, rep != nil)
			}
			defer p.Close()
			var edges, saved int64
			shape := p.src.recordShape(&p.o)
			for b := range p.BatchesPerEpoch() {
				_, got, redrawn, err := served(p, 0, b)
				if err != nil {
					t.Fatalf("batch %d: %v", b, err)
				}
				if !reflect.DeepEqual(got, redrawn) {
					t.Fatalf("batch %d: the version 4 record differs from the re-draw", b)
				}
				_, d, _ := p.draw(0, b)
				a, err := shape.arraysOf(d)
				if err != nil {
					t.Fatal(err)
				}
				for j, v := range a {
					if shape.edgeIDs(j) {
						edges += int64(len(v))
					}
				}
				// These graphs' ids fit 4 bytes and their batches' local ids 2.
				saved += recordBytes(shape, a, 8, 4, 8) - recordBytes(shape, a, 4, 2, 4)
			}
			old, _ := samplesBytes(t, c.o.Dir, 1)
			smaller, _ := samplesBytes(t, now.Dir, 1)
			t.Logf("samples files: %d bytes as version 4 wrote them, %d now (%d edge ids)", old, smaller, edges)
			if edges == 0 || old-smaller != saved {
				t.Fatalf("samples files of %d bytes as version 4 wrote them, %d now (%d edge ids); want %d bytes fewer", old, smaller, edges, saved)
			}
		})
	}
}

// recordBytes is the bytes of a record of arrays a (table order) of shape s where it stores
// every kind of array in the given widths: Nodes, Row and Col, EdgeIDs (the rest in 8).
func recordBytes(s recordShape, a [][]int64, nodes, local, ids int64) int64 {
	T, E := s.types, len(s.ends)
	n := int64(sampleHeader + 8*len(a))
	for i, v := range a {
		w := int64(8)
		switch {
		case i < T:
			w = nodes
		case i >= 2*T && i < 2*T+2*E:
			w = local
		case i >= 2*T+2*E && i < 2*T+3*E:
			w = ids
		}
		n += (w*int64(len(v)) + 7) / 8 * 8
	}
	return n
}

// randomArray is nil, empty or n values below bound, one in three each (n > 0 always values).
func randomArray(rng *rand.Rand, n int, bound int64) []int64 {
	switch {
	case n == 0 && rng.IntN(2) == 0:
		return nil
	case n == 0:
		return []int64{}
	}
	a := make([]int64, n)
	for i := range a {
		a[i] = rng.Int64N(bound)
	}
	return a
}

// TestSampleRecordShapes encodes random samples of every record shape (a Store's and a
// Session's, with and without link labels; arrays nil, empty or not) and decodes them
// reflect.DeepEqual; a record a byte short or long, or read with another shape, is refused, and
// a local id out of range is refused when encoding, naming the array.
func TestSampleRecordShapes(t *testing.T) {
	rng := newRand(t)
	for i := range 200 {
		s := nodeShape
		if rng.IntN(2) == 0 {
			s = recordShape{types: 1 + rng.IntN(4), flags: sampleHetero}
			for range 1 + rng.IntN(5) {
				s.ends = append(s.ends, [2]int{rng.IntN(s.types), rng.IntN(s.types)})
			}
		}
		if rng.IntN(2) == 0 {
			s.flags |= sampleLink
		}
		maybe := func() int { return rng.IntN(3) * rng.IntN(50) }
		// Node and edge ids of a graph of more than 2^32 nodes or edges, or not.
		nodeBound, idBound := int64(1)<<32, int64(1)<<32
		if rng.IntN(2) == 0 {
			nodeBound = 1 << 40
		}
		if rng.IntN(2) == 0 {
			idBound = 1 << 40
		}
		a := make([][]int64, s.arrays())
		for j := range a {
			if j < 2*s.types {
				a[j] = randomArray(rng, maybe(), nodeBound)
			}
		}
		if rng.IntN(8) == 0 { // a node type of more nodes than 2-byte local ids index
			a[rng.IntN(s.types)] = randomArray(rng, 1<<16+rng.IntN(2), nodeBound)
		}
		for j := range a[2*s.types:] {
			j += 2 * s.types
			if nt, local := s.local(j); local {
				if n := len(a[nt]); n > 0 {
					a[j] = randomArray(rng, maybe(), int64(n))
				} else {
					a[j] = randomArray(rng, 0, 1)
				}
			} else if s.edgeIDs(j) {
				a[j] = randomArray(rng, maybe(), idBound)
			} else {
				a[j] = randomArray(rng, maybe(), 1<<40)
			}
		}
		d := s.drawOf(a)
		got, err := s.arraysOf(d)
		if err != nil || !reflect.DeepEqual(got, a) {
			t.Fatalf("shape %+v: arraysOf(drawOf(a)) differs from a: %v", s, err)
		}
		rec, err := s.encode(a)
		if err != nil {
			t.Fatal(err)
		}
		if n, _, _ := s.recordLen(a); n != int64(len(rec)) {
			t.Fatalf("recordLen %d, the record has %d bytes", n, len(rec))
		}
		// What fits narrower is stored narrower (the coding says which), the rest as a version 4
		// record stores it, which is the record with narrowing off.
		above := func(kind func(j int) bool, bound uint64) bool {
			for j, v := range a {
				if kind(j) && slices.ContainsFunc(v, func(x int64) bool { return uint64(x) > bound }) {
					return true
				}
			}
			return false
		}
		isNodes := func(j int) bool { return j < s.types }
		want, nodes, local, ids := uint32(0), int64(8), int64(4), int64(8)
		if !above(isNodes, math.MaxUint32) {
			want, nodes = want|codeNarrowNodes, 4
		}
		if !slices.ContainsFunc(a[:s.types], func(v []int64) bool { return len(v) > 1<<16 }) {
			want, local = want|codeShortLocal, 2
		}
		if !above(s.edgeIDs, math.MaxUint32) {
			want, ids = want|codeNarrowEdgeIDs, 4
		}
		narrowRecords = false
		wide, err := s.encode(a)
		narrowRecords = true
		if err != nil {
			t.Fatal(err)
		}
		if coding := binary.LittleEndian.Uint32(rec[12:]); coding != want || int64(len(rec)) != recordBytes(s, a, nodes, local, ids) ||
			int64(len(wide)) != recordBytes(s, a, 8, 4, 8) || binary.LittleEndian.Uint32(wide[12:]) != 0 {
			t.Fatalf("shape %+v, node ids below %d, edge ids below %d: coding %#x (want %#x), %d bytes; %d bytes with narrowing off",
				s, nodeBound, idBound, coding, want, len(rec), len(wide))
		}
		if back, err := s.decode(wide); err != nil || !reflect.DeepEqual(s.drawOf(back), d) {
			t.Fatalf("shape %+v: the record with narrowing off: %v", s, err)
		}
		words := make([]int64, (len(rec)+15)/8)
		buf := dataset.BytesOf(words)[:len(rec)+8]
		copy(buf, rec)
		back, err := s.decode(buf[:len(rec)])
		if err != nil {
			t.Fatalf("shape %+v: %v", s, err)
		}
		if !reflect.DeepEqual(s.drawOf(back), d) {
			t.Fatalf("shape %+v: the decoded sample differs", s)
		}
		for _, bad := range [][]byte{buf[:len(rec)-1], buf[:len(rec)+8]} {
			if _, err := s.decode(bad); err == nil {
				t.Fatalf("shape %+v: a record of %d bytes (of %d) decoded", s, len(bad), len(rec))
			}
		}
		other := s
		other.flags ^= sampleLink
		if _, err := other.decode(buf[:len(rec)]); err == nil || !strings.Contains(err.Error(), "flags") {
			t.Fatalf("shape %+v: a record read with flags %#x: %v", s, other.flags, err)
		}
		// A coding this version does not know, and a record of coding 0 read as narrower.
		for _, bad := range []uint32{8, codeNarrowNodes, codeShortLocal, codeNarrowEdgeIDs} {
			c := slices.Clone(wide)
			binary.LittleEndian.PutUint32(c[12:], bad)
			same := bad == codeNarrowNodes && recordBytes(s, a, 4, 4, 8) == int64(len(wide)) ||
				bad == codeShortLocal && recordBytes(s, a, 8, 2, 8) == int64(len(wide)) ||
				bad == codeNarrowEdgeIDs && recordBytes(s, a, 8, 4, 4) == int64(len(wide))
			if _, err := s.decode(c); err == nil && !same {
				t.Fatalf("shape %+v: a record of coding 0 read as coding %#x decoded", s, bad)
			} else if bad == 8 && (err == nil || !strings.Contains(err.Error(), "coding 0x8")) {
				t.Fatalf("shape %+v: a record of coding 0x8: %v", s, err)
			}
		}
		// A local id out of range, where an edge array has one.
		for j := range a {
			if nt, local := s.local(j); local && len(a[j]) > 0 {
				a[j][rng.IntN(len(a[j]))] = int64(len(a[nt]))
				if _, err := s.encode(a); err == nil || !strings.Contains(err.Error(), s.name(j)+"[") {
					t.Fatalf("shape %+v: %s out of range: %v", s, s.name(j), err)
				}
				break
			}
		}
		if i == 0 {
			t.Logf("shape %+v: a record of %d bytes", s, len(rec))
		}
	}
}

// BenchmarkEpochLinkSample is BenchmarkEpochSample for a link plan of the dataset
// TIERFS_BENCH_DATASET (skipped without it): 200,000 seed edges of uniform random endpoints,
// binary negatives (one a seed edge), fanouts 25,10, batch 1,024, one planned epoch, a host tier
// holding every row. "stored" serves SampleEdges (the record read from the samples file),
// "redraw" draws the batch again and checks it against the plan; 3 rounds of each, alternated.
func BenchmarkEpochLinkSample(b *testing.B) {
	dir := os.Getenv("TIERFS_BENCH_DATASET")
	if dir == "" {
		b.Skip("TIERFS_BENCH_DATASET names no dataset")
	}
	s, err := featurestore.Open(dir, featurestore.Options{HostCacheBytes: 2 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 200_000
	se := &SeedEdges{Src: make([]int64, n), Dst: make([]int64, n), Link: featurestore.LinkOptions{Negatives: topology.BinaryNegatives}}
	for i := range n {
		se.Src[i], se.Dst[i] = rng.Int64N(s.NumNodes()), rng.Int64N(s.NumNodes())
	}
	o := EpochOptions{Dir: b.TempDir(), SeedEdges: se, BatchSize: 1024, Sample: topology.SampleOptions{Fanouts: []int{25, 10}, Seed: 1},
		ShuffleSeed: 2, Epochs: 1}
	rep, err := PlanEpochs(s.Session(), o)
	if err != nil {
		b.Fatal(err)
	}
	p, _, err := OpenEpochs(s.Session(), o)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	b.Logf("link plan: %d batches, %.1f MiB of samples (%.0f KiB a batch), %.0f nodes a batch, planned in %.1fs",
		rep.BatchesPerEpoch, float64(rep.SampleBytes)/(1<<20), float64(rep.SampleBytes)/1024/float64(rep.BatchesPerEpoch), rep.NodesPerBatch.Mean, rep.Seconds)
	nb := p.BatchesPerEpoch()
	benchStoredAndRedrawn(b, nb, func(b int) (*topology.LinkSample, error) {
		_, ls, err := oneEdges(p, 0, b)
		return ls, err
	}, func(b int) (*topology.LinkSample, error) {
		_, d, err := p.draw(0, b)
		if err != nil {
			return nil, err
		}
		return d.link, nil
	}, func(ls *topology.LinkSample) (int, int) { return len(ls.Nodes), len(ls.Row) })
}
