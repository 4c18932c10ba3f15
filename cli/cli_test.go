package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// execute runs a command line (without the program's name) as Main does and returns the
// command's error as it is.
func execute(args []string) error {
	root := newRoot()
	root.SetArgs(gnuArgs(root, args))
	_, err := root.ExecuteC()
	return err
}

// commandLine is execute with args after the words of a command: commandLine("bench")(args).
func commandLine(words ...string) func([]string) error {
	return func(args []string) error { return execute(append(slices.Clone(words), args...)) }
}

// mainOutput runs Main on a command line and returns its exit status, stdout and stderr.
func mainOutput(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var outs [2]string
	files := [2]**os.File{&os.Stdout, &os.Stderr}
	var saved [2]*os.File
	var done [2]chan string
	var ws [2]*os.File
	for i, f := range files {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		saved[i], *f, ws[i] = *f, w, w
		done[i] = make(chan string)
		go func(i int) {
			b, _ := io.ReadAll(r)
			done[i] <- string(b)
		}(i)
	}
	code := Main(append([]string{"tierfs"}, args...))
	for i, f := range files {
		*f = saved[i]
		ws[i].Close()
		outs[i] = <-done[i]
	}
	return code, outs[0], outs[1]
}

// TestUsageErrors: a mistake in the command line is one line naming it (the flag or argument as
// given, the closest name for a misspelt one) and one pointing to the command's --help, exit 2;
// never the whole help.
func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sytnh"}, `tierfs: unknown command "sytnh"; did you mean "synth"?` + "\nRun 'tierfs --help' for usage.\n"},
		{[]string{"sytnh", "--out", dir}, `tierfs: unknown command "sytnh"; did you mean "synth"?`},
		{[]string{"synth", "--nodez", "5", "--out", dir}, "tierfs synth: unknown flag --nodez; did you mean --nodes?\nRun 'tierfs synth --help' for usage.\n"},
		{[]string{"synth", "-nodez", "5"}, "tierfs synth: unknown flag --nodez; did you mean --nodes?"},
		{[]string{"synth", "--nodes", "many"}, `tierfs synth: --nodes "many": not a number`},
		{[]string{"synth", "--out"}, "tierfs synth: --out needs a value"},
		{[]string{"synth", "extra"}, `tierfs synth: unexpected argument "extra" (takes no arguments besides flags)`},
		{[]string{"info"}, "tierfs info: missing DIR\nRun 'tierfs info --help' for usage.\n"},
		{[]string{"info", "a", "b"}, `tierfs info: unexpected argument "b" (takes DIR besides flags)`},
		{[]string{"mount", "a"}, "tierfs mount: missing MOUNTPOINT"},
		{[]string{"bench"}, "tierfs bench: missing the command: one of gather, gpu, placement, disk, fill, reads, io, train"},
		{[]string{"bench", "gahter", "x"}, `tierfs bench: unknown command "gahter"; did you mean "gather"?` + "\nRun 'tierfs bench --help' for usage.\n"},
		{[]string{"synth"}, "tierfs synth: --out is required"},
		{[]string{"sample", dir, "--fanouts", "25,x", "--out", dir, "--seeds", "s.npy"}, `tierfs sample: --fanouts "25,x": "x" is not an integer`},
		{[]string{"plan-epochs", dir, "--fanouts", "25,x"}, `tierfs plan-epochs: --fanouts "25,x": "x" is not an integer`},
		{[]string{"sample", dir, "--fanouts", "5"}, "tierfs sample: --out and one of --seeds or --seed-edges are required"},
		{[]string{"gather", dir}, "tierfs gather: --ids and --out are required"},
	} {
		code, stdout, stderr := mainOutput(t, c.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 2 {
			t.Errorf("tierfs %s: exit %d, stdout %q, stderr %q; want exit 2 and %q in two lines", strings.Join(c.args, " "), code, stdout, stderr, c.want)
		}
	}
	if code, _, stderr := mainOutput(t); code != 2 || !strings.Contains(stderr, "Available Commands:") {
		t.Errorf("tierfs alone: exit %d, %q; want the command list and exit 2", code, stderr)
	}
}

