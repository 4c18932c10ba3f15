package cli

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runQuiet runs a command with its stdout captured.
func runQuiet(t *testing.T, run func([]string) error, args ...string) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	err = run(args)
	os.Stdout = stdout
	w.Close()
	return <-done, err
}

// TestPlanEpochsCommand plans two epochs of a small dataset, serves three epochs from them with
// the plain gather beside, and refuses bad flags by name.
func TestPlanEpochsCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	if _, err := runQuiet(t, commandLine("synth"), "--nodes", "3000", "--avg-degree", "6", "--dim", "8", "--out", dir); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(t.TempDir(), "plan")
	out, err := runQuiet(t, commandLine("plan-epochs"), dir, "--fanouts", "4,3", "--batch-size", "50", "--epochs", "2",
		"--host-cache", "40KiB", "--plan-dir", plan, "--serve", "3", "--compare", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(plan, "epoch-0001.packed")); err != nil {
		t.Fatalf("second planned epoch: %v (output %s)", err, out)
	}
	for _, bad := range [][]string{{"--epochs", "0"}, {"--batch-size", "0"}, {"--fanouts", "x"}} {
		args := append([]string{dir, "--plan-dir", filepath.Join(t.TempDir(), "p")}, bad...)
		if _, err := runQuiet(t, commandLine("plan-epochs"), args...); err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(bad[0], "--")[:5]) {
			t.Errorf("%v: error %v, want one naming the flag", bad, err)
		}
	}
}
