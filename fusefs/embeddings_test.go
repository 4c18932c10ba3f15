package fusefs

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/embedding"
	"github.com/tierfs/tierfs/featurestore"
)

// openTestTable creates and opens a table of rows rows of dim 8 (SGD) for node type "node" of
// datasetID, with a page cache of cachePages pages.
func openTestTable(t *testing.T, rows int64, datasetID string, seed uint64, cachePages int64) *embedding.Table {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "node.emb")
	spec := embedding.Spec{Rows: rows, Dim: 8, Optimizer: embedding.Optimizer{Name: "sgd", LR: 0.5},
		Init: embedding.Init{Kind: "normal", Seed: seed}, NodeType: "node", DatasetID: datasetID}
	if err := embedding.Create(nil, dir, spec); err != nil {
		t.Fatal(err)
	}
	tb, err := embedding.Open(dir, embedding.Options{HostCacheBytes: cachePages * 4096})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	return tb
}

// tableList is the open tables a test hands Options.Tables.
type tableList struct {
	mu     sync.Mutex
	tables []*embedding.Table
}

func (l *tableList) set(ts ...*embedding.Table) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tables = ts
}

func (l *tableList) list() []*embedding.Table {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.tables)
}

func TestEmbeddingsTree(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 2000, 8, dataset.Float32, 4, rng)
	s := openStore(t, d, featurestore.Options{})
	id := s.Session().Manifest().DatasetID
	tb := openTestTable(t, d.count, id, rng.Uint64(), 6)
	other := openTestTable(t, d.count, "another dataset", rng.Uint64(), 2) // never shown
	var open tableList
	open.set(tb, other)
	v := mount(t, s, Options{Tables: open.list})
	root, tdir := v.Dir(), filepath.Join(v.Dir(), "embeddings", "node")
	if !slices.Contains(list(t, root), "embeddings") {
		t.Fatalf("root lists %v, want embeddings among them", list(t, root))
	}
	if got := list(t, filepath.Join(root, "embeddings")); !slices.Equal(got, []string{"node"}) {
		t.Fatalf("embeddings/ lists %v, want [node] (the other dataset's table is not shown)", got)
	}
	info := keyValues(read(t, filepath.Join(tdir, "info.txt")))
	if info["rows"] != strconv.FormatInt(d.count, 10) || info["dim"] != "8" || info["optimizer"] != "sgd" || info["generation"] != "1" || info["path"] != tb.Dir() {
		t.Fatalf("info.txt %v", info)
	}

	// A step dirties the pages of its rows; the host tier shows the cache as the table has it.
	ids := make([]int64, 40)
	for i := range ids {
		ids[i] = rng.Int64N(d.count)
	}
	grads := make([]float32, len(ids)*8)
	for i := range grads {
		grads[i] = float32(rng.NormFloat64())
	}
	if err := tb.Apply(ids, grads); err != nil {
		t.Fatal(err)
	}
	checkTableTiers(t, tdir, tb)
	for _, id := range ids[:5] {
		checkTableRow(t, tdir, tb, id)
	}
	checkTableTiers(t, tdir, tb) // the rows' reads moved pages through the cache

	// A checkpoint writes every dirty page and moves the generation on.
	if err := tb.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	ssd := keyValues(read(t, filepath.Join(tdir, "tiers/ssd/summary.txt")))
	if ssd["generation"] != "2" || ssd["step"] != "1" || ssd["checkpoints"] != "1" {
		t.Fatalf("ssd summary after a checkpoint: %v", ssd)
	}
	if host := keyValues(read(t, filepath.Join(tdir, "tiers/host/summary.txt"))); host["dirty_pages"] != "0" {
		t.Fatalf("host summary after a checkpoint: %v", host)
	}
	var st map[string]any
	if err := json.Unmarshal(read(t, filepath.Join(tdir, "stats.json")), &st); err != nil || st["generation"] != 2.0 || st["checkpoints"] != 1.0 {
		t.Fatalf("stats.json %v (%v)", st, err)
	}

	// A second table of the type is named by its id; a closed one disappears.
	second := openTestTable(t, d.count, id, rng.Uint64(), 2)
	open.set(tb, second)
	name2 := "node." + second.Info().TableID[:8]
	if got, want := list(t, filepath.Join(root, "embeddings")), []string{"node." + tb.Info().TableID[:8], name2}; !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("embeddings/ lists %v, want %v", got, want)
	}
	open.set(tb)
	if got := list(t, filepath.Join(root, "embeddings")); !slices.Equal(got, []string{"node"}) {
		t.Fatalf("embeddings/ lists %v after the second table closed", got)
	}
	time.Sleep(20 * time.Millisecond) // the kernel keeps a name it was given for a jiffy
	if _, err := os.Stat(filepath.Join(root, "embeddings", name2)); !os.IsNotExist(err) {
		t.Fatalf("stat of a closed table's directory: %v", err)
	}
}

