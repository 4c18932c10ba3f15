package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierfs/tierfs/dataset"
)

// TestKilledSynthHelper is the `tierfs synth` that TestKilledSynthIsCleaned kills.
func TestKilledSynthHelper(t *testing.T) {
	out := os.Getenv("TIERFS_KILLED_SYNTH")
	if out == "" {
		t.Skip("run by TestKilledSynthIsCleaned")
	}
	os.Exit(Main([]string{"tierfs", "synth", "--nodes", "2000000", "--avg-degree", "8", "--dim", "64", "--force", "--out", out}))
}

// TestKilledSynthIsCleaned: a `tierfs synth --force` killed with SIGKILL in the middle of its
// write leaves the old dataset whole and a staging directory beside it, which `tierfs verify`
// of the dataset removes.
func TestKilledSynthIsCleaned(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 512 MiB dataset")
	}
	out := filepath.Join(t.TempDir(), "ds")
	quiet(t)
	if err := execute([]string{"synth", "--nodes", "1000", "--avg-degree", "4", "--dim", "8", "--out", out}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledSynthHelper$")
	cmd.Env = append(os.Environ(), "TIERFS_KILLED_SYNTH="+out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	defer func() { cmd.Process.Kill(); <-ended }()
	// Kill it once its staging directory holds a file.
	staged := func() []string {
		m, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".ds.tierfs-new-*", "*"))
		return m
	}
	for deadline := time.Now().Add(time.Minute); len(staged()) == 0; time.Sleep(5 * time.Millisecond) {
		select {
		case err := <-ended:
			ended <- err
			t.Fatalf("synth ended (%v) before it wrote into a staging directory", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("synth wrote nothing into a staging directory within a minute")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-ended; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("synth was not killed mid-write (it ended with %v); make it larger", err)
	}
	ended <- nil
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".ds.tierfs-*"))
	if len(left) != 2 {
		t.Fatalf("the killed synth left %v, want its lock file and staging directory", left)
	}
	if m, err := dataset.Load(out); err != nil || m.Nodes().Count != 1000 {
		t.Fatalf("the old dataset after the killed synth: %v", err)
	}
	if err := execute([]string{"verify", out}); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".ds.tierfs-*")); len(left) != 0 {
		t.Fatalf("tierfs verify left %v beside %s", left, out)
	}
}

// quiet sends the test's stdout to /dev/null until it ends.
func quiet(t *testing.T) {
	stdout := os.Stdout
	os.Stdout, _ = os.Open(os.DevNull)
	t.Cleanup(func() { os.Stdout = stdout })
}

// TestVerifyCleansKilledPlaceAndPlan: `tierfs verify` removes what a killed `place` (its
// temporary placement file, whose lock died with it) and a killed `plan-epochs` (packed files
// without an index, in the default plan directory) left; the processes themselves are killed in
// placement's and featurestore's TestKilled* tests.
func TestVerifyCleansKilledPlaceAndPlan(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ds")
	quiet(t)
	if err := execute([]string{"synth", "--nodes", "1000", "--avg-degree", "4", "--dim", "8", "--out", out}); err != nil {
		t.Fatal(err)
	}
	left := []string{
		filepath.Join(out, ".placement.v1.bin.tmp-123456"),
		filepath.Join(defaultPlanDir(out), "epoch-0000.packed"),
		filepath.Join(defaultPlanDir(out), "epochs.json.tmp"),
	}
	if err := os.MkdirAll(defaultPlanDir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range left {
		if err := os.WriteFile(p, make([]byte, 4096), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := execute([]string{"verify", out}); err != nil {
		t.Fatal(err)
	}
	for _, p := range left {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("tierfs verify left %s", p)
		}
	}
}
