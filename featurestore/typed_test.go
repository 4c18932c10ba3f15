package featurestore

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/tiers/host"
	"github.com/tierfs/tierfs/topology"
)

// TestSessionTypedCallsMatchFiles opens a heterogeneous dataset with its topology in memory and
// on disk, with and without verified reads and memory tiers, and compares every typed call with
// the files read plainly: gathers of each type (through its tier stack), labels, splits, and
// samples against topology.SampleHetero over CSCs built from the files.
func TestSessionTypedCallsMatchFiles(t *testing.T) {
	rng := newRand(t)
	d := writeHetero(t, rng)
	for _, opt := range []Options{
		{},
		{HostCacheBytes: 64 << 10, TopologyMemoryBytes: -1},
		{HostCacheBytes: 1 << 30, HostPolicy: "sieve"},
	} {
		ss, err := OpenSession(d.Dir, opt)
		if err != nil {
			t.Fatal(err)
		}
		types := ss.NodeTypes()
		if len(types) != 3 || types[2].Name != "institution" || len(types[2].Features) != 0 {
			t.Fatalf("node types %+v", types)
		}
		for _, nt := range d.Manifest.NodeTypes {
			ids := make([]int64, 700)
			for i := range ids {
				ids[i] = rng.Int64N(nt.Count)
			}
			if rows, ok := d.Rows[nt.Name]; ok {
				rb := d.RowBytes[nt.Name]
				got := make([]byte, int64(len(ids))*rb)
				if err := ss.Gather(nt.Name, "", ids, got); err != nil {
					t.Fatal(err)
				}
				for i, v := range ids {
					if !bytes.Equal(got[int64(i)*rb:int64(i+1)*rb], rows[v*rb:(v+1)*rb]) {
						t.Fatalf("%+v: %s row %d (ids[%d]) differs", opt, nt.Name, v, i)
					}
				}
				st, err := ss.Stack(nt.Name)
				if err != nil || st.NumNodes() != nt.Count {
					t.Fatalf("stack of %s: %v", nt.Name, err)
				}
			} else if _, err := ss.Stack(nt.Name); !errors.Is(err, dataset.ErrFeatureNotFound) {
				t.Fatalf("stack of %s without features: %v", nt.Name, err)
			}
			if labels, ok := d.Labels[nt.Name]; ok {
				got := make([]int64, len(ids))
				if err := ss.Labels(nt.Name, ids, got); err != nil {
					t.Fatal(err)
				}
				for i, v := range ids {
					if got[i] != labels[v] {
						t.Fatalf("%s label of %d: %d, want %d", nt.Name, v, got[i], labels[v])
					}
				}
				n, err := ss.ReadSplit(nt.Name, "train", nil)
				if err != nil || n == 0 {
					t.Fatalf("train split of %s: %d, %v", nt.Name, n, err)
				}
			}
		}
		checkHeteroSamples(t, ss, d, rng)
		if err := ss.Close(); err != nil {
			t.Fatal(err)
		}
		if err := ss.Gather("paper", "", []int64{0}, make([]byte, d.RowBytes["paper"])); !errors.Is(err, ErrClosed) {
			t.Fatalf("gather after close: %v", err)
		}
	}
}

