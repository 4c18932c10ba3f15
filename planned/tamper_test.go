package planned

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/topology"
)

// The tamper matrix of plan files (issue 43's bar): for a node plan and a link plan of a Store
// and of a Session, every file of the plan (epochs.json, each epoch's packed and samples file)
// has a bit flipped at sampled offsets (its first bytes, its middle, its last byte and a few
// more), is truncated, and is swapped for its counterpart of the other epoch, of another plan of
// the same dataset and of the same plan of another dataset; the index's epoch entries are
// swapped and duplicated (their names kept, or given the names of their new places with the
// files moved along), and its batch entries (extents and sample records) swapped between
// batches of different packing windows, duplicated, and swapped between node types; an epoch
// of another plan or dataset is spliced in whole (its entry and its files); the index's version
// is edited down to 5 (checksums read unbound). Every tampering must
// give an error from OpenEpochs or from the read of the batch it touches, or the untampered
// plan's answer: the batch's seeds, its sample and every packed type's rows.

// tamperPlan is one kind of plan, planned three times: the plan tampered with, another plan of
// the same dataset (other seeds) and the same plan of another dataset.
type tamperPlan struct {
	name                string
	o, other, elsewhere EpochOptions
	open                func(EpochOptions) (*Epochs, *EpochPlanReport, error)
	plan, planElsewhere func(EpochOptions) (*EpochPlanReport, error)
}

// batchAnswer is what a plan serves for one batch.
type batchAnswer struct {
	Seeds  []int64
	Sample any
	Rows   map[string][]byte
}

// answerOf is batch b of epoch e as p serves it: SampleEdges of a link plan, Load of every plan.
func answerOf(p *Epochs, e, b int) (*batchAnswer, error) {
	var a batchAnswer
	if p.Link() {
		pos, ls, err := p.SampleEdges(e, b)
		if err != nil {
			return nil, err
		}
		a.Seeds, a.Sample = pos, ls
	}
	l, err := p.Load(e, b)
	if err != nil {
		return nil, err
	}
	if a.Sample == nil {
		a.Seeds, a.Sample = l.Seeds, l.Sample
	}
	a.Rows = l.Rows
	return &a, nil
}

