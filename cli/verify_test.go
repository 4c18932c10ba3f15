package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/featurestore/featurestoretest"
)

// TestVerifyRefusesLayoutEdits (issue 43): each edit of a value that decides how a file's bytes
// are read, made to the golden dataset of version 9 with the manifest's hash recomputed, makes
// `tierfs verify` and featurestore.Open fail with ErrCorrupt naming the file and the value; the
// dataset as it was verifies and opens.
func TestVerifyRefusesLayoutEdits(t *testing.T) {
	quiet(t)
	golden := filepath.Join("..", "dataset", "testdata", "golden", "v9")
	for _, tc := range []struct {
		what       string
		edit       func(m *dataset.Manifest)
		file, want string
	}{
		{"nothing", func(*dataset.Manifest) {}, "", ""},
		{"feature dtype float32 to int32", func(m *dataset.Manifest) { m.Nodes().Features[0].DType = dataset.Int32 }, "features.x.0.bin", "dtype=int32"},
		{"feature dim 3 to 6", func(m *dataset.Manifest) {
			x := &m.Nodes().Features[0] // rows of 24 bytes, and the file's content said to hold them
			x.Dim, x.RowBytes = 6, 24
			x.RowsPerBlock = int64(m.BlockSize) / x.RowBytes
			x.StripeRows = x.RowsPerBlock * 1000
			m.File(x.Files[0]).ContentBytes = 5 * 24
		}, "features.x.0.bin", "dim=6"},
		{"node count 5 to 4", func(m *dataset.Manifest) { m.Nodes().Count = 4 }, "", "nodes=4"},
		{"edge split count 3 to 2", func(m *dataset.Manifest) {
			s := m.Edges().Splits["train"]
			s.Seeds.Count--
			m.Edges().Splits["train"] = s
		}, "edge_split.train.", "count=2"},
		{"num_classes 3 to 2", func(m *dataset.Manifest) { m.Nodes().Labels.NumClasses = 2 }, "labels.bin", "num_classes=2"},
	} {
		dir := filepath.Join(t.TempDir(), "v9")
		if err := os.CopyFS(dir, os.DirFS(golden)); err != nil {
			t.Fatal(err)
		}
		featurestoretest.EditManifest(t, dir, tc.edit)
		verr := execute([]string{"verify", dir})
		s, oerr := featurestore.Open(dir, featurestore.Options{})
		if tc.want == "" {
			if verr != nil || oerr != nil {
				t.Fatalf("the golden dataset: verify %v, open %v", verr, oerr)
			}
			s.Close()
			continue
		}
		for name, err := range map[string]error{"tierfs verify": verr, "open": oerr} {
			if !dataset.IsCorrupt(err) || !strings.Contains(err.Error(), " of "+tc.file) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s after %s: %v, want ErrCorrupt naming %s… and %q", name, tc.what, err, tc.file, tc.want)
			}
		}
		if oerr == nil {
			s.Close()
		}
	}
}
