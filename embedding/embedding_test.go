package embedding

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/featurestore/featurestoretest"
)

// refFMA is a*x+y rounded once to float32, by big.Float.
func refFMA(a, x, y float32) float32 {
	p := new(big.Float).SetPrec(200).SetFloat64(float64(a))
	p.Mul(p, new(big.Float).SetPrec(200).SetFloat64(float64(x)))
	p.Add(p, new(big.Float).SetPrec(200).SetFloat64(float64(y)))
	f, _ := p.Float32()
	return f
}

func TestFMA32(t *testing.T) {
	rng := featurestoretest.NewRand(t)
	for i := range 2_000_000 {
		a := math.Float32frombits(rng.Uint32())
		x := math.Float32frombits(rng.Uint32())
		y := math.Float32frombits(rng.Uint32())
		if i%2 == 0 { // near cancellation and near halfway cases
			a, x = float32(rng.NormFloat64()), float32(rng.NormFloat64())
			y = -float32(float64(a)*float64(x)) * (1 + float32(rng.IntN(3)-1)*(1<<10)*math.SmallestNonzeroFloat32)
		}
		if math.IsNaN(float64(a)) || math.IsNaN(float64(x)) || math.IsNaN(float64(y)) ||
			math.IsInf(float64(a), 0) || math.IsInf(float64(x), 0) || math.IsInf(float64(y), 0) {
			continue
		}
		got, want := fma32(a, x, y), refFMA(a, x, y)
		if math.Float32bits(got) != math.Float32bits(want) && !(got == 0 && want == 0) {
			t.Fatalf("fma32(%g, %g, %g) = %g, want %g", a, x, y, got, want)
		}
	}
}

// refStep is a plain in-memory float32 reference of one optimizer step (big.Float for the one
// rounding of torch's axpy).
func refStep(o Optimizer, step int64, dim int, w, s1, s2 []float32, g []float32) {
	switch o.Name {
	case "sgd":
		for j := range g {
			w[j] = refFMA(float32(-o.LR), g[j], w[j])
		}
	case "adagrad":
		clr := o.LR / (1 + float64(step-1)*o.LRDecay)
		for j := range g {
			sq := g[j] * g[j]
			s1[j] += sq
			std := float32(math.Sqrt(float64(s1[j])))
			std += float32(o.Eps)
			q := g[j] / std
			w[j] = refFMA(float32(-clr), q, w[j])
		}
	case "adam":
		ss := o.LR * math.Sqrt(1-math.Pow(o.Beta2, float64(step))) / (1 - math.Pow(o.Beta1, float64(step)))
		for j := range g {
			u1 := g[j] - s1[j]
			u1 *= float32(1 - o.Beta1)
			sq := g[j] * g[j]
			u2 := sq - s2[j]
			u2 *= float32(1 - o.Beta2)
			numer := u1 + s1[j]
			d := u2 + s2[j]
			s1[j] += u1
			s2[j] = d
			den := float32(math.Sqrt(float64(d)))
			den += float32(o.Eps)
			q := numer / den
			q *= float32(-ss)
			w[j] += q
		}
	}
}

func newTable(t *testing.T, spec Spec, cache int64) (*Table, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "table")
	if err := Create(nil, dir, spec); err != nil {
		t.Fatal(err)
	}
	tb, err := Open(dir, Options{HostCacheBytes: cache})
	if err != nil {
		t.Fatal(err)
	}
	return tb, dir
}

