package planned

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/tiers"
)

// TestPlannedEpochsElsewhere plans with rows served elsewhere (a distributed rank's rows owned by
// its peers) and given seed orders (the rank's share of each epoch), then checks every served
// batch against a fresh draw and the dataset: the seeds are the orders' batches, the rows served
// elsewhere are neither packed nor written, every other row is the dataset's, and the packed
// rows are exactly the nodes no memory tier holds that are not served elsewhere.
func TestPlannedEpochsElsewhere(t *testing.T) {
	rng := newRand(t)
	d := writeSplitDataset(t, 3000, 24, 2, 6, rng)
	s, err := featurestore.Open(d.Dir, featurestore.Options{HostCacheBytes: (d.RowBytes + 16) * d.Count / 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var elsewhere []int64
	for v := range d.Count {
		if rng.IntN(3) == 0 {
			elsewhere = append(elsewhere, v)
		}
	}
	const k = 2
	share := len(d.Train) / 2
	orders := make([][]int64, k)
	for e := range orders {
		perm := slices.Clone(d.Train)
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		orders[e] = perm[:share]
	}
	o := epochOpts(t, d, k)
	o.Seeds, o.SeedOrders, o.Elsewhere = nil, orders, map[string][]int64{"": elsewhere}
	o.Sample.Seed = rng.Uint64()
	rep, err := PlanEpochs(s.Session(), o)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := OpenEpochs(s.Session(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	nb := BatchesPerEpoch(share, o.BatchSize, o.DropLast)
	if p.BatchesPerEpoch() != nb {
		t.Fatalf("%d batches per epoch, want %d", p.BatchesPerEpoch(), nb)
	}
	isElsewhere := func(v int64) bool { _, ok := slices.BinarySearch(elsewhere, v); return ok }
	var packed, skipped int64
	for e := range 2 * k {
		for b := range nb {
			seeds, sample, err := oneSample(p, e, b)
			if err != nil {
				t.Fatal(err)
			}
			if want := orders[e%k][b*o.BatchSize : min((b+1)*o.BatchSize, share)]; !slices.Equal(seeds, want) {
				t.Fatalf("epoch %d batch %d: seeds are not the order's batch", e, b)
			}
			opt := o.Sample
			opt.Seed = BatchSampleSeed(o.Sample.Seed, e%k, b)
			fresh, err := storeSample(s, seeds, opt)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(fresh.Nodes, sample.Nodes) {
				t.Fatalf("epoch %d batch %d: sample differs from a fresh draw", e, b)
			}
			rb := d.RowBytes
			dst := bytes.Repeat([]byte{0xAB}, len(sample.Nodes)*int(rb))
			io, err := p.Gather(e, b, "", sample.Nodes, dst)
			if err != nil {
				t.Fatalf("epoch %d batch %d: %v", e, b, err)
			}
			var miss int64
			for i, v := range sample.Nodes {
				row := dst[int64(i)*rb : int64(i+1)*rb]
				switch {
				case isElsewhere(v):
					if !bytes.Equal(row, bytes.Repeat([]byte{0xAB}, int(rb))) {
						t.Fatalf("epoch %d batch %d: node %d (served elsewhere) at position %d was written", e, b, v, i)
					}
					skipped++
				case !bytes.Equal(row, d.Want([]int64{v})):
					t.Fatalf("epoch %d batch %d: node %d at position %d: row differs from the dataset's", e, b, v, i)
				case s.TierOf(v) == tiers.SSD:
					miss++
				}
			}
			if io.Rows != miss {
				t.Fatalf("epoch %d batch %d: %d packed rows, want %d (no memory tier, not elsewhere)", e, b, io.Rows, miss)
			}
			if e < k {
				packed += miss
			}
		}
	}
	if rep.RowsPacked != packed || skipped == 0 || packed == 0 {
		t.Fatalf("plan packed %d rows, batches missed %d; %d rows served elsewhere", rep.RowsPacked, packed, skipped)
	}

	// The rows served elsewhere and the orders are part of the fingerprint.
	for _, c := range []struct {
		input string
		edit  func(o *EpochOptions)
	}{
		{"rows served elsewhere", func(o *EpochOptions) { o.Elsewhere = map[string][]int64{"": elsewhere[1:]} }},
		{"rows served elsewhere", func(o *EpochOptions) { o.Elsewhere = nil }},
		{"seeds", func(o *EpochOptions) { o.SeedOrders = [][]int64{orders[1], orders[0]} }},
	} {
		o2 := o
		c.edit(&o2)
		_, _, err := OpenEpochs(s.Session(), o2)
		var se *StalePlanError
		if !errors.As(err, &se) || !strings.HasPrefix(se.Input, c.input) {
			t.Fatalf("%s changed: got %v", c.input, err)
		}
	}

	// Bad inputs are refused before anything is planned, naming the input.
	for _, c := range []struct {
		want string
		edit func(o *EpochOptions)
	}{
		{"distinct ids in ascending order", func(o *EpochOptions) { o.Elsewhere = map[string][]int64{"": {5, 3}} }},
		{"elsewhere[\"\"][1] = 3000 is out of range", func(o *EpochOptions) { o.Elsewhere = map[string][]int64{"": {5, 3000}} }},
		{"node type \"paper\"", func(o *EpochOptions) { o.Elsewhere = map[string][]int64{"paper": {5}} }},
		{"one order per planned epoch", func(o *EpochOptions) { o.SeedOrders = orders[:1] }},
		{"as many seeds as epoch 0's", func(o *EpochOptions) { o.SeedOrders = [][]int64{orders[0], orders[1][1:]} }},
		{"seed orders alone", func(o *EpochOptions) { o.Seeds = d.Train }},
		{"seed_orders[1][0] = -1", func(o *EpochOptions) { o.SeedOrders = [][]int64{orders[0], append([]int64{-1}, orders[1][1:]...)} }},
	} {
		o2 := o
		o2.Dir = filepath.Join(t.TempDir(), "bad")
		c.edit(&o2)
		if _, err := PlanEpochs(s.Session(), o2); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("want an error with %q, got %v", c.want, err)
		}
		if _, err := os.Stat(filepath.Join(o2.Dir, EpochIndexFile)); err == nil {
			t.Fatalf("%q: a plan was written", c.want)
		}
	}

	// A plan without rows served elsewhere keeps the index it had (no elsewhere key), so plans
	// made before them stay valid.
	o3 := epochOpts(t, d, 1)
	if _, err := PlanEpochs(s.Session(), o3); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(o3.Dir, EpochIndexFile)); err != nil || bytes.Contains(data, []byte("elsewhere")) {
		t.Fatalf("index of a plan without rows served elsewhere: %v %s", err, data)
	}
}

// TestHeteroPlannedEpochsElsewhere: a session plan takes rows served elsewhere per node type
// (here of one packed type only): Gather leaves that type's rows served elsewhere unwritten,
// writes every other row of every type from the dataset, and packs exactly the rest of the
// misses; naming a type without features is refused.
func TestHeteroPlannedEpochsElsewhere(t *testing.T) {
	rng := newRand(t)
	d := writeHetero(t, rng)
	var all int64
	for _, nt := range d.Manifest.NodeTypes {
		all += nt.Count * (d.RowBytes[nt.Name] + 16)
	}
	ss, err := featurestore.OpenSession(d.Dir, featurestore.Options{HostCacheBytes: all / 4})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	authorStack, err := ss.Stack("author")
	if err != nil {
		t.Fatal(err)
	}
	var away []int64
	for v := range authorStack.NumNodes() {
		if rng.IntN(2) == 0 {
			away = append(away, v)
		}
	}
	o := heteroEpochOpts(t, ss, d, 1, rng)
	o.Elsewhere, o.Replan = map[string][]int64{"author": away}, true
	p, _, err := OpenEpochs(ss, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var skipped int64
	for b := range p.BatchesPerEpoch() {
		_, smp, err := p.Sample(0, b)
		if err != nil {
			t.Fatal(err)
		}
		var io BatchIO
		var miss int64
		for i, nt := range d.Manifest.NodeTypes {
			rb, ok := d.RowBytes[nt.Name]
			if !ok {
				continue
			}
			nodes := smp.Nodes[i]
			dst := bytes.Repeat([]byte{0xAB}, len(nodes)*int(rb))
			got, err := p.Gather(0, b, nt.Name, nodes, dst)
			if err != nil {
				t.Fatal(err)
			}
			io.Rows += got.Rows
			st, _ := ss.Stack(nt.Name)
			for k, v := range nodes {
				row, want := dst[int64(k)*rb:int64(k+1)*rb], d.Rows[nt.Name][v*rb:(v+1)*rb]
				_, away := slices.BinarySearch(away, v)
				if nt.Name == "author" && away {
					want = bytes.Repeat([]byte{0xAB}, int(rb))
					skipped++
				} else if st.TierOf(v) == tiers.SSD {
					miss++
				}
				if !bytes.Equal(row, want) {
					t.Fatalf("batch %d: %s node %d at position %d (served elsewhere: %v): row differs", b, nt.Name, v, k, nt.Name == "author" && away)
				}
			}
		}
		if io.Rows != miss {
			t.Fatalf("batch %d: %d packed rows, want %d", b, io.Rows, miss)
		}
	}
	if skipped == 0 {
		t.Fatal("no author row was served elsewhere")
	}
	o.Dir = filepath.Join(t.TempDir(), "bad")
	o.Elsewhere = map[string][]int64{"institution": {0}}
	if _, err := PlanEpochs(ss, o); !errors.Is(err, featurestore.ErrNotFound) || !strings.Contains(err.Error(), "institution") {
		t.Fatalf("rows served elsewhere of a type without features: %v", err)
	}
}
