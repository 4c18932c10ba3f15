package planned

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/topology"
)

// SeedEdgesOfSplit is the stored edge split name of ss's edge type edgeType ("" for the only one) as
// the seed edges of a link plan with link: its pairs and labels (float32 labels must be whole
// numbers). Triplet negatives take positives without labels (PyG's triplet loader): a split whose
// labels are all 1 goes in without them, one holding other labels is refused naming the first.
func SeedEdgesOfSplit(ss *featurestore.Session, edgeType, name string, link featurestore.LinkOptions) (*SeedEdges, error) {
	sp, err := ss.ReadEdgeSplit(edgeType, name)
	if err != nil {
		return nil, err
	}
	se := &SeedEdges{EdgeType: edgeType, Src: sp.Src(), Dst: sp.Dst(), Link: link}
	switch sp.Info.LabelDType {
	case dataset.Int64:
		se.Labels = make([]int64, sp.Info.Count)
		for i := range se.Labels {
			se.Labels[i] = int64(binary.LittleEndian.Uint64(sp.Labels[8*i:]))
		}
	case dataset.Float32:
		se.Labels = make([]int64, sp.Info.Count)
		for i := range se.Labels {
			v := math.Float32frombits(binary.LittleEndian.Uint32(sp.Labels[4*i:]))
			if v != float32(int64(v)) {
				return nil, fmt.Errorf("planned: edge split %q: label %d is %v; link sampling takes whole-number labels: %w", name, i, v, featurestore.ErrInvalidOption)
			}
			se.Labels[i] = int64(v)
		}
	}
	if link.Negatives == topology.TripletNegatives && se.Labels != nil {
		for i, l := range se.Labels {
			if l != 1 {
				return nil, fmt.Errorf("planned: edge split %q with triplet negatives: seed edge %d has label %d; triplet negatives are drawn for positive seed edges only (labels all 1): %w", name, i, l, featurestore.ErrInvalidOption)
			}
		}
		se.Labels = nil
	}
	return se, nil
}