// TestApplyAgainstReference: every optimizer, random batches with repeated ids (coalesced for
// adagrad and adam), a cache of 3 pages for a table of many, a checkpoint and reopen half way;
// every slot equals the reference's bit for bit.
func TestApplyAgainstReference(t *testing.T) {
	rng := featurestoretest.NewRand(t)
	for _, o := range []Optimizer{{Name: "sgd", LR: 0.37}, {Name: "adagrad", LR: 0.37, LRDecay: 0.01, InitialAccumulatorValue: 0.1}, {Name: "adam", LR: 0.037}} {
		t.Run(o.Name, func(t *testing.T) {
			const rows, dim = 700, 24
			tb, dir := newTable(t, Spec{Rows: rows, Dim: dim, Optimizer: o, Init: Init{Kind: "normal", Seed: rng.Uint64()}}, 3*4096)
			defer func() { tb.Close() }()
			info := tb.Info()
			o := info.Optimizer
			sf := info.SlotFloats
			ref := make([]float32, rows*sf)
			all := make([]int64, rows)
			for i := range all {
				all[i] = int64(i)
			}
			if err := tb.ReadSlots(all, ref); err != nil {
				t.Fatal(err)
			}
			if o.Name == "adagrad" && ref[dim] != float32(0.1) {
				t.Fatalf("state_sum starts at %g, want initial_accumulator_value 0.1", ref[dim])
			}
			for step := int64(1); step <= 30; step++ {
				n := 1 + rng.IntN(80)
				ids := make([]int64, n)
				for i := range ids {
					ids[i] = rng.Int64N(rows / 4) // repeats
				}
				if o.Name != "sgd" {
					ids = unique(ids)
				}
				g := make([]float32, len(ids)*dim)
				for i := range g {
					g[i] = float32(rng.NormFloat64())
				}
				if err := tb.Apply(ids, g); err != nil {
					t.Fatal(err)
				}
				for i, id := range ids {
					s := ref[int(id)*sf : int(id+1)*sf]
					var s1, s2 []float32
					if sf > dim {
						s1 = s[dim : 2*dim]
					}
					if sf > 2*dim {
						s2 = s[2*dim:]
					}
					refStep(o, step, dim, s[:dim], s1, s2, g[i*dim:(i+1)*dim])
				}
				if step == 15 {
					if err := tb.Checkpoint(); err != nil {
						t.Fatal(err)
					}
					tb.Close()
					var err error
					if tb, err = Open(dir, Options{HostCacheBytes: 2 * 4096}); err != nil {
						t.Fatal(err)
					}
					if got := tb.Info().Step; got != 15 {
						t.Fatalf("step after reopen %d, want 15", got)
					}
				}
			}
			got := make([]float32, rows*sf)
			if err := tb.ReadSlots(all, got); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(ref[i]) {
					t.Fatalf("row %d float %d: %g, reference %g", i/sf, i%sf, got[i], ref[i])
				}
			}
			st := tb.Stats()
			if st.Evictions == 0 || st.CachePages != 2 {
				t.Fatalf("stats %+v: want evictions with a cache of 2 pages", st)
			}
		})
	}
}

func unique(ids []int64) []int64 {
	seen := map[int64]bool{}
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

func TestErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{Rows: 10, Dim: 4, DType: "float16", Optimizer: Optimizer{Name: "sgd"}}, `dtype "float16"`},
		{Spec{Rows: 0, Dim: 4, Optimizer: Optimizer{Name: "sgd"}}, "rows 0"},
		{Spec{Rows: 10, Dim: 0, Optimizer: Optimizer{Name: "sgd"}}, "dim 0"},
		{Spec{Rows: 10, Dim: 4, Optimizer: Optimizer{Name: "rmsprop"}}, `optimizer "rmsprop"`},
		{Spec{Rows: 10, Dim: 4, Optimizer: Optimizer{Name: "sgd", LR: -1}}, "lr -1"},
		{Spec{Rows: 10, Dim: 4, Optimizer: Optimizer{Name: "sgd", LRDecay: 0.1}}, "adagrad's, not sgd's"},
		{Spec{Rows: 10, Dim: 4, Optimizer: Optimizer{Name: "adam", Beta1: 1}}, "betas"},
		{Spec{Rows: 10, Dim: 4, Optimizer: Optimizer{Name: "sgd"}, Init: Init{Kind: "uniform", A: 1, B: 1}}, "uniform [1, 1)"},
		{Spec{Rows: 10, Dim: 4, Optimizer: Optimizer{Name: "sgd"}, Init: Init{Kind: "xavier"}}, `init "xavier"`},
	} {
		if err := Create(nil, dir, c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Create(%+v) = %v, want an error with %q", c.spec, err, c.want)
		}
	}
	tb, tdir := newTable(t, Spec{Rows: 10, Dim: 4, Optimizer: Optimizer{Name: "adam"}}, 1<<20)
	defer tb.Close()
	if _, err := Open(tdir, Options{}); err == nil || !strings.Contains(err.Error(), "open elsewhere") {
		t.Errorf("a second Open: %v, want it refused", err)
	}
	out := make([]float32, 8)
	for _, c := range []struct {
		err  error
		want string
	}{
		{tb.Gather([]int64{1, 10}, out), "ids[1] = 10 is out of range [0, 10)"},
		{tb.Gather([]int64{-1, 0}, out), "ids[0] = -1"},
		{tb.Gather([]int64{1}, out), "out has 8 floats, want 1 ids × 4"},
		{tb.Write([]int64{1}, out), "rows has 8 floats, want 1 ids × 4"},
		{tb.Apply([]int64{1, 2}, out[:7]), "grads has 7 floats, want 2 ids × 4"},
		{tb.Apply([]int64{3, 1, 3}, make([]float32, 12)), "ids[0] and ids[2] are both 3"},
		{tb.WriteSlots([]int64{1}, make([]float32, 12), -1), "step -1 is below"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("got %v, want an error with %q", c.err, c.want)
		}
	}
	if st := tb.Info().Step; st != 0 {
		t.Errorf("refused calls moved the step to %d", st)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tb.Gather([]int64{1}, out[:4]); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Gather after Close: %v", err)
	}
	if _, err := Open(tdir, Options{HostCacheBytes: 4096}); err == nil || !strings.Contains(err.Error(), "fewer than 2 pages") {
		t.Errorf("a cache of one page: %v", err)
	}
}

