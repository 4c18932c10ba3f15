package planned

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/internal/wfs"
	"github.com/tierfs/tierfs/topology"
)

// within fails t unless fn returns within 5 s.
func within(t *testing.T, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s still runs after 5 s", what)
		return nil
	}
}

// An epoch plan's index or packed file that is a FIFO, a symlink to a device or out of the plan
// directory, or larger than the plan can be is refused at once, naming the file; none is read.
// (A huge index is a stale plan, one of more epochs say, so that Replan replaces it.)
func TestEpochPlanFilesBounded(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 2000, 8, 1, 5, rng)
	s := mustOpen(t, d.Dir, featurestore.Options{})
	o := epochOpts(t, d, 1)
	outside := filepath.Join(t.TempDir(), "elsewhere")
	for _, name := range []string{EpochIndexFile, packedFile(0)} {
		path := filepath.Join(o.Dir, name)
		for _, tc := range []struct {
			what, want string
			make       func() error
		}{
			{"a FIFO", "FIFO", func() error { return syscall.Mkfifo(path, 0o644) }},
			{"a symlink to /dev/zero", "outside", func() error { return os.Symlink("/dev/zero", path) }},
			{"a symlink out of the plan", "outside", func() error {
				if err := os.Rename(path, outside); err != nil {
					return err
				}
				return os.Symlink(outside, path)
			}},
			{"sparse and huge", "more than", func() error { return os.Truncate(path, 1<<40) }},
		} {
			if _, err := PlanEpochs(s.Session(), o); err != nil {
				t.Fatal(err)
			}
			if tc.want == "FIFO" || strings.Contains(tc.what, "/dev/zero") {
				os.Remove(path)
			}
			if err := tc.make(); err != nil {
				t.Fatal(err)
			}
			err := within(t, "OpenEpochs with "+name+" "+tc.what, func() error {
				p, _, err := OpenEpochs(s.Session(), o)
				if err == nil {
					p.Close()
				}
				return err
			})
			if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), tc.want) && !errors.Is(err, ErrStalePlan) {
				t.Errorf("OpenEpochs with %s %s: %v; want an error naming it and saying %q", name, tc.what, err, tc.want)
			}
			if !errors.Is(err, dataset.ErrCorrupt) && !errors.Is(err, ErrStalePlan) {
				t.Errorf("OpenEpochs with %s %s: %v is neither corrupt nor stale", name, tc.what, err)
			}
			os.Remove(path)
		}
	}
}

// TestKilledPlanHelper is the PlanEpochs that TestKilledPlanIsCleaned kills: it stops for good
// after its first write of a packed file.
func TestKilledPlanHelper(t *testing.T) {
	env := os.Getenv("TIERFS_KILLED_PLAN")
	if env == "" {
		t.Skip("run by TestKilledPlanIsCleaned")
	}
	ds, dir, _ := strings.Cut(env, "\n")
	s := mustOpen(t, ds, featurestore.Options{})
	seeds := make([]int64, 1000)
	for i := range seeds {
		seeds[i] = int64(i)
	}
	stall := hooked(func(f wfs.File, p []byte, off int64) (int, error) {
		n, err := f.WriteAt(p, off)
		if !strings.HasSuffix(f.Name(), ".packed") {
			return n, err
		}
		f.Sync()
		select {}
	})
	PlanEpochs(s.Session(), EpochOptions{Dir: dir, Seeds: seeds, BatchSize: 97, Sample: topology.SampleOptions{Fanouts: []int{5, 3}}, Epochs: 2, fs: stall})
}

// TestKilledPlanIsCleaned: a PlanEpochs killed with SIGKILL leaves packed files and no index;
// CleanEpochPlan leaves them while the planner lives, and OpenEpochs (finding no plan) removes
// them once it is dead.
func TestKilledPlanIsCleaned(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 2000, 8, 1, 5, rng)
	o := epochOpts(t, d, 1)
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledPlanHelper$")
	cmd.Env = append(os.Environ(), "TIERFS_KILLED_PLAN="+d.Dir+"\n"+o.Dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	defer func() { cmd.Process.Kill(); <-ended }()
	packed := func() []string {
		m, _ := filepath.Glob(filepath.Join(o.Dir, "epoch-*.packed"))
		return m
	}
	written := func() bool {
		st, err := os.Stat(filepath.Join(o.Dir, packedFile(0)))
		return err == nil && st.Size() > 0
	}
	for deadline := time.Now().Add(time.Minute); !written(); time.Sleep(5 * time.Millisecond) {
		select {
		case err := <-ended:
			ended <- err
			t.Fatalf("the planner ended (%v) before it wrote a packed file", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the planner wrote no packed file within a minute")
		}
	}
	// Both epochs' packed files exist (one window holds them), the first being written.
	if did, err := CleanEpochPlan(o.Dir); err != nil || len(did) != 0 || len(packed()) != 2 {
		t.Fatalf("CleanEpochPlan during a live plan: %v, %v; left %v", did, err, packed())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-ended; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the planner was not killed (it ended with %v)", err)
	}
	ended <- nil
	if len(packed()) != 2 {
		t.Fatalf("the killed planner left %v, want its packed files", packed())
	}
	s := mustOpen(t, d.Dir, featurestore.Options{})
	if _, _, err := OpenEpochs(s.Session(), o); !errors.Is(err, featurestore.ErrNotFound) {
		t.Fatalf("OpenEpochs after the killed plan: %v, want ErrNotFound", err)
	}
	if left := packed(); len(left) != 0 {
		t.Fatalf("OpenEpochs left %v of the killed plan", left)
	}
}
