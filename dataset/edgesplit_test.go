package dataset

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestEdgeSplitValidate breaks one thing at a time in the golden v6 manifest's edge splits and
// checks that Validate names it.
func TestEdgeSplitValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(m *Manifest)
		want   string
	}{
		{"older version", func(m *Manifest) { m.Version = 5 }, "format version 6 introduced"},
		{"unknown split name", func(m *Manifest) {
			et := m.Edges()
			et.Splits["holdout"] = et.Splits["val"]
			delete(et.Splits, "val")
		}, `edge split "holdout"`},
		{"seeds short", func(m *Manifest) {
			s := m.Edges().Splits["train"]
			s.Seeds.Count = 1000
			m.Edges().Splits["train"] = s
		}, `edge split "train" seeds: file "edge_split.train.seeds" holds`},
		{"labels dtype", func(m *Manifest) { m.Edges().Splits["val"].Labels.DType = Int32 }, "want int64 or float32"},
		{"negatives per seed", func(m *Manifest) { m.Edges().Splits["test"].NegDst.PerSeed = 0 }, "per_seed 0"},
		{"negatives short", func(m *Manifest) { m.Edges().Splits["test"].NegDst.PerSeed = 100 }, `negatives: file "edge_split.test.neg_dst" holds`},
		{"unlisted file", func(m *Manifest) { m.Edges().Splits["val"].Labels.File = "nope" }, `refers to file "nope"`},
		{"shared file", func(m *Manifest) { m.Edges().Splits["val"].Labels.File = "labels.bin" }, `both refer to file "labels.bin"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Load(filepath.Join("testdata", "golden", "v6"))
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			tc.break_(m)
			if err := m.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}
