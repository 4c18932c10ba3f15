package planned

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/ingest"
	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/topology"
)

// heteroEpochOpts are session plan options over d's paper train split, random fanouts per edge
// type.
func heteroEpochOpts(t *testing.T, ss *featurestore.Session, d *heteroData, k int, rng *rand.Rand) EpochOptions {
	t.Helper()
	train, err := ss.Split("paper", "train")
	if err != nil {
		t.Fatal(err)
	}
	fanouts := map[string][]int{}
	for _, et := range d.Manifest.EdgeTypes {
		fanouts[et.Key()] = []int{1 + rng.IntN(5), rng.IntN(4)}
	}
	return EpochOptions{Dir: filepath.Join(t.TempDir(), "plan"), NodeType: "paper", Seeds: train, BatchSize: 37 + rng.IntN(40),
		EdgeFanouts: fanouts, Sample: topology.SampleOptions{Seed: rng.Uint64(), Replace: rng.IntN(2) == 0},
		ShuffleSeed: rng.Uint64(), Epochs: k, DropLast: rng.IntN(2) == 0}
}

// TestHeteroPlannedEpochsMatchFresh serves more epochs than were planned from a session plan and
// checks every batch against the on-demand path: its seeds against EpochOrder, its sample
// against a fresh Sampler of the batch's seed (every node and edge type), and every packed
// type's rows bit for bit against the session's Gather and the files, for memory tiers holding
// none, some and all rows; the institution type (no features) is sampled but never packed.
func TestHeteroPlannedEpochsMatchFresh(t *testing.T) {
	rng := newRand(t)
	d := writeHetero(t, rng)
	var all int64
	for _, nt := range d.Manifest.NodeTypes {
		all += nt.Count * (d.RowBytes[nt.Name] + 16)
	}
	for _, cache := range []struct {
		name  string
		bytes int64
	}{{"none", 0}, {"some", all / 4}, {"all", 2 * all}} {
		ss, err := featurestore.OpenSession(d.Dir, featurestore.Options{HostCacheBytes: cache.bytes})
		if err != nil {
			t.Fatal(err)
		}
		const k = 2
		o := heteroEpochOpts(t, ss, d, k, rng)
		rep, err := PlanEpochs(ss, o)
		if err != nil {
			t.Fatalf("%s: %v", cache.name, err)
		}
		nb := BatchesPerEpoch(len(o.Seeds), o.BatchSize, o.DropLast)
		if rep.Planned != k || rep.BatchesPerEpoch != nb || (cache.name == "all") != (rep.RowsPacked == 0) {
			t.Fatalf("%s: report %+v", cache.name, rep)
		}
		p, again, err := OpenEpochs(ss, o)
		if err != nil || again != nil {
			t.Fatalf("%s: open: %v (replanned %v)", cache.name, err, again != nil)
		}
		if got := p.NodeTypes(); !slices.Equal(got, []string{"paper", "author"}) {
			t.Fatalf("packed node types %v", got)
		}
		var rows int64
		for e := range 2*k + 1 {
			pe := e % k
			order := EpochOrder(o.Seeds, o.ShuffleSeed, pe)
			for b := range nb {
				name := fmt.Sprintf("%s: epoch %d batch %d", cache.name, e, b)
				got, err := p.Load(e, b)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				seeds := order[b*o.BatchSize : min((b+1)*o.BatchSize, len(order))]
				if !slices.Equal(got.Seeds, seeds) {
					t.Fatalf("%s: seeds differ", name)
				}
				fresh, err := ss.NewSampler(featurestore.SampleOptions{Fanouts: o.EdgeFanouts, Replace: o.Sample.Replace,
					Seed: BatchSampleSeed(o.Sample.Seed, pe, b), Workers: 1 + rng.IntN(3)})
				if err != nil {
					t.Fatal(err)
				}
				want, err := fresh.Sample("paper", seeds)
				if err != nil {
					t.Fatal(err)
				}
				for i := range want.Nodes {
					if !slices.Equal(got.Sample.Nodes[i], want.Nodes[i]) || !slices.Equal(got.Sample.NodesPerHop[i], want.NodesPerHop[i]) {
						t.Fatalf("%s: nodes of type %s differ from a fresh draw", name, d.Manifest.NodeTypes[i].Name)
					}
				}
				for i := range want.Row {
					if !slices.Equal(got.Sample.Row[i], want.Row[i]) || !slices.Equal(got.Sample.Col[i], want.Col[i]) || !slices.Equal(got.Sample.EdgeIDs[i], want.EdgeIDs[i]) {
						t.Fatalf("%s: edges of %s differ from a fresh draw", name, d.Manifest.EdgeTypes[i].Key())
					}
				}
				if len(got.Rows) != 2 {
					t.Fatalf("%s: rows of %v, want paper and author", name, slices.Collect(maps.Keys(got.Rows)))
				}
				var miss int64
				for i, nt := range d.Manifest.NodeTypes {
					rb, ok := d.RowBytes[nt.Name]
					if !ok {
						continue
					}
					nodes := want.Nodes[i]
					plain := make([]byte, int64(len(nodes))*rb)
					if err := ss.Gather(nt.Name, "", nodes, plain); err != nil {
						t.Fatal(err)
					}
					ref := make([]byte, 0, len(plain))
					for _, v := range nodes {
						ref = append(ref, d.Rows[nt.Name][v*rb:(v+1)*rb]...)
					}
					if !bytes.Equal(got.Rows[nt.Name], plain) || !bytes.Equal(plain, ref) {
						t.Fatalf("%s: %s rows differ from Gather", name, nt.Name)
					}
					st, _ := ss.Stack(nt.Name)
					for _, v := range nodes {
						if st.TierOf(v) == tiers.SSD {
							miss++
						}
					}
				}
				if got.IO.Rows != miss {
					t.Fatalf("%s: %d packed rows, want the %d the memory tiers miss", name, got.IO.Rows, miss)
				}
				rows += got.IO.Rows
			}
		}
		if st := p.Stats(); st.Rows != rows {
			t.Fatalf("%s: stats %+v, want %d rows", cache.name, st, rows)
		}
		p.Close()
		ss.Close()
	}
}

