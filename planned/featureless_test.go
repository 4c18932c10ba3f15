package planned

import (
	"errors"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	fst "github.com/tierfs/tierfs/featurestore/featurestoretest"
)

// TestPlanEpochsWithoutNodeFeatures: the store of a dataset without node features (PyG's Data
// without x) has no rows to pack, so planning its epochs is an error wrapping
// ErrFeatureNotFound, as every store call that reads node feature rows is (featurestore's
// TestOpenWithoutNodeFeatures).
func TestPlanEpochsWithoutNodeFeatures(t *testing.T) {
	fd := fst.WriteFeatureless(t, newRand(t), 200, 1500)
	s := mustOpen(t, fd.Bare, featurestore.Options{HostCacheBytes: 1 << 20})
	if _, err := PlanEpochs(s.Session(), EpochOptions{}); !errors.Is(err, dataset.ErrFeatureNotFound) {
		t.Errorf("PlanEpochs: %v", err)
	}
}
