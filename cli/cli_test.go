package cli

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/ingest"
)

func TestDidYouMean(t *testing.T) {
	names := []string{"synth", "ingest", "info", "plan-epochs", "place"}
	for _, c := range []struct{ got, want string }{
		{"sytnh", `; did you mean "synth"?`},
		{"ingets", `; did you mean "ingest"?`},
		{"plan", `; did you mean "plan-epochs"?`},
		{"xyzzy", ""},
		{"", ""},
	} {
		if got := didYouMean(c.got, names); got != c.want {
			t.Errorf("didYouMean(%q) = %q, want %q", c.got, got, c.want)
		}
	}
	if editDistance("kitten", "sitting") != 3 || editDistance("", "abc") != 3 || editDistance("same", "same") != 0 {
		t.Error("editDistance disagrees with the textbook cases")
	}
}

func TestUnknownCommandAndFlagSuggest(t *testing.T) {
	if code := Main([]string{"tierfs", "sytnh"}); code != 2 {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
	err := runSynth([]string{"--nodez", "5", "--out", t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), `unknown flag --nodez; did you mean "nodes"?`) {
		t.Errorf("synth --nodez: %v", err)
	}
}

func TestGatherRefusesToWriteIntoADataset(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	if err := runSynth([]string{"--nodes", "200", "--avg-degree", "2", "--dim", "4", "--out", dir}); err != nil {
		t.Fatal(err)
	}
	err := runGather([]string{dir, "--ids", "split:train", "--out", filepath.Join(dir, "features.x.0.bin")})
	if err == nil || !strings.Contains(err.Error(), "inside the dataset") {
		t.Fatalf("gather --out into the dataset: %v", err)
	}
	if err := runGather([]string{dir, "--ids", "split:train", "--out", filepath.Join(t.TempDir(), "rows.npy")}); err != nil {
		t.Fatal(err)
	}
}

// TestHelpExamplesParse: every command's -h has a description and examples, and every example's
// flags exist (the example parses up to -h without an unknown flag).
func TestHelpExamplesParse(t *testing.T) {
	for _, c := range commands {
		if _, ok := commandHelp[c.name]; !ok && c.name != "bench" {
			t.Errorf("command %s has no help entry", c.name)
		}
	}
	for name, h := range commandHelp {
		if h.what == "" || len(h.examples) == 0 {
			t.Errorf("%s: no description or examples", name)
		}
		for _, e := range h.examples {
			args := strings.Fields(e)
			if args[0] != "tierfs" {
				t.Errorf("%s: example %q does not start with tierfs", name, e)
				continue
			}
			if code := Main(append(args, "-h")); code != 0 {
				t.Errorf("%s: example %q does not parse (exit %d)", name, e, code)
			}
		}
	}
}

// TestBashCompletion: the script is valid bash and completes command names.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	old := os.Stdout
	r, w, _ := os.Pipe()
	os.Stdout = w
	err = runCompletion([]string{"bash"})
	w.Close()
	os.Stdout = old
	script, _ := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bash, "-c", string(script)+`
COMP_WORDS=(tierfs pla); COMP_CWORD=1; _tierfs; echo "${COMPREPLY[@]}"
COMP_WORDS=(tierfs bench i); COMP_CWORD=2; _tierfs; echo "${COMPREPLY[@]}"`).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "plan-epochs place\nio" {
		t.Fatalf("completion: %v %q", err, out)
	}
	if err := runCompletion([]string{"zsh"}); err == nil || !strings.Contains(err.Error(), "only bash") {
		t.Errorf("completion zsh: %v", err)
	}
}

// TestSampleRefusesToOverwriteADatasetFile: sample --out never writes into a dataset's
// directory, nor over the feature file a dataset reads in place (named like an output here).
func TestSampleRefusesToOverwriteADatasetFile(t *testing.T) {
	in := t.TempDir()
	edges := filepath.Join(in, "edges.npy")
	if err := ingest.WriteNpy(edges, "<i8", []int64{2, 3}, int64sAsBytes([]int64{0, 1, 2, 1, 2, 0})); err != nil {
		t.Fatal(err)
	}
	nodes := filepath.Join(in, "nodes.npy") // the features, read in place
	if err := ingest.WriteNpy(nodes, "<f4", []int64{3, 2}, make([]byte, 24)); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(nodes)
	dir := filepath.Join(t.TempDir(), "ds")
	if err := runIngest([]string{"--edges", edges, "--features", nodes, "--features-in-place", "--out", dir}); err != nil {
		t.Fatal(err)
	}
	seeds := filepath.Join(t.TempDir(), "seeds.npy")
	if err := ingest.WriteNpy(seeds, "<i8", []int64{2}, int64sAsBytes([]int64{0, 2})); err != nil {
		t.Fatal(err)
	}
	err := runSample([]string{dir, "--seeds", seeds, "--fanouts", "2", "--out", in})
	if after, _ := os.ReadFile(nodes); err == nil || !strings.Contains(err.Error(), "reads in place") || !bytes.Equal(after, before) {
		t.Fatalf("sample --out over the in-place feature file: %v (file unchanged: %v)", err, bytes.Equal(after, before))
	}
	if err := runSample([]string{dir, "--seeds", seeds, "--fanouts", "2", "--out", dir}); err == nil || !strings.Contains(err.Error(), "inside the dataset") {
		t.Fatalf("sample --out into the dataset: %v", err)
	}
	if err := runSample([]string{dir, "--seeds", seeds, "--fanouts", "2", "--out", t.TempDir()}); err != nil {
		t.Fatal(err)
	}
}
