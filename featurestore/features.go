package featurestore

import (
	"fmt"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/tiers/ssd"
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

// otherFeature is a feature the store serves from disk only (GatherFeature).
type otherFeature struct {
	info FeatureInfo
	tier *ssd.Tier
}

// otherFeaturePaths lists the stripes of every feature but the served one, for the store's file
// set; openOtherFeatures then serves them from files first.. of the set.
func (s *Store) otherFeaturePaths() []string {
	var paths []string
	for _, f := range s.featureSpecs() {
		if f.spec != s.spec {
			paths = append(paths, f.spec.Files...)
		}
	}
	return paths
}

type specOf struct {
	spec *dataset.FeatureSpec
	edge bool
}

// featureSpecs is every node feature, then every edge feature.
func (s *Store) featureSpecs() []specOf {
	var out []specOf
	nt := s.m.Nodes()
	for i := range nt.Features {
		out = append(out, specOf{&nt.Features[i], false})
	}
	if et := s.m.Edges(); et != nil {
		for i := range et.Features {
			out = append(out, specOf{&et.Features[i], true})
		}
	}
	return out
}

// openOtherFeatures makes the disk tier of every feature but the served one; their stripes are
// files first.. of s.files, in featureSpecs order.
func (s *Store) openOtherFeatures(first int) {
	s.others = map[string]*otherFeature{}
	for _, f := range s.featureSpecs() {
		info := featureInfo(f.spec, f.edge)
		if f.spec == s.spec {
			continue
		}
		s.others[f.spec.Name] = &otherFeature{info: info, tier: ssd.NewTierAt(f.spec, info.Rows, s.files, first)}
		first += len(f.spec.Files)
	}
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
// the store's IO stacks (verified with VerifyReads), uncached. An unknown name is dataset.ErrFeatureNotFound (as
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
	f := s.others[name]
	if f == nil {
		_, _, err := s.m.AnyFeature(name)
		return fmt.Errorf("featurestore: %w", err)
	}
	rb := f.info.RowBytes
	if int64(len(dst)) != int64(len(ids))*rb {
		return fmt.Errorf("featurestore: gather of %d rows of feature %q needs a %d-byte destination (%d bytes per row), got %d bytes", len(ids), name, int64(len(ids))*rb, rb, len(dst))
	}
	for i, id := range ids {
		if uint64(id) >= uint64(f.info.Rows) {
			return fmt.Errorf("featurestore: ids[%d] = %d is out of range [0, %d) (%s ids of %s feature %q): %w", i, id, f.info.Rows, f.info.Of, f.info.Of, name, ErrIDOutOfRange)
		}
	}
	if err := f.tier.Source(ids, dst); err != nil { // consecutive rows, a bounded chunk of reads at a time
		return fmt.Errorf("featurestore: gather feature %q: %w", name, err)
	}
	return nil
}
