package ingest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func testCommand(exe string, args ...string) *exec.Cmd { return exec.Command(exe, args...) }

// fsizeChild runs in the child process of TestWriteErrorSurfaces: with files limited to 1 MiB,
// writing 4 MiB of features and 2.4 MiB of indices must fail with an error naming the problem.
func fsizeChild(t *testing.T) {
	dir := os.Getenv("TIERFS_INGEST_FSIZE_CHILD")
	const nodes, edges = 1000, 600_000
	src, dst := make([]int64, edges), make([]int64, edges)
	for i := range src {
		src[i], dst[i] = int64(i%nodes), int64((i*7)%nodes)
	}
	edgesPath := filepath.Join(dir, "e.npy")
	writeNpyEdges(t, edgesPath, "<i4", src, dst, false)
	featsPath := filepath.Join(dir, "x.npy")
	if err := WriteNpy(featsPath, "<f4", []int64{nodes, 1024}, make([]byte, nodes*4096)); err != nil {
		t.Fatal(err)
	}
	lim := unix.Rlimit{Cur: 1 << 20, Max: 1 << 20}
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &lim); err != nil {
		t.Skip(err)
	}
	_, err := Ingest(Options{Features: featsPath, Out: filepath.Join(dir, "ds1")})
	if err == nil || !strings.Contains(err.Error(), "file too large") || !strings.Contains(err.Error(), "features.x.0.bin") {
		t.Fatalf("features over the limit: %v", err)
	}
	t.Logf("features: %v", err)
	_, err = Ingest(Options{Edges: edgesPath, Out: filepath.Join(dir, "ds2")})
	if err == nil || !strings.Contains(err.Error(), "file too large") || !strings.Contains(err.Error(), "indices.bin") {
		t.Fatalf("indices over the limit: %v", err)
	}
	t.Logf("indices: %v", err)
	t.Log("CHILD-OK")
}
