package dataset

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommitRefusesLabelsOutsideClasses: a writer whose num_classes does not hold a label (one
// at or above it, or below -1) is refused at Commit, naming the node and its label, and leaves no
// manifest; -1 (unlabelled) and the labels below num_classes commit.
func TestCommitRefusesLabelsOutsideClasses(t *testing.T) {
	for _, tc := range []struct {
		labels []int64
		want   string // "" commits
	}{
		{[]int64{0, 2, -1, 1}, ""},
		{[]int64{0, 2, -1, 3}, "node 3 has label 3"},
		{[]int64{0, -2, 1, 1}, "node 1 has label -2"},
	} {
		dir := t.TempDir()
		if err := WriteInt64s(nil, filepath.Join(dir, "labels.bin"), tc.labels); err != nil {
			t.Fatal(err)
		}
		m := &Manifest{NodeTypes: []NodeType{{Name: "node", Count: int64(len(tc.labels)), Labels: &LabelSpec{ArraySpec{"labels.bin", Int64}, 3}}}}
		m.SetDir(dir)
		err := Commit(m, []string{"labels.bin"}, "test", nil)
		if tc.want == "" {
			if err != nil {
				t.Fatalf("labels %v in 3 classes: %v", tc.labels, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "num_classes 3") {
			t.Fatalf("labels %v in 3 classes: Commit said %v, want it refused naming %q", tc.labels, err, tc.want)
		}
		if _, err := os.Stat(filepath.Join(dir, ManifestName)); !os.IsNotExist(err) {
			t.Fatalf("a refused Commit wrote a manifest (%v)", err)
		}
	}
}

// TestVerifyLabelsAgainstNumClasses: num_classes edited below the largest label of a dataset of
// version 8, which does not bind it (its hash recomputed), is a problem Verify reports, naming the
// node and its label, and Upgrade refuses to bind it.
func TestVerifyLabelsAgainstNumClasses(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "golden", "v8"), dir)
	path := filepath.Join(dir, ManifestName)
	m, err := Parse(mustRead(t, path))
	if err != nil {
		t.Fatal(err)
	}
	m.Nodes().Labels.NumClasses = 2 // the golden labels are 0, 1, -1, 2, 1
	data, _ := json.Marshal(m)
	if err := os.WriteFile(path, rehashed(t, string(data)), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, err = Load(dir); err != nil {
		t.Fatal(err)
	}
	problems, err := m.Verify(0, nil)
	if err != nil || len(problems) != 1 || problems[0].File != "labels.bin" || !strings.Contains(problems[0].What, "node 3 has label 2") {
		t.Fatalf("Verify of labels in too few classes: %v %v, want one problem of labels.bin naming node 3", problems, err)
	}
	if _, err := Upgrade(dir, nil); !IsCorrupt(err) || !strings.Contains(err.Error(), "not upgraded") || !strings.Contains(err.Error(), "node 3 has label 2") {
		t.Fatalf("Upgrade of labels in too few classes: %v", err)
	}
}