// checkTableTiers checks tiers/host of a table against the cache the table reports.
func checkTableTiers(t *testing.T, tdir string, tb *embedding.Table) {
	t.Helper()
	info := tb.Info()
	host := keyValues(read(t, filepath.Join(tdir, "tiers/host/summary.txt")))
	pages, dirty := tb.CachedPages(nil)
	if host["pages"] != strconv.Itoa(len(pages)) || host["dirty_pages"] != strconv.FormatInt(dirty, 10) || host["cache_pages"] != "6" {
		t.Fatalf("host summary %v; the table caches %d pages, %d dirty", host, len(pages), dirty)
	}
	if dirty != tb.Stats().Dirty {
		t.Fatalf("dirty pages %d, Stats.Dirty %d", dirty, tb.Stats().Dirty)
	}
	held := map[int64]bool{}
	var rows int64
	for _, l := range lines(read(t, filepath.Join(tdir, "tiers/host/ranges.txt"))) {
		var first, count int64
		if _, err := fmt.Sscan(l, &first, &count); err != nil {
			t.Fatalf("ranges.txt line %q: %v", l, err)
		}
		for id := first; id < first+count; id++ {
			held[id] = true
		}
		rows += count
	}
	for id := range info.Rows {
		if held[id] != tb.RowCached(id) {
			t.Fatalf("row %d: in ranges.txt %t, cached %t", id, held[id], tb.RowCached(id))
		}
	}
	if host["rows"] != strconv.FormatInt(rows, 10) {
		t.Fatalf("host summary rows %s, ranges.txt holds %d", host["rows"], rows)
	}
}

// checkTableRow checks nodes/<id>/ of a table against Gather.
func checkTableRow(t *testing.T, tdir string, tb *embedding.Table, id int64) {
	t.Helper()
	want := make([]float32, 8)
	if err := tb.Gather([]int64{id}, want); err != nil {
		t.Fatal(err)
	}
	ndir := filepath.Join(tdir, "nodes", strconv.FormatInt(id, 10))
	bin := read(t, filepath.Join(ndir, "feature.bin"))
	wantBin := make([]byte, 32)
	for i, v := range want {
		binary.LittleEndian.PutUint32(wantBin[4*i:], math.Float32bits(v))
	}
	if !bytes.Equal(bin, wantBin) {
		t.Fatalf("row %d: feature.bin %x, want %x", id, bin, wantBin)
	}
	for i, l := range lines(read(t, filepath.Join(ndir, "feature.txt"))) {
		if got, err := strconv.ParseFloat(l, 32); err != nil || float32(got) != want[i] {
			t.Fatalf("row %d: feature.txt line %d %q, want %v", id, i, l, want[i])
		}
	}
	if got := string(read(t, filepath.Join(ndir, "tier"))); got != "host\n" { // just read: cached
		t.Fatalf("row %d: tier %q right after a read", id, got)
	}
	if _, err := os.Stat(filepath.Join(tdir, "nodes", strconv.FormatInt(tb.Info().Rows, 10))); !os.IsNotExist(err) {
		t.Fatalf("nodes/<rows>: %v, want it not to exist", err)
	}
}