func checkHeteroSamples(t *testing.T, ss *Session, d *heteroData, rng *rand.Rand) {
	t.Helper()
	fanouts := map[string][]int{}
	ref := topology.HeteroSampleOptions{Seed: rng.Uint64()}
	var edges []topology.EdgeGraph
	for i, et := range d.Manifest.EdgeTypes {
		f := []int{rng.IntN(6) - 1, rng.IntN(4)}
		fanouts[et.Key()] = f
		ref.Fanouts = append(ref.Fanouts, f)
		src := slices.IndexFunc(d.Manifest.NodeTypes, func(n dataset.NodeType) bool { return n.Name == et.Src })
		dst := slices.IndexFunc(d.Manifest.NodeTypes, func(n dataset.NodeType) bool { return n.Name == et.Dst })
		edges = append(edges, topology.EdgeGraph{Src: src, Dst: dst, G: d.CSC[i]})
	}
	numNodes := []int64{}
	for _, nt := range d.Manifest.NodeTypes {
		numNodes = append(numNodes, nt.Count)
	}
	sp, err := ss.NewSampler(SampleOptions{Fanouts: fanouts, Seed: ref.Seed})
	if err != nil {
		t.Fatal(err)
	}
	for call := range 3 {
		seedType := []string{"paper", "author"}[call%2]
		nt := slices.IndexFunc(d.Manifest.NodeTypes, func(n dataset.NodeType) bool { return n.Name == seedType })
		seeds := make([]int64, 1+rng.IntN(200))
		for i := range seeds {
			seeds[i] = rng.Int64N(numNodes[nt])
		}
		got, err := sp.Sample(seedType, seeds)
		if err != nil {
			t.Fatal(err)
		}
		o := ref
		o.Seed += uint64(call)
		want, err := topology.SampleHetero(numNodes, edges, nt, seeds, o)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want.Nodes {
			if !slices.Equal(got.Nodes[i], want.Nodes[i]) || !slices.Equal(got.NodesPerHop[i], want.NodesPerHop[i]) {
				t.Fatalf("call %d: nodes of type %d differ", call, i)
			}
		}
		for e := range want.Row {
			if !slices.Equal(got.Row[e], want.Row[e]) || !slices.Equal(got.Col[e], want.Col[e]) || !slices.Equal(got.EdgeIDs[e], want.EdgeIDs[e]) {
				t.Fatalf("call %d: edges of type %d differ", call, e)
			}
		}
	}
}

// TestSessionRefusesBadTypes: unknown node and edge types, features, fanouts and ids out of a
// type's range are clear errors naming what the dataset has.
func TestSessionRefusesBadTypes(t *testing.T) {
	rng := newRand(t)
	d := writeHetero(t, rng)
	ss, err := OpenSession(d.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	all := map[string][]int{"paper:cites:paper": {2}, "author:writes:paper": {2}, "paper:written_by:author": {2}, "author:affiliated_with:institution": {2}}
	with := func(k string, v []int) map[string][]int {
		m := map[string][]int{}
		for key, f := range all {
			m[key] = f
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"gather of an unknown type", ss.Gather("venue", "", []int64{0}, nil), `no node type "venue" (it has paper, author, institution)`},
		{"gather without a type", ss.Gather("", "", []int64{0}, nil), "has 3 node types (paper, author, institution): name one"},
		{"unknown feature", ss.Gather("paper", "y", []int64{0}, nil), `node type "paper" of dataset`},
		{"id out of the type's range", ss.Gather("author", "", []int64{d.Manifest.NodeTypes[1].Count}, make([]byte, d.RowBytes["author"])), "out of range"},
		{"labels of a type without", ss.Labels("institution", []int64{0}, make([]int64, 1)), `no labels of node type "institution"`},
		{"edge feature of an unknown edge type", ss.GatherEdgeFeature("paper:cites:author", "w", []int64{0}, nil), `no edge type "paper:cites:author" (it has paper:cites:paper, author:writes:paper`},
	}
	_, err = ss.NewSampler(SampleOptions{Fanouts: with("paper:cites:venue", []int{1})})
	cases = append(cases, struct {
		name string
		err  error
		want string
	}{"fanouts of an unknown edge type", err, `"paper:cites:venue"`})
	_, err = ss.NewSampler(SampleOptions{Fanouts: with("author:writes:paper", nil)})
	cases = append(cases, struct {
		name string
		err  error
		want string
	}{"fanouts missing an edge type", err, `"author:writes:paper" has none`})
	_, err = ss.NewSampler(SampleOptions{Fanouts: with("author:writes:paper", []int{2, 2})})
	cases = append(cases, struct {
		name string
		err  error
		want string
	}{"fanouts of other hop counts", err, "hops, as every other edge type"})
	sp, err := ss.NewSampler(SampleOptions{Fanouts: all})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sp.Sample("institution", []int64{40})
	cases = append(cases, struct {
		name string
		err  error
		want string
	}{"seed out of its type's range", err, `seeds[0] = 40 is out of range [0, 40) of node type "institution"`})
	for _, c := range cases {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v; want an error containing %q", c.name, c.err, c.want)
		}
	}
	if _, err := Open(d.Dir, Options{Feature: "nope"}); !errors.Is(err, dataset.ErrFeatureNotFound) || !strings.Contains(err.Error(), "paper.x, author.x") {
		t.Errorf("open with a feature no type has: %v", err)
	}
}

