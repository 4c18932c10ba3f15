package featurestore

import (
	"fmt"

	"github.com/tierfs/tierfs/dataset"
)

// EdgeSplitInfo describes one edge split (format version 6) of an edge type: Count seed edges,
// the dtype of their labels (dataset.Int64 or dataset.Float32; "" when the split has none) and
// the negative destinations per seed (0 when it has none).
type EdgeSplitInfo struct {
	Count      int64         `json:"count"`
	LabelDType dataset.DType `json:"labels,omitempty"`
	NegPerSeed int64         `json:"neg_per_seed"`
}

// EdgeSplit is one edge split as read: EdgeLabelIndex holds the Count src ids then the Count dst
// ids (PyG's edge_label_index [2, Count], row-major; src ids of the edge type's source node type,
// dst ids of its destination node type); Labels the Count labels, little-endian of
// Info.LabelDType (nil when none); NegDst seed i's negative destinations at [i·NegPerSeed,
// (i+1)·NegPerSeed) (nil when none).
type EdgeSplit struct {
	Info           EdgeSplitInfo
	EdgeLabelIndex []int64
	Labels         []byte
	NegDst         []int64
}

// Src and Dst are the seed edges' endpoints (views into EdgeLabelIndex).
func (s *EdgeSplit) Src() []int64 { return s.EdgeLabelIndex[:s.Info.Count] }
func (s *EdgeSplit) Dst() []int64 { return s.EdgeLabelIndex[s.Info.Count:] }

// edgeSplitSpec is split name of edge type etype ("" for the only one); errors wrap ErrNotFound
// or dataset.ErrTypeNotFound and list what the dataset has.
func (ss *Session) edgeSplitSpec(etype, name string) (*dataset.EdgeType, dataset.EdgeSplit, error) {
	e, err := ss.edgeTypeOf(etype)
	if err != nil {
		return nil, dataset.EdgeSplit{}, err
	}
	et := ss.edges[e].spec
	sp, ok := et.Splits[name]
	if !ok {
		return et, sp, fmt.Errorf("featurestore: dataset %s has no edge split %q of edge type %q (it has %v): %w", ss.m.Dir(), name, et.Key(), et.SplitNames(), ErrNotFound)
	}
	return et, sp, nil
}

func infoOf(sp dataset.EdgeSplit) EdgeSplitInfo {
	info := EdgeSplitInfo{Count: sp.Seeds.Count}
	if sp.Labels != nil {
		info.LabelDType = sp.Labels.DType
	}
	if sp.NegDst != nil {
		info.NegPerSeed = sp.NegDst.PerSeed
	}
	return info
}

// EdgeSplits describes every edge split of edge type etype ("" for the only one), by name.
func (ss *Session) EdgeSplits(etype string) (map[string]EdgeSplitInfo, error) {
	e, leave, err := ss.enterType(etype, ss.edgeTypeOf)
	if err != nil {
		return nil, err
	}
	defer leave()
	out := map[string]EdgeSplitInfo{}
	for name, sp := range ss.edges[e].spec.Splits {
		out[name] = infoOf(sp)
	}
	return out, nil
}

// EdgeSplitInfo describes split name of edge type etype ("" for the only one).
func (ss *Session) EdgeSplitInfo(etype, name string) (EdgeSplitInfo, error) {
	leave, err := ss.enter()
	if err != nil {
		return EdgeSplitInfo{}, err
	}
	defer leave()
	_, sp, err := ss.edgeSplitSpec(etype, name)
	return infoOf(sp), err
}

// ReadEdgeSplitInto reads split name of edge type etype into the caller's buffers, each nil to
// skip it or of exactly its size: edgeLabelIndex 2·Count ids, labels Count × the label dtype's
// size bytes, negDst Count·NegPerSeed ids (see EdgeSplit). Reads go through the session's IO
// stacks (checked against the block checksums unless UnverifiedReads).
func (ss *Session) ReadEdgeSplitInto(etype, name string, edgeLabelIndex []int64, labels []byte, negDst []int64) (EdgeSplitInfo, error) {
	leave, err := ss.enter()
	if err != nil {
		return EdgeSplitInfo{}, err
	}
	defer leave()
	et, sp, err := ss.edgeSplitSpec(etype, name)
	if err != nil {
		return EdgeSplitInfo{}, err
	}
	info := infoOf(sp)
	of := fmt.Sprintf("edge split %q of edge type %q", name, et.Key())
	type part struct {
		what string
		file string
		dst  []byte
		want int64 // bytes
		has  bool
	}
	parts := []part{{"edge_label_index", sp.Seeds.File, dataset.BytesOf(edgeLabelIndex), 16 * info.Count, edgeLabelIndex != nil}}
	if sp.Labels != nil {
		parts = append(parts, part{"labels", sp.Labels.File, labels, info.Count * int64(sp.Labels.DType.Size()), labels != nil})
	} else if labels != nil {
		return info, fmt.Errorf("featurestore: %s has no labels (every seed edge a positive), but a labels buffer was given: %w", of, ErrNotFound)
	}
	if sp.NegDst != nil {
		parts = append(parts, part{"negatives", sp.NegDst.File, dataset.BytesOf(negDst), 8 * info.Count * info.NegPerSeed, negDst != nil})
	} else if negDst != nil {
		return info, fmt.Errorf("featurestore: %s has no negative destinations, but a buffer for them was given: %w", of, ErrNotFound)
	}
	for _, p := range parts {
		if p.has && int64(len(p.dst)) != p.want {
			return info, fmt.Errorf("featurestore: %s: the %s buffer holds %d bytes, want %d", of, p.what, len(p.dst), p.want)
		}
	}
	for _, p := range parts {
		if p.has && p.want > 0 {
			if err := ss.readFile(p.file, p.dst); err != nil {
				return info, fmt.Errorf("featurestore: %s %s: %w", of, p.what, err)
			}
		}
	}
	return info, nil
}

// ReadEdgeSplit reads split name ("train", "val", "test") of edge type etype ("" for the only
// one): the seed edges, their labels and negatives as the dataset holds them. A split the
// dataset lacks is ErrNotFound, an unknown edge type dataset.ErrTypeNotFound.
func (ss *Session) ReadEdgeSplit(etype, name string) (*EdgeSplit, error) {
	info, err := ss.EdgeSplitInfo(etype, name)
	if err != nil {
		return nil, err
	}
	s := &EdgeSplit{Info: info, EdgeLabelIndex: make([]int64, 2*info.Count)}
	if info.LabelDType != "" {
		s.Labels = make([]byte, info.Count*int64(info.LabelDType.Size()))
	}
	if info.NegPerSeed > 0 {
		s.NegDst = make([]int64, info.Count*info.NegPerSeed)
	}
	if _, err := ss.ReadEdgeSplitInto(etype, name, s.EdgeLabelIndex, s.Labels, s.NegDst); err != nil {
		return nil, err
	}
	return s, nil
}
