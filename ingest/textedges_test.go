package ingest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTextEdgesMatchReference writes random edge lists as CSV, TSV and SNAP-style text (comments,
// headers, extra columns, chosen columns) and checks each CSC against the plain reference.
func TestTextEdgesMatchReference(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 9))
	const n = 300
	m := int(edgeChunk) + 1000 // more than one chunk
	src, dst := make([]int64, m), make([]int64, m)
	for i := range src {
		src[i], dst[i] = r.Int64N(n), r.Int64N(n)
	}
	src[0], dst[0] = n-1, 0 // the node count comes from the largest id
	want := referenceLists(n, src, dst, false, false, false)
	for _, c := range []struct {
		name, ext string
		write     func(sb *strings.Builder, i int)
		header    string
		columns   [2]string
	}{
		{"csv with header", ".csv", func(sb *strings.Builder, i int) { fmt.Fprintf(sb, "%d,%d\n", src[i], dst[i]) }, "src,dst\n", [2]string{}},
		{"tsv, SNAP comments, no header", ".txt", func(sb *strings.Builder, i int) { fmt.Fprintf(sb, "%d\t%d\n", src[i], dst[i]) }, "# Directed graph\n# FromNodeId\tToNodeId\n", [2]string{}},
		{"csv, weight column, target/source order", ".csv", func(sb *strings.Builder, i int) { fmt.Fprintf(sb, "%d,0.5,%d\n", dst[i], src[i]) }, "target,w,source\n", [2]string{}},
		{"csv, columns by name", ".csv", func(sb *strings.Builder, i int) { fmt.Fprintf(sb, "7,%d,%d\n", src[i], dst[i]) }, "id,from,to\n", [2]string{"from", "to"}},
		{"space separated, columns by index", ".edges", func(sb *strings.Builder, i int) { fmt.Fprintf(sb, "%d %d %d\n", dst[i], 1, src[i]) }, "", [2]string{"2", "0"}},
	} {
		dir := t.TempDir()
		var sb strings.Builder
		sb.WriteString(c.header)
		for i := range src {
			if i == 5 {
				sb.WriteString("\n% a comment mid-file\n")
			}
			c.write(&sb, i)
		}
		path := filepath.Join(dir, "e"+c.ext)
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "ds")
		if _, err := Ingest(Options{Edges: path, Out: out, EdgeColumns: c.columns}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		m := loadVerified(t, out)
		got := neighborLists(t, m)
		for v := range want {
			a, b := slices.Clone(got[v]), slices.Clone(want[v])
			slices.Sort(a)
			slices.Sort(b)
			if !slices.Equal(a, b) {
				t.Fatalf("%s (seed %d): node %d has in-neighbors %v, want %v", c.name, seed, v, a, b)
			}
		}
	}
}

func TestTextEdgesErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, content, want string }{
		{"bad id", "src,dst\n1,2\n3,x\n", `line 3: field 1 "x" is not an integer node id`},
		{"short line", "1 2\n3\n", "line 2 has 1 field(s)"},
		{"only comments", "# nothing\n\n", "has no edges"},
		{"missing column", "a,b\n1,2\n", `has no column "from" (columns: a, b)`},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".csv")
		os.WriteFile(path, []byte(c.content), 0o644)
		opt := Options{Edges: path, Out: filepath.Join(dir, "out-"+strings.ReplaceAll(c.name, " ", "_"))}
		if c.name == "missing column" {
			opt.EdgeColumns = [2]string{"from", "b"}
		}
		_, err := Ingest(opt)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming %s and %q", c.name, err, path, c.want)
		}
	}
}
