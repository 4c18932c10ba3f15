package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierfs/tierfs/advise"
)

// TestBenchIO runs bench io on two small files beside a stand-in iobench that prints a fixed
// figure (the real one needs liburing): the table sums one process per thread, and bad flags are
// refused by name.
func TestBenchIO(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for _, name := range []string{"a", "b"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, make([]byte, 4<<20), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	fake := filepath.Join(dir, "iobench")
	script := "#!/bin/sh\n[ \"$3\" = 4096 ] && [ \"$4\" = 8 ] || exit 3\necho \"randread bs=$3 qd=$4: 1000 IOPS, 0.00 GB/s\"\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(dir, "io.json")
	out, err := runQuiet(t, commandLine("bench"), "io", "--files", strings.Join(files, ","), "--threads", "1,3", "--qd", "8",
		"--seconds", "0.2", "--iobench", fake, "--json", js)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Log(out)
	var got struct {
		Rows []ioBenchRow `json:"rows"`
	}
	data, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Rows) != 2 {
		t.Fatalf("%d rows, want 2", len(got.Rows))
	}
	for i, r := range got.Rows {
		if r.Reads == 0 || r.IOBenchReadsPer != 1000*float64(r.Threads) || r.Ratio <= 0 {
			t.Fatalf("row %d: %+v: want reads, iobench 1000 x threads, a ratio", i, r)
		}
	}
	for _, bad := range [][]string{
		{"io", "--threads", "1"},
		{"io", "--files", files[0], "--threads", "0"},
		{"io", "--files", files[0], "--bs", "3000"},
		{"io", "--files", filepath.Join(dir, "missing")},
	} {
		if _, err := runQuiet(t, commandLine("bench"), bad...); err == nil {
			t.Errorf("bench %v: accepted", bad)
		}
	}
}

// TestBenchGatherVerifyCompare: --verify-compare runs the disk-reading configurations with
// verification off and on, alternating, on the same ids, and reports the ratio of the medians.
func TestBenchGatherVerifyCompare(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	quiet(t)
	if err := execute([]string{"synth", "--nodes", "3000", "--avg-degree", "4", "--dim", "16", "--out", dir}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "v.json")
	if err := execute([]string{"bench", "gather", dir, "--verify-compare", "3", "--batches", "3", "--batch", "128", "--dist", "uniform", "--json", out}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Results []benchResult `json:"results"`
		Verify  []verifyCost  `json:"verify"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Verify) != 2 || got.Verify[0].Config != "ssd tier" || got.Verify[1].Config != "mixed" {
		t.Fatalf("verify costs %+v, want ssd tier and mixed", got.Verify)
	}
	for _, c := range got.Verify {
		if len(c.Verified) != 3 || len(c.Unverified) != 3 || c.Ratio != advise.Median(c.Verified)/advise.Median(c.Unverified) {
			t.Errorf("%+v: want 3 rounds each and the ratio of the medians", c)
		}
	}
	// 2 configurations × 3 rounds × off and on, alternating which goes first.
	if len(got.Results) != 12 {
		t.Fatalf("%d runs, want 12", len(got.Results))
	}
	var order []bool
	for _, r := range got.Results {
		if r.Name == "ssd tier" {
			order = append(order, strings.Contains(r.Note, "verify-reads true"))
		}
	}
	if want := []bool{false, true, true, false, false, true}; !slices.Equal(order, want) {
		t.Errorf("ssd tier runs verified %v, want %v (off and on, alternating which goes first)", order, want)
	}
	if err := execute([]string{"bench", "gather", dir, "--verify-compare", "-1", "--batches", "1"}); err == nil || !strings.Contains(err.Error(), "--verify-compare -1") {
		t.Errorf("--verify-compare -1: %v", err)
	}
}

// bench io refuses a FIFO at once (its open used to block for good) and a character device.
func TestBenchIORefusesFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, "/dev/zero"} {
		done := make(chan error, 1)
		go func() { done <- execute([]string{"bench", "io", "--files", p, "--seconds", "0.1", "--threads", "1"}) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), p) {
				t.Errorf("bench io --files %s: %v; want an error naming it", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("bench io --files %s still runs after 5 s", p)
		}
	}
}
