package fusefs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/ingest"
	"github.com/tierfs/tierfs/tiers"
)

// heteroData is a synthetic heterogeneous dataset and its contents read back plainly (whole
// files, no store): the reference the typed view is compared with.
type heteroData struct {
	dir    string
	m      *dataset.Manifest
	rows   map[string][]byte // node type → its feature "x", row-major
	labels map[string][]int64
	indptr map[string][]int64 // edge type key → its CSC
	index  map[string][]int64
}

// writeHetero writes three node types (one without features, one of float16) and four edge
// types, two of them into "paper".
func writeHetero(t testing.TB, rng *rand.Rand) *heteroData {
	t.Helper()
	return writeTyped(t, rng, []ingest.SynthNodeType{
		{Name: "paper", Nodes: 1500 + rng.Int64N(500), Dim: 24, Classes: 5},
		{Name: "author", Nodes: 3000 + rng.Int64N(500), Dim: 7, DType: dataset.Float16},
		{Name: "institution", Nodes: 40}, // no features, no labels
	}, []ingest.SynthEdgeType{
		{Src: "paper", Rel: "cites", Dst: "paper", AvgDegree: 6},
		{Src: "author", Rel: "writes", Dst: "paper", AvgDegree: 3},
		{Src: "paper", Rel: "written_by", Dst: "author", AvgDegree: 1.5},
		{Src: "author", Rel: "affiliated_with", Dst: "institution", AvgDegree: 20},
	})
}

// writeTyped writes a synthetic graph of the given types and reads its rows, labels and CSCs
// back plainly.
func writeTyped(t testing.TB, rng *rand.Rand, nodeTypes []ingest.SynthNodeType, edgeTypes []ingest.SynthEdgeType) *heteroData {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "hetero")
	m, err := ingest.SynthHetero(ingest.SynthHeteroOptions{NodeTypes: nodeTypes, EdgeTypes: edgeTypes, Seed: rng.Uint64(), Out: dir})
	if err != nil {
		t.Fatal(err)
	}
	d := &heteroData{dir: dir, m: m, rows: map[string][]byte{}, labels: map[string][]int64{}, indptr: map[string][]int64{}, index: map[string][]int64{}}
	file := func(p string) []byte { return read(t, m.Path(p)) }
	for _, nt := range m.NodeTypes {
		if l := nt.Labels; l != nil {
			d.labels[nt.Name] = int64s(file(l.File))[:nt.Count]
		}
		if len(nt.Features) == 0 {
			continue
		}
		spec := &nt.Features[0]
		files := make([][]byte, len(spec.Files))
		for k, p := range spec.Files {
			files[k] = file(p)
		}
		rb := spec.RowBytes
		rows := make([]byte, nt.Count*rb)
		for v := range nt.Count {
			f, off := spec.Locate(v)
			copy(rows[v*rb:(v+1)*rb], files[f][off:off+rb])
		}
		d.rows[nt.Name] = rows
	}
	for i := range m.EdgeTypes {
		et := &m.EdgeTypes[i]
		dst, _ := m.NodeTypeNamed(et.Dst)
		d.indptr[et.Key()] = int64s(file(et.Indptr.File))[:dst.Count+1]
		raw := file(et.Indices.File)
		idx := make([]int64, et.Count)
		for j := range idx {
			if et.Indices.DType == dataset.Int32 {
				idx[j] = int64(int32(uint32(raw[4*j]) | uint32(raw[4*j+1])<<8 | uint32(raw[4*j+2])<<16 | uint32(raw[4*j+3])<<24))
			} else {
				idx[j] = int64s(raw[8*j : 8*j+8])[0]
			}
		}
		d.index[et.Key()] = idx
	}
	return d
}

func int64s(b []byte) []int64 {
	out := make([]int64, len(b)/8)
	copy(dataset.BytesOf(out), b)
	return out
}

// list is the sorted names dir lists.
func list(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names
}

