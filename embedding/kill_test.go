package embedding

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tierfs/tierfs/featurestore/featurestoretest"
)

// killSpec is the table the kill test trains; batchOf is step k's batch (the same in the child
// and the reference).
var killSpec = Spec{Rows: 5000, Dim: 16, Optimizer: Optimizer{Name: "adam", LR: 0.01}, Init: Init{Kind: "normal", Seed: 9}}

func batchOf(k int64) ([]int64, []float32) {
	rng := rand.New(rand.NewPCG(uint64(k), 77))
	ids := unique(func() []int64 {
		ids := make([]int64, 300)
		for i := range ids {
			ids[i] = rng.Int64N(killSpec.Rows)
		}
		return ids
	}())
	g := make([]float32, len(ids)*killSpec.Dim)
	for i := range g {
		g[i] = float32(rng.NormFloat64())
	}
	return ids, g
}

// TestKillChild is the child of TestKillDuringCheckpoint: it trains the table in
// $EMBEDDING_KILL_DIR one step and one checkpoint at a time until it is killed.
func TestKillChild(t *testing.T) {
	dir := os.Getenv("EMBEDDING_KILL_DIR")
	if dir == "" {
		t.Skip("the child of TestKillDuringCheckpoint")
	}
	tb, err := Open(dir, Options{HostCacheBytes: 3 * 4096})
	if err != nil {
		t.Fatal(err)
	}
	for k := tb.Info().Step + 1; ; k++ {
		ids, g := batchOf(k)
		if err := tb.Apply(ids, g); err != nil {
			t.Fatal(err)
		}
		if err := tb.Checkpoint(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKillDuringCheckpoint kills (SIGKILL) a process that checkpoints after every step, at random
// times, and reopens the table each time: it holds the last checkpoint, whole — step S at
// generation S+1, every slot equal to a reference table's after S steps — and training resumes.
func TestKillDuringCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a child process 12 times")
	}
	rng := featurestoretest.NewRand(t)
	root := t.TempDir()
	dir, refDir := filepath.Join(root, "t"), filepath.Join(root, "ref")
	for _, d := range []string{dir, refDir} {
		if err := Create(nil, d, killSpec); err != nil {
			t.Fatal(err)
		}
	}
	ref, err := Open(refDir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	all := make([]int64, killSpec.Rows)
	for i := range all {
		all[i] = int64(i)
	}
	sf := ref.Info().SlotFloats
	got, want := make([]float32, len(all)*sf), make([]float32, len(all)*sf)
	last := int64(0)
	for round := range 12 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "EMBEDDING_KILL_DIR="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		tb, err := Open(dir, Options{})
		if err != nil {
			t.Fatalf("round %d: reopen after kill -9: %v", round, err)
		}
		info := tb.Info()
		if info.Generation != uint64(info.Step)+1 || info.Step < last {
			t.Fatalf("round %d: generation %d at step %d (last seen step %d)", round, info.Generation, info.Step, last)
		}
		for k := ref.Info().Step + 1; k <= info.Step; k++ {
			ids, g := batchOf(k)
			if err := ref.Apply(ids, g); err != nil {
				t.Fatal(err)
			}
		}
		if err := tb.ReadSlots(all, got); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		ref.ReadSlots(all, want)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("round %d, step %d: row %d float %d is %g, the reference's %g", round, info.Step, i/sf, i%sf, got[i], want[i])
			}
		}
		t.Logf("round %d: killed at step %d", round, info.Step)
		last = info.Step
		tb.Close()
	}
	if last == 0 {
		t.Fatal("the child never checkpointed")
	}
}
