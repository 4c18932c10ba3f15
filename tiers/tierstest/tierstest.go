// Package tierstest checks that a tier keeps the tiers.Tier contract, against a plain reference
// (a map from node id to row) on random input. Every tier package runs it:
//
//	func TestConformance(t *testing.T) { tierstest.Run(t, newTier) }
//
// What it checks, for every tier:
//   - Fill replaces the contents with the rows of ids: a tier of Kind tiers.SSD holds every row
//     at the slot of its id; any other holds the first min(len(ids), Capacity()) ids (Capacity
//     when the tier has one, else all of them), whatever it held before. Fill returns the
//     Source's error.
//   - Lookup finds exactly the held ids (ids outside the rows too, for memory tiers) and counts
//     them; CopyToHost puts each row at its position and writes nothing else of dst.
//   - Rows counts the held rows, Bytes is at least their bytes, Ranges lists the maximal runs of
//     held ids in increasing order and stops when fn returns false.
//   - Lookup and CopyToHost run from many goroutines at once (run with -race).
//   - Holder: the held view answers as the tier does. Admitter: admitted rows read back as
//     offered, skipped ids are not admitted, and a tier with room keeps every row offered.
//   - EnqueueToDevice, where a GPU is (cuda.Load succeeds; else that part skips): after
//     DeviceAttacher.AttachDevice(0, 2) when the tier has it, the rows reach a device buffer on a
//     stream of its own, the pairs given in host and device memory both.
//
// The seed is printed; -tierstest.seed=N runs with seed N.
package tierstest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/tiers"
)

var seedFlag = flag.Uint64("tierstest.seed", 0, "seed of the tier conformance suite (0: a random one, printed)")

// NewTier returns an empty tier for rows: rows[id] is the row of node id, every row of the same
// width: 8, 16, 24 or 512 bytes. A tier of Kind tiers.SSD holds these rows from the start (its files
// hold them); the memory tiers are filled by the suite through Fill. The tier belongs to the
// suite, which closes it when it has a Close method; anything else newTier made it cleans up
// with t.Cleanup.
type NewTier func(t *testing.T, rows [][]byte) tiers.Tier

// rowWidths are the row widths Run tries besides 16: narrow rows, and rows wide enough for the
// paths that read rows of 256 bytes or more in place (host.PackBelow).
var rowWidths = []int{8, 24, 512}

// Run checks the tiers made by newTier (see the package doc).
func Run(t *testing.T, newTier NewTier) {
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("tierstest seed %d (rerun with -tierstest.seed=%d)", seed, seed)
	for _, c := range []struct {
		name string
		fn   func(*testing.T, *rand.Rand, NewTier)
	}{
		{"Fill", testFill},
		{"CopyToHost", testCopyToHost},
		{"FillError", testFillError},
		{"Ranges", testRanges},
		{"Concurrent", testConcurrent},
		{"Holder", testHolder},
		{"Admitter", testAdmitter},
		{"Device", testDevice},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, rand.New(rand.NewPCG(seed, 0)), newTier) })
	}
}

// randomRows makes n random rows of width bytes (a multiple of 8); the first 8 bytes are the id.
func randomRows(rng *rand.Rand, n, width int) [][]byte {
	all := make([]byte, n*width)
	for i := 0; i < len(all); i += 8 {
		binary.LittleEndian.PutUint64(all[i:], rng.Uint64())
	}
	rows := make([][]byte, n)
	for id := range rows {
		rows[id] = all[id*width : (id+1)*width : (id+1)*width]
		binary.LittleEndian.PutUint64(rows[id], uint64(id))
	}
	return rows
}

// randomSubset returns k distinct ids of [0, n) in random order.
func randomSubset(rng *rand.Rand, n, k int) []int64 {
	perm := rng.Perm(n)[:k]
	ids := make([]int64, k)
	for i, v := range perm {
		ids[i] = int64(v)
	}
	return ids
}