// TestSingleDashLongFlags: Go's flag syntax (-nodes 5, -out=DIR) still parses, and a value
// that looks like a flag stays a value.
func TestSingleDashLongFlags(t *testing.T) {
	root := newRoot()
	for _, c := range []struct{ in, want []string }{
		{[]string{"synth", "-nodes", "5", "-out=d", "-force"}, []string{"synth", "--nodes", "5", "--out=d", "--force"}},
		{[]string{"gather", "d", "--ids", "-weird", "-out", "-x"}, []string{"gather", "d", "--ids", "-weird", "--out", "-x"}},
		{[]string{"gather", "d", "--topology-memory", "-1", "-h"}, []string{"gather", "d", "--topology-memory", "-1", "-h"}},
		{[]string{"bench", "train", "-x", "--y"}, []string{"bench", "train", "-x", "--y"}},
	} {
		if got := gnuArgs(root, c.in); !slices.Equal(got, c.want) {
			t.Errorf("gnuArgs(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	dir := filepath.Join(t.TempDir(), "ds")
	if err := execute([]string{"synth", "-nodes", "50", "-avg-degree", "2", "-dim", "4", "-out", dir}); err != nil {
		t.Fatal(err)
	}
	if code, stdout, _ := mainOutput(t, "info", dir, "-json"); code != 0 || !strings.Contains(stdout, `"count": 50`) {
		t.Errorf("info -json: exit %d, %q", code, stdout)
	}
}

func TestGatherRefusesToWriteIntoADataset(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	if err := execute([]string{"synth", "--nodes", "200", "--avg-degree", "2", "--dim", "4", "--out", dir}); err != nil {
		t.Fatal(err)
	}
	err := execute([]string{"gather", dir, "--ids", "split:train", "--out", filepath.Join(dir, "features.x.0.bin")})
	if err == nil || !strings.Contains(err.Error(), "inside the dataset") {
		t.Fatalf("gather --out into the dataset: %v", err)
	}
	if err := execute([]string{"gather", dir, "--ids", "split:train", "--out", filepath.Join(t.TempDir(), "rows.npy")}); err != nil {
		t.Fatal(err)
	}
}

// TestHelpExamplesParse: every command's --help has a description and examples, and every
// example's flags exist (the example parses up to --help without an unknown flag).
func TestHelpExamplesParse(t *testing.T) {
	for _, c := range commands {
		if _, ok := commandHelp[strings.Fields(c.use)[0]]; !ok {
			t.Errorf("command %s has no help entry", c.use)
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
			code, stdout, stderr := mainOutput(t, append(args[1:], "--help")...)
			if code != 0 || !strings.Contains(stdout, e) {
				t.Errorf("%s: example %q does not parse or is not in its help (exit %d): %s", name, e, code, stderr)
			}
		}
	}
}

// TestCompletion: the bash, zsh and fish scripts are valid in their shells where those are
// installed, and the completions they ask the program for name commands, flags and choices.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, script, stderr := mainOutput(t, "completion", shell)
		if code != 0 || !strings.Contains(script, "__complete") {
			t.Fatalf("completion %s: exit %d, %s", shell, code, stderr)
		}
		path, err := exec.LookPath(shell)
		if err != nil {
			t.Logf("no %s: its script is not checked", shell)
			continue
		}
		f := filepath.Join(t.TempDir(), "tierfs."+shell)
		os.WriteFile(f, []byte(script), 0o644)
		if out, err := exec.Command(path, "-n", f).CombinedOutput(); err != nil {
			t.Errorf("%s -n of its completion script: %v %s", shell, err, out)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"pla"}, "plan-epochs\tsample K epochs"},
		{[]string{"bench", "i"}, "io\t"},
		{[]string{"gather", "d", "--host-c"}, "--host-cache\t"},
		{[]string{"synth", "-"}, "--nodes\t"},
		{[]string{"info", ""}, ":16"}, // DIR: directories
		{[]string{"gather", "d", "--io-backend", ""}, "io_uring\npread\ngpu-uring\n:4"},
		{[]string{"place", "d", "--policy", "u"}, "unified\nunified-pcie\n"},
	} {
		code, stdout, _ := mainOutput(t, append([]string{"__complete"}, c.args...)...)
		if code != 0 || !strings.Contains(stdout, c.want) {
			t.Errorf("completing %q: exit %d, %q; want %q", c.args, code, stdout, c.want)
		}
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
	if err := execute([]string{"ingest", "--edges", edges, "--features", nodes, "--features-in-place", "--out", dir}); err != nil {
		t.Fatal(err)
	}
	seeds := filepath.Join(t.TempDir(), "seeds.npy")
	if err := ingest.WriteNpy(seeds, "<i8", []int64{2}, int64sAsBytes([]int64{0, 2})); err != nil {
		t.Fatal(err)
	}
	err := execute([]string{"sample", dir, "--seeds", seeds, "--fanouts", "2", "--out", in})
	if after, _ := os.ReadFile(nodes); err == nil || !strings.Contains(err.Error(), "reads in place") || !bytes.Equal(after, before) {
		t.Fatalf("sample --out over the in-place feature file: %v (file unchanged: %v)", err, bytes.Equal(after, before))
	}
	if err := execute([]string{"sample", dir, "--seeds", seeds, "--fanouts", "2", "--out", dir}); err == nil || !strings.Contains(err.Error(), "inside the dataset") {
		t.Fatalf("sample --out into the dataset: %v", err)
	}
	if err := execute([]string{"sample", dir, "--seeds", seeds, "--fanouts", "2", "--out", t.TempDir()}); err != nil {
		t.Fatal(err)
	}
}

// TestUserMessage: what the CLI prints of an error speaks of the input, not of the packages
// that passed it on, and says a failed file operation in words.
func TestUserMessage(t *testing.T) {
	_, openErr := os.Open(filepath.Join(t.TempDir(), "nope.npy"))
	_, statErr := os.Stat("/nonexistent/ds")
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("ingest: %w", openErr), "cannot open " + filepath.Join(filepath.Dir(openErr.(*fs.PathError).Path), "nope.npy") + ": no such file or directory"},
		{fmt.Errorf("dataset: %w", statErr), "/nonexistent/ds: no such file or directory"},
		{errors.New("ingest: edges: open e.npy: no such file or directory"), "edges: cannot open e.npy: no such file or directory"},
		{errors.New("ingest: dataset: g already holds a dataset"), "g already holds a dataset"},
		{errors.New(`featurestore: dataset g has no split "x"`), `dataset g has no split "x"`},
		{errors.New("--spec f.json: ingest: bad key"), "--spec f.json: bad key"},
		{errors.New("hosting: fine"), "hosting: fine"},
	} {
		if got := userMessage(c.err); got != c.want {
			t.Errorf("userMessage(%q) = %q, want %q", c.err, got, c.want)
		}
	}
	code, _, stderr := mainOutput(t, "info", "/nonexistent/tierfs-ds")
	if code != 1 || stderr != "tierfs info: /nonexistent/tierfs-ds: no such file or directory\n" {
		t.Errorf("info of a missing dataset: exit %d, %q", code, stderr)
	}
}