// TestCheckpointKeepsLastOne: Close without a checkpoint drops the changes; a checkpoint keeps
// them; Write sets rows and leaves the state.
func TestCheckpointKeepsLastOne(t *testing.T) {
	tb, dir := newTable(t, Spec{Rows: 300, Dim: 8, Optimizer: Optimizer{Name: "adagrad"}, Init: Init{Kind: "uniform", A: -1, B: 1, Seed: 3}}, 1<<16)
	ids := []int64{5, 299, 5}
	rows := make([]float32, 24)
	for i := range rows {
		rows[i] = float32(i)
	}
	before := make([]float32, 24)
	tb.Gather(ids, before)
	if err := tb.Write(ids, rows); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 24)
	tb.Gather(ids, got)
	if got[0] != 16 || got[8] != 8 {
		t.Fatalf("after Write: %v (a later duplicate wins)", got)
	}
	tb.Close()
	tb, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tb.Gather(ids, got)
	if got[0] != before[0] || got[8] != before[8] {
		t.Fatalf("Close without a checkpoint kept a write: %v, was %v", got, before)
	}
	tb.Write(ids, rows)
	if err := tb.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if g := tb.Info().Generation; g != 2 {
		t.Fatalf("generation %d after a checkpoint, want 2", g)
	}
	tb.Gather(ids, got)
	if err := tb.Checkpoint(); err != nil || tb.Info().Generation != 2 {
		t.Fatalf("a checkpoint with nothing written: %v, generation %d, want 2 kept", err, tb.Info().Generation)
	}
	tb.Close()
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(names) != 4 { // manifest, pages, map-2, lock
		t.Fatalf("left in the table: %q", names)
	}
	tb, _ = Open(dir, Options{})
	defer tb.Close()
	tb.Gather(ids, got)
	if got[0] != 16 || got[8] != 8 {
		t.Fatalf("after checkpoint and reopen: %v", got)
	}
}

// TestCorruptPages: a flipped byte, two swapped pages and a stale generation's page are refused
// when read, and so is a damaged map, or one of another generation.
func TestCorruptPages(t *testing.T) {
	tb, dir := newTable(t, Spec{Rows: 2000, Dim: 16, Optimizer: Optimizer{Name: "sgd"}, Init: Init{Kind: "normal"}}, 1<<16)
	per := int64(tb.l.rowsPerPage)
	tb.Close()
	path := filepath.Join(dir, pagesName)
	orig, _ := os.ReadFile(path)
	readAll := func() error {
		tb, err := Open(dir, Options{})
		if err != nil {
			return err
		}
		defer tb.Close()
		all := make([]int64, 2000)
		for i := range all {
			all[i] = int64(i)
		}
		return tb.Gather(all, make([]float32, len(all)*16))
	}
	for name, edit := range map[string]func(b []byte){
		"flip": func(b []byte) { b[4096*3+17] ^= 4 },
		"swap": func(b []byte) {
			p := append([]byte(nil), b[4096:8192]...)
			copy(b[4096:8192], b[8192:12288])
			copy(b[8192:12288], p)
		},
	} {
		b := append([]byte(nil), orig...)
		edit(b)
		os.WriteFile(path, b, 0o644)
		if err := readAll(); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: reading every row = %v, want ErrCorrupt", name, err)
		}
	}
	os.WriteFile(path, orig, 0o644)
	// Page 1 rewritten at generation 2 goes to its other place; generation 1's page put there is stale.
	tb, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.Write([]int64{per}, make([]float32, 16)); err != nil {
		t.Fatal(err)
	}
	if err := tb.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	second := tb.l.pageOffset(1, 1)
	tb.Close()
	b, _ := os.ReadFile(path)
	good := append([]byte(nil), b...)
	copy(b[second:second+4096], orig[4096:8192])
	os.WriteFile(path, b, 0o644)
	if err := readAll(); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "page 1 (generation 2)") {
		t.Errorf("stale page: %v, want ErrCorrupt naming page 1", err)
	}
	os.WriteFile(path, good, 0o644)
	if err := readAll(); err != nil {
		t.Fatal(err)
	}
	// A damaged map, and generation 1's map under generation 2's name.
	m2 := filepath.Join(dir, mapName(2))
	map2, _ := os.ReadFile(m2)
	damaged := append([]byte(nil), map2...)
	damaged[5] ^= 1
	os.WriteFile(m2, damaged, 0o644)
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("damaged map: Open = %v, want ErrCorrupt", err)
	}
	older := append([]byte(nil), map2...)
	copy(older[4:8], map2[0:4]) // page 1 as page 0 is: generation 1, place 0
	os.WriteFile(m2, older, 0o644)
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("an edited map: Open = %v, want ErrCorrupt", err)
	}
}

