package fusefs

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/tiers"
)

// testData is a dataset written for a test plus the plain in-memory copy it is checked against.
type testData struct {
	dir      string
	rows     []byte
	rowBytes int64
	count    int64
	indptr   []int64
	indices  []int32
	labels   []int64
}

func newRand(t testing.TB) *rand.Rand {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 0))
}

// writeDataset writes count nodes with random rows of dim elements of dtype, a random graph of
// about avgDeg in-edges per node skewed towards small ids, and random labels.
func writeDataset(t testing.TB, count, dim int64, dtype dataset.DType, avgDeg int, rng *rand.Rand) *testData {
	t.Helper()
	dir := t.TempDir()
	spec, err := dataset.NewFeatureSpec("x", dtype, dim, count, 2, dataset.DefaultBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"indptr.bin", "indices.bin", "labels.bin"}
	for k := range spec.Files {
		spec.Files[k] = fmt.Sprintf("features.x.%d.bin", k)
		files = append(files, spec.Files[k])
	}
	d := &testData{dir: dir, rowBytes: spec.RowBytes, count: count, rows: make([]byte, count*spec.RowBytes)}
	for i := range d.rows {
		d.rows[i] = byte(rng.UintN(256))
	}
	w, err := dataset.NewFeatureWriter(nil, dir, &spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRows(d.rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	d.indptr = make([]int64, count+1)
	for v := range count {
		deg := rng.Int64N(int64(2*avgDeg)*(count-v)/count + 1)
		d.indptr[v+1] = d.indptr[v] + deg
		for range deg {
			d.indices = append(d.indices, int32(rng.Int64N(count)))
		}
	}
	if err := dataset.WriteInt64s(nil, filepath.Join(dir, "indptr.bin"), d.indptr); err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, 4*len(d.indices))
	for i, u := range d.indices {
		binary.LittleEndian.PutUint32(raw[4*i:], uint32(u))
	}
	if err := os.WriteFile(filepath.Join(dir, "indices.bin"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	d.labels = make([]int64, count)
	for i := range d.labels {
		d.labels[i] = rng.Int64N(11) - 1
	}
	if err := dataset.WriteInt64s(nil, filepath.Join(dir, "labels.bin"), d.labels); err != nil {
		t.Fatal(err)
	}
	m := &dataset.Manifest{
		NodeTypes: []dataset.NodeType{{Name: "node", Count: count, Features: []dataset.FeatureSpec{spec},
			Labels: &dataset.LabelSpec{ArraySpec: dataset.ArraySpec{File: "labels.bin", DType: dataset.Int64}, NumClasses: 10}}},
		EdgeTypes: []dataset.EdgeType{{Src: "node", Rel: "to", Dst: "node", Count: int64(len(d.indices)), Layout: "csc",
			Indptr: dataset.ArraySpec{File: "indptr.bin", DType: dataset.Int64}, Indices: dataset.ArraySpec{File: "indices.bin", DType: dataset.Int32}}},
	}
	m.SetDir(dir)
	if err := dataset.Commit(m, files, "test", nil); err != nil {
		t.Fatal(err)
	}
	return d
}

func (d *testData) row(id int64) []byte { return d.rows[id*d.rowBytes : (id+1)*d.rowBytes] }

// openStore opens d with a host tier of about a quarter of the rows.
func openStore(t testing.TB, d *testData, opt featurestore.Options) *featurestore.Store {
	t.Helper()
	if opt.HostCacheBytes == 0 {
		opt.HostCacheBytes = featurestore.TierBudget(tiers.Host, d.count, d.rowBytes) / 4
	}
	s, err := featurestore.Open(d.dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// mount mounts s in a fresh directory, skipping the test where FUSE is unavailable.
func mount(t testing.TB, s *featurestore.Store, opt Options) *View {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no FUSE here: %v", err)
	}
	v, err := Mount(s, t.TempDir(), opt)
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
		t.Skipf("mounting is not permitted here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := v.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return v
}

func read(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// mounted reports whether dir is a mountpoint in /proc/self/mountinfo.
func mounted(t testing.TB, dir string) bool {
	t.Helper()
	fstype, err := mountType(dir)
	if err != nil {
		t.Fatal(err)
	}
	return fstype != ""
}

func lines(data []byte) []string {
	s := strings.TrimSuffix(string(data), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// keyValues parses "key value" lines.
func keyValues(data []byte) map[string]string {
	kv := map[string]string{}
	for _, l := range lines(data) {
		if k, v, ok := strings.Cut(l, " "); ok && !strings.HasPrefix(k, "#") {
			kv[k] = v
		}
	}
	return kv
}

func TestTree(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 3000, 24, dataset.Float32, 6, rng)
	s := openStore(t, d, featurestore.Options{})
	v := mount(t, s, Options{Placement: PlacementOf(s, featurestore.Options{HostCacheBytes: featurestore.TierBudget(tiers.Host, d.count, d.rowBytes) / 4})})
	root := v.Dir()
	if fstype, _ := mountType(root); fstype != "fuse.tierfs" {
		t.Fatalf("mount type %q", fstype)
	}

	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"manifest.json", "nodes", "placement.json", "stats.json", "tiers", "topology"}; !slices.Equal(names, want) {
		t.Fatalf("root lists %v, want %v", names, want)
	}
	if got, want := read(t, filepath.Join(root, "manifest.json")), read(t, filepath.Join(d.dir, "manifest.json")); !bytes.Equal(got, want) {
		t.Fatalf("manifest.json differs from the dataset's")
	}

	// Tiers: ranges.txt lists exactly the ids Host().Slot finds.
	held := map[int64]bool{}
	for id := range d.count {
		if s.Host().Slot(id) >= 0 {
			held[id] = true
		}
	}
	inRanges := map[int64]bool{}
	ranges := 0
	for _, l := range lines(read(t, filepath.Join(root, "tiers/host/ranges.txt"))) {
		var first, count int64
		if _, err := fmt.Sscanf(l, "%d %d", &first, &count); err != nil {
			t.Fatalf("ranges.txt line %q: %v", l, err)
		}
		for id := first; id < first+count; id++ {
			inRanges[id] = true
		}
		ranges++
	}
	if len(held) == 0 || len(held) == int(d.count) || len(inRanges) != len(held) {
		t.Fatalf("host ranges.txt holds %d ids, the host tier %d of %d", len(inRanges), len(held), d.count)
	}
	for id := range held {
		if !inRanges[id] {
			t.Fatalf("host tier holds %d, ranges.txt does not list it", id)
		}
	}
	if got := string(read(t, filepath.Join(root, "tiers/ssd/ranges.txt"))); got != fmt.Sprintf("0 %d\n", d.count) {
		t.Fatalf("ssd ranges.txt %q", got)
	}
	if got := read(t, filepath.Join(root, "tiers/gpu/ranges.txt")); len(got) != 0 {
		t.Fatalf("gpu ranges.txt %q", got)
	}
	hostSum := keyValues(read(t, filepath.Join(root, "tiers/host/summary.txt")))
	if hostSum["rows"] != strconv.Itoa(len(held)) || hostSum["bytes"] != strconv.FormatInt(s.Host().Bytes(), 10) {
		t.Fatalf("host summary %v; tier holds %d rows in %d bytes", hostSum, len(held), s.Host().Bytes())
	}
	if gpu := keyValues(read(t, filepath.Join(root, "tiers/gpu/summary.txt"))); gpu["present"] != "no" || gpu["rows"] != "0" {
		t.Fatalf("gpu summary %v", gpu)
	}

	var pl placementInfo
	if err := json.Unmarshal(read(t, filepath.Join(root, "placement.json")), &pl); err != nil {
		t.Fatal(err)
	}
	if pl.HostRows != int64(len(held)) || pl.HostRanges != int64(ranges) || pl.Policy != "in-degree" || pl.BudgetBytes == nil || *pl.BudgetBytes != featurestore.TierBudget(tiers.Host, d.count, d.rowBytes)/4 {
		t.Fatalf("placement.json %+v; want %d rows in %d ranges", pl, len(held), ranges)
	}

	// nodes/ lists only its README and finds ids by name only.
	entries, err = os.ReadDir(filepath.Join(root, "nodes"))
	if err != nil || len(entries) != 1 || entries[0].Name() != "README" {
		t.Fatalf("nodes/ lists %v (%v)", entries, err)
	}
	if readme := read(t, filepath.Join(root, "nodes/README")); !bytes.Contains(readme, []byte("[0, 3000)")) {
		t.Fatalf("nodes/README: %s", readme)
	}
	for _, bad := range []string{"3000", "-1", "007", "+5", "x", "1e3", "99999999999999999999"} {
		if _, err := os.Stat(filepath.Join(root, "nodes", bad)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("nodes/%s: %v, want ENOENT", bad, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "nodes/5/nope")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("nodes/5/nope: %v, want ENOENT", err)
	}
	entries, err = os.ReadDir(filepath.Join(root, "nodes/0"))
	if err != nil {
		t.Fatal(err)
	}
	names = names[:0]
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"feature.bin", "feature.txt", "label", "neighbors.txt", "tier"}; !slices.Equal(names, want) {
		t.Fatalf("nodes/0 lists %v, want %v", names, want)
	}

	ids := []int64{0, d.count - 1}
	for range 40 {
		ids = append(ids, rng.Int64N(d.count))
	}
	for _, id := range ids {
		checkNode(t, root, s, d, id)
	}

	checkDegrees(t, root, d)
}

// checkNode compares every file of nodes/<id> with the store and the reference.
func checkNode(t *testing.T, root string, s *featurestore.Store, d *testData, id int64) {
	t.Helper()
	nodeDir := filepath.Join(root, "nodes", strconv.FormatInt(id, 10))
	want := make([]byte, d.rowBytes)
	if err := s.Gather([]int64{id}, want); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(nodeDir, "feature.bin")); !bytes.Equal(got, want) || !bytes.Equal(got, d.row(id)) {
		t.Fatalf("nodes/%d/feature.bin differs from Gather", id)
	}
	text := read(t, filepath.Join(nodeDir, "feature.txt"))
	values := lines(text)
	if len(values) != int(d.rowBytes/4) {
		t.Fatalf("nodes/%d/feature.txt has %d values", id, len(values))
	}
	for i, str := range values {
		f, err := strconv.ParseFloat(str, 32)
		if err != nil {
			t.Fatalf("nodes/%d/feature.txt value %d %q: %v", id, i, str, err)
		}
		w := math.Float32frombits(binary.LittleEndian.Uint32(want[4*i:]))
		if float32(f) != w && !(math.IsNaN(f) && w != w) {
			t.Fatalf("nodes/%d/feature.txt value %d = %s, row holds %v", id, i, str, w)
		}
	}
	if st, err := os.Stat(filepath.Join(nodeDir, "feature.txt")); err != nil || st.Size() != int64(len(text)) {
		t.Fatalf("stat of nodes/%d/feature.txt: %v, size %d, content %d bytes", id, err, st.Size(), len(text))
	}
	var neighbors []int64
	for _, l := range lines(read(t, filepath.Join(nodeDir, "neighbors.txt"))) {
		u, err := strconv.ParseInt(l, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		neighbors = append(neighbors, u)
	}
	var ref []int64
	for _, u := range d.indices[d.indptr[id]:d.indptr[id+1]] {
		ref = append(ref, int64(u))
	}
	if !slices.Equal(neighbors, ref) {
		t.Fatalf("nodes/%d/neighbors.txt %v, graph %v", id, neighbors, ref)
	}
	wantTier := "ssd\n"
	if s.Host().Slot(id) >= 0 {
		wantTier = "host\n"
	}
	if got := string(read(t, filepath.Join(nodeDir, "tier"))); got != wantTier {
		t.Fatalf("nodes/%d/tier %q, want %q", id, got, wantTier)
	}
	if got := string(read(t, filepath.Join(nodeDir, "label"))); got != fmt.Sprintf("%d\n", d.labels[id]) {
		t.Fatalf("nodes/%d/label %q, want %d", id, got, d.labels[id])
	}
}

func checkDegrees(t *testing.T, root string, d *testData) {
	t.Helper()
	path := filepath.Join(root, "topology/degrees.txt")
	if st, err := os.Stat(path); err != nil || st.Size() != 0 {
		t.Fatalf("degrees.txt before it is computed: %v, size %d", err, st.Size())
	}
	text := read(t, path)
	kv := keyValues(text)
	minDeg, maxDeg := int64(math.MaxInt64), int64(0)
	for v := range d.count {
		minDeg, maxDeg = min(minDeg, d.indptr[v+1]-d.indptr[v]), max(maxDeg, d.indptr[v+1]-d.indptr[v])
	}
	if kv["nodes"] != strconv.FormatInt(d.count, 10) || kv["edges"] != strconv.Itoa(len(d.indices)) ||
		kv["min"] != strconv.FormatInt(minDeg, 10) || kv["max"] != strconv.FormatInt(maxDeg, 10) ||
		kv["mean"] != fmt.Sprintf("%.4f", float64(len(d.indices))/float64(d.count)) {
		t.Fatalf("degrees.txt:\n%s", text)
	}
	var histNodes int64
	hist := false
	for _, l := range lines(text) {
		if strings.HasPrefix(l, "#") {
			hist = true
			continue
		}
		if hist {
			n, _ := strconv.ParseInt(l[strings.LastIndexByte(l, ' ')+1:], 10, 64)
			histNodes += n
		}
	}
	if histNodes != d.count {
		t.Fatalf("degrees.txt histogram counts %d nodes:\n%s", histNodes, text)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != int64(len(text)) {
		t.Fatalf("degrees.txt once computed: %v, size %d, want %d", err, st.Size(), len(text))
	}
}

func TestStatsMove(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 2000, 8, dataset.Float32, 4, rng)
	s := openStore(t, d, featurestore.Options{})
	v := mount(t, s, Options{})
	path := filepath.Join(v.Dir(), "stats.json")
	var before, after featurestore.Stats
	if err := json.Unmarshal(read(t, path), &before); err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, 500)
	for i := range ids {
		ids[i] = rng.Int64N(d.count)
	}
	if err := s.Gather(ids, make([]byte, int64(len(ids))*d.rowBytes)); err != nil {
		t.Fatal(err)
	}
	data := read(t, path)
	if err := json.Unmarshal(data, &after); err != nil {
		t.Fatal(err)
	}
	if after.Gathers < before.Gathers+1 || after.RowsGathered < before.RowsGathered+500 {
		t.Fatalf("stats.json did not move: before %+v, after %+v", before, after)
	}
	// stat's size is the content's when nothing changed in between; a counter moving in the
	// background (the disk probe finishing, say) may change it, so a few tries.
	for try := 0; ; try++ {
		st, err := os.Stat(path)
		if err == nil && st.Size() == int64(len(data)) {
			break
		}
		if try == 4 {
			t.Fatalf("stat of stats.json: %v, size %d, content %d bytes", err, st.Size(), len(data))
		}
		data = read(t, path)
	}
	var pl placementInfo
	if err := json.Unmarshal(read(t, filepath.Join(v.Dir(), "placement.json")), &pl); err != nil {
		t.Fatal(err)
	}
	if pl.BudgetBytes != nil || pl.Policy != "unknown" {
		t.Fatalf("placement.json without Options.Placement: %+v", pl)
	}
}

func TestReadOnly(t *testing.T) {
	d := writeDataset(t, 100, 4, dataset.Float32, 2, newRand(t))
	s := openStore(t, d, featurestore.Options{})
	root := mount(t, s, Options{}).Dir()
	for name, op := range map[string]func() error{
		"write": func() error { return os.WriteFile(filepath.Join(root, "stats.json"), []byte("x"), 0o644) },
		"open rdwr": func() error {
			f, err := os.OpenFile(filepath.Join(root, "nodes/3/feature.bin"), os.O_RDWR, 0)
			f.Close()
			return err
		},
		"create":         func() error { return os.WriteFile(filepath.Join(root, "new"), nil, 0o644) },
		"create in node": func() error { return os.WriteFile(filepath.Join(root, "nodes/3/new"), nil, 0o644) },
		"mkdir":          func() error { return os.Mkdir(filepath.Join(root, "tiers/tpu"), 0o755) },
		"mkdir in nodes": func() error { return os.Mkdir(filepath.Join(root, "nodes/5000"), 0o755) },
		"remove":         func() error { return os.Remove(filepath.Join(root, "manifest.json")) },
		"rmdir":          func() error { return os.Remove(filepath.Join(root, "tiers/gpu")) },
		"rename":         func() error { return os.Rename(filepath.Join(root, "stats.json"), filepath.Join(root, "s.json")) },
		"chmod":          func() error { return os.Chmod(filepath.Join(root, "stats.json"), 0o600) },
		"truncate":       func() error { return os.Truncate(filepath.Join(root, "nodes/3/feature.bin"), 0) },
		"symlink":        func() error { return os.Symlink("stats.json", filepath.Join(root, "link")) },
	} {
		if err := op(); !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: %v, want EROFS", name, err)
		}
	}
}

func TestConcurrentReadersAndGathers(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 5000, 16, dataset.Float32, 5, rng)
	s := openStore(t, d, featurestore.Options{})
	root := mount(t, s, Options{}).Dir()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	done := make(chan struct{})
	for g := range 6 {
		seed := rng.Uint64()
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			for range 60 {
				id := r.Int64N(d.count)
				dir := filepath.Join(root, "nodes", strconv.FormatInt(id, 10))
				got, err := os.ReadFile(filepath.Join(dir, "feature.bin"))
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, d.row(id)) {
					errs <- fmt.Errorf("reader %d: nodes/%d/feature.bin differs", g, id)
					return
				}
				for _, name := range []string{"feature.txt", "neighbors.txt", "tier", "label"} {
					if _, err := os.ReadFile(filepath.Join(dir, name)); err != nil {
						errs <- err
						return
					}
				}
				if g == 0 {
					for _, name := range []string{"stats.json", "placement.json", "tiers/host/ranges.txt"} {
						if _, err := os.ReadFile(filepath.Join(root, name)); err != nil {
							errs <- err
							return
						}
					}
				}
			}
		})
	}
	gatherSeed := rng.Uint64()
	var gatherer sync.WaitGroup
	gatherer.Go(func() {
		r := rand.New(rand.NewPCG(gatherSeed, 99))
		for {
			select {
			case <-done:
				return
			default:
			}
			ids := make([]int64, 1+r.IntN(2000))
			for i := range ids {
				ids[i] = r.Int64N(d.count)
			}
			got := make([]byte, int64(len(ids))*d.rowBytes)
			if err := s.Gather(ids, got); err != nil {
				errs <- err
				return
			}
			for i, id := range ids {
				if !bytes.Equal(got[int64(i)*d.rowBytes:int64(i+1)*d.rowBytes], d.row(id)) {
					errs <- fmt.Errorf("gather: row of %d differs", id)
					return
				}
			}
		}
	})
	wg.Wait()
	close(done)
	gatherer.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestRangesStream(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 150000, 1, dataset.Int8, 0, rng)
	hot := make([]uint32, d.count)
	for i := range hot {
		hot[i] = rng.Uint32()
	}
	s := openStore(t, d, featurestore.Options{HostCacheBytes: featurestore.TierBudget(tiers.Host, d.count, d.rowBytes) / 2, Hotness: hot})
	root := mount(t, s, Options{}).Dir()
	var want []byte
	s.Host().Ranges(func(first, count int64) bool {
		want = fmt.Appendf(want, "%d %d\n", first, count)
		return true
	})
	if len(want) < 3*rangesChunk {
		t.Fatalf("only %d bytes of ranges; the test wants several chunks", len(want))
	}
	path := filepath.Join(root, "tiers/host/ranges.txt")
	if st, err := os.Stat(path); err != nil || st.Size() != int64(len(want)) {
		t.Fatalf("stat of ranges.txt: %v, size %d, want %d", err, st.Size(), len(want))
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Small sequential reads, then reads that jump forward and back.
	var got []byte
	buf := make([]byte, 1000)
	for {
		n, err := f.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("ranges.txt read in 1000-byte pieces differs (%d bytes, want %d)", len(got), len(want))
	}
	for range 20 {
		off := rng.Int64N(int64(len(want)))
		n, err := f.ReadAt(buf, off)
		if err != nil && err != io.EOF {
			t.Fatal(err)
		}
		if !bytes.Equal(buf[:n], want[off:min(off+int64(len(buf)), int64(len(want)))]) {
			t.Fatalf("ranges.txt at %d differs", off)
		}
	}
}

func TestAppendValues(t *testing.T) {
	rng := newRand(t)
	le := binary.LittleEndian
	for _, dt := range []dataset.DType{dataset.Float32, dataset.Float16, dataset.BFloat16, dataset.Float64,
		dataset.Int8, dataset.Uint8, dataset.Int16, dataset.Int32, dataset.Int64} {
		size := dt.Size()
		row := make([]byte, 64*size)
		for i := range row {
			row[i] = byte(rng.UintN(256))
		}
		text, err := appendValues(nil, dt, row)
		if err != nil {
			t.Fatal(err)
		}
		values := lines(text)
		if len(values) != 64 {
			t.Fatalf("%s: %d values", dt, len(values))
		}
		for i, str := range values {
			e := row[i*size : (i+1)*size]
			var want, got float64
			var err error
			switch dt {
			case dataset.Float32:
				want = float64(math.Float32frombits(le.Uint32(e)))
				got, err = strconv.ParseFloat(str, 32)
			case dataset.Float16:
				want = referenceHalf(le.Uint16(e))
				got, err = strconv.ParseFloat(str, 32)
			case dataset.BFloat16:
				want = float64(math.Float32frombits(uint32(le.Uint16(e)) << 16))
				got, err = strconv.ParseFloat(str, 32)
			case dataset.Float64:
				want = math.Float64frombits(le.Uint64(e))
				got, err = strconv.ParseFloat(str, 64)
			default:
				var v int64
				v, err = strconv.ParseInt(str, 10, 64)
				got = float64(v)
				switch dt {
				case dataset.Int8:
					want = float64(int8(e[0]))
				case dataset.Uint8:
					want = float64(e[0])
				case dataset.Int16:
					want = float64(int16(le.Uint16(e)))
				case dataset.Int32:
					want = float64(int32(le.Uint32(e)))
				case dataset.Int64:
					want, got = float64(int64(le.Uint64(e))>>12), float64(v>>12) // compare in float64's range
				}
			}
			if err != nil || (got != want && !(math.IsNaN(got) && math.IsNaN(want))) {
				t.Fatalf("%s value %d (% x): text %q (%v), want %v", dt, i, e, str, err, want)
			}
		}
	}
	if got, _ := appendValues(nil, dataset.Float16, []byte{0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00, 0xff, 0x7b, 0x00, 0x7c}); string(got) != "1\n-2\n5.9604645e-08\n65504\n+Inf\n" {
		t.Fatalf("float16 specials: %q", got)
	}
	if _, err := appendValues(nil, dataset.Float32, make([]byte, 6)); err == nil {
		t.Fatal("6 bytes decoded as float32")
	}
}

// referenceHalf decodes an IEEE 754 half the slow way.
func referenceHalf(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, frac := int(h>>10&0x1f), float64(h&0x3ff)
	switch exp {
	case 0x1f:
		if frac != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	case 0:
		return sign * math.Ldexp(frac, -24)
	}
	return sign * math.Ldexp(1+frac/1024, exp-15)
}

func TestUnmount(t *testing.T) {
	d := writeDataset(t, 500, 4, dataset.Float32, 2, newRand(t))
	s := openStore(t, d, featurestore.Options{})
	v := mount(t, s, Options{})
	read(t, filepath.Join(v.Dir(), "nodes/7/feature.txt"))
	if err := v.Unmount(); err != nil {
		t.Fatal(err)
	}
	if mounted(t, v.Dir()) {
		t.Fatalf("%s still mounted after Unmount", v.Dir())
	}
	waitFor(t, "Wait after Unmount", v.Wait)
	if err := v.Unmount(); err != nil {
		t.Fatalf("second Unmount: %v", err)
	}
	if _, err := v.degreesSummary(); !errors.Is(err, errCanceled) {
		t.Fatalf("degrees computation after Unmount: %v, want it canceled", err)
	}
	// The store is still usable, and closing it does not touch the mount again.
	if err := s.Gather([]int64{1}, make([]byte, d.rowBytes)); err != nil {
		t.Fatal(err)
	}
	s.Close()
}

func TestStoreCloseUnmounts(t *testing.T) {
	d := writeDataset(t, 500, 4, dataset.Float32, 2, newRand(t))
	s := openStore(t, d, featurestore.Options{})
	v := mount(t, s, Options{})
	read(t, filepath.Join(v.Dir(), "stats.json"))
	waitFor(t, "store.Close", func() { s.Close() })
	if mounted(t, v.Dir()) {
		t.Fatalf("%s still mounted after store.Close", v.Dir())
	}
	waitFor(t, "Wait after store.Close", v.Wait)
}

// A mount with a file open when the store closes is detached lazily: Close returns, the open file
// fails instead of reaching the closed store, and the server stops once the file is closed.
func TestStoreCloseWhileBusy(t *testing.T) {
	d := writeDataset(t, 500, 4, dataset.Float32, 2, newRand(t))
	s := openStore(t, d, featurestore.Options{})
	v := mount(t, s, Options{})
	busy, err := os.Open(filepath.Join(v.Dir(), "tiers/host/ranges.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	readers := make(chan struct{})
	go func() { // requests in flight while the store closes
		defer close(readers)
		for range 200 {
			if _, err := os.ReadFile(filepath.Join(v.Dir(), "nodes/3/feature.bin")); err != nil {
				return
			}
		}
	}()
	waitFor(t, "store.Close of a busy mount", func() { s.Close() })
	waitFor(t, "readers", func() { <-readers })
	if mounted(t, v.Dir()) {
		t.Fatalf("%s still mounted after store.Close", v.Dir())
	}
	if _, err := busy.ReadAt(make([]byte, 10), 0); err == nil {
		t.Fatal("read of a file left open on the detached mount reached the closed store")
	}
	busy.Close()
	waitFor(t, "Wait once the last file is closed", v.Wait)
}

// waitFor runs fn and fails the test when it takes longer than 10 s.
func waitFor(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		fn()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s hangs", what)
	}
}

func TestMountErrors(t *testing.T) {
	d := writeDataset(t, 50, 4, dataset.Float32, 2, newRand(t))
	s := openStore(t, d, featurestore.Options{})
	missing := filepath.Join(t.TempDir(), "missing")
	if _, err := Mount(s, missing, Options{}); err == nil || !strings.Contains(err.Error(), "fusefs: mountpoint "+missing) {
		t.Fatalf("mount on a missing directory: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	if _, err := Mount(s, file, Options{}); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Fatalf("mount on a file: %v", err)
	}
	if _, err := Mount(nil, t.TempDir(), Options{}); err == nil {
		t.Fatal("mount of a nil store")
	}
	plain := t.TempDir()
	if err := Unmount(plain); err == nil || !strings.Contains(err.Error(), "is not a mountpoint") {
		t.Fatalf("Unmount of a plain directory: %v", err)
	}
	if err := Unmount("/proc"); err == nil || !strings.Contains(err.Error(), "is a proc mount, not tierfs") {
		t.Fatalf("Unmount of /proc: %v", err)
	}
}

func TestUnmountDir(t *testing.T) {
	d := writeDataset(t, 50, 4, dataset.Float32, 2, newRand(t))
	s := openStore(t, d, featurestore.Options{})
	v := mount(t, s, Options{})
	if err := Unmount(v.Dir()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Wait after an unmount from outside", v.Wait)
	if mounted(t, v.Dir()) {
		t.Fatalf("%s still mounted", v.Dir())
	}
	if err := v.Unmount(); err != nil {
		t.Fatalf("Unmount of a mount unmounted from outside: %v", err)
	}
}

// A mount detached lazily from outside while a file is open does not hang store.Close.
func TestStoreCloseAfterLazyUnmountFromOutside(t *testing.T) {
	d := writeDataset(t, 50, 4, dataset.Float32, 2, newRand(t))
	s := openStore(t, d, featurestore.Options{})
	v := mount(t, s, Options{})
	busy, err := os.Open(filepath.Join(v.Dir(), "nodes/1/feature.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if err := Unmount(v.Dir()); err != nil {
		t.Fatal(err)
	}
	if mounted(t, v.Dir()) {
		t.Fatalf("%s still mounted", v.Dir())
	}
	waitFor(t, "store.Close", func() { s.Close() })
	busy.Close()
	waitFor(t, "Wait once the last file is closed", v.Wait)
}

func TestMountinfoUnescape(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/plain`: "/plain", `/x\134y`: `/x\y`, `/t\011`: "/t\t", `/odd\04`: `/odd\04`} {
		if got := unescapeMountinfo(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStaleMountpointHint: a mountpoint left by a server that died (ENOTCONN) gets the command
// that clears it; other errors are passed on as they are.
func TestStaleMountpointHint(t *testing.T) {
	stale := &os.PathError{Op: "stat", Path: "/mnt/x", Err: syscall.ENOTCONN}
	if err := mountpointError("/mnt/x", stale); !errors.Is(err, syscall.ENOTCONN) || !strings.Contains(err.Error(), "tierfs umount /mnt/x") {
		t.Errorf("stale mount: %v", err)
	}
	missing := &os.PathError{Op: "stat", Path: "/mnt/y", Err: syscall.ENOENT}
	if err := mountpointError("/mnt/y", missing); !errors.Is(err, os.ErrNotExist) || strings.Contains(err.Error(), "umount") {
		t.Errorf("missing mountpoint: %v", err)
	}
}
