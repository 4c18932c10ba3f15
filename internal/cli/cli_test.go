package cli

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
