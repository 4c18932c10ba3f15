package dataset

import (
	"fmt"
	"math"
	"slices"
)

// EdgeSplitNames are the names an edge split may have (format version 6): the seed edges PyG's
// RandomLinkSplit, OGB's get_edge_split and GraphBolt's link tasks give for training,
// validation and testing.
var EdgeSplitNames = []string{"train", "val", "test"}

// EdgeSplit is one split of an edge type's seed edges (format version 6): Count (src, dst) pairs,
// src ids of the edge type's source node type and dst ids of its destination node type, with
// optional labels and optional negative destination candidates per seed. Seed edges need not be
// edges of the graph (negatives of PyG's RandomLinkSplit are not).
type EdgeSplit struct {
	// Seeds holds 2×Count int64s: the Count src ids, then the Count dst ids (PyG's
	// edge_label_index of shape [2, Count], row-major).
	Seeds IDsSpec `json:"seeds"`
	// Labels are Count labels (PyG's edge_label, GraphBolt's labels), int64 or float32; nil when
	// the input had none (every seed a positive).
	Labels *ArraySpec `json:"labels,omitempty"`
	// NegDst holds Count×PerSeed int64 dst ids: seed i's negative destination candidates at
	// [i·PerSeed, (i+1)·PerSeed) (OGB's target_node_neg); nil when the input had none.
	NegDst *NegativesSpec `json:"neg_dst,omitempty"`
}

// NegativesSpec is a row-major [count, PerSeed] int64 array of node ids.
type NegativesSpec struct {
	ArraySpec
	PerSeed int64 `json:"per_seed"`
}

// EdgeSplitFiles names the files of split name of an edge type whose files lie in typeDir (""
// at the top level of a one-type dataset): seeds, labels and negatives.
func EdgeSplitFiles(typeDir, name string) (seeds, labels, negDst string) {
	p := "edge_split." + name
	if typeDir != "" {
		p = typeDir + "/" + p
	}
	return p + ".seeds", p + ".labels", p + ".neg_dst"
}

// SplitNames lists the edge type's splits, sorted.
func (et *EdgeType) SplitNames() []string {
	names := make([]string, 0, len(et.Splits))
	for n := range et.Splits {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// validateEdgeSplits checks et's splits; need is Validate's file check, of prefixes the errors.
func (m *Manifest) validateEdgeSplits(et *EdgeType, of string, need func(what, path string, minContent int64) error, files map[string]*File) error {
	if len(et.Splits) > 0 && m.Version < 6 {
		return fmt.Errorf("manifest version %d has edge splits, which format version 6 introduced", m.Version)
	}
	for _, name := range et.SplitNames() {
		s := et.Splits[name]
		what := fmt.Sprintf("%sedge split %q", of, name)
		if !slices.Contains(EdgeSplitNames, name) {
			return fmt.Errorf("manifest %s: edge splits are named %v", what, EdgeSplitNames)
		}
		if s.Seeds.DType != Int64 || s.Seeds.Count < 0 || s.Seeds.Count > math.MaxInt64/16 {
			return fmt.Errorf("manifest %s seeds: dtype %q count %d; want int64 and a count >= 0", what, s.Seeds.DType, s.Seeds.Count)
		}
		paths := []string{s.Seeds.File}
		if err := need(what+" seeds", s.Seeds.File, 2*8*s.Seeds.Count); err != nil {
			return err
		}
		if l := s.Labels; l != nil {
			if l.DType != Int64 && l.DType != Float32 {
				return fmt.Errorf("manifest %s labels: dtype %q; want int64 or float32", what, l.DType)
			}
			if err := need(what+" labels", l.File, s.Seeds.Count*int64(l.DType.Size())); err != nil {
				return err
			}
			paths = append(paths, l.File)
		}
		if n := s.NegDst; n != nil {
			if n.DType != Int64 || n.PerSeed < 1 || n.PerSeed > math.MaxInt64/16/max(1, s.Seeds.Count) {
				return fmt.Errorf("manifest %s negatives: dtype %q per_seed %d; want int64 and per_seed >= 1", what, n.DType, n.PerSeed)
			}
			if err := need(what+" negatives", n.File, 8*s.Seeds.Count*n.PerSeed); err != nil {
				return err
			}
			paths = append(paths, n.File)
		}
		for _, p := range paths {
			if files[p].InPlace {
				return fmt.Errorf("manifest %s file %q is marked in_place; only feature files may be", what, p)
			}
		}
	}
	return nil
}