// tamperPlans are the four kinds of plan, each with its other plan and its plan of another
// dataset, K epochs, small enough to serve every batch of every tampering.
func tamperPlans(t *testing.T, rng *rand.Rand, k int) []tamperPlan {
	t.Helper()
	dir := func(name string) string { return filepath.Join(t.TempDir(), name) }
	d1, d2 := writeSplitDataset(t, 700, 8, 1, 5, rng), writeSplitDataset(t, 700, 8, 1, 5, rng)
	s1, s2 := mustOpen(t, d1.Dir, featurestore.Options{}), mustOpen(t, d2.Dir, featurestore.Options{})
	nodes := EpochOptions{Seeds: d1.Train[:min(len(d1.Train), 200)], BatchSize: 40 + rng.IntN(20),
		Sample: topology.SampleOptions{Fanouts: []int{4, 2}, Seed: rng.Uint64()}, ShuffleSeed: rng.Uint64(), Epochs: k}
	se := &SeedEdges{Src: make([]int64, 150), Dst: make([]int64, 150), Link: randomLink(rng, map[string]string{"": ""})}
	for i := range se.Src {
		se.Src[i], se.Dst[i] = rng.Int64N(d1.Count), rng.Int64N(d1.Count)
	}
	link := EpochOptions{SeedEdges: se, BatchSize: 30 + rng.IntN(20), Sample: topology.SampleOptions{Fanouts: []int{3, 2}, Seed: rng.Uint64()},
		ShuffleSeed: rng.Uint64(), Epochs: k}

	h1, h2 := writeHetero(t, rng), writeHetero(t, rng)
	session := func(h *heteroData) *featurestore.Session {
		ss, err := featurestore.OpenSession(h.Dir, featurestore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		return ss
	}
	ss1, ss2 := session(h1), session(h2)
	hnodes := heteroEpochOpts(t, ss1, h1, k, rng)
	hnodes.Seeds = hnodes.Seeds[:min(len(hnodes.Seeds), 150)]
	hnodes.BatchSize = 30 + rng.IntN(20)
	hlink := heteroEpochOpts(t, ss1, h1, k, rng)
	hlink.Seeds, hlink.NodeType = nil, ""
	et := h1.Manifest.EdgeTypes[0].Key()
	src, dst := randomSeedEdges(h1, 0, 120, rng)
	hlink.SeedEdges = &SeedEdges{EdgeType: et, Src: src, Dst: dst, Link: randomLink(rng, nil)}
	hlink.BatchSize = 25 + rng.IntN(20)

	// The same options on the other dataset: the seeds and seed edges clamped to its nodes.
	on2 := func(o EpochOptions, count func(ntype string) int64) EpochOptions {
		o.Seeds = slices.Clone(o.Seeds)
		for i := range o.Seeds {
			o.Seeds[i] %= count(o.NodeType)
		}
		if se := o.SeedEdges; se != nil {
			c := *se
			c.Src, c.Dst = slices.Clone(se.Src), slices.Clone(se.Dst)
			var srcType, dstType string
			if c.EdgeType != "" {
				var err error
				if srcType, _, dstType, err = dataset.ParseEdgeTypeKey(c.EdgeType); err != nil {
					t.Fatal(err)
				}
			}
			for i := range c.Src {
				c.Src[i] %= count(srcType)
				c.Dst[i] %= count(dstType)
			}
			o.SeedEdges = &c
		}
		return o
	}
	count2 := func(ntype string) int64 { return d2.Count }
	hcount2 := func(ntype string) int64 {
		for _, nt := range h2.Manifest.NodeTypes {
			if nt.Name == ntype {
				return nt.Count
			}
		}
		t.Fatalf("no node type %q in the other dataset", ntype)
		return 0
	}
	var out []tamperPlan
	for _, c := range []struct {
		name          string
		o             EpochOptions
		on, elsewhere *featurestore.Session
		count         func(string) int64
	}{
		{"store nodes", nodes, s1.Session(), s2.Session(), count2},
		{"store link", link, s1.Session(), s2.Session(), count2},
		{"session nodes", hnodes, ss1, ss2, hcount2},
		{"session link", hlink, ss1, ss2, hcount2},
	} {
		c.o.PackMemory = 8 << 10 // windows of a batch or so: the first and last batch in different ones
		tp := tamperPlan{name: c.name, o: c.o, other: c.o, elsewhere: on2(c.o, c.count),
			plan: planSessionOf(c.on), open: openSessionOf(c.on), planElsewhere: planSessionOf(c.elsewhere)}
		tp.o.Dir, tp.other.Dir, tp.elsewhere.Dir = dir("plan"), dir("other"), dir("elsewhere")
		tp.other.ShuffleSeed, tp.other.Sample.Seed = rng.Uint64(), rng.Uint64()
		out = append(out, tp)
	}
	return out
}

// readPlanFiles is the files of plan directory dir, by name, read.
func readPlanFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		if e.Type().IsRegular() {
			if out[e.Name()], err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// writePlanFiles makes dir hold exactly files.
func writePlanFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// tampering is one change to a plan's files (a copy of them, changed in place).
type tampering struct {
	class, name string
	apply       func(files map[string][]byte)
}

// indexTampering is a tampering of the parsed index (and, with it, of the files).
func indexTampering(t *testing.T, class, name string, fn func(idx *epochIndex, files map[string][]byte)) tampering {
	return tampering{class, name, func(files map[string][]byte) {
		var idx epochIndex
		if err := json.Unmarshal(files[EpochIndexFile], &idx); err != nil {
			t.Fatal(err)
		}
		fn(&idx, files)
		data, err := json.Marshal(idx)
		if err != nil {
			t.Fatal(err)
		}
		files[EpochIndexFile] = data
	}}
}

// tamperings lists the matrix for a plan whose files are files, with other's and elsewhere's.
func tamperings(t *testing.T, rng *rand.Rand, files, other, elsewhere map[string][]byte, types int) []tampering {
	var out []tampering
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		n := len(files[name])
		offsets := []int{0, rng.IntN(min(n, 64)), n/2 + rng.IntN(max(1, n/8)), n - 1, rng.IntN(n)}
		for _, at := range offsets {
			bit := byte(1) << rng.IntN(8)
			out = append(out, tampering{"bit flip", fmt.Sprintf("%s byte %d of %d bit %#x", name, at, n, bit), func(f map[string][]byte) {
				f[name] = slices.Clone(f[name])
				f[name][at] ^= bit
			}})
		}
		for _, to := range []int{0, n / 2, n - 1} {
			out = append(out, tampering{"truncation", fmt.Sprintf("%s to %d of %d bytes", name, to, n), func(f map[string][]byte) { f[name] = f[name][:to] }})
		}
		for what, from := range map[string]map[string][]byte{"another plan": other, "another dataset": elsewhere} {
			if data, ok := from[name]; ok {
				out = append(out, tampering{"file swap", fmt.Sprintf("%s for %s's", name, what), func(f map[string][]byte) { f[name] = data }})
			}
		}
		for _, pair := range [][2]string{{packedFile(0), packedFile(1)}, {samplesFile(0), samplesFile(1)}} {
			if name == pair[0] {
				out = append(out, tampering{"file swap", fmt.Sprintf("%s and %s", pair[0], pair[1]), func(f map[string][]byte) {
					f[pair[0]], f[pair[1]] = f[pair[1]], f[pair[0]]
				}})
			}
		}
	}
	// Epoch entries.
	rename := func(idx *epochIndex, files map[string][]byte, from []int) {
		old := copyFiles(files)
		for e := range idx.Epochs {
			idx.Epochs[e].File, idx.Epochs[e].Samples = packedFile(e), samplesFile(e)
			files[packedFile(e)], files[samplesFile(e)] = old[packedFile(from[e])], old[samplesFile(from[e])]
		}
	}
	for _, moved := range []bool{false, true} {
		how := "names kept"
		if moved {
			how = "files moved along"
		}
		out = append(out,
			indexTampering(t, "epoch entries", "swapped, "+how, func(idx *epochIndex, files map[string][]byte) {
				idx.Epochs[0], idx.Epochs[1] = idx.Epochs[1], idx.Epochs[0]
				if moved {
					rename(idx, files, []int{1, 0})
				}
			}),
			indexTampering(t, "epoch entries", "entry 0 over entry 1, "+how, func(idx *epochIndex, files map[string][]byte) {
				idx.Epochs[1] = idx.Epochs[0]
				if moved {
					rename(idx, files, []int{0, 0})
				}
			}))
	}
	// The index edited down to version 5, which reads its checksums unbound.
	out = append(out, indexTampering(t, "index version", "6 edited to 5", func(idx *epochIndex, _ map[string][]byte) { idx.Version = 5 }))
	// An epoch of another plan or dataset spliced in whole: its entry and its files.
	for what, from := range map[string]map[string][]byte{"another plan": other, "another dataset": elsewhere} {
		out = append(out, indexTampering(t, "epoch splice", "epoch 1 of "+what, func(idx *epochIndex, files map[string][]byte) {
			var o epochIndex
			if err := json.Unmarshal(from[EpochIndexFile], &o); err != nil {
				t.Fatal(err)
			}
			idx.Epochs[1] = o.Epochs[1]
			files[packedFile(1)], files[samplesFile(1)] = from[packedFile(1)], from[samplesFile(1)]
		}))
	}
	// Batch entries: the first and the last batch (of different packing windows: PackMemory).
	batch := func(idx *epochIndex, fn func(ef *epochFile, a, b int)) {
		ef := &idx.Epochs[rng.IntN(len(idx.Epochs))]
		fn(ef, 0, idx.Batches-1)
	}
	swapExtents := func(ef *epochFile, a, b int) {
		for k := range types {
			ef.Batches[a*types+k], ef.Batches[b*types+k] = ef.Batches[b*types+k], ef.Batches[a*types+k]
		}
	}
	swapRecords := func(ef *epochFile, a, b int) {
		ef.SampleRecords[a], ef.SampleRecords[b] = ef.SampleRecords[b], ef.SampleRecords[a]
	}
	out = append(out,
		indexTampering(t, "batch entries", "extents of the first and last batch swapped", func(idx *epochIndex, _ map[string][]byte) { batch(idx, swapExtents) }),
		indexTampering(t, "batch entries", "records of the first and last batch swapped", func(idx *epochIndex, _ map[string][]byte) { batch(idx, swapRecords) }),
		indexTampering(t, "batch entries", "extents and records of the first and last batch swapped", func(idx *epochIndex, _ map[string][]byte) {
			batch(idx, func(ef *epochFile, a, b int) { swapExtents(ef, a, b); swapRecords(ef, a, b) })
		}),
		indexTampering(t, "batch entries", "the first batch's extents and record over the last's", func(idx *epochIndex, _ map[string][]byte) {
			batch(idx, func(ef *epochFile, a, b int) {
				copy(ef.Batches[b*types:(b+1)*types], ef.Batches[a*types:(a+1)*types])
				ef.SampleRecords[b] = ef.SampleRecords[a]
			})
		}))
	if types > 1 {
		out = append(out, indexTampering(t, "batch entries", "a batch's extents of two node types swapped", func(idx *epochIndex, _ map[string][]byte) {
			batch(idx, func(ef *epochFile, a, _ int) {
				ef.Batches[a*types], ef.Batches[a*types+1] = ef.Batches[a*types+1], ef.Batches[a*types]
			})
		}))
	}
	return out
}

// copyFiles is a shallow copy of files.
func copyFiles(files map[string][]byte) map[string][]byte {
	out := make(map[string][]byte, len(files))
	for k, v := range files {
		out[k] = v
	}
	return out
}

func TestPlanTamperMatrix(t *testing.T) {
	rng := newRand(t)
	const k = 2
	for _, c := range tamperPlans(t, rng, k) {
		t.Run(strings.ReplaceAll(c.name, " ", "-"), func(t *testing.T) {
			for _, run := range []struct {
				o    EpochOptions
				plan func(EpochOptions) (*EpochPlanReport, error)
			}{{c.o, c.plan}, {c.other, c.plan}, {c.elsewhere, c.planElsewhere}} {
				if _, err := run.plan(run.o); err != nil {
					t.Fatal(err)
				}
			}
			p, _, err := c.open(c.o)
			if err != nil {
				t.Fatal(err)
			}
			nb, types := p.BatchesPerEpoch(), len(p.src.stacks)
			want := make([][]*batchAnswer, 2*k) // epochs k..2k-1 replay the planned ones
			for e := range want {
				want[e] = make([]*batchAnswer, nb)
				for b := range nb {
					if want[e][b], err = answerOf(p, e, b); err != nil {
						t.Fatalf("untampered epoch %d batch %d: %v", e, b, err)
					}
				}
			}
			p.Close()
			orig := readPlanFiles(t, c.o.Dir)
			other, elsewhere := readPlanFiles(t, c.other.Dir), readPlanFiles(t, c.elsewhere.Dir)
			tampered := c.o
			tampered.Dir = filepath.Join(t.TempDir(), "tampered")
			outcomes := map[string]map[string]int{}
			for _, tm := range tamperings(t, rng, orig, other, elsewhere, types) {
				files := copyFiles(orig)
				tm.apply(files)
				writePlanFiles(t, tampered.Dir, files)
				outcome := servePlan(t, c.open, tampered, want, tm)
				if outcomes[tm.class] == nil {
					outcomes[tm.class] = map[string]int{}
				}
				outcomes[tm.class][outcome]++
			}
			for _, class := range slices.Sorted(func(yield func(string) bool) {
				for c := range outcomes {
					if !yield(c) {
						return
					}
				}
			}) {
				t.Logf("%s: %v", class, outcomes[class])
			}
		})
	}
}

// servePlan opens the tampered plan o and serves every batch of want's epochs, failing t where
// a batch is served without an error and differs from want; it returns the outcome: "refused at
// open", "refused on read" (some batch's read failed, the others equal) or "equal".
func servePlan(t *testing.T, open func(EpochOptions) (*Epochs, *EpochPlanReport, error), o EpochOptions, want [][]*batchAnswer, tm tampering) string {
	t.Helper()
	p, _, err := open(o)
	if err != nil {
		return "refused at open"
	}
	defer p.Close()
	outcome := "equal"
	for e := range want {
		for b := range want[e] {
			got, err := answerOf(p, e, b)
			if err != nil {
				outcome = "refused on read"
				continue
			}
			if !reflect.DeepEqual(got, want[e][b]) {
				t.Errorf("%s, %s: epoch %d batch %d is served without an error and differs from the untampered plan's", tm.class, tm.name, e, b)
			}
		}
	}
	return outcome
}
