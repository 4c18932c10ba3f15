package ssd

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tierfs/tierfs/gpuio"
)

// TestScanMatchesRows scans random rows (repeats, several destinations each, any order) with
// random gaps, ranges and buffers, through files of one to five IO stacks (buffers read side by
// side), against the rows as written, and checks the plan's counts against RandomReads' bounds.
func TestScanMatchesRows(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	const count = 5000
	m, rows := writeFeatures(t, count, 1+rng.Int64N(60), 1+rng.IntN(3), rng)
	spec, err := m.Feature("")
	if err != nil {
		t.Fatal(err)
	}
	stacks := 1 + rng.IntN(5)
	f, err := OpenFiles(m, spec.Files, Options{Backend: gpuio.BackendAuto, VerifyReads: true, Stacks: stacks, QueueDepth: 1 + rng.IntN(128)})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t.Logf("%d IO stacks", stacks)
	tier := NewTier(spec, count, f)
	rb := spec.RowBytes
	for trial := range 20 {
		n := 1 + rng.IntN(3000)
		ids, at := make([]int64, n), make([]int64, n)
		for k := range ids {
			ids[k] = rng.Int64N(count)
			if k > 0 && rng.IntN(5) == 0 {
				ids[k] = ids[rng.IntN(k)]
			}
			at[k] = int64(k) * rb
		}
		rng.Shuffle(n, func(i, j int) { at[i], at[j] = at[j], at[i] })
		opt := ScanOptions{Gap: rng.Int64N(64 << 10), MaxRange: rng.Int64N(256 << 10), Buffer: rng.Int64N(1 << 20)}
		p, err := tier.PlanScan(ids, at, opt)
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]byte, int64(n)*rb)
		if err := tier.Scan(p, dst, nil); err != nil {
			t.Fatalf("trial %d, %+v: %v", trial, opt, err)
		}
		for k, id := range ids {
			if !bytes.Equal(dst[at[k]:at[k]+rb], rows[id*rb:(id+1)*rb]) {
				t.Fatalf("trial %d, %+v: row %d (id %d) differs", trial, opt, k, id)
			}
		}
		_, randomBytes := tier.RandomReads(ids)
		if p.Ranges < 1 || p.Reads < int64(p.Ranges) || (opt.Gap == 0 && p.Bytes < randomBytes) {
			t.Fatalf("trial %d, %+v: %d ranges, %d reads, %d bytes (random reads: %d bytes)", trial, opt, p.Ranges, p.Reads, p.Bytes, randomBytes)
		}
	}
	if _, err := tier.PlanScan([]int64{count}, []int64{0}, ScanOptions{}); err == nil {
		t.Fatal("a scan of a row out of range is accepted")
	}
}

// randomScanRows is n rows over files stripes of random offsets (repeats among them).
func randomScanRows(rng *rand.Rand, n, files int) []scanRow {
	rows := make([]scanRow, n)
	for k := range rows {
		rows[k] = scanRow{file: rng.IntN(files), off: 512 * rng.Int64N(1<<22), at: rng.Int64N(1 << 40)}
		if k > 0 && rng.IntN(4) == 0 {
			rows[k].file, rows[k].off = rows[k-1].file, rows[k-1].off
		}
	}
	return rows
}

// TestSortScanRowsMatchesPlainSort: the bucketed parallel sort of a scan's rows gives the plain
// sort's order, on random rows (one to several stripes, repeats, from none to many rows).
func TestSortScanRowsMatchesPlainSort(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	defer func(n int) { parallelSortRows = n }(parallelSortRows)
	parallelSortRows = 1
	for trial := range 30 {
		rows := randomScanRows(rng, []int{0, 1, 2, 17, 1000, 50000}[rng.IntN(6)], 1+rng.IntN(4))
		want := slices.Clone(rows)
		slices.SortFunc(want, compareScanRows)
		if got := sortScanRows(rows); !slices.Equal(got, want) {
			t.Fatalf("trial %d: %d rows sorted differently", trial, len(rows))
		}
	}
}

// BenchmarkSortScanRows sorts a window's rows (2M of a 10M-row file, one stripe) plainly and by
// buckets side by side.
func BenchmarkSortScanRows(b *testing.B) {
	rows := randomScanRows(rand.New(rand.NewPCG(1, 2)), 2_000_000, 1)
	for _, way := range []string{"plain", "buckets"} {
		b.Run(way, func(b *testing.B) {
			for b.Loop() {
				r := slices.Clone(rows)
				if way == "plain" {
					slices.SortFunc(r, compareScanRows)
				} else {
					sortScanRows(r)
				}
			}
		})
	}
}
