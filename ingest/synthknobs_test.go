package ingest

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// synthReport makes a dataset from o (features off) and measures it with one small batch config.
func synthReport(t *testing.T, o SynthOptions, community int64) *GraphReport {
	t.Helper()
	o.Out = filepath.Join(t.TempDir(), "ds")
	if _, err := Synth(o); err != nil {
		t.Fatal(err)
	}
	loadVerified(t, o.Out)
	r, err := ReportGraph(o.Out, ReportOptions{Fanouts: [][]int{{10, 5}}, BatchSize: 256, Batches: 2, Seed: 1, CommunitySize: community})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSynthDegreeExponent: a smaller exponent gives hubs with more edges and a smaller fitted
// exponent; the fit lands near the asked value; the same options give the same bytes.
func TestSynthDegreeExponent(t *testing.T) {
	smallChunks(t)
	base := SynthOptions{Nodes: 20000, AvgDegree: 10, Seed: 5}
	var reports []*GraphReport
	for _, gamma := range []float64{2.2, 3.0} {
		o := base
		o.DegreeExponent = gamma
		r := synthReport(t, o, 0)
		t.Logf("gamma %.1f: max %d p50 %d p99 %d, fitted %.2f from %d", gamma, r.MaxDegree, r.P50Degree, r.P99Degree, r.Exponent, r.ExponentMin)
		if math.Abs(r.Exponent-gamma) > 0.35 {
			t.Errorf("gamma %.1f: fitted exponent %.2f is not within 0.35", gamma, r.Exponent)
		}
		if r.Edges != 200000 {
			t.Errorf("gamma %.1f: %d edges, want 200000", gamma, r.Edges)
		}
		reports = append(reports, r)
	}
	skewed, flat := reports[0], reports[1]
	if skewed.MaxDegree < 3*flat.MaxDegree || skewed.Exponent >= flat.Exponent {
		t.Errorf("gamma 2.2 gives max %d, fit %.2f; gamma 3.0 gives max %d, fit %.2f: want far larger hubs and a smaller fit at 2.2",
			skewed.MaxDegree, skewed.Exponent, flat.MaxDegree, flat.Exponent)
	}
	// Hubs repeat in sampled neighborhoods, so a skewed graph's batches touch fewer nodes.
	if skewed.Batches[0].Distinct >= flat.Batches[0].Distinct {
		t.Errorf("batches touch %.0f nodes at gamma 2.2, %.0f at 3.0: want fewer on the skewed graph", skewed.Batches[0].Distinct, flat.Batches[0].Distinct)
	}
	// Deterministic, and parallel chunks do not change the bytes.
	o := base
	o.DegreeExponent, o.Locality = 2.5, 0.3
	var hashes []map[string]string
	for range 2 {
		o.Out = filepath.Join(t.TempDir(), "ds")
		if _, err := Synth(o); err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, fileHashes(t, o.Out))
	}
	if hashes[0]["indices.bin"] != hashes[1]["indices.bin"] || hashes[0]["indptr.bin"] != hashes[1]["indptr.bin"] {
		t.Error("the same power-law options gave different topology files")
	}
}

// TestSynthLocality: the fraction of edges inside a community is close to the locality asked
// (plus the chance that a global edge lands in the same block), for both generators; with a
// degree exponent, locality keeps the fitted exponent (the largest hubs shrink: a block's
// in-edges come from its own sources).
func TestSynthLocality(t *testing.T) {
	smallChunks(t)
	const nodes, community = 20000, 256
	for _, gamma := range []float64{0, 2.5} {
		var first *GraphReport
		for _, p := range []float64{0, 0.5, 0.9, 1} {
			o := SynthOptions{Nodes: nodes, AvgDegree: 8, Seed: 9, DegreeExponent: gamma, Locality: p, CommunitySize: community}
			r := synthReport(t, o, community)
			want := p + (1-p)*community/nodes // a global edge's chance of landing in the block
			t.Logf("gamma %v locality %.1f: intra %.3f (want about %.3f), max degree %d, fit %.2f, %0.f nodes per batch",
				gamma, p, r.Intra, want, r.MaxDegree, r.Exponent, r.Batches[0].Distinct)
			if math.Abs(r.Intra-want) > 0.02 {
				t.Errorf("gamma %v locality %.1f: %.3f of edges are intra-community, want %.3f +- 0.02", gamma, p, r.Intra, want)
			}
			if first == nil {
				first = r
			} else if gamma > 0 && math.Abs(r.Exponent-first.Exponent) > 0.35 {
				t.Errorf("gamma %v locality %.1f: fit %.2f; without locality %.2f: locality changed the exponent",
					gamma, p, r.Exponent, first.Exponent)
			}
		}
	}
}