// TestCheckpointWritesChangedPages: a checkpoint writes only the pages changed since the last
// one (into their other places), the file never grows, the old checkpoint's places are not
// written while training, and a reopened table reads every row as written.
func TestCheckpointWritesChangedPages(t *testing.T) {
	rng := featurestoretest.NewRand(t)
	spec := Spec{Rows: 3000, Dim: 16, Optimizer: Optimizer{Name: "sgd"}, Init: Init{Kind: "normal", Seed: rng.Uint64()}}
	tb, dir := newTable(t, spec, 1<<20)
	path := filepath.Join(dir, pagesName)
	st0, _ := os.Stat(path)
	want := make([]float32, spec.Rows*16)
	all := make([]int64, spec.Rows)
	for i := range all {
		all[i] = int64(i)
	}
	tb.Gather(all, want)
	per := int64(tb.l.rowsPerPage)
	for round := range 5 {
		pages := map[int64]bool{}
		var ids []int64
		for range 1 + rng.IntN(8) {
			id := rng.Int64N(spec.Rows)
			ids = append(ids, id)
			pages[id/per] = true
		}
		rows := make([]float32, len(ids)*16)
		for i := range rows {
			rows[i] = float32(rng.NormFloat64())
		}
		for i, id := range ids {
			copy(want[id*16:(id+1)*16], rows[i*16:(i+1)*16])
		}
		before := tb.Stats().PagesWritten
		last, _ := os.ReadFile(path)
		if err := tb.Write(ids, rows); err != nil {
			t.Fatal(err)
		}
		if err := tb.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		if got := tb.Stats().PagesWritten - before; got != int64(len(pages)) {
			t.Fatalf("round %d: the checkpoint wrote %d pages, want the %d changed", round, got, len(pages))
		}
		now, _ := os.ReadFile(path)
		changed := 0
		for p := int64(0); p < 2*tb.l.pages; p++ {
			if !bytes.Equal(now[p*4096:(p+1)*4096], last[p*4096:(p+1)*4096]) {
				changed++
			}
		}
		if changed != len(pages) {
			t.Fatalf("round %d: %d places of the file changed, want %d", round, changed, len(pages))
		}
	}
	tb.Close()
	if st, _ := os.Stat(path); st.Size() != st0.Size() {
		t.Fatalf("the pages file grew from %d to %d bytes", st0.Size(), st.Size())
	}
	tb, err := Open(dir, Options{HostCacheBytes: 2 * 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	got := make([]float32, len(want))
	if err := tb.Gather(all, got); err != nil {
		t.Fatal(err)
	}
	sameBits(t, "rows after reopen", got, want)
}

func TestSizeRefusals(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	if err := Create(nil, dir, Spec{Rows: 1 << 40, Dim: 1 << 10, Optimizer: Optimizer{Name: "adam"}}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "2^48 floats") {
		t.Errorf("2^40 rows of 1024: %v", err)
	}
	if err := Create(nil, dir, Spec{Rows: 1 << 40, Dim: 16, Optimizer: Optimizer{Name: "sgd"}}); err == nil || !strings.Contains(err.Error(), "free") {
		t.Errorf("a 64 TiB table: %v, want it refused for space", err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("a refused Create left its directory")
	}
}
