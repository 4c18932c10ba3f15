package ssd

import (
	"bytes"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/tiers/host"
)

// gpuMachineModel is the GPU machine's virtual disk: about 95,000 random 4 KiB reads a second
// and 1.5 GB/s sequential (a break-even gap of about 16 KB, where a fill of a fifth of the rows
// scans).
var gpuMachineModel = DiskModel{ReadCost: 1.05e-5, BytesPerSecond: 1.5e9}

// fillAndGather fills a host tier with ids from src and gathers every row of ids back.
func fillAndGather(t *testing.T, rb int64, ids []int64, src func([]int64, []byte) error) []byte {
	t.Helper()
	c := host.New(rb)
	defer c.Close()
	if err := c.Fill(ids, src); err != nil {
		t.Fatal(err)
	}
	slots, pos := make([]int64, len(ids)), make([]int64, len(ids))
	if n := c.Lookup(ids, slots); n != len(ids) {
		t.Fatalf("the filled tier holds %d of %d rows", n, len(ids))
	}
	for i := range pos {
		pos[i] = int64(i)
	}
	got := make([]byte, int64(len(ids))*rb)
	if err := c.CopyToHost(slots, pos, got); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestFillByScanMatchesRandomReads fills a host tier with random rows of random density three
// ways (a scan, one read a row, the model's choice) and checks every row against the dataset,
// and the fill counters against the rows each way read; Source with ids in any order and
// repeats (a gather) too.
func TestFillByScanMatchesRandomReads(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	const count = 20000
	m, rows := writeFeatures(t, count, 1+rng.Int64N(200), 1+rng.IntN(3), rng)
	tier, spec := verifiedTier(t, m, count)
	rb := spec.RowBytes
	for _, density := range []float64{0.0005, 0.02, 0.2, 0.7, 1} {
		var ids []int64
		for id := range int64(count) {
			if rng.Float64() < density {
				ids = append(ids, id)
			}
		}
		rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		want := make([]byte, 0, int64(len(ids))*rb)
		for _, id := range ids {
			want = append(want, rows[id*rb:(id+1)*rb]...)
		}
		for _, m := range []FillMethod{FillByScan, FillByRandom, FillByModel} {
			before := tier.FillStats()
			got := fillAndGather(t, rb, ids, tier.SourceWith(FillOptions{Method: m, Model: gpuMachineModel}))
			if !bytes.Equal(got, want) {
				t.Fatalf("density %g, method %d, row bytes %d: the filled rows differ from the dataset", density, m, rb)
			}
			st := tier.FillStats()
			scan, random := st.ScanRows-before.ScanRows, st.RandomRows-before.RandomRows
			if scan+random != int64(len(ids)) || (m == FillByScan && random != 0) || (m == FillByRandom && scan != 0) {
				t.Fatalf("density %g, method %d: %d rows by scan, %d by random reads, of %d", density, m, scan, random, len(ids))
			}
		}
		// A gather: any order, repeats.
		gather := make([]int64, 1+rng.IntN(3*len(ids)+1))
		for k := range gather {
			gather[k] = rng.Int64N(count)
		}
		for _, m := range []FillMethod{FillByScan, FillByRandom, FillByModel} {
			got := make([]byte, int64(len(gather))*rb)
			if err := tier.SourceWith(FillOptions{Method: m})(gather, got); err != nil {
				t.Fatal(err)
			}
			for k, id := range gather {
				if !bytes.Equal(got[int64(k)*rb:int64(k+1)*rb], rows[id*rb:(id+1)*rb]) {
					t.Fatalf("gather by method %d: row %d (id %d) differs", m, k, id)
				}
			}
		}
	}
}

// TestFillChoosesByDensity: under the GPU machine's model a fill of a fifth of the rows (512 B)
// scans, a fill of one row in a thousand (far apart) reads each row, and a model whose break-even
// gap is less than a block (DefaultDiskModel; one where a read costs nothing) never scans.
func TestFillChoosesByDensity(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	const count = 60000
	m, _ := writeFeatures(t, count, 128, 1, rng)
	tier, spec := verifiedTier(t, m, count)
	pick := func(p float64) []int64 {
		var ids []int64
		if p == 0 { // one row in a thousand, 500 rows (256 KB) apart at least
			for id := int64(0); id+500 < count; id += 1000 {
				ids = append(ids, id+rng.Int64N(500))
			}
			return ids
		}
		for id := range int64(count) {
			if rng.Float64() < p {
				ids = append(ids, id)
			}
		}
		return ids
	}
	for _, tc := range []struct {
		name    string
		density float64
		model   DiskModel
		scan    bool
	}{
		{"dense", 0.2, gpuMachineModel, true},
		{"dense under the default model", 0.2, DefaultDiskModel, false}, // break-even gap 4,000 B, less than a block
		{"sparse", 0, gpuMachineModel, false},
		{"free reads", 0.2, DiskModel{ReadCost: 1e-12, BytesPerSecond: 1.5e9}, false},
	} {
		ids := pick(tc.density)
		before := tier.FillStats()
		if err := tier.SourceWith(FillOptions{Model: tc.model})(ids, make([]byte, int64(len(ids))*spec.RowBytes)); err != nil {
			t.Fatal(err)
		}
		st := tier.FillStats()
		scans, randoms := st.ScanChunks-before.ScanChunks, st.RandomChunks-before.RandomChunks
		if (tc.scan && (scans != 1 || randoms != 0)) || (!tc.scan && (scans != 0 || randoms != 1)) {
			t.Errorf("%s fill (%d rows): %d chunks scanned, %d read randomly (estimates: scan %gs, random %gs)", tc.name, len(ids),
				scans, randoms, st.ScanEstimate-before.ScanEstimate, st.RandomEstimate-before.RandomEstimate)
		}
	}
}

// TestFillCatchesCorruption: a flipped byte in a row of the fill, or in a gap block a scan
// bridges, fails the fill (either way for the row, by scan for the gap) with corruption naming
// the stripe, the chunks read by three IO stacks side by side.
func TestFillCatchesCorruption(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	defer func(b int64) { fillChunkBytes = b }(fillChunkBytes)
	fillChunkBytes = 100 * 512
	const count = 4096
	for _, where := range []string{"row", "gap"} {
		m, _ := writeFeatures(t, count, 128, 1, rng)
		spec, err := m.Feature("")
		if err != nil {
			t.Fatal(err)
		}
		// Every other block's rows (8 rows of 512 B a block): the blocks between are the gaps.
		var ids []int64
		for id := int64(0); id < count; id++ {
			if (id/8)%2 == 0 {
				ids = append(ids, id)
			}
		}
		victim := ids[rng.IntN(len(ids))]
		if where == "gap" {
			// A gap inside one chunk (the fill reads chunks of fillChunkBytes of rows, 100 ids,
			// on their own: a gap between two chunks is read by neither): the block after
			// ids[j]'s, where ids[j] ends its block and ids[j+1] is in the same chunk.
			chunkRows := int(fillChunkBytes / spec.RowBytes)
			j := 8*rng.IntN(len(ids)/8-1) + 7
			for j/chunkRows != (j+1)/chunkRows {
				j = 8*rng.IntN(len(ids)/8-1) + 7
			}
			victim = ids[j] + 1 + rng.Int64N(8)
		}
		if slices.Contains(ids, victim) != (where == "row") {
			t.Fatalf("victim %d misplaced", victim)
		}
		_, off := spec.Locate(victim)
		path := m.Path(spec.Files[0])
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		data[off+rng.Int64N(spec.RowBytes)] ^= 1 << rng.IntN(8)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := OpenFiles(m, spec.Files, Options{Backend: gpuio.BackendAuto, VerifyReads: true, Stacks: 3})
		if err != nil {
			t.Fatal(err)
		}
		tier := NewTier(spec, count, f)
		for _, m := range []FillMethod{FillByScan, FillByRandom} {
			c := host.New(spec.RowBytes)
			err := c.Fill(ids, tier.SourceWith(FillOptions{Method: m, Model: gpuMachineModel}))
			c.Close()
			caught := dataset.IsCorrupt(err) && strings.Contains(err.Error(), spec.Files[0])
			if (where == "row" || m == FillByScan) && !caught {
				t.Errorf("%s corrupt (row %d), fill by method %d: %v; want corruption naming %s", where, victim, m, err, spec.Files[0])
			}
			if where == "gap" && m == FillByRandom && err != nil {
				t.Errorf("a fill by random reads read the corrupt gap block (row %d): %v", victim, err)
			}
		}
		f.Close()
	}
}

// verifiedTier is the tier of m's default feature of count rows over its files opened with
// verified reads (closed when the test ends), and the feature.
func verifiedTier(t *testing.T, m *dataset.Manifest, count int64) (*Tier, *dataset.FeatureSpec) {
	t.Helper()
	spec, err := m.Feature("")
	if err != nil {
		t.Fatal(err)
	}
	f, err := OpenFiles(m, spec.Files, Options{Backend: gpuio.BackendAuto, VerifyReads: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return NewTier(spec, count, f), spec
}

// TestFillMatchesPlainReads: host tiers filled through Source over files of one to four IO
// stacks (several chunks read side by side, gaps bridged or not; io_uring and pread) hold
// exactly the arena of a tier filled by a plain read of each row from its stripe (os.File.ReadAt),
// on random ids of random density, row width and striping, chunks of a few rows to many.
func TestFillMatchesPlainReads(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	defer func(b int64) { fillChunkBytes = b }(fillChunkBytes)
	for round := range 4 {
		count := 5000 + rng.Int64N(20000)
		m, _ := writeFeatures(t, count, 1+rng.Int64N(300), 1+rng.IntN(3), rng)
		spec, err := m.Feature("")
		if err != nil {
			t.Fatal(err)
		}
		rb := spec.RowBytes
		var stripes []*os.File
		for _, p := range spec.Files {
			f, err := os.Open(m.Path(p))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			stripes = append(stripes, f)
		}
		plain := func(ids []int64, rows []byte) error {
			for k, id := range ids {
				file, off := spec.Locate(id)
				if _, err := stripes[file].ReadAt(rows[int64(k)*rb:int64(k+1)*rb], off); err != nil {
					return err
				}
			}
			return nil
		}
		backend := []gpuio.Backend{gpuio.BackendAuto, gpuio.BackendPread}[round%2]
		stacks := []int{2, 1, 4, 3}[round]
		f, err := OpenFiles(m, spec.Files, Options{Backend: backend, VerifyReads: true, Stacks: stacks, QueueDepth: 1 + rng.IntN(128)})
		if err != nil {
			t.Fatal(err)
		}
		tier := NewTier(spec, count, f)
		for _, density := range []float64{0.001, 0.05, 0.3, 0.9, 1} {
			fillChunkBytes = rb * (1 + rng.Int64N(3000))
			var ids []int64
			for id := range count {
				if rng.Float64() < density {
					ids = append(ids, id)
				}
			}
			rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
			want := host.New(rb)
			if err := want.Fill(ids, plain); err != nil {
				t.Fatal(err)
			}
			for _, method := range []FillMethod{FillByModel, FillByScan, FillByRandom} {
				got := host.New(rb)
				if err := got.Fill(ids, tier.SourceWith(FillOptions{Method: method, Model: gpuMachineModel})); err != nil {
					t.Fatalf("%s, %d stacks, density %g, method %d: %v", backend, stacks, density, method, err)
				}
				if !slices.Equal(got.IDs(), want.IDs()) || !bytes.Equal(got.Arena(), want.Arena()) {
					t.Fatalf("%s, %d stacks, %d rows of %d B in %d stripes, density %g, chunks of %d B, method %d: the tier differs from the plain fill",
						backend, stacks, count, rb, len(spec.Files), density, fillChunkBytes, method)
				}
				got.Close()
			}
			want.Close()
		}
		f.Close()
	}
}

// TestDiskModelProbesLargeFiles: a tier whose first file is at least ModelProbeBytes probes its
// disk once, at the first DiskModel (a probed model, the same every call); a smaller one takes
// the default model; a file read through the page cache (no O_DIRECT) is never probed.
func TestDiskModelProbesLargeFiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m, _ := writeFeatures(t, 4096, 32, 1, rng)
	defer func(b int64) { ModelProbeBytes = b }(ModelProbeBytes)
	ModelProbeBytes = 1 << 40
	small, _ := verifiedTier(t, m, 4096)
	if got := small.DiskModel(); got != DefaultDiskModel {
		t.Fatalf("a file under ModelProbeBytes: model %+v, want the default", got)
	}
	ModelProbeBytes = 0
	large, _ := verifiedTier(t, m, 4096)
	if !large.files.firstDirect {
		if got := large.DiskModel(); got != DefaultDiskModel {
			t.Fatalf("a file read through the page cache: model %+v, want the default", got)
		}
		t.Skip("the test directory's file system has no O_DIRECT: nothing probed")
	}
	got := large.DiskModel()
	if !got.Probed || got.ReadCost <= 0 || got.BytesPerSecond <= 0 || large.files.Probe() != nil {
		t.Fatalf("a file over ModelProbeBytes: model %+v (open probe %v), want one probed here", got, large.files.Probe())
	}
	if again := large.DiskModel(); again != got {
		t.Fatalf("a second DiskModel %+v differs from the first %+v: probed twice", again, got)
	}
	t.Logf("probed model %+v, break-even gap %d bytes", got, got.BreakEvenGap())
}
