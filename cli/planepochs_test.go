package cli

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/ingest"
	"github.com/tierfs/tierfs/planned"
	"github.com/tierfs/tierfs/topology"
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

// TestPlanEpochsSeedEdges plans link epochs of an edge split (`plan-epochs --seed-edges
// split:train`): the plan it writes is the one the API makes of Session.SeedEdgesOfSplit (opening
// it with those options reuses it), its batches cover the split; bad flags are refused by name.
func TestPlanEpochsSeedEdges(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	in := t.TempDir()
	const n, m = 300, 120
	var edges, pairs, labels []int64
	for range 2 * 2000 {
		edges = append(edges, rng.Int64N(n))
	}
	for range m {
		pairs = append(pairs, rng.Int64N(n), rng.Int64N(n))
		labels = append(labels, rng.Int64N(2))
	}
	write := func(name, dtype string, shape []int64, raw []byte) string {
		p := filepath.Join(in, name)
		if err := ingest.WriteNpy(p, dtype, shape, raw); err != nil {
			t.Fatal(err)
		}
		return p
	}
	edgesPath := write("edges.npy", "<i8", []int64{2, 2000}, int64sAsBytes(edges))
	pairsPath := write("pairs.npy", "<i8", []int64{m, 2}, int64sAsBytes(pairs))
	labelsPath := write("labels.npy", "<i8", []int64{m}, int64sAsBytes(labels))
	x := make([]byte, 4*4*n)
	for i := range x {
		x[i] = byte(rng.UintN(256))
	}
	xPath := write("x.npy", "<f4", []int64{n, 4}, x)
	dir := filepath.Join(t.TempDir(), "ds")
	if _, err := runQuiet(t, commandLine("ingest"), "--edges", edgesPath, "--features", xPath, "--num-nodes", "300", "--out", dir,
		"--edge-split", "train="+pairsPath+",labels="+labelsPath); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(t.TempDir(), "plan")
	if _, err := runQuiet(t, commandLine("plan-epochs"), dir, "--seed-edges", "split:train", "--neg-sampling", "binary", "--neg-amount", "2",
		"--exclude-seed-edges", "--fanouts", "3,2", "--batch-size", "25", "--epochs", "2", "--seed", "9", "--host-cache", "0",
		"--place-tiers=false", "--plan-dir", plan, "--serve", "3"); err != nil {
		t.Fatal(err)
	}
	s, err := featurestore.Open(dir, featurestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	link := featurestore.LinkOptions{Negatives: topology.BinaryNegatives, NegAmount: 2, ExcludeSeedEdges: true}
	se, err := planned.SeedEdgesOfSplit(s.Session(), "", "train", link)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(se.Labels, labels) || len(se.Src) != m {
		t.Fatalf("SeedEdgesOfSplit: %d seed edges, labels %v, want %d and %v", len(se.Src), se.Labels, m, labels)
	}
	p, rep, err := planned.OpenEpochs(s.Session(), planned.EpochOptions{Dir: plan, SeedEdges: se, BatchSize: 25, Epochs: 2,
		Sample: topology.SampleOptions{Fanouts: []int{3, 2}, Seed: 9}})
	if err != nil || rep != nil {
		t.Fatalf("opening the CLI's plan with the API's options: %v (report %v)", err, rep)
	}
	defer p.Close()
	seen := make([]bool, m)
	for b := range p.BatchesPerEpoch() {
		pos, ls, err := p.SampleEdges(1, b)
		if err != nil {
			t.Fatal(err)
		}
		for i, q := range pos {
			seen[q] = true
			if ls.Nodes[0][ls.EdgeLabelIndex[0][i]] != se.Src[q] || ls.Nodes[0][ls.EdgeLabelIndex[1][i]] != se.Dst[q] || ls.EdgeLabel[i] != labels[q] {
				t.Fatalf("batch %d: label edge %d is not seed edge %d of the split", b, i, q)
			}
		}
	}
	if slices.Contains(seen, false) {
		t.Fatal("an epoch's batches miss seed edges of the split")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--seed-edges", "split:val"}, `no edge split "val"`},
		{[]string{"--neg-sampling", "binary"}, "--neg-sampling goes with --seed-edges"},
		{[]string{"--seeds", "split:train", "--seed-edges", "split:train"}, "one of --seeds"},
		{[]string{"--seed-edges", "split:train", "--neg-sampling", "pairs"}, `--neg-sampling "pairs"`},
		{[]string{"--seed-edges", "split:train", "--edge-labels", labelsPath}, "an edge split has its own labels"},
		{[]string{"--seed-edges", pairsPath, "--edge-labels", edgesPath}, "want a 1-D array"},
		{[]string{"--seed-edges", "split:train", "--neg-sampling", "binary", "--neg-amount", "-1"}, "neg_amount"},
	} {
		args := append([]string{dir, "--plan-dir", filepath.Join(t.TempDir(), "p")}, c.args...)
		if _, err := runQuiet(t, commandLine("plan-epochs"), args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error mentioning %q", c.args, err, c.want)
		}
	}
	_, err = runQuiet(t, commandLine("plan-epochs"), dir, "--plan-dir", filepath.Join(t.TempDir(), "p"), "--seed-edges", "split:train", "--neg-sampling", "triplet")
	if zero := slices.Index(labels, 0); zero >= 0 && (err == nil || !strings.Contains(err.Error(), "positive seed edges only")) {
		t.Errorf("triplet over a split with label 0 at %d: %v", zero, err)
	}
}
