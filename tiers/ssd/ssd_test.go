package ssd

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/tiers"
)

// writeFeatures commits a dataset of count random rows of dim float32, striped over stripes files.
func writeFeatures(t *testing.T, count, dim int64, stripes int, rng *rand.Rand) (*dataset.Manifest, []byte) {
	t.Helper()
	rows := make([]byte, count*dim*4)
	for i := range rows {
		rows[i] = byte(rng.UintN(256))
	}
	return writeRows(t, rows, count, dim, stripes), rows
}

// writeRows commits a dataset of count rows of dim float32 (rows, row after row), striped over
// stripes files.
func writeRows(t *testing.T, rows []byte, count, dim int64, stripes int) *dataset.Manifest {
	t.Helper()
	dir := t.TempDir()
	spec, err := dataset.NewFeatureSpec("x", dataset.Float32, dim, count, stripes, dataset.DefaultBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	for k := range spec.Files {
		spec.Files[k] = fmt.Sprintf("features.x.%d.bin", k)
	}
	w, err := dataset.NewFeatureWriter(nil, dir, &spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRows(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	m := &dataset.Manifest{NodeTypes: []dataset.NodeType{{Name: "node", Count: count, Features: []dataset.FeatureSpec{spec}}}}
	m.SetDir(dir)
	if err := dataset.Commit(m, append([]string(nil), spec.Files...), "test", nil); err != nil {
		t.Fatal(err)
	}
	m, err = dataset.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestTierMatchesRows reads random rows (repeats, any order) through CopyToHost and Source with
// both IO backends, against the rows as written.
func TestTierMatchesRows(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	const count = 3000
	m, rows := writeFeatures(t, count, 24, 2, rng)
	spec, err := m.Feature("")
	if err != nil {
		t.Fatal(err)
	}
	rb := spec.RowBytes
	backends := []gpuio.Backend{gpuio.BackendPread}
	if gpuio.Probe() == nil {
		backends = append(backends, gpuio.BackendIOUring)
	}
	for _, backend := range backends {
		f, err := OpenFiles(m, spec.Files, Options{Backend: backend, Stacks: 2, VerifyReads: true})
		if err != nil {
			t.Fatal(err)
		}
		var tier tiers.Tier = NewTier(spec, count, f)
		ids := make([]int64, 500)
		for i := range ids {
			ids[i] = rng.Int64N(count)
		}
		ids[7] = ids[3]
		slots := make([]int64, len(ids))
		if hits := tier.Lookup(ids, slots); hits != len(ids) || slots[9] != ids[9] {
			t.Fatalf("%s: Lookup hit %d of %d, slot %d for id %d", backend, hits, len(ids), slots[9], ids[9])
		}
		pos := make([]int64, len(ids))
		for k := range pos { // rows land in reverse order
			pos[k] = int64(len(ids) - 1 - k)
		}
		got := make([]byte, int64(len(ids))*rb)
		if err := tier.CopyToHost(slots, pos, got); err != nil {
			t.Fatal(err)
		}
		src := make([]byte, int64(len(ids))*rb)
		if err := NewTier(spec, count, f).Source(ids, src); err != nil {
			t.Fatal(err)
		}
		for k, id := range ids {
			want := rows[id*rb : (id+1)*rb]
			if i := pos[k]; !bytes.Equal(got[i*rb:(i+1)*rb], want) {
				t.Fatalf("%s: CopyToHost row %d (id %d) differs", backend, k, id)
			}
			if !bytes.Equal(src[int64(k)*rb:int64(k+1)*rb], want) {
				t.Fatalf("%s: Source row %d (id %d) differs", backend, k, id)
			}
		}
		if st := f.Stats(); st.Requests == 0 || st.Backend != backend {
			t.Errorf("%s: IO stats %+v", backend, st)
		}
		if err := tier.EnqueueToDevice(tiers.DeviceCopy{N: 3}); err == nil {
			t.Errorf("%s: a device copy without host pairs is accepted", backend)
		}
		f.Close()
	}
}

func TestOpenFilesErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 0))
	m, _ := writeFeatures(t, 10, 4, 1, rng)
	if _, err := OpenFiles(m, []string{"no-such-file.bin"}, Options{}); err == nil || !strings.Contains(err.Error(), "no-such-file.bin") {
		t.Errorf("missing file: %v, want an error naming it", err)
	}
	if _, err := OpenFiles(m, nil, Options{QueueDepth: -1}); err == nil || !strings.Contains(err.Error(), "-1") {
		t.Errorf("negative queue depth: %v", err)
	}
}

// TestTruncatedStripeIsCorrupt: a stripe shorter than the manifest says is corruption, found at
// open when it is short already and by the read when it is cut while open, with and without
// verified reads; the error names the file.
func TestTruncatedStripeIsCorrupt(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, verify := range []bool{false, true} {
		m, _ := writeFeatures(t, 3000, 16, 1, rng) // 64-byte rows, 192,000 bytes
		spec := &m.Nodes().Features[0]
		files, err := OpenFiles(m, spec.Files, Options{Backend: gpuio.BackendPread, VerifyReads: verify})
		if err != nil {
			t.Fatal(err)
		}
		path := m.Path(spec.Files[0])
		if err := os.Truncate(path, 100_000); err != nil {
			t.Fatal(err)
		}
		tier := NewTier(spec, 3000, files)
		err = tier.CopyToHost([]int64{2999}, []int64{0}, make([]byte, spec.RowBytes))
		if !dataset.IsCorrupt(err) || !strings.Contains(err.Error(), spec.Files[0]) {
			t.Errorf("verify %v: read past a truncated stripe: %v; want corruption naming the file", verify, err)
		}
		files.Close()
		if _, err := OpenFiles(m, spec.Files, Options{VerifyReads: verify}); !dataset.IsCorrupt(err) || !strings.Contains(err.Error(), "truncated") {
			t.Errorf("verify %v: open of a truncated stripe: %v; want corruption", verify, err)
		}
	}
}

// TestOpenFilesRefusesNonRegular: a stripe that is a FIFO or a device, a sidecar that is a
// device, and a path escaping the dataset are refused promptly (a FIFO's open must not block)
// with corruption naming the path.
func TestOpenFilesRefusesNonRegular(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, tc := range []struct {
		name   string
		verify bool
		file   func(m *dataset.Manifest) string // the path to replace
		make   func(path string) error
		paths  func(m *dataset.Manifest) []string
	}{
		{"FIFO stripe", false, stripe, func(p string) error { return syscall.Mkfifo(p, 0o644) }, nil},
		{"/dev/zero stripe", false, stripe, func(p string) error { return os.Symlink("/dev/zero", p) }, nil},
		{"/dev/urandom sidecar", true, func(m *dataset.Manifest) string { return stripe(m) + dataset.ChecksumSuffix },
			func(p string) error { return os.Symlink("/dev/urandom", p) }, nil},
		{"escaping path", false, nil, nil, func(m *dataset.Manifest) []string { return []string{"../" + stripe(m)} }},
		{"absolute path", false, nil, nil, func(m *dataset.Manifest) []string { return []string{"/dev/zero"} }},
	} {
		m, _ := writeFeatures(t, 100, 4, 1, rng)
		paths := m.Nodes().Features[0].Files
		want := ""
		if tc.file != nil {
			want = m.Path(tc.file(m))
			os.Remove(want)
			if err := tc.make(want); err != nil {
				t.Fatal(err)
			}
		}
		if tc.paths != nil {
			paths = tc.paths(m)
			want = paths[0]
		}
		done := make(chan error, 1)
		go func() {
			f, err := OpenFiles(m, paths, Options{Backend: gpuio.BackendPread, VerifyReads: tc.verify})
			if f != nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !dataset.IsCorrupt(err) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v; want corruption naming %s", tc.name, err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: OpenFiles still running after 5 s", tc.name)
		}
	}
}