// TestSynthPresets: every preset sets what its table says, scales the node count keeping the
// average degree, and generates (scaled down) a graph with its shape.
func TestSynthPresets(t *testing.T) {
	if got := strings.Join(SynthPresetNames(), " "); got != "igb-medium igb-small ogbn-papers100M ogbn-products" {
		t.Fatalf("presets %s", got)
	}
	p, err := SynthPreset("ogbn-products", 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.Nodes != 2_449_029 || p.AvgDegree != 50.52 || p.Dim != 100 || p.Classes != 47 || p.TrainFrac != 0.0803 ||
		p.DegreeExponent == 0 || p.Locality == 0 || p.CommunitySize == 0 {
		t.Errorf("ogbn-products: %+v", p)
	}
	for name, want := range map[string]struct {
		nodes   int64
		deg     float64
		dim     int64
		classes int
		train   float64
	}{
		"ogbn-papers100M": {111_059_956, 14.55, 128, 172, 0.01087},
		"igb-small":       {1_000_000, 12.07, 1024, 19, 0.6},
		"igb-medium":      {10_000_000, 12.01, 1024, 19, 0.6},
	} {
		p, err := SynthPreset(name, 1)
		if err != nil {
			t.Fatal(err)
		}
		if p.Nodes != want.nodes || p.AvgDegree != want.deg || p.Dim != want.dim || p.Classes != want.classes || p.TrainFrac != want.train {
			t.Errorf("%s: %+v, want %+v", name, p, want)
		}
	}
	small, err := SynthPreset("ogbn-papers100M", 1e-4)
	if err != nil {
		t.Fatal(err)
	}
	if small.Nodes != 11106 || small.AvgDegree != 14.55 {
		t.Errorf("papers100M at 1e-4: %d nodes, average degree %v", small.Nodes, small.AvgDegree)
	}
	// Scaled down, a preset generates and its shape shows.
	small.Dim, small.Seed = 0, 3
	r := synthReport(t, small, 0)
	if r.Nodes != 11106 || r.Edges != int64(math.Round(11106*14.55)) || r.Intra < small.Locality || r.MaxDegree < 20*15 {
		t.Errorf("papers100M at 1e-4: %+v", r)
	}
}

func TestSynthKnobErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		opt  SynthOptions
		want string
	}{
		{SynthOptions{Nodes: 10, Locality: 1.5, Out: dir}, "locality 1.5 is out of range"},
		{SynthOptions{Nodes: 10, Locality: -0.1, Out: dir}, "locality -0.1 is out of range"},
		{SynthOptions{Nodes: 10, Locality: math.NaN(), Out: dir}, "locality NaN is out of range"},
		{SynthOptions{Nodes: 10, DegreeExponent: 1.2, Out: dir}, "degree-exponent 1.2 is out of range"},
		{SynthOptions{Nodes: 10, DegreeExponent: -2, Out: dir}, "degree-exponent -2 is out of range"},
		{SynthOptions{Nodes: 10, Locality: 0.5, CommunitySize: 1, Out: dir}, "community-size 1 is out of range"},
	} {
		if _, err := Synth(c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.opt, err, c.want)
		}
	}
	if _, err := SynthPreset("ogbn-arxiv", 1); err == nil ||
		!strings.Contains(err.Error(), `unknown preset "ogbn-arxiv" (presets: igb-medium, igb-small, ogbn-papers100M, ogbn-products)`) {
		t.Errorf("unknown preset: %v", err)
	}
	for _, s := range []float64{0, -1, math.NaN(), 1e-9} {
		if _, err := SynthPreset("igb-small", s); err == nil || !strings.Contains(err.Error(), "scale") {
			t.Errorf("scale %v: %v", s, err)
		}
	}
}

func TestFitPowerLaw(t *testing.T) {
	// A discrete power law with gamma 2.5 drawn by inversion: the fit finds it.
	var deg []int64
	for i := range 200000 {
		u := (float64(i) + 0.5) / 200000
		deg = append(deg, int64(math.Floor(0.5+(2-0.5)*math.Pow(1-u, -1/1.5))))
	}
	sortInt64s(deg)
	g, kmin, tail := fitPowerLaw(deg, deg[len(deg)*99/100])
	t.Logf("gamma %.3f from %d (%.2f of nodes)", g, kmin, tail)
	if math.Abs(g-2.5) > 0.1 {
		t.Errorf("fitted %.3f, want 2.5 +- 0.1", g)
	}
}

func sortInt64s(a []int64) { slices.Sort(a) }
