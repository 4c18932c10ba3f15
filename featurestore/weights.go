package featurestore

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/topology"
)

// edgeWeights reads edge feature name of every edge type that has it, by edge id, as a weighted
// sampler's weights (nil for a type without it; nil for name ""). The feature holds one value an
// edge of a float32, float64 or integer dtype, each finite and >= 0; none of the edge types
// having it, another shape or dtype, or a bad weight is an *OptionError naming it.
func (ss *Session) edgeWeights(name string) ([][]float32, error) {
	if name == "" {
		return nil, nil
	}
	out := make([][]float32, len(ss.edges))
	found := false
	for e, es := range ss.edges {
		k := slices.IndexFunc(es.spec.Features, func(f dataset.FeatureSpec) bool { return f.Name == name })
		if k < 0 {
			continue
		}
		found = true
		spec := &es.spec.Features[k]
		if spec.Dim != 1 {
			return nil, &OptionError{Option: "weight", Value: name, Want: fmt.Sprintf("an edge feature of one value an edge (%q of edge type %q has %d)", name, es.spec.Key(), spec.Dim)}
		}
		n := spec.Count()
		ids := make([]int64, n)
		for i := range ids {
			ids[i] = int64(i)
		}
		raw := make([]byte, n*spec.RowBytes)
		if err := ss.GatherEdgeFeature(es.spec.Key(), name, ids, raw); err != nil {
			return nil, err
		}
		w, err := weightsOf(spec.DType, raw, int(n))
		if err != nil {
			return nil, &OptionError{Option: "weight", Value: name, Want: fmt.Sprintf("edge weights of edge type %q: %v", es.spec.Key(), err)}
		}
		if err := topology.CheckWeights(w); err != nil {
			return nil, &OptionError{Option: "weight", Value: name, Want: fmt.Sprintf("weights of edge type %q that are finite and >= 0 (%v)", es.spec.Key(), err)}
		}
		out[e] = w
	}
	if !found {
		return nil, &OptionError{Option: "weight", Value: name, Want: "an edge feature of the dataset: " + ss.edgeFeatureList()}
	}
	return out, nil
}

// weightsOf decodes n little-endian values of dtype as float32.
func weightsOf(dtype dataset.DType, raw []byte, n int) ([]float32, error) {
	w := make([]float32, n)
	size := len(raw) / max(n, 1)
	for i := range w {
		b := raw[i*size : (i+1)*size]
		switch dtype {
		case dataset.Float32:
			w[i] = math.Float32frombits(binary.LittleEndian.Uint32(b))
		case dataset.Float64:
			w[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(b)))
		case dataset.Int8:
			w[i] = float32(int8(b[0]))
		case dataset.Uint8:
			w[i] = float32(b[0])
		case dataset.Int16:
			w[i] = float32(int16(binary.LittleEndian.Uint16(b)))
		case dataset.Int32:
			w[i] = float32(int32(binary.LittleEndian.Uint32(b)))
		case dataset.Int64:
			w[i] = float32(int64(binary.LittleEndian.Uint64(b)))
		default:
			return nil, fmt.Errorf("dtype %s is not one weights are read from (float32, float64, integers)", dtype)
		}
	}
	return w, nil
}

// edgeFeatureList names every edge type's features, for errors.
func (ss *Session) edgeFeatureList() string {
	var names []string
	for _, es := range ss.edges {
		for _, f := range es.spec.Features {
			names = append(names, es.spec.Key()+"/"+f.Name)
		}
	}
	return orNone(names)
}
