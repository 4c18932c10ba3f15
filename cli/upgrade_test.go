package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
)

// TestUpgradeCommand: `tierfs upgrade` rewrites the golden version 2 dataset to the current
// version (verify then passes), does nothing the second time, and refuses a current dataset
// whose manifest was edited down to version 1 as corrupt.
func TestUpgradeCommand(t *testing.T) {
	quiet(t)
	dir := t.TempDir()
	golden := filepath.Join("..", "dataset", "testdata", "golden", "v2")
	entries, err := os.ReadDir(golden)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(golden, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if code := Main([]string{"tierfs", "upgrade", dir}); code != 0 {
			t.Fatalf("tierfs upgrade exited %d", code)
		}
		if m, err := dataset.Load(dir); err != nil || m.Version != dataset.Version {
			t.Fatalf("after tierfs upgrade: version %d, %v", m.Version, err)
		}
		if err := execute([]string{"verify", dir}); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, dataset.ManifestName)
	raw, _ := os.ReadFile(path)
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	obj["version"] = 1
	delete(obj, "manifest_hash")
	delete(obj, "dataset_id")
	edited, _ := json.Marshal(obj)
	if err := os.WriteFile(path, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := execute([]string{"upgrade", dir}); !dataset.IsCorrupt(err) || !strings.Contains(err.Error(), "edited down") {
		t.Fatalf("tierfs upgrade of a current dataset edited down to version 1: %v", err)
	}
}
