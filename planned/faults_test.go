package planned

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/internal/wfs"
	"github.com/tierfs/tierfs/internal/wfs/wfstest"
)

// writeHook is an FS (the operating system's) whose files' WriteAt calls writeAt, which writes
// (f.WriteAt) or not as it likes: tests count, stall or cancel a planner's writes with it.
type writeHook struct {
	wfs.FS
	writeAt func(f wfs.File, p []byte, off int64) (int, error)
}

func (h writeHook) OpenFile(path string, flag int, perm os.FileMode) (wfs.File, error) {
	f, err := wfs.OS.OpenFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	return hookedFile{f, h.writeAt}, nil
}

type hookedFile struct {
	wfs.File
	writeAt func(f wfs.File, p []byte, off int64) (int, error)
}

func (f hookedFile) WriteAt(p []byte, off int64) (int, error) { return f.writeAt(f.File, p, off) }

// hooked is an FS calling writeAt for every WriteAt of its files.
func hooked(writeAt func(f wfs.File, p []byte, off int64) (int, error)) wfs.FS {
	return writeHook{wfs.OS, writeAt}
}

// planBatches is every batch the plan o opens on, each loaded (verified) and hashed; nil with
// featurestore.ErrNotFound when o.Dir holds no plan.
func planBatches(t *testing.T, ss *featurestore.Session, o EpochOptions) ([]string, error) {
	t.Helper()
	p, _, err := OpenEpochs(ss, o)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	var out []string
	for e := p.FirstEpoch(); e < p.FirstEpoch()+p.Planned(); e++ {
		for b := range p.BatchesPerEpoch() {
			l, err := p.Load(e, b)
			if err != nil {
				return nil, fmt.Errorf("epoch %d batch %d: %w", e, b, err)
			}
			out = append(out, fmt.Sprintf("%x", sha256.Sum256(fmt.Appendf(nil, "%v %v %v", l.Seeds, l.Sample, l.Rows))))
		}
	}
	return out, nil
}

// TestPlanFaults fails each call of PlanEpochs (two epochs, over the plan a first run left;
// plain, and placing a host tier first, whose pass spools the samples files) in turn with each
// fault wfs.Faulty injects — ENOSPC, EIO, a short write, a failed fsync — until the plan makes no
// call the fault applies to, and for each EIO a second fault in the same run, at each removal
// after it (the cleanup's own removal failing). After each, the plan directory holds no plan (OpenEpochs:
// featurestore.ErrNotFound) and, once OpenEpochs has cleaned it, nothing else; or the whole plan:
// every batch loads, verified, equal to the plan's written without faults. A plan that returns
// nil is in place.
func TestPlanFaults(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 2000, 8, 1, 5, rng)
	for _, place := range []bool{false, true} {
		opts := featurestore.Options{}
		if place {
			opts.HostCacheBytes = (d.RowBytes + 16) * d.Count / 4
		}
		s := mustOpen(t, d.Dir, opts)
		defer s.Close()
		o := epochOpts(t, d, 2)
		o.Dir = filepath.Join(wfstest.MemDir(t), "plan")
		o.PlaceTiers = place
		rep, err := PlanEpochs(s.Session(), o)
		if err != nil {
			t.Fatal(err)
		}
		if place && rep.PlaceSeconds == 0 {
			t.Fatal("the plan placed no tiers")
		}
		want, err := planBatches(t, s.Session(), o)
		if err != nil {
			t.Fatal(err)
		}
		run := func(fault wfs.Fault, n, then int) (hit, thenHit bool) {
			f := &wfs.Faulty{Fault: fault, N: n, Then: then}
			fo := o
			fo.fs = f
			_, err := PlanEpochs(s.Session(), fo)
			what := fmt.Sprintf("place %v, %v (%s; %s), plan: %v", place, f, f.Hit(), f.ThenHit(), err)
			got, oerr := planBatches(t, s.Session(), o)
			switch {
			case errors.Is(oerr, featurestore.ErrNotFound):
				if err == nil {
					t.Fatalf("%s: no plan", what)
				}
				if left, _ := os.ReadDir(o.Dir); len(left) != 0 {
					t.Fatalf("%s: a failed plan left %d entries (%s...)", what, len(left), left[0].Name())
				}
			case oerr != nil:
				t.Fatalf("%s: the plan in place: %v", what, oerr)
			case !slices.Equal(got, want):
				t.Fatalf("%s: the plan in place serves other batches", what)
			}
			if f.Hit() == "" && err != nil {
				t.Fatalf("%s: no fault hit", what)
			}
			return f.Hit() != "", f.ThenHit() != ""
		}
		walked, seconds := wfs.Walk(0, run)
		t.Logf("place %v: %d faulted plans, %d with a second fault in their cleanup", place, walked, seconds)
	}
}