// TestTypedTreeOfOneType: a dataset of one named node type and edge type (typed, as a one-type
// HeteroData) has the typed view beside the one-type tree, its names kept.
func TestTypedTreeOfOneType(t *testing.T) {
	rng := newRand(t)
	d := writeTyped(t, rng, []ingest.SynthNodeType{{Name: "paper", Nodes: 900 + rng.Int64N(300), Dim: 12, Classes: 3}},
		[]ingest.SynthEdgeType{{Src: "paper", Rel: "cites", Dst: "paper", AvgDegree: 5}})
	if !d.m.Typed {
		t.Fatal("a synthetic graph of one named type is not marked typed")
	}
	s, err := featurestore.Open(d.dir, featurestore.Options{HostCacheBytes: 32 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	v := mount(t, s, Options{})
	if got := list(t, filepath.Join(v.Dir(), "types")); !slices.Equal(got, []string{"paper"}) {
		t.Fatalf("types/ lists %v, want [paper]", got)
	}
	checkTyped(t, rng, v.Dir(), s.Session(), d)
}

// TestTypedTree mounts a heterogeneous dataset (topology in memory, then on disk with verified
// reads) and compares types/ and edge_types/ with the manifest, the session's typed calls and
// the dataset's files read plainly: listings, info.txt, stats.json, each type's tiers, and every
// file of sampled nodes of every type (feature rows, values, tier, label, neighbors along each
// edge type into the type); bad names are ENOENT.
func TestTypedTree(t *testing.T) {
	rng := newRand(t)
	d := writeHetero(t, rng)
	for _, opt := range []featurestore.Options{
		{HostCacheBytes: 96 << 10},
		{HostCacheBytes: 64 << 10, TopologyMemoryBytes: -1},
	} {
		s, err := featurestore.Open(d.dir, opt)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		v := mount(t, s, Options{})
		checkTyped(t, rng, v.Dir(), s.Session(), d)
		if err := v.Unmount(); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
}

func checkTyped(t *testing.T, rng *rand.Rand, root string, sess *featurestore.Session, d *heteroData) {
	t.Helper()
	m := d.m
	// The one-type tree stays (for the mounted store's type); types/ and edge_types/ join it.
	if got, want := list(t, root), []string{"edge_types", "manifest.json", "nodes", "placement.json", "stats.json", "tiers", "topology", "types"}; !slices.Equal(got, want) {
		t.Fatalf("root lists %v, want %v", got, want)
	}
	// With several edge types the one-type tree has no topology of its own; with one it has.
	if kv := keyValues(read(t, filepath.Join(root, "topology/degrees.txt"))); (len(m.EdgeTypes) > 1) != strings.Contains(kv["note"], "edge_types/") {
		t.Fatalf("topology/degrees.txt of %d edge types: %v", len(m.EdgeTypes), kv)
	}
	var names []string
	for _, nt := range m.NodeTypes {
		names = append(names, nt.Name)
	}
	if got, want := list(t, filepath.Join(root, "types")), slices.Sorted(slices.Values(names)); !slices.Equal(got, want) {
		t.Fatalf("types/ lists %v, want %v", got, want)
	}
	var keys []string
	for i := range m.EdgeTypes {
		keys = append(keys, m.EdgeTypes[i].Key())
	}
	if got, want := list(t, filepath.Join(root, "edge_types")), slices.Sorted(slices.Values(keys)); !slices.Equal(got, want) {
		t.Fatalf("edge_types/ lists %v, want %v", got, want)
	}
	for i := range m.EdgeTypes {
		et := &m.EdgeTypes[i]
		dir := filepath.Join(root, "edge_types", et.Key())
		if got := list(t, dir); !slices.Equal(got, []string{"info.txt"}) {
			t.Fatalf("edge_types/%s lists %v", et.Key(), got)
		}
		want := fmt.Sprintf("src %s\nrel %s\ndst %s\ncount %d\n", et.Src, et.Rel, et.Dst, et.Count)
		if got := string(read(t, filepath.Join(dir, "info.txt"))); got != want || et.Count == 0 {
			t.Fatalf("edge_types/%s/info.txt %q, want %q", et.Key(), got, want)
		}
	}

	for _, nt := range m.NodeTypes {
		tdir := filepath.Join(root, "types", nt.Name)
		var in []string
		for i := range m.EdgeTypes {
			if m.EdgeTypes[i].Dst == nt.Name {
				in = append(in, m.EdgeTypes[i].Key())
			}
		}
		stack, stackErr := sess.Stack(nt.Name)
		info := keyValues(read(t, filepath.Join(tdir, "info.txt")))
		if info["name"] != nt.Name || info["nodes"] != strconv.FormatInt(nt.Count, 10) || info["in_edge_types"] != strings.Join(in, " ") {
			t.Fatalf("types/%s/info.txt %v", nt.Name, info)
		}
		if (info["labels"] == "yes") != (nt.Labels != nil) {
			t.Fatalf("types/%s/info.txt %v; labels %v", nt.Name, info, nt.Labels)
		}
		if stackErr != nil {
			if !errors.Is(stackErr, dataset.ErrFeatureNotFound) || len(nt.Features) != 0 {
				t.Fatalf("stack of %s: %v", nt.Name, stackErr)
			}
			if got := list(t, tdir); !slices.Equal(got, []string{"info.txt", "nodes"}) {
				t.Fatalf("types/%s (no features) lists %v", nt.Name, got)
			}
			if info["feature"] != "none" {
				t.Fatalf("types/%s/info.txt %v", nt.Name, info)
			}
		} else {
			if got := list(t, tdir); !slices.Equal(got, []string{"info.txt", "nodes", "stats.json", "tiers"}) {
				t.Fatalf("types/%s lists %v", nt.Name, got)
			}
			if info["feature"] != "x" || info["row_bytes"] != strconv.FormatInt(stack.RowBytes(), 10) {
				t.Fatalf("types/%s/info.txt %v", nt.Name, info)
			}
			checkTypeTiers(t, tdir, nt.Name, stack)
		}

		// nodes/ lists only its README and finds ids of the type by name only.
		if got := list(t, filepath.Join(tdir, "nodes")); !slices.Equal(got, []string{"README"}) {
			t.Fatalf("types/%s/nodes lists %v", nt.Name, got)
		}
		if readme := read(t, filepath.Join(tdir, "nodes/README")); !bytes.Contains(readme, fmt.Appendf(nil, "[0, %d)", nt.Count)) {
			t.Fatalf("types/%s/nodes/README: %s", nt.Name, readme)
		}
		for _, bad := range []string{strconv.FormatInt(nt.Count, 10), "-1", "007", "+5", "x", "99999999999999999999"} {
			if _, err := os.Stat(filepath.Join(tdir, "nodes", bad)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("types/%s/nodes/%s: %v, want ENOENT", nt.Name, bad, err)
			}
		}

		var want []string
		if stackErr == nil {
			want = append(want, "feature.bin", "feature.txt")
		}
		if nt.Labels != nil {
			want = append(want, "label")
		}
		if len(in) > 0 {
			want = append(want, "neighbors")
		}
		if stackErr == nil {
			want = append(want, "tier")
		}
		ids := []int64{0, nt.Count - 1}
		for range 25 {
			ids = append(ids, rng.Int64N(nt.Count))
		}
		for _, id := range ids {
			ndir := filepath.Join(tdir, "nodes", strconv.FormatInt(id, 10))
			if got := list(t, ndir); !slices.Equal(got, want) {
				t.Fatalf("types/%s/nodes/%d lists %v, want %v", nt.Name, id, got, want)
			}
			checkTypedNode(t, ndir, sess, d, nt.Name, stack, in, id)
		}
	}

	// Names the dataset lacks.
	for _, bad := range []string{
		"types/venue", "types/paper/nope", "types/institution/stats.json", "types/institution/tiers",
		"types/institution/nodes/0/feature.bin", "types/institution/nodes/0/label", "types/institution/nodes/0/tier",
		"types/paper/nodes/0/neighbors/paper:cites:author.txt", "types/paper/nodes/0/neighbors/paper:written_by:author.txt",
		"types/paper/nodes/0/neighbors/paper:cites:paper", "types/author/nodes/0/label", "types/author/nodes/0/neighbors/author:writes:paper.txt",
		"edge_types/paper:cites:author", "edge_types/paper:cites:paper/nope",
	} {
		if _, err := os.Stat(filepath.Join(root, bad)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want ENOENT", bad, err)
		}
	}
	// Read-only.
	if err := os.WriteFile(filepath.Join(root, "types/paper/nodes/0/feature.bin"), []byte{1}, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("writing types/paper/nodes/0/feature.bin: %v, want EROFS", err)
	}
	if err := os.Mkdir(filepath.Join(root, "types/venue"), 0o755); !errors.Is(err, syscall.EROFS) {
		t.Errorf("mkdir types/venue: %v, want EROFS", err)
	}
}

// checkTypeTiers compares types/<ntype>/stats.json and tiers/ with the type's stack.
func checkTypeTiers(t *testing.T, tdir, name string, stack *featurestore.Store) {
	t.Helper()
	var st featurestore.Stats
	if err := json.Unmarshal(read(t, filepath.Join(tdir, "stats.json")), &st); err != nil {
		t.Fatal(err)
	}
	want := stack.Stats()
	if st.NodeTypes != nil || len(st.Tiers) != 3 {
		t.Fatalf("types/%s/stats.json %+v", name, st)
	}
	for k, ts := range st.Tiers {
		if ts.Tier != want.Tiers[k].Tier || ts.RowsHeld != want.Tiers[k].RowsHeld || ts.BytesHeld != want.Tiers[k].BytesHeld {
			t.Fatalf("types/%s/stats.json tier %+v, the stack's %+v", name, ts, want.Tiers[k])
		}
	}
	if got := list(t, filepath.Join(tdir, "tiers")); !slices.Equal(got, []string{"gpu", "host", "ssd"}) {
		t.Fatalf("types/%s/tiers lists %v", name, got)
	}
	for _, kind := range []tiers.Kind{tiers.GPU, tiers.Host, tiers.SSD} {
		dir := filepath.Join(tdir, "tiers", string(kind))
		var ranges []byte
		stack.TierRanges(kind, func(first, count int64) bool {
			ranges = fmt.Appendf(ranges, "%d %d\n", first, count)
			return true
		})
		if got := read(t, filepath.Join(dir, "ranges.txt")); !bytes.Equal(got, ranges) {
			t.Fatalf("types/%s/tiers/%s/ranges.txt %q, the stack's %q", name, kind, got, ranges)
		}
		sum := keyValues(read(t, filepath.Join(dir, "summary.txt")))
		ts := want.Tier(kind)
		if sum["tier"] != string(kind) || sum["rows"] != strconv.FormatInt(ts.RowsHeld, 10) || sum["nodes"] != strconv.FormatInt(stack.NumNodes(), 10) {
			t.Fatalf("types/%s/tiers/%s/summary.txt %v, the stack's %+v", name, kind, sum, ts)
		}
	}
	// A budget of part of the rows: the host tier holds some rows of each type, not all.
	if h := want.Tier(tiers.Host).RowsHeld; h == 0 || h >= stack.NumNodes() {
		t.Fatalf("types/%s: host tier holds %d of %d rows", name, h, stack.NumNodes())
	}
	if got := string(read(t, filepath.Join(tdir, "tiers/ssd/ranges.txt"))); got != fmt.Sprintf("0 %d\n", stack.NumNodes()) {
		t.Fatalf("types/%s/tiers/ssd/ranges.txt %q", name, got)
	}
}

// checkTypedNode compares every file of types/<ntype>/nodes/<id> with the session and the files.
func checkTypedNode(t *testing.T, ndir string, sess *featurestore.Session, d *heteroData, ntype string, stack *featurestore.Store, in []string, id int64) {
	t.Helper()
	if stack != nil {
		rb := stack.RowBytes()
		want := d.rows[ntype][id*rb : (id+1)*rb]
		gathered := make([]byte, rb)
		if err := sess.Gather(ntype, "", []int64{id}, gathered); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want, gathered) {
			t.Fatalf("%s: session gather differs from the files", ndir)
		}
		if st, err := os.Stat(filepath.Join(ndir, "feature.bin")); err != nil || st.Size() != rb {
			t.Fatalf("%s/feature.bin: stat %v, %v; want %d bytes", ndir, st, err, rb)
		}
		if got := read(t, filepath.Join(ndir, "feature.bin")); !bytes.Equal(got, want) {
			t.Fatalf("%s/feature.bin differs from the row", ndir)
		}
		text, err := appendValues(nil, stack.Feature().DType, want)
		if err != nil {
			t.Fatal(err)
		}
		if got := read(t, filepath.Join(ndir, "feature.txt")); !bytes.Equal(got, text) || len(lines(got)) != int(stack.Feature().Dim) {
			t.Fatalf("%s/feature.txt %q, want %q", ndir, got, text)
		}
		if got := string(read(t, filepath.Join(ndir, "tier"))); got != string(stack.TierOf(id))+"\n" {
			t.Fatalf("%s/tier %q, the stack's %q", ndir, got, stack.TierOf(id))
		}
	}
	if labels, ok := d.labels[ntype]; ok {
		if got := string(read(t, filepath.Join(ndir, "label"))); got != fmt.Sprintf("%d\n", labels[id]) {
			t.Fatalf("%s/label %q, want %d", ndir, got, labels[id])
		}
	}
	if len(in) == 0 {
		return
	}
	var files []string
	for _, key := range in {
		files = append(files, key+".txt")
	}
	if got := list(t, filepath.Join(ndir, "neighbors")); !slices.Equal(got, slices.Sorted(slices.Values(files))) {
		t.Fatalf("%s/neighbors lists %v, want %v", ndir, got, files)
	}
	for _, key := range in {
		indptr := d.indptr[key]
		var want []byte
		for _, u := range d.index[key][indptr[id]:indptr[id+1]] {
			want = fmt.Appendf(want, "%d\n", u)
		}
		if got := read(t, filepath.Join(ndir, "neighbors", key+".txt")); !bytes.Equal(got, want) {
			t.Fatalf("%s/neighbors/%s.txt %q, the CSC's %q", ndir, key, got, want)
		}
		nb, err := sess.Neighbors(key, id)
		if err != nil || int64(len(nb)) != indptr[id+1]-indptr[id] {
			t.Fatalf("session neighbors of %d along %s: %v, %v", id, key, nb, err)
		}
	}
}

// Session.Neighbors refuses an edge type the dataset lacks and a node out of its dst type's range.
func TestSessionNeighborsErrors(t *testing.T) {
	d := writeHetero(t, newRand(t))
	s, err := featurestore.Open(d.dir, featurestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sess := s.Session()
	if _, err := sess.Neighbors("paper:cites:author", 0); !errors.Is(err, dataset.ErrTypeNotFound) {
		t.Errorf("an unknown edge type: %v", err)
	}
	if _, err := sess.Neighbors("", 0); !errors.Is(err, featurestore.ErrInvalidOption) || !strings.Contains(err.Error(), "name one") {
		t.Errorf("no edge type named among several: %v", err)
	}
	inst, _ := d.m.NodeTypeNamed("institution")
	for _, id := range []int64{-1, inst.Count} {
		if _, err := sess.Neighbors("author:affiliated_with:institution", id); !errors.Is(err, featurestore.ErrIDOutOfRange) || !strings.Contains(err.Error(), "institution") {
			t.Errorf("node %d of institution: %v", id, err)
		}
	}
}

// Closing the session (through the mounted store) unmounts the typed view first.
func TestTypedStoreCloseUnmounts(t *testing.T) {
	d := writeHetero(t, newRand(t))
	s, err := featurestore.Open(d.dir, featurestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v := mount(t, s, Options{})
	read(t, filepath.Join(v.Dir(), "types/author/nodes/3/feature.bin"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if mounted(t, v.Dir()) {
		t.Fatalf("%s is still mounted after the store closed", v.Dir())
	}
}

// A mounted stack of a session that is not its first: the one-type tree shows that stack's type,
// and closing the session (which closes the first stack first) unmounts before any stack closes;
// a file of another type's stack left open fails instead of reaching it.
func TestTypedOtherStackMounted(t *testing.T) {
	d := writeHetero(t, newRand(t))
	sess, err := featurestore.OpenSession(d.dir, featurestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	author, err := sess.Stack("author")
	if err != nil {
		t.Fatal(err)
	}
	v := mount(t, author, Options{})
	if readme := read(t, filepath.Join(v.Dir(), "nodes/README")); !bytes.Contains(readme, fmt.Appendf(nil, "[0, %d)", author.NumNodes())) {
		t.Fatalf("nodes/README of the author stack: %s", readme)
	}
	if got := read(t, filepath.Join(v.Dir(), "types/paper/nodes/1/feature.bin")); !bytes.Equal(got, d.rows["paper"][len(got):2*len(got)]) {
		t.Fatalf("types/paper/nodes/1/feature.bin differs from the row")
	}
	busy, err := os.Open(filepath.Join(v.Dir(), "types/paper/tiers/host/ranges.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	waitFor(t, "Session.Close of a busy mount", func() { sess.Close() })
	if mounted(t, v.Dir()) {
		t.Fatalf("%s is still mounted after the session closed", v.Dir())
	}
	if _, err := busy.ReadAt(make([]byte, 10), 0); err == nil {
		t.Fatal("read of a file left open on the detached mount reached the closed session")
	}
	busy.Close()
	waitFor(t, "Wait once the last file is closed", v.Wait)
}