// TestSessionBudgetsSplitByBytes: the host budget is split over the stacks in proportion to their
// feature bytes, and together they never exceed it.
func TestSessionBudgetsSplitByBytes(t *testing.T) {
	rng := newRand(t)
	d := writeHetero(t, rng)
	const budget = 256 << 10
	ss, err := OpenSession(d.Dir, Options{HostCacheBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	var total, paperBytes float64
	for _, nt := range d.Manifest.NodeTypes {
		if rb, ok := d.RowBytes[nt.Name]; ok {
			total += float64(nt.Count * rb)
			if nt.Name == "paper" {
				paperBytes = float64(nt.Count * rb)
			}
		}
	}
	var sum int64
	for _, name := range []string{"paper", "author"} {
		st, err := ss.Stack(name)
		if err != nil {
			t.Fatal(err)
		}
		sum += st.opt.HostCacheBytes
		if held := st.HostTier().Rows() * host.BytesPerRow(st.RowBytes()); held > st.opt.HostCacheBytes || st.HostTier().Rows() == 0 {
			t.Errorf("%s host tier holds %d rows (%d bytes with their index), its share is %d bytes", name, st.HostTier().Rows(), held, st.opt.HostCacheBytes)
		}
	}
	// Each type's host tier holds its rows that are neighbors most often.
	for ti, nt := range d.Manifest.NodeTypes[:2] {
		counts := make([]int64, nt.Count)
		for e, et := range d.Manifest.EdgeTypes {
			if et.Src == nt.Name {
				for _, v := range d.CSC[e].Indices32 {
					counts[v]++
				}
			}
		}
		st, _ := ss.Stack(nt.Name)
		held := map[int64]bool{}
		st.HostTier().Ranges(func(first, count int64) bool {
			for v := first; v < first+count; v++ {
				held[v] = true
			}
			return true
		})
		minHeld, maxOut := int64(1<<62), int64(-1)
		for v, c := range counts {
			if held[int64(v)] {
				minHeld = min(minHeld, c)
			} else {
				maxOut = max(maxOut, c)
			}
		}
		if minHeld < maxOut {
			t.Errorf("type %d (%s): a held row is a neighbor %d times, a row left out %d times", ti, nt.Name, minHeld, maxOut)
		}
	}
	paper, _ := ss.Stack("paper")
	if want := int64(paperBytes / total * budget); paper.opt.HostCacheBytes != want || sum > budget {
		t.Errorf("paper's share %d, want %d; shares sum to %d of %d", paper.opt.HostCacheBytes, want, sum, budget)
	}
}

// TestSessionDeviceGathersMatchFiles: on a GPU, every type's tier stack gathers into device
// memory (its own GPU and host tiers, the SSD for the rest) what the files hold, one after the
// other on one session (one set of IO stacks attached to the device once).
func TestSessionDeviceGathersMatchFiles(t *testing.T) {
	requireGPU(t)
	rng := newRand(t)
	d := writeHetero(t, rng)
	var total int64
	for _, rows := range d.Rows {
		total += int64(len(rows))
	}
	for _, backend := range []gpuio.Backend{"", gpuio.BackendGPUURing} {
		if backend == gpuio.BackendGPUURing && gpuio.ProbeGPURing() != nil {
			continue
		}
		ss, err := OpenSession(d.Dir, Options{GPUCacheBytes: total / 10, HostCacheBytes: total / 5, IOBackend: backend, UnverifiedReads: backend == gpuio.BackendGPUURing})
		if err != nil {
			t.Fatal(err)
		}
		for round := range 2 {
			if round == 1 { // the budgets split by a profile: every GPU tier is resized
				fanouts := map[string][]int{}
				for _, et := range d.Manifest.EdgeTypes {
					fanouts[et.Key()] = []int{3, 2}
				}
				if _, err := ss.PlaceProfiled("paper", randomIDs(rng, 64, d.Manifest.NodeTypes[0].Count), SampleOptions{Fanouts: fanouts}, 8, 8); err != nil {
					t.Fatal(err)
				}
			}
			for _, name := range []string{"paper", "author"} {
				st, err := ss.Stack(name)
				if err != nil {
					t.Fatal(err)
				}
				rb := d.RowBytes[name]
				ids := randomIDs(rng, 2000, st.NumNodes())
				got := deviceGather(t, st, ids)
				for i, v := range ids {
					if !bytes.Equal(got[int64(i)*rb:int64(i+1)*rb], d.Rows[name][v*rb:(v+1)*rb]) {
						t.Fatalf("backend %q round %d: %s row %d (ids[%d]) differs on the device", backend, round, name, v, i)
					}
				}
				if ok, why := st.GPUAvailable(); !ok {
					t.Fatalf("%s: GPU path did not start: %s", name, why)
				}
			}
		}
		ss.Close()
	}
}

// TestSessionPlaceProfiled: after a profile, each type's memory tiers hold rows the profiled
// batches reached before any they did not (as many reached rows as fit), and the placement is
// what Place gives the same counts.
func TestSessionPlaceProfiled(t *testing.T) {
	rng := newRand(t)
	d := writeHetero(t, rng)
	ss, err := OpenSession(d.Dir, Options{HostCacheBytes: 96 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	fanouts := map[string][]int{}
	for _, et := range d.Manifest.EdgeTypes {
		fanouts[et.Key()] = []int{3, 2}
	}
	train, err := ss.Split("paper", "train")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ss.PlaceProfiled("paper", train, SampleOptions{Fanouts: fanouts, Seed: rng.Uint64()}, 16, 12)
	if err != nil {
		t.Fatal(err)
	}
	var shares int64
	for _, name := range []string{"paper", "author"} {
		r := rep.NodeTypes[name]
		if r.RowsReached == 0 || r.ReachedInMem != min(r.RowsReached, r.MemoryRows) {
			t.Errorf("%s: %+v: the memory tiers should hold min(reached, capacity) reached rows", name, r)
		}
		if rb := d.RowBytes[name]; r.MemoryRows*rb > r.HostBytes {
			t.Errorf("%s: %d rows of %d bytes held in a share of %d bytes", name, r.MemoryRows, rb, r.HostBytes)
		}
		shares += r.HostBytes
	}
	if shares > 96<<10 || shares < 96<<10*9/10 {
		t.Errorf("the types' shares sum to %d bytes of the 96 KiB budget", shares)
	}
	if _, err := ss.PlaceProfiled("paper", train, SampleOptions{Fanouts: fanouts}, 0, 3); err == nil {
		t.Error("a batch size of 0 was accepted")
	}
	if _, err := ss.PlaceProfiled("paper", []int64{1 << 40}, SampleOptions{Fanouts: fanouts}, 4, 3); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("a seed out of range: %v", err)
	}
}

// TestOneTypeCallsOnSeveralTypes: the one-type calls of a store of a graph of several types say
// what to use instead.
func TestOneTypeCallsOnSeveralTypes(t *testing.T) {
	d := writeHetero(t, newRand(t))
	s, err := Open(d.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := sampleOf(s, []int64{0}, topology.SampleOptions{Fanouts: []int{2}}); !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "fanouts per edge type") {
		t.Errorf("Sample: %v", err)
	}
	if _, _, err := s.PlanPlacement(PlanOptions{Fanouts: []int{2}, BatchSize: 8}); !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "by a profile") {
		t.Errorf("PlanPlacement: %v", err)
	}
	if _, err := Open(d.Dir, Options{Hotness: make([]uint32, s.NumNodes())}); !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "several node types") {
		t.Errorf("Open with hotness: %v", err)
	}
}

// TestSessionGPUSampling: with Options.GPUTopology every edge type of a graph of several types is
// drawn by the GPU kernel (device and pinned copies), and the samples are the host sampler's.
// Without a GPU the session samples on the host and says why.
func TestSessionGPUSampling(t *testing.T) {
	rng := newRand(t)
	d := writeHetero(t, rng)
	for _, where := range []string{GPUTopologyDevice, GPUTopologyPinned} {
		ss, err := OpenSession(d.Dir, Options{GPUTopology: where})
		if err != nil {
			t.Fatal(err)
		}
		ok, why := ss.GPUSampling()
		if gpuPresent() != ok {
			t.Fatalf("%s: GPUSampling() = %v (%s) on a machine where a GPU is %v", where, ok, why, gpuPresent())
		}
		if ok {
			for e := range ss.edges {
				if _, isGPU := ss.sampleGraph(e).(*gpuTopology); !isGPU {
					t.Fatalf("%s: edge type %s is sampled from %T, not its GPU copy", where, ss.edges[e].spec.Key(), ss.sampleGraph(e))
				}
			}
		}
		checkHeteroSamples(t, ss, d, rng)
		ss.Close()
	}
}

// TestSessionGPUSamplingNeedsTopologyInMemory: GPUTopology with an edge type's topology left on
// disk is refused at open, naming the edge type and the budget, GPU or not.
func TestSessionGPUSamplingNeedsTopologyInMemory(t *testing.T) {
	d := writeHetero(t, newRand(t))
	_, err := OpenSession(d.Dir, Options{GPUTopology: GPUTopologyDevice, TopologyMemoryBytes: 1})
	if err == nil || !strings.Contains(err.Error(), "of edge type") || !strings.Contains(err.Error(), "TopologyMemoryBytes 1") {
		t.Fatalf("got %v, want an error naming the edge type left on disk and TopologyMemoryBytes", err)
	}
}

// TestStatsCoverEveryType: the stats of the store Open returns for a session of several tier
// stacks are the whole store's — a gather of each of two types counts two gathers, and every
// tier's rows and hits are the sums of the types' — with each type's own below.
func TestStatsCoverEveryType(t *testing.T) {
	d := writeHetero(t, newRand(t))
	s, err := Open(d.Dir, Options{HostCacheBytes: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, ids := range map[string][]int64{"paper": {0, 1, 2}, "author": {1, 0}} {
		if err := s.sess.Gather(name, "", ids, make([]byte, int64(len(ids))*d.RowBytes[name])); err != nil {
			t.Fatal(err)
		}
	}
	st := s.Stats()
	if st.Gathers != 2 || st.RowsGathered != 5 || len(st.NodeTypes) != 2 {
		t.Fatalf("whole store: %d gathers of %d rows, %d types; want 2 of 5 over 2 types", st.Gathers, st.RowsGathered, len(st.NodeTypes))
	}
	for name, want := range map[string]uint64{"paper": 3, "author": 2} {
		if ts := st.NodeTypes[name]; ts.Gathers != 1 || ts.RowsGathered != want {
			t.Errorf("%s: %d gathers of %d rows, want 1 of %d", name, ts.Gathers, ts.RowsGathered, want)
		}
	}
	for _, k := range []tiers.Kind{tiers.GPU, tiers.Host, tiers.SSD} {
		var rows int64
		var hits uint64
		for _, ts := range st.NodeTypes {
			rows, hits = rows+ts.Tier(k).RowsHeld, hits+ts.Tier(k).Hits
		}
		if got := st.Tier(k); got.RowsHeld != rows || got.Hits != hits {
			t.Errorf("tier %s: %d rows held, %d hits; the types' sums are %d, %d", k, got.RowsHeld, got.Hits, rows, hits)
		}
	}
	if st.Tier(tiers.Host).RowsHeld == 0 || st.Tier(tiers.Host).RowsHeld == st.NodeTypes["paper"].Tier(tiers.Host).RowsHeld {
		t.Errorf("host tier rows %d: want the rows of both types' host tiers", st.Tier(tiers.Host).RowsHeld)
	}
}
