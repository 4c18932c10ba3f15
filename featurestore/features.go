package featurestore

import (
	"encoding/json"

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
	Default  bool          `json:"default"` // the feature the type's tier stack serves (Options.Feature)
	// Shape is a row's shape when it has more than one dimension (Dim values, stored flat).
	Shape []int64 `json:"shape,omitempty"`
	// Metadata is what the feature's maker said of it (dataset.FeatureSpec.Metadata).
	Metadata map[string]json.RawMessage `json:"metadata,omitempty"`
	// SamplingGraph marks an attribute of the graph for sampling (dataset.FeatureSpec.SamplingGraph).
	SamplingGraph bool `json:"sampling_graph,omitempty"`
}

func featureInfo(spec *dataset.FeatureSpec, edge bool) FeatureInfo {
	of := "node"
	if edge {
		of = "edge"
	}
	return FeatureInfo{Name: spec.Name, Of: of, DType: spec.DType, Dim: spec.Dim, RowBytes: spec.RowBytes, Rows: spec.Count(), Scalar: spec.Scalar,
		Shape: spec.Shape, Metadata: spec.Metadata, SamplingGraph: spec.SamplingGraph}
}
