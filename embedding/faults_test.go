package embedding

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/gpuio"

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
			if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 4 { // manifest, pages, map, lock
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

// failWrites fails every write with EIO while it is on (a gpuio.Injector).
type failWrites struct{ on atomic.Bool }

func (f *failWrites) Inject(r gpuio.CompletedRead) []gpuio.Fault {
	if r.Write && f.on.Load() {
		return []gpuio.Fault{{Kind: gpuio.FaultEIO}}
	}
	return nil
}

// TestWriteBackFaultKeepsPageDirty fails the write-backs of a Gather's evictions, through each
// backend: the Gather fails naming the file and offset, the pages stay dirty in the cache, and
// the next checkpoint writes them, so the table reopens equal to a twin trained without faults.
func TestWriteBackFaultKeepsPageDirty(t *testing.T) {
	spec := Spec{Rows: 600, Dim: 8, Optimizer: Optimizer{Name: "adam"}, Init: Init{Kind: "normal", Seed: 4}}
	l := newLayout(spec.Rows, spec.Dim, spec.Optimizer.Name)
	per := int64(l.rowsPerPage)
	trained := []int64{1, per + 2} // pages 0 and 1
	grads := make([]float32, len(trained)*spec.Dim)
	for i := range grads {
		grads[i] = float32(i) - 3
	}
	backends := []gpuio.Backend{gpuio.BackendPread}
	if gpuio.Probe() == nil {
		backends = append(backends, gpuio.BackendIOUring)
	}
	for _, b := range backends {
		var dirs [2]string
		var tbs [2]*Table
		faults := &failWrites{}
		for i := range dirs {
			dirs[i] = filepath.Join(t.TempDir(), "t")
			if err := Create(nil, dirs[i], spec); err != nil {
				t.Fatal(err)
			}
			opt := Options{HostCacheBytes: 2 * int64(l.pageBytes), IOBackend: b}
			if i == 0 {
				opt.Faults = faults
			}
			tb, err := Open(dirs[i], opt)
			if err != nil {
				t.Fatal(err)
			}
			tbs[i] = tb
			if err := tb.Apply(trained, grads); err != nil {
				t.Fatal(err)
			}
		}
		faults.on.Store(true)
		out := make([]float32, 2*spec.Dim)
		err := tbs[0].Gather([]int64{5 * per, 6 * per}, out) // evicts pages 0 and 1
		faults.on.Store(false)
		at := fmt.Sprintf("offset %d ", l.pageOffset(0, 1)) // page 0's other place
		if err == nil || !errors.Is(err, unix.EIO) || !strings.Contains(err.Error(), tbs[0].c.name) || !strings.Contains(err.Error(), at) {
			t.Fatalf("%s: Gather with its write-backs failing: %v, want EIO naming %s at %s", b, err, tbs[0].c.name, at)
		}
		if st := tbs[0].Stats(); st.Dirty != 2 || st.PagesWritten != 0 {
			t.Fatalf("%s: after the failed write-backs: %+v, want both pages dirty, none written", b, st)
		}
		for i, tb := range tbs {
			if err := tb.Gather([]int64{5 * per, 6 * per, 1}, make([]float32, 3*spec.Dim)); err != nil {
				t.Fatalf("%s: table %d: %v", b, i, err)
			}
			if err := tb.Checkpoint(); err != nil {
				t.Fatalf("%s: table %d: %v", b, i, err)
			}
			tb.Close()
		}
		var slots [2][]float32
		for i, dir := range dirs {
			tb, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			all := make([]int64, spec.Rows)
			for r := range all {
				all[r] = int64(r)
			}
			slots[i] = make([]float32, len(all)*l.slotFloats)
			if err := tb.ReadSlots(all, slots[i]); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			tb.Close()
		}
		sameBits(t, string(b)+": slots after the faulted write-backs", slots[0], slots[1])
	}
}

// v1Table makes a version 1 table in a new directory (gen-1.rows and a version 1 manifest, from
// a version 2 table at generation 1) with a leftover of an interrupted conversion, and returns
// the directory and every row.
func v1Table(t *testing.T, spec Spec) (string, []float32) {
	t.Helper()
	dir := filepath.Join(wfstest.MemDir(t), "t")
	if err := Create(nil, dir, spec); err != nil {
		t.Fatal(err)
	}
	tb, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	all := make([]int64, spec.Rows)
	for i := range all {
		all[i] = int64(i)
	}
	rows := make([]float32, len(all)*tb.l.slotFloats)
	if err := tb.ReadSlots(all, rows); err != nil {
		t.Fatal(err)
	}
	half := tb.l.fileBytes()
	tb.Close()
	pages, _ := os.ReadFile(filepath.Join(dir, pagesName))
	man, _ := os.ReadFile(filepath.Join(dir, manifestName))
	for name, data := range map[string][]byte{
		v1GenName(1): pages[:half],
		manifestName: bytes.Replace(man, []byte(`"version": 2`), []byte(`"version": 1`), 1),
		pagesName:    []byte("left by a conversion killed half way"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, rows
}

// TestOpenConvertsVersion1 opens version 1 tables with every call of the conversion failing once
// with every fault: a failed Open leaves a table that opens (with a clean FS) at version 1 or 2,
// every slot as it was, and nothing stale.
func TestOpenConvertsVersion1(t *testing.T) {
	spec := Spec{Rows: 500, Dim: 8, Optimizer: Optimizer{Name: "adagrad"}, Init: Init{Kind: "normal", Seed: 2}}
	all := make([]int64, spec.Rows)
	for i := range all {
		all[i] = int64(i)
	}
	walked := 0
	for _, fault := range wfs.Faults {
		for n := 1; ; n++ {
			dir, want := v1Table(t, spec)
			f := &wfs.Faulty{Fault: fault, N: n}
			tb, err := Open(dir, Options{FS: f})
			if err == nil {
				tb.Close()
			}
			what := f.String() + " (" + f.Hit() + ")"
			if f.Hit() == "" && err != nil {
				t.Fatalf("%s: no fault, yet %v", what, err)
			}
			tb, err = Open(dir, Options{})
			if err != nil {
				t.Fatalf("%s: reopen: %v", what, err)
			}
			got := make([]float32, len(want))
			if err := tb.ReadSlots(all, got); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			sameBits(t, what, got, want)
			if info := tb.Info(); info.Generation != 1 {
				t.Fatalf("%s: generation %d after converting, want 1", what, info.Generation)
			}
			tb.Close()
			m, _ := readManifest(dir)
			names, _ := filepath.Glob(filepath.Join(dir, "*"))
			if m.Version != manifestVersion || len(names) != 4 {
				t.Fatalf("%s: version %d, left %q", what, m.Version, names)
			}
			if f.Hit() == "" {
				walked += n - 1
				break
			}
		}
	}
	t.Logf("%d faulted runs", walked)
}

// TestCheckpointWriteFault fails the checkpoint's write-backs: the checkpoint fails naming the
// file, the table must be reopened, and it reopens at the old checkpoint, every slot as created.
func TestCheckpointWriteFault(t *testing.T) {
	spec := Spec{Rows: 900, Dim: 8, Optimizer: Optimizer{Name: "sgd"}, Init: Init{Kind: "normal", Seed: 8}}
	dir := filepath.Join(t.TempDir(), "t")
	if err := Create(nil, dir, spec); err != nil {
		t.Fatal(err)
	}
	all := make([]int64, spec.Rows)
	for i := range all {
		all[i] = int64(i)
	}
	want, got := make([]float32, len(all)*8), make([]float32, len(all)*8)
	faults := &failWrites{}
	tb, err := Open(dir, Options{Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	tb.Gather(all, want)
	grads := make([]float32, len(all)*8)
	for i := range grads {
		grads[i] = 1 // every row changes
	}
	if err := tb.Apply(all, grads); err != nil {
		t.Fatal(err)
	}
	faults.on.Store(true)
	if err := tb.Checkpoint(); !errors.Is(err, unix.EIO) || !strings.Contains(err.Error(), pagesName) {
		t.Fatalf("Checkpoint with its writes failing: %v, want EIO naming %s", err, pagesName)
	}
	if err := tb.Gather(all, got); err == nil || !strings.Contains(err.Error(), "reopened") {
		t.Fatalf("Gather after a failed checkpoint: %v, want the table to be reopened", err)
	}
	tb.Close()
	tb, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	if info := tb.Info(); info.Generation != 1 || info.Step != 0 {
		t.Fatalf("after a failed checkpoint: generation %d step %d, want 1 and 0", info.Generation, info.Step)
	}
	if err := tb.Gather(all, got); err != nil {
		t.Fatal(err)
	}
	sameBits(t, "rows after a failed checkpoint", got, want)
}
