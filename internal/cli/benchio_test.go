package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	out, err := runQuiet(t, runBench, "io", "--files", strings.Join(files, ","), "--threads", "1,3", "--qd", "8",
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
		if _, err := runQuiet(t, runBench, bad...); err == nil {
			t.Errorf("bench %v: accepted", bad)
		}
	}
}