func stripe(m *dataset.Manifest) string { return m.Nodes().Features[0].Files[0] }

// TestConcurrentReads runs more readers than IO stacks, with and without SQPOLL: every row
// arrives and Stats counts every request once.
func TestConcurrentReads(t *testing.T) {
	if gpuio.Probe() != nil {
		t.Skip("io_uring unavailable")
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	const count = 4000
	m, rows := writeFeatures(t, count, 16, 3, rand.New(rand.NewPCG(seed, 0)))
	spec, err := m.Feature("")
	if err != nil {
		t.Fatal(err)
	}
	rb := spec.RowBytes
	for _, sqpoll := range []bool{false, true} {
		f, err := OpenFiles(m, spec.Files, Options{Backend: gpuio.BackendIOUring, Stacks: 3, QueueDepth: 16, SQPoll: sqpoll})
		if err != nil {
			t.Fatal(err)
		}
		tier := NewTier(spec, count, f)
		const readers, perReader = 8, 400
		errs := make(chan error, readers)
		for g := range readers {
			go func() {
				rng := rand.New(rand.NewPCG(seed, uint64(g)+1))
				ids := make([]int64, perReader)
				for i := range ids {
					ids[i] = rng.Int64N(count)
				}
				dst := make([]byte, int64(len(ids))*rb)
				if err := tier.Source(ids, dst); err != nil {
					errs <- err
					return
				}
				for k, id := range ids {
					if !bytes.Equal(dst[int64(k)*rb:int64(k+1)*rb], rows[id*rb:(id+1)*rb]) {
						errs <- fmt.Errorf("SQPoll %v: reader %d row %d (id %d) differs", sqpoll, g, k, id)
						return
					}
				}
				errs <- nil
			}()
		}
		for range readers {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if st := f.Stats(); st.Requests != readers*perReader {
			t.Fatalf("SQPoll %v: Stats counts %d requests, want %d", sqpoll, st.Requests, readers*perReader)
		}
		f.Close()
	}
}

// TestConcurrentReadsShareTheQueueDepth runs readers on more stacks than the queue depth allows
// reads in flight, one stripe failing every read (EIO) and every block verified: readers of the
// good stripes get their rows, readers of the bad one its error, and the files keep serving
// (the places of failed reads came back).
func TestConcurrentReadsShareTheQueueDepth(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	const count = 3000
	m, rows := writeFeatures(t, count, 128, 3, rand.New(rand.NewPCG(seed, 0)))
	spec, err := m.Feature("")
	if err != nil {
		t.Fatal(err)
	}
	byStripe := make([][]int64, len(spec.Files))
	for id := range int64(count) {
		k, _ := spec.Locate(id)
		byStripe[k] = append(byStripe[k], id)
	}
	bad := 1 // the first stripe after 0 that holds rows fails every read
	for len(byStripe[bad]) == 0 {
		bad++
	}
	faults := &gpuio.Faults{Rules: []gpuio.FaultRule{{Kind: gpuio.FaultEIO, File: -1, Path: spec.Files[bad], Every: 1}}}
	backends := []gpuio.Backend{gpuio.BackendPread}
	if gpuio.Probe() == nil {
		backends = append(backends, gpuio.BackendIOUring)
	}
	rb := spec.RowBytes
	for _, backend := range backends {
		f, err := OpenFiles(m, spec.Files, Options{Backend: backend, Stacks: 4, QueueDepth: 3, VerifyReads: true, Faults: faults})
		if err != nil {
			t.Fatal(err)
		}
		tier := NewTier(spec, count, f)
		read := func(g, k int) error {
			rng := rand.New(rand.NewPCG(seed, uint64(100*g+k)))
			ids := make([]int64, 200)
			for i := range ids {
				from := byStripe[0]
				if g%2 == 1 {
					from = byStripe[bad]
				}
				ids[i] = from[rng.IntN(len(from))]
			}
			dst := make([]byte, int64(len(ids))*rb)
			if err := tier.Source(ids, dst); err != nil {
				return err
			}
			for i, id := range ids {
				if !bytes.Equal(dst[int64(i)*rb:int64(i+1)*rb], rows[id*rb:(id+1)*rb]) {
					return fmt.Errorf("%s: row %d (id %d) differs", backend, i, id)
				}
			}
			return nil
		}
		const readers = 6
		errs := make([]error, readers)
		var wg sync.WaitGroup
		for g := range readers {
			wg.Go(func() {
				for k := range 3 {
					err := read(g, k)
					if g%2 == 1 { // the failing stripe
						if err == nil || !strings.Contains(err.Error(), "EIO") {
							errs[g] = fmt.Errorf("%s: reader of the failing stripe: %v, want EIO", backend, err)
							return
						}
						continue
					}
					if err != nil {
						errs[g] = err
						return
					}
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := read(0, 99); err != nil {
			t.Fatalf("%s: a read after the failures: %v", backend, err)
		}
		f.Close()
	}
}
