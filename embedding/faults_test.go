package embedding

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tierfs/tierfs/internal/wfs"
	"github.com/tierfs/tierfs/internal/wfs/wfstest"
)

// TestCheckpointFaults fails every call of Create, Open and Checkpoint once with every fault:
// the table then opens (with a clean FS) at the old checkpoint or the new one, never anything
// else, and holds nothing stale.
func TestCheckpointFaults(t *testing.T) {
	spec := Spec{Rows: 600, Dim: 8, Optimizer: Optimizer{Name: "adam"}, Init: Init{Kind: "normal", Seed: 1}}
	ids := []int64{0, 599, 300}
	walked := 0
	for _, fault := range wfs.Faults {
		for n := 1; ; n++ {
			dir := filepath.Join(wfstest.MemDir(t), "t")
			if err := Create(nil, dir, spec); err != nil {
				t.Fatal(err)
			}
			f := &wfs.Faulty{Fault: fault, N: n}
			tb, err := Open(dir, Options{FS: f, HostCacheBytes: 2 * 4096})
			if err == nil {
				err = tb.Apply(ids, make([]float32, 24))
				if err == nil {
					err = tb.Checkpoint()
				}
				tb.Close()
			}
			what := f.String() + " (" + f.Hit() + ")"
			if f.Hit() == "" && err != nil {
				t.Fatalf("%s: no fault, yet %v", what, err)
			}
			tb, oerr := Open(dir, Options{})
			if oerr != nil {
				t.Fatalf("%s (%v): reopen: %v", what, err, oerr)
			}
			info := tb.Info()
			switch {
			case err == nil && (info.Generation != 2 || info.Step != 1):
				t.Fatalf("%s: checkpoint returned nil, table at generation %d step %d", what, info.Generation, info.Step)
			case !(info.Generation == 1 && info.Step == 0) && !(info.Generation == 2 && info.Step == 1):
				t.Fatalf("%s (%v): table at generation %d step %d: neither the old checkpoint nor the new", what, err, info.Generation, info.Step)
			}
			tb.Close()
			if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 3 {
				t.Fatalf("%s: left: %q", what, names)
			}
			if f.Hit() == "" {
				walked += n - 1
				break
			}
		}
	}
	t.Logf("%d faulted runs", walked)
}

// TestCreateFaults fails every call of Create once with every fault: a Create that fails leaves
// nothing; one that succeeds leaves a table that opens.
func TestCreateFaults(t *testing.T) {
	spec := Spec{Rows: 700, Dim: 8, Optimizer: Optimizer{Name: "adagrad"}, Init: Init{Kind: "uniform", A: -1, B: 1}}
	for _, fault := range wfs.Faults {
		for n := 1; ; n++ {
			dir := filepath.Join(wfstest.MemDir(t), "t")
			f := &wfs.Faulty{Fault: fault, N: n}
			err := Create(f, dir, spec)
			what := f.String() + " (" + f.Hit() + ")"
			_, serr := os.Stat(dir)
			switch {
			case err != nil && serr == nil:
				t.Fatalf("%s: Create failed (%v) and left %s", what, err, dir)
			case err == nil:
				tb, oerr := Open(dir, Options{})
				if oerr != nil {
					t.Fatalf("%s: Create returned nil, Open: %v", what, oerr)
				}
				tb.Close()
			}
			if f.Hit() == "" {
				break
			}
		}
	}
}
