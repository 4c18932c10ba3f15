package planned

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	fst "github.com/tierfs/tierfs/featurestore/featurestoretest"
)

// TestInPlacePlannedEpochs plans and serves epochs of in-place features (rows of 4 B, 100 B, odd
// sizes and over 4 KiB, at a header offset no block multiple, in a file whose last block is
// partial) on each backend with a host tier: the packed rows are read from the in-place file,
// and every batch's rows equal the rows as written (featurestore's TestInPlaceGathers reads
// them through every other path).
func TestInPlacePlannedEpochs(t *testing.T) {
	rng := newRand(t)
	for _, sh := range []struct {
		dtype dataset.DType
		dim   int64
	}{{dataset.Float32, 1}, {dataset.Int8, 100}, {dataset.Int16, 51}, {dataset.Float64, 3}, {dataset.Float32, 1100}, {dataset.Uint8, 4099}} {
		count := int64(200 + rng.IntN(900))
		d := fst.WriteInPlaceDataset(t, sh.dtype, count, sh.dim, rng)
		rb := d.RowBytes
		for _, backend := range backends(t) {
			name := fmt.Sprintf("%s_x%d/%s/host", sh.dtype, sh.dim, backend)
			s, err := featurestore.Open(d.Dir, featurestore.Options{HostCacheBytes: count / 3 * (rb + 40), IOBackend: backend})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			o := epochOpts(t, d.Data, 1)
			if _, err := PlanEpochs(s.Session(), o); err != nil {
				t.Fatalf("%s: PlanEpochs: %v", name, err)
			}
			p, _, err := OpenEpochs(s.Session(), o)
			if err != nil {
				t.Fatalf("%s: OpenEpochs: %v", name, err)
			}
			for b := range BatchesPerEpoch(len(d.Train), o.BatchSize, o.DropLast) {
				got, err := oneLoad(p, 0, b)
				if err != nil {
					t.Fatalf("%s: epoch batch %d: %v", name, b, err)
				}
				if !bytes.Equal(got.Rows, d.Want(got.Sample.Nodes)) {
					t.Fatalf("%s: planned batch %d: rows differ", name, b)
				}
			}
			p.Close()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