// TestHeteroPlanErrors: bad inputs of a session plan are clear errors naming the input, a stale
// session plan names what changed, and a damaged extent of the second type is caught.
func TestHeteroPlanErrors(t *testing.T) {
	rng := newRand(t)
	d := writeHetero(t, rng)
	ss, err := featurestore.OpenSession(d.Dir, featurestore.Options{HostCacheBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	o := heteroEpochOpts(t, ss, d, 1, rng)
	o.BatchSize = min(o.BatchSize, max(1, len(o.Seeds)/2)) // two batches at least: batch 1 is read below
	for _, c := range []struct {
		want string
		is   error
		edit func(o *EpochOptions)
	}{
		{"has 3 node types (paper, author, institution): name one", featurestore.ErrInvalidOption, func(o *EpochOptions) { o.NodeType = "" }},
		{`no node type "venue"`, dataset.ErrTypeNotFound, func(o *EpochOptions) { o.NodeType = "venue" }},
		{"a fanout list for every edge type", featurestore.ErrInvalidOption, func(o *EpochOptions) { delete(o.EdgeFanouts, d.Manifest.EdgeTypes[1].Key()) }},
		{"fanouts per edge type (EdgeFanouts", featurestore.ErrInvalidOption, func(o *EpochOptions) { o.Sample.Fanouts = []int{3} }},
		{`out of range [0, 40) of node type "institution"`, featurestore.ErrIDOutOfRange, func(o *EpochOptions) { o.NodeType, o.Seeds, o.BatchSize = "institution", []int64{3, 40}, 2 }},
		{"planned_epochs", featurestore.ErrInvalidOption, func(o *EpochOptions) { o.Epochs = 0 }},
	} {
		o2 := o
		o2.EdgeFanouts = maps.Clone(o.EdgeFanouts)
		c.edit(&o2)
		_, err := PlanEpochs(ss, o2)
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.want, err)
		}
	}
	// Seeds of a type without features plan fine.
	inst := o
	inst.NodeType, inst.Seeds, inst.BatchSize, inst.Dir = "institution", []int64{0, 5, 9, 39}, 3, filepath.Join(t.TempDir(), "inst")
	if _, err := PlanEpochs(ss, inst); err != nil {
		t.Fatalf("seeds of institution: %v", err)
	}

	if _, err := PlanEpochs(ss, o); err != nil {
		t.Fatal(err)
	}
	p, _, err := OpenEpochs(ss, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Gather(0, 0, "institution", []int64{1}, make([]byte, 8)); !errors.Is(err, featurestore.ErrNotFound) || !strings.Contains(err.Error(), `"institution" has no features`) {
		t.Errorf("gather of the type without features: %v", err)
	}
	_, smp1, err := p.Sample(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	author := slices.IndexFunc(d.Manifest.NodeTypes, func(n dataset.NodeType) bool { return n.Name == "author" })
	nodes := smp1.Nodes[author]
	if _, err := p.Gather(0, 0, "author", nodes, make([]byte, int64(len(nodes))*d.RowBytes["author"])); !errors.Is(err, ErrStalePlan) || !strings.Contains(err.Error(), `nodes of type "author"`) {
		t.Errorf("gather with another batch's author nodes: %v", err)
	}
	p.Close()

	stale := o
	stale.EdgeFanouts = maps.Clone(o.EdgeFanouts)
	key := d.Manifest.EdgeTypes[2].Key()
	stale.EdgeFanouts[key] = []int{9, 9}
	var se *StalePlanError
	if _, _, err := OpenEpochs(ss, stale); !errors.As(err, &se) || se.Input != "fanouts per edge type" || !strings.Contains(err.Error(), key) {
		t.Errorf("changed fanouts of %s: %v", key, err)
	}
	if _, _, err := OpenEpochs(ss, EpochOptions{Dir: o.Dir, NodeType: "paper", Seeds: o.Seeds, BatchSize: o.BatchSize, Epochs: 1, Sample: topology.SampleOptions{Fanouts: []int{2}}}); err == nil {
		t.Error("a plan of paper's stack opened a plan of every node type")
	}

	// Damage the author extent of batch 0: the paper rows still come, the author rows fail.
	data, err := os.ReadFile(filepath.Join(o.Dir, EpochIndexFile))
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		Epochs []struct {
			Batches []batchExtent `json:"batches"`
		} `json:"epochs"`
	}
	if err := json.Unmarshal(data, &idx); err != nil {
		t.Fatal(err)
	}
	ext := idx.Epochs[0].Batches[1] // batch 0, packed type 1 (author)
	if ext.Rows == 0 {
		t.Skip("batch 0 packed no author rows")
	}
	path := filepath.Join(o.Dir, packedFile(0))
	packed, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	packed[ext.Offset+int64(rng.IntN(int(ext.Rows*d.RowBytes["author"])))] ^= 0x10
	if err := os.WriteFile(path, packed, 0o644); err != nil {
		t.Fatal(err)
	}
	p, _, err = OpenEpochs(ss, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, smp0, err := p.Sample(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	paper := slices.IndexFunc(d.Manifest.NodeTypes, func(n dataset.NodeType) bool { return n.Name == "paper" })
	if _, err := p.Gather(0, 0, "paper", smp0.Nodes[paper], make([]byte, int64(len(smp0.Nodes[paper]))*d.RowBytes["paper"])); err != nil {
		t.Errorf("paper rows of the damaged batch: %v", err)
	}
	if _, err := p.Load(0, 0); !errors.Is(err, dataset.ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Errorf("damaged author extent: %v", err)
	}
}

// TestHeteroPlanPlaceTiers: PlaceTiers places every type's stack by the planned batches, so the
// plan packs no more rows than with the tiers placed by degree, and a session with no features
// has nothing to plan.
func TestHeteroPlanPlaceTiers(t *testing.T) {
	rng := newRand(t)
	d := writeHetero(t, rng)
	ss, err := featurestore.OpenSession(d.Dir, featurestore.Options{HostCacheBytes: 48 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	o := heteroEpochOpts(t, ss, d, 2, rng)
	byDegree, err := PlanEpochs(ss, o)
	if err != nil {
		t.Fatal(err)
	}
	o.PlaceTiers = true
	placed, err := PlanEpochs(ss, o)
	if err != nil {
		t.Fatal(err)
	}
	if placed.RowsPacked > byDegree.RowsPacked {
		t.Fatalf("placed for the epochs: %d rows packed, by degree %d", placed.RowsPacked, byDegree.RowsPacked)
	}
	t.Logf("rows packed: by degree %d, placed for the planned epochs %d", byDegree.RowsPacked, placed.RowsPacked)
	p, rep, err := OpenEpochs(ss, o)
	if err != nil || rep != nil {
		t.Fatalf("open with PlaceTiers: %v (replanned %v)", err, rep != nil)
	}
	if _, err := p.Load(3, 0); err != nil {
		t.Fatal(err)
	}
	p.Close()

	bare := t.TempDir() + "/bare"
	if _, err := ingest.SynthHetero(ingest.SynthHeteroOptions{
		NodeTypes: []ingest.SynthNodeType{{Name: "a", Nodes: 50}, {Name: "b", Nodes: 30}},
		EdgeTypes: []ingest.SynthEdgeType{{Src: "a", Rel: "to", Dst: "b", AvgDegree: 2}, {Src: "b", Rel: "back", Dst: "a", AvgDegree: 1}},
		Seed:      rng.Uint64(), Out: bare,
	}); err != nil {
		t.Fatal(err)
	}
	bs, err := featurestore.OpenSession(bare, featurestore.Options{})
	if err != nil {
		t.Skipf("a dataset without features does not open: %v", err)
	}
	defer bs.Close()
	_, err = PlanEpochs(bs, EpochOptions{Dir: t.TempDir(), NodeType: "b", Seeds: []int64{1, 2}, BatchSize: 1, Epochs: 1,
		EdgeFanouts: map[string][]int{"a:to:b": {2}, "b:back:a": {2}}})
	if !errors.Is(err, dataset.ErrFeatureNotFound) || !strings.Contains(err.Error(), "no node type") {
		t.Fatalf("a plan of a graph without features: %v", err)
	}
}

// TestHeteroPlanDiskBudget: the disk budget bounds every type's extents together; a plan that
// fits 1.5 epochs plans one, and the served epoch 2 replays planned epoch 0.
func TestHeteroPlanDiskBudget(t *testing.T) {
	rng := newRand(t)
	d := writeHetero(t, rng)
	ss, err := featurestore.OpenSession(d.Dir, featurestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	o := heteroEpochOpts(t, ss, d, 3, rng)
	full, err := PlanEpochs(ss, o)
	if err != nil {
		t.Fatal(err)
	}
	o.DiskBudget = full.EpochBytes[0] + full.EpochBytes[1]/2
	rep, err := PlanEpochs(ss, o)
	if err != nil || rep.Planned != 1 || rep.BytesWritten != full.EpochBytes[0] {
		t.Fatalf("budget for 1.5 epochs: %v %+v", err, rep)
	}
	if samples, packed := samplesBytes(t, o.Dir, 1); samples+packed != full.EpochBytes[0] {
		t.Fatalf("epoch 0's files take %d bytes (%d of them samples), its report %d", samples+packed, samples, full.EpochBytes[0])
	}
	p, _, err := OpenEpochs(ss, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	batch := rng.IntN(BatchesPerEpoch(len(o.Seeds), o.BatchSize, o.DropLast)) // a small train split has one batch
	a, err := p.Load(0, batch)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Load(2, batch)
	if err != nil || !slices.Equal(a.Seeds, b.Seeds) || !bytes.Equal(a.Rows["author"], b.Rows["author"]) || !bytes.Equal(a.Rows["paper"], b.Rows["paper"]) {
		t.Fatalf("epoch 2 is not planned epoch 0: %v", err)
	}
	o.DiskBudget = 4096
	if _, err := PlanEpochs(ss, o); !errors.Is(err, featurestore.ErrInvalidOption) || !strings.Contains(err.Error(), fmt.Sprint(full.EpochBytes[0])) {
		t.Fatalf("budget for no epoch: %v", err)
	}
}
