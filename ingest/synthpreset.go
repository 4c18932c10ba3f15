package ingest

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// A synthPreset is a synthetic graph shaped like a public dataset: its full-size node count,
// average in-degree (directed edges / nodes, as stored), feature dim, classes and split
// fractions are the real dataset's; its skew and locality are chosen (the real graphs' values
// are not published), see docs/synth.md.
type synthPreset struct {
	nodes                        int64
	avgDegree                    float64
	dim                          int64
	classes                      int
	trainFrac, valFrac, testFrac float64
	exponent, locality           float64
	community                    int64
}

var synthPresets = map[string]synthPreset{
	// 2,449,029 nodes, 61,859,140 undirected edges stored both ways (123,718,280), 100-dim
	// features, 47 classes, sales-rank split 196,615 / 39,323 / 2,213,091.
	"ogbn-products": {nodes: 2_449_029, avgDegree: 50.52, dim: 100, classes: 47,
		trainFrac: 0.0803, valFrac: 0.0161, testFrac: 0.9036,
		exponent: 2.4, locality: 0.6, community: 1024},
	// 111,059,956 nodes, 1,615,685,872 directed citations, 128-dim, 172 classes, split
	// 1,207,179 / 125,265 / 214,338 (the rest unlabelled).
	"ogbn-papers100M": {nodes: 111_059_956, avgDegree: 14.55, dim: 128, classes: 172,
		trainFrac: 0.01087, valFrac: 0.00113, testFrac: 0.00193,
		exponent: 2.7, locality: 0.5, community: 1024},
	// IGB homogeneous small: 1,000,000 papers, 12,070,502 citations, 1024-dim, 19 classes,
	// IGB's 60/20/20 split.
	"igb-small": {nodes: 1_000_000, avgDegree: 12.07, dim: 1024, classes: 19,
		trainFrac: 0.6, valFrac: 0.2, testFrac: 0.2,
		exponent: 2.7, locality: 0.5, community: 1024},
	// IGB homogeneous medium: 10,000,000 papers, 120,077,694 citations.
	"igb-medium": {nodes: 10_000_000, avgDegree: 12.01, dim: 1024, classes: 19,
		trainFrac: 0.6, valFrac: 0.2, testFrac: 0.2,
		exponent: 2.7, locality: 0.5, community: 1024},
}

// SynthPresetNames lists the presets SynthPreset knows, sorted.
func SynthPresetNames() []string { return slices.Sorted(maps.Keys(synthPresets)) }

// presetOf is the preset name of presets (kind "" or "heterogeneous ") checked with a scale in
// (0, 1000]; of adds to the scale's error what the factor scales.
func presetOf[P any](presets map[string]P, kind, name string, scale float64, of func(P) string) (P, error) {
	p, ok := presets[name]
	if !ok {
		return p, fmt.Errorf("ingest: synth: unknown %spreset %q (presets: %s)", kind, name, strings.Join(slices.Sorted(maps.Keys(presets)), ", "))
	}
	if !(scale > 0 && scale <= 1000) {
		return p, fmt.Errorf("ingest: synth: scale %v is out of range: want a factor in (0, 1000]%s", scale, of(p))
	}
	return p, nil
}

// SynthPreset returns the options of preset name with its node count times scale (1 for the
// real size; the average degree stays, so edges scale with it). Front ends start from these and
// set the options the user gave explicitly; Out and Seed are left zero.
func SynthPreset(name string, scale float64) (SynthOptions, error) {
	p, err := presetOf(synthPresets, "", name, scale, func(p synthPreset) string { return fmt.Sprintf(" of the preset's %d nodes", p.nodes) })
	if err != nil {
		return SynthOptions{}, err
	}
	nodes := int64(math.Round(float64(p.nodes) * scale))
	if nodes < 2 {
		return SynthOptions{}, fmt.Errorf("ingest: synth: scale %v leaves preset %s %d node(s); want at least 2", scale, name, nodes)
	}
	return SynthOptions{
		Nodes: nodes, AvgDegree: p.avgDegree, Dim: p.dim, Classes: p.classes,
		TrainFrac: p.trainFrac, ValFrac: p.valFrac, TestFrac: p.testFrac,
		DegreeExponent: p.exponent, Locality: p.locality, CommunitySize: p.community,
	}, nil
}
