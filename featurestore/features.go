package featurestore

import (
	"fmt"

	"slices"

	"github.com/tierfs/tierfs/dataset"
)

// FeatureInfo describes one feature of the dataset: node features have a row per node id, edge
// features a row per edge id (the ids Sample reports in EdgeIDs).
type FeatureInfo struct {
	Name     string        `json:"name"`
	Of       string        `json:"of"` // "node" or "edge"
	DType    dataset.DType `json:"dtype"`
	Dim      int64         `json:"dim"`
	RowBytes int64         `json:"row_bytes"`
	Rows     int64         `json:"rows"`
	Scalar   bool          `json:"scalar"`  // one value a row, read as a 1-D array
	Default  bool          `json:"default"` // the feature Gather serves (Options.Feature)
}

type specOf struct {
	spec *dataset.FeatureSpec
	edge bool
	key  string // its key in Session.features
}

// featureSpecs is every feature the store answers for: its node type's features, then, when the
// dataset has one edge type, that type's edge features.
func (s *Store) featureSpecs() []specOf {
	var out []specOf
	nt := s.nodeType()
	for i := range nt.Features {
		out = append(out, specOf{&nt.Features[i], false, featureKey(false, nt.Name, nt.Features[i].Name)})
	}
	if len(s.m.EdgeTypes) == 1 {
		et := &s.m.EdgeTypes[0]
		for i := range et.Features {
			out = append(out, specOf{&et.Features[i], true, featureKey(true, et.Key(), et.Features[i].Name)})
		}
	}
	return out
}

func featureInfo(spec *dataset.FeatureSpec, edge bool) FeatureInfo {
	of := "node"
	if edge {
		of = "edge"
	}
	return FeatureInfo{Name: spec.Name, Of: of, DType: spec.DType, Dim: spec.Dim, RowBytes: spec.RowBytes, Rows: spec.Count(), Scalar: spec.Scalar}
}

// Features describes every feature of the dataset, node features first.
func (s *Store) Features() []FeatureInfo {
	var out []FeatureInfo
	for _, f := range s.featureSpecs() {
		info := featureInfo(f.spec, f.edge)
		info.Default = f.spec == s.spec
		out = append(out, info)
	}
	return out
}

// GatherFeature writes the rows of ids of the feature name into dst (len(ids) × its row bytes):
// node ids for a node feature, edge ids for an edge feature. The feature the store serves (""
// or its name) goes through Gather and its tiers; every other feature is read from disk through
// the store's IO stacks (verified unless UnverifiedReads), uncached. An unknown name is dataset.ErrFeatureNotFound (as
// Open's), an id outside the feature's rows ErrIDOutOfRange.
func (s *Store) GatherFeature(name string, ids []int64, dst []byte) error {
	if name == "" || name == s.spec.Name {
		return s.Gather(ids, dst)
	}
	leave, err := s.enter()
	if err != nil {
		return err
	}
	defer leave()
	specs := s.featureSpecs()
	i := slices.IndexFunc(specs, func(f specOf) bool { return f.spec.Name == name })
	if i < 0 {
		_, _, err := s.m.AnyFeature(name)
		return fmt.Errorf("featurestore: %w", err)
	}
	return s.sess.gatherFromDisk(specs[i].key, featureInfo(specs[i].spec, specs[i].edge), ids, dst)
}