// model is what the tier should hold: the reference.
type model struct {
	rows [][]byte
	held map[int64]bool
}

// newTierOf makes a tier for rows and closes it when the test ends.
func newTierOf(t *testing.T, newTier NewTier, rows [][]byte) tiers.Tier {
	t.Helper()
	tier := newTier(t, rows)
	if k := tier.Kind(); k != tiers.GPU && k != tiers.Host && k != tiers.SSD {
		t.Fatalf("Kind %q is none of gpu, host, ssd", k)
	}
	if c, ok := tier.(interface{ Close() error }); ok {
		t.Cleanup(func() {
			if err := c.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	return tier
}

// fill fills tier with ids from rows and returns what it should hold now.
func fill(t *testing.T, tier tiers.Tier, rows [][]byte, ids []int64) model {
	t.Helper()
	src := func(part []int64, out []byte) error {
		w := len(rows[0])
		if len(out) != len(part)*w {
			return fmt.Errorf("tierstest: Source asked for %d ids into %d bytes of %d-byte rows", len(part), len(out), w)
		}
		for k, id := range part {
			if id < 0 || id >= int64(len(rows)) {
				return fmt.Errorf("tierstest: Source asked for id %d of %d rows", id, len(rows))
			}
			copy(out[k*w:], rows[id])
		}
		return nil
	}
	if err := tier.Fill(ids, src); err != nil {
		t.Fatalf("Fill of %d ids: %v", len(ids), err)
	}
	m := model{rows: rows, held: map[int64]bool{}}
	if tier.Kind() == tiers.SSD {
		for id := range rows {
			m.held[int64(id)] = true
		}
		return m
	}
	keep := len(ids)
	if c, ok := tier.(interface{ Capacity() int64 }); ok {
		keep = int(min(int64(keep), c.Capacity()))
	}
	for _, id := range ids[:keep] {
		m.held[id] = true
	}
	return m
}

// check compares everything the tier answers with m.
func check(t *testing.T, tier tiers.Tier, m model) {
	t.Helper()
	n := int64(len(m.rows))
	w := int64(len(m.rows[0]))
	probe := make([]int64, 0, n+10)
	for id := range n {
		probe = append(probe, id)
	}
	if tier.Kind() != tiers.SSD { // the ssd tier holds every id of its files and checks none
		probe = append(probe, -1, -5, n, n+3, 1<<40)
	}
	slots := make([]int64, len(probe))
	for i := range slots {
		slots[i] = -7
	}
	hits := tier.Lookup(probe, slots)
	if hits != len(m.held) {
		t.Fatalf("Lookup of %d ids: %d hits, the tier should hold %d", len(probe), hits, len(m.held))
	}
	if got := tier.Rows(); got != int64(len(m.held)) {
		t.Fatalf("Rows %d, the tier should hold %d", got, len(m.held))
	}
	if b := tier.Bytes(); b < tier.Rows()*w {
		t.Fatalf("Bytes %d is less than the %d rows of %d bytes held", b, tier.Rows(), w)
	}
	var hitSlots, hitPos []int64
	seen := map[int64]int64{}
	for i, id := range probe {
		if (slots[i] >= 0) != m.held[id] {
			t.Fatalf("Lookup(%d) = slot %d, should hold it: %v", id, slots[i], m.held[id])
		}
		if slots[i] < -1 {
			t.Fatalf("Lookup(%d) = slot %d, want -1 for a miss", id, slots[i])
		}
		if slots[i] >= 0 {
			if other, dup := seen[slots[i]]; dup {
				t.Fatalf("ids %d and %d share slot %d", other, id, slots[i])
			}
			seen[slots[i]] = id
			hitSlots = append(hitSlots, slots[i])
			hitPos = append(hitPos, int64(len(hitPos)))
		}
		if tier.Kind() == tiers.SSD && slots[i] != id {
			t.Fatalf("ssd tier: slot of %d is %d, want the id", id, slots[i])
		}
	}
	dst := make([]byte, int64(len(hitSlots))*w)
	if err := tier.CopyToHost(hitSlots, hitPos, dst); err != nil {
		t.Fatalf("CopyToHost of %d rows: %v", len(hitSlots), err)
	}
	for k, s := range hitSlots {
		if id := seen[s]; !bytes.Equal(dst[int64(k)*w:int64(k+1)*w], m.rows[id]) {
			t.Fatalf("row of id %d (slot %d) differs from the one filled", id, s)
		}
	}
	checkRanges(t, tier, m)
}

func checkRanges(t *testing.T, tier tiers.Tier, m model) {
	t.Helper()
	var covered int64
	last := int64(-2)
	tier.Ranges(func(first, count int64) bool {
		if count <= 0 || first <= last+1 {
			t.Fatalf("Ranges: [%d, +%d) after a run ending at %d: runs must be non-empty, maximal and increasing", first, count, last)
		}
		for id := first; id < first+count; id++ {
			if !m.held[id] {
				t.Fatalf("Ranges: [%d, +%d) covers %d, which the tier should not hold", first, count, id)
			}
		}
		covered += count
		last = first + count - 1
		return true
	})
	if covered != int64(len(m.held)) {
		t.Fatalf("Ranges cover %d ids, the tier should hold %d", covered, len(m.held))
	}
}

// testFill fills each tier a few times with random subsets of random sizes (none, some, all of
// the rows), each Fill replacing the last.
func testFill(t *testing.T, rng *rand.Rand, newTier NewTier) {
	for _, w := range rowWidths {
		for _, n := range []int{1, 7, 1000, 20000} {
			rows := randomRows(rng, n, w)
			tier := newTierOf(t, newTier, rows)
			for _, k := range []int{0, n, rng.IntN(n + 1), rng.IntN(n + 1), 0, rng.IntN(n + 1)} {
				m := fill(t, tier, rows, randomSubset(rng, n, k))
				check(t, tier, m)
			}
		}
	}
}

// testCopyToHost copies held rows in random order, with repeats, to random positions of a dst
// larger than needed: the rows land where asked, the rest of dst keeps its bytes.
func testCopyToHost(t *testing.T, rng *rand.Rand, newTier NewTier) {
	for _, w := range rowWidths {
		const n = 3000
		rows := randomRows(rng, n, w)
		tier := newTierOf(t, newTier, rows)
		m := fill(t, tier, rows, randomSubset(rng, n, n/2))
		held := heldIDs(m)
		if len(held) == 0 {
			t.Fatalf("the tier holds nothing after a Fill of %d ids", n/2)
		}
		for range 5 {
			k := 1 + rng.IntN(2*len(held))
			ids := make([]int64, k)
			for i := range ids {
				ids[i] = held[rng.IntN(len(held))]
			}
			slots := make([]int64, k)
			if hits := tier.Lookup(ids, slots); hits != k {
				t.Fatalf("Lookup of %d held ids (repeats included) hit %d", k, hits)
			}
			pos := randomSubset(rng, k+k/3+1, k)
			dst := make([]byte, int64(k+k/3+1)*int64(w))
			for i := range dst {
				dst[i] = 0xA5
			}
			want := slices.Clone(dst)
			for j, id := range ids {
				copy(want[pos[j]*int64(w):], rows[id])
			}
			if err := tier.CopyToHost(slots, pos, dst); err != nil {
				t.Fatalf("CopyToHost of %d rows: %v", k, err)
			}
			if !bytes.Equal(dst, want) {
				t.Fatalf("CopyToHost of %d rows to random positions: dst differs from the reference", k)
			}
		}
		if err := tier.CopyToHost(nil, nil, nil); err != nil {
			t.Fatalf("CopyToHost of no rows: %v", err)
		}
	}
}

func heldIDs(m model) []int64 {
	ids := make([]int64, 0, len(m.held))
	for id := range m.held {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// testFillError: a Source that fails makes Fill fail with its error.
func testFillError(t *testing.T, rng *rand.Rand, newTier NewTier) {
	rows := randomRows(rng, 100, 16)
	tier := newTierOf(t, newTier, rows)
	if tier.Kind() == tiers.SSD {
		t.Skip("the ssd tier's Fill reads nothing")
	}
	boom := errors.New("tierstest: source failed")
	if err := tier.Fill(randomSubset(rng, 100, 40), func([]int64, []byte) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Fill with a failing Source: %v, want an error wrapping the Source's", err)
	}
	// The tier stays usable.
	check(t, tier, fill(t, tier, rows, randomSubset(rng, 100, 30)))
}

// testRanges: runs of consecutive ids come out whole, and fn returning false stops Ranges.
func testRanges(t *testing.T, rng *rand.Rand, newTier NewTier) {
	const n = 500
	rows := randomRows(rng, n, 8)
	tier := newTierOf(t, newTier, rows)
	var ids []int64 // runs of 1 to 20 ids with gaps between, shuffled
	for first := int64(rng.IntN(5)); first < n; {
		run := int64(1 + rng.IntN(20))
		for id := first; id < min(n, first+run); id++ {
			ids = append(ids, id)
		}
		first += run + 1 + int64(rng.IntN(30))
	}
	rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	m := fill(t, tier, rows, ids)
	checkRanges(t, tier, m)
	calls := 0
	tier.Ranges(func(first, count int64) bool { calls++; return false })
	if want := min(1, len(m.held)); calls != want {
		t.Fatalf("Ranges called fn %d times after it returned false, want %d", calls, want)
	}
}

// testConcurrent runs Lookup, CopyToHost, Rows, Bytes and Ranges from several goroutines.
func testConcurrent(t *testing.T, rng *rand.Rand, newTier NewTier) {
	const n, w = 4000, 24
	rows := randomRows(rng, n, w)
	tier := newTierOf(t, newTier, rows)
	m := fill(t, tier, rows, randomSubset(rng, n, n/2))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 6 {
		seed := rng.Uint64()
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			for range 50 {
				ids := make([]int64, 1+r.IntN(300))
				for i := range ids {
					ids[i] = r.Int64N(n)
				}
				if err := lookupCopy(tier, m, ids); err != nil {
					errs <- fmt.Errorf("goroutine %d: %w", g, err)
					return
				}
				tier.Rows()
				tier.Bytes()
				tier.Ranges(func(int64, int64) bool { return true })
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// lookupCopy looks ids up in tier (a tier or a held view) and copies the hits, checking both
// against m.
func lookupCopy(tier tiers.Tier, m model, ids []int64) error {
	w := int64(len(m.rows[0]))
	slots := make([]int64, len(ids))
	tier.Lookup(ids, slots)
	var hs, hp []int64
	for i, id := range ids {
		if (slots[i] >= 0) != m.held[id] {
			return fmt.Errorf("Lookup(%d) = %d, should hold it: %v", id, slots[i], m.held[id])
		}
		if slots[i] >= 0 {
			hs, hp = append(hs, slots[i]), append(hp, int64(i))
		}
	}
	dst := make([]byte, int64(len(ids))*w)
	if err := tier.CopyToHost(hs, hp, dst); err != nil {
		return fmt.Errorf("CopyToHost: %w", err)
	}
	for _, i := range hp {
		if !bytes.Equal(dst[i*w:(i+1)*w], m.rows[ids[i]]) {
			return fmt.Errorf("row of id %d differs", ids[i])
		}
	}
	return nil
}

// testHolder: a held view answers as the tier does, and its slots stay good until release.
func testHolder(t *testing.T, rng *rand.Rand, newTier NewTier) {
	const n = 2000
	rows := randomRows(rng, n, 24)
	tier := newTierOf(t, newTier, rows)
	h, ok := tier.(tiers.Holder)
	if !ok {
		t.Skipf("%T is no tiers.Holder", tier)
	}
	m := fill(t, tier, rows, randomSubset(rng, n, n/2))
	held, release := h.Hold()
	ids := make([]int64, 700)
	for i := range ids {
		ids[i] = rng.Int64N(n)
	}
	err := lookupCopy(held, m, ids)
	rows2 := held.Rows()
	release()
	if err != nil {
		t.Fatalf("held view: %v", err)
	}
	if rows2 != int64(len(m.held)) {
		t.Fatalf("held view: Rows %d, want %d", rows2, len(m.held))
	}
	// Two holds at once, as concurrent gathers take them.
	h1, r1 := h.Hold()
	h2, r2 := h.Hold()
	if h1.Rows() != h2.Rows() {
		t.Fatalf("two holds disagree: %d and %d rows", h1.Rows(), h2.Rows())
	}
	r2()
	r1()
	check(t, tier, m)
}

// testAdmitter offers rows as gathers do: admitted rows read back as offered, skipped ids stay
// out, and the tier never holds more than its capacity.
func testAdmitter(t *testing.T, rng *rand.Rand, newTier NewTier) {
	const n, w = 3000, 24
	rows := randomRows(rng, n, w)
	tier := newTierOf(t, newTier, rows)
	a, ok := tier.(tiers.Admitter)
	if !ok {
		t.Skipf("%T is no tiers.Admitter", tier)
	}
	capacity := int64(n)
	if c, ok := tier.(interface{ Capacity() int64 }); ok {
		capacity = c.Capacity()
	}
	m := fill(t, tier, rows, randomSubset(rng, n, n/4))
	for range 20 {
		ids := randomSubset(rng, n, 1+rng.IntN(400))
		buf := make([]byte, int64(len(ids))*w)
		skip := make([]bool, len(ids))
		offered, fresh := 0, 0 // not skipped; and of those, not held
		for k, id := range ids {
			copy(buf[int64(k)*w:], rows[id])
			skip[k] = rng.IntN(4) == 0
			if !skip[k] {
				offered++
				if !m.held[id] {
					fresh++
				}
			}
		}
		before := tier.Rows()
		got := a.Admit(ids, buf, skip)
		// A row held before may be evicted by an earlier one of the batch, and inserted again.
		if got < 0 || got > offered {
			t.Fatalf("Admit inserted %d rows of %d offered", got, offered)
		}
		now := map[int64]bool{}
		tier.Ranges(func(first, count int64) bool {
			for id := first; id < first+count; id++ {
				now[id] = true
			}
			return true
		})
		for k, id := range ids {
			if skip[k] && !m.held[id] && now[id] {
				t.Fatalf("Admit inserted id %d, which skip asked it to leave out", id)
			}
		}
		if int64(len(now)) > capacity {
			t.Fatalf("holds %d rows after Admit, capacity %d", len(now), capacity)
		}
		if before+int64(fresh) <= capacity {
			if got != fresh {
				t.Fatalf("the tier had room (%d + %d of %d) but Admit inserted %d", before, fresh, capacity, got)
			}
			for k, id := range ids {
				if !skip[k] && !now[id] {
					t.Fatalf("the tier had room (%d + %d of %d) but did not keep id %d", before, fresh, capacity, id)
				}
			}
		}
		m.held = now
		check(t, tier, m)
	}
}

// testDevice copies held rows into device memory with EnqueueToDevice, before and after a new
// Fill, and compares them with the reference.
func testDevice(t *testing.T, rng *rand.Rand, newTier NewTier) {
	if err := cuda.Load(); err != nil {
		t.Skipf("no GPU: %v", err)
	}
	for _, w := range rowWidths {
		const n = 5000
		rows := randomRows(rng, n, w)
		tier := newTierOf(t, newTier, rows)
		if a, ok := tier.(tiers.DeviceAttacher); ok {
			if err := a.AttachDevice(0, 2); err != nil {
				t.Fatalf("AttachDevice: %v", err)
			}
		}
		for range 2 {
			m := fill(t, tier, rows, randomSubset(rng, n, rng.IntN(n+1)))
			held := heldIDs(m)
			if len(held) == 0 {
				continue
			}
			ids := make([]int64, 1+rng.IntN(3*len(held)))
			for i := range ids {
				ids[i] = held[rng.IntN(len(held))]
			}
			if err := deviceCopy(tier, m, ids, rng); err != nil {
				t.Fatalf("%d-byte rows: %v", w, err)
			}
		}
	}
}

// deviceCopy looks ids (all held) up, copies their rows to random rows of a device buffer with
// EnqueueToDevice on a stream of its own, and compares what comes back with m.
func deviceCopy(tier tiers.Tier, m model, ids []int64, rng *rand.Rand) error {
	const dev = 0
	w := int64(len(m.rows[0]))
	k := len(ids)
	slots := make([]int64, k)
	if hits := tier.Lookup(ids, slots); hits != k {
		return fmt.Errorf("Lookup of %d held ids hit %d", k, hits)
	}
	out := k + 5
	pos := randomSubset(rng, out, k)
	var pairs, rowsBuf cuda.Mirror
	defer pairs.Free(dev)
	defer rowsBuf.Free(dev)
	if err := pairs.Ensure(dev, 16*k, 16*k); err != nil {
		return err
	}
	size := int(int64(out) * w)
	if err := rowsBuf.Ensure(dev, size, size); err != nil {
		return err
	}
	copy(cuda.Int64s(pairs.Host, 2*k), slices.Concat(slots, pos))
	stream, err := cuda.NewStream(dev)
	if err != nil {
		return err
	}
	defer cuda.DestroyStream(dev, stream)
	for i := range rowsBuf.Host[:size] {
		rowsBuf.Host[i] = 0xA5
	}
	if err := cuda.Memcpy(dev, pairs.Dev, pairs.HostAddr, uint64(16*k), stream); err != nil {
		return err
	}
	if err := cuda.Memcpy(dev, rowsBuf.Dev, rowsBuf.HostAddr, uint64(size), stream); err != nil {
		return err
	}
	if err := cuda.SyncStream(dev, stream); err != nil {
		return err
	}
	c := tiers.DeviceCopy{N: k, Slots: slots, Pos: pos, DevSlots: pairs.Dev, DevPos: pairs.Dev + uintptr(8*k),
		Dst: rowsBuf.Dev, Stream: uintptr(stream)}
	if err := tier.EnqueueToDevice(c); err != nil {
		return fmt.Errorf("EnqueueToDevice of %d rows: %w", k, err)
	}
	if err := cuda.Memcpy(dev, rowsBuf.HostAddr, rowsBuf.Dev, uint64(size), stream); err != nil {
		return err
	}
	if err := cuda.SyncStream(dev, stream); err != nil {
		return err
	}
	want := bytes.Repeat([]byte{0xA5}, size)
	for j, id := range ids {
		copy(want[pos[j]*w:], m.rows[id])
	}
	if got := rowsBuf.Host[:size]; !bytes.Equal(got, want) {
		for j, id := range ids {
			if !bytes.Equal(got[pos[j]*w:(pos[j]+1)*w], m.rows[id]) {
				return fmt.Errorf("device copy of %d rows: row of id %d (slot %d, position %d) differs", k, id, slots[j], pos[j])
			}
		}
		return fmt.Errorf("device copy of %d rows wrote rows no position names", k)
	}
	if err := tier.EnqueueToDevice(tiers.DeviceCopy{Stream: uintptr(stream)}); err != nil {
		return fmt.Errorf("EnqueueToDevice of no rows: %w", err)
	}
	return nil
}
