package host

import (
	"bytes"
	"container/list"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// refSieve is SIEVE written out plainly from the paper, one request at a time: a list with the
// newest at the front, a visited flag per entry, a hand moving from the back toward the front.
type refSieve struct {
	capacity int
	q        *list.List // of *refEntry; Front is the head (newest)
	where    map[int64]*list.Element
	hand     *list.Element
}

type refEntry struct {
	id      int64
	visited bool
}

func newRefSieve(capacity int) *refSieve {
	return &refSieve{capacity: capacity, q: list.New(), where: map[int64]*list.Element{}}
}

// lookup is a read: a hit sets the visited flag.
func (r *refSieve) lookup(id int64) bool {
	e, ok := r.where[id]
	if ok {
		e.Value.(*refEntry).visited = true
	}
	return ok
}

// insert adds a missing id at the head, evicting first when full.
func (r *refSieve) insert(id int64) {
	if _, ok := r.where[id]; ok || r.capacity == 0 {
		return
	}
	if r.q.Len() == r.capacity {
		o := r.hand
		if o == nil {
			o = r.q.Back()
		}
		for o.Value.(*refEntry).visited {
			o.Value.(*refEntry).visited = false
			if o = o.Prev(); o == nil {
				o = r.q.Back()
			}
		}
		r.hand = o.Prev()
		delete(r.where, o.Value.(*refEntry).id)
		r.q.Remove(o)
	}
	r.where[id] = r.q.PushFront(&refEntry{id: id})
}

func (r *refSieve) resident() []int64 {
	var ids []int64
	for id := range r.where {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// fillRow writes the bytes of id's row: the id, then bytes derived from it.
func fillRow(id int64, row []byte) {
	for i := range row {
		row[i] = byte(uint64(id)*0x9e3779b97f4a7c15>>(8*(i%8))) ^ byte(i)
	}
	if len(row) >= 8 {
		binary.LittleEndian.PutUint64(row, uint64(id))
	}
}

func rowsOf(ids []int64, rb int64) []byte {
	out := make([]byte, int64(len(ids))*rb)
	for i, id := range ids {
		fillRow(id, out[int64(i)*rb:int64(i+1)*rb])
	}
	return out
}

func resident(c *Sieve) []int64 {
	var ids []int64
	c.Ranges(func(first, count int64) bool {
		for v := first; v < first+count; v++ {
			ids = append(ids, v)
		}
		return true
	})
	return ids
}

// zipfTrace draws n ids from a Zipf-like distribution over universe ids whose hot set moves to a
// new random offset every shift requests (shift 0: never).
func zipfTrace(rng *rand.Rand, n, universe, shift int, s float64) []int64 {
	z := rand.NewZipf(rng, s, 1, uint64(universe-1))
	perm := rng.Perm(universe)
	off := 0
	out := make([]int64, n)
	for i := range out {
		if shift > 0 && i > 0 && i%shift == 0 {
			off = rng.IntN(universe)
		}
		out[i] = int64(perm[(int(z.Uint64())+off)%universe])
	}
	return out
}

func seeded(t *testing.T) (*rand.Rand, uint64) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 0)), seed
}

func TestSieveMatchesReferenceOneByOne(t *testing.T) {
	rng, seed := seeded(t)
	for _, tc := range []struct {
		capacity, universe, shift int
		s                         float64
	}{{1, 10, 0, 1.1}, {2, 5, 0, 1.5}, {7, 100, 0, 1.2}, {100, 2000, 0, 1.1}, {100, 2000, 500, 1.3}, {1000, 5000, 2000, 1.05}, {64, 64, 0, 1.1}} {
		rb := int64(24)
		c, err := NewSieve(rb, sieveFixedBytes+int64(tc.capacity)*SieveBytesPerRow(rb))
		if err != nil {
			t.Fatal(err)
		}
		if c.Capacity() != int64(tc.capacity) {
			t.Fatalf("capacity %d, want %d", c.Capacity(), tc.capacity)
		}
		ref := newRefSieve(tc.capacity)
		trace := zipfTrace(rng, 20000, tc.universe, tc.shift, tc.s)
		dst := make([]byte, rb)
		want := make([]byte, rb)
		hit := []bool{false}
		hits := 0
		for i, id := range trace {
			one := []int64{id}
			got := c.Get(one, dst, hit) == 1
			if exp := ref.lookup(id); got != exp || hit[0] != exp {
				t.Fatalf("seed %d, %+v: request %d (id %d): hit %v, reference says %v", seed, tc, i, id, got, exp)
			}
			if got {
				hits++
				fillRow(id, want)
				if !bytes.Equal(dst, want) {
					t.Fatalf("seed %d, %+v: request %d: row of %d is wrong", seed, tc, i, id)
				}
			} else {
				c.Admit(one, rowsOf(one, rb), nil)
				ref.insert(id)
			}
		}
		if got, exp := resident(c), ref.resident(); !slices.Equal(got, exp) {
			t.Fatalf("seed %d, %+v: resident set %v, reference %v", seed, tc, got, exp)
		}
		if c.Rows() != int64(len(ref.where)) {
			t.Fatalf("Rows %d, reference holds %d", c.Rows(), len(ref.where))
		}
		t.Logf("%+v: hit ratio %.3f, admitted %d, evicted %d", tc, float64(hits)/float64(len(trace)), c.Admitted(), c.Evicted())
		c.Close()
	}
}

// Batched use, as the store does it: Get a batch, then Admit its misses in order.
func TestSieveMatchesReferenceBatched(t *testing.T) {
	rng, seed := seeded(t)
	const rb = 16
	for _, capacity := range []int{0, 3, 50, 500} {
		c, err := NewSieve(rb, sieveFixedBytes+int64(capacity)*SieveBytesPerRow(rb))
		if err != nil {
			t.Fatal(err)
		}
		ref := newRefSieve(capacity)
		trace := zipfTrace(rng, 40000, 3000, 7000, 1.2)
		for lo := 0; lo < len(trace); {
			ids := trace[lo:min(len(trace), lo+1+rng.IntN(200))]
			lo += len(ids)
			dst := make([]byte, len(ids)*rb)
			hit := make([]bool, len(ids))
			c.Get(ids, dst, hit)
			for i, id := range ids {
				if exp := ref.lookup(id); hit[i] != exp {
					t.Fatalf("seed %d, capacity %d: batch at %d, id %d: hit %v, reference %v", seed, capacity, lo, id, hit[i], exp)
				}
				if hit[i] && !bytes.Equal(dst[i*rb:(i+1)*rb], rowsOf(ids[i:i+1], rb)) {
					t.Fatalf("seed %d: row of %d is wrong", seed, id)
				}
			}
			// The store admits the rows it read into dst, skipping the hits.
			for i, id := range ids {
				if !hit[i] {
					fillRow(id, dst[i*rb:(i+1)*rb])
					ref.insert(id)
				}
			}
			c.Admit(ids, dst, hit)
		}
		if got, exp := resident(c), ref.resident(); !slices.Equal(got, exp) {
			t.Fatalf("seed %d, capacity %d: resident set differs from the reference (%d vs %d ids)", seed, capacity, len(got), len(exp))
		}
		slots := make([]int64, 3000)
		all := make([]int64, 3000)
		for i := range all {
			all[i] = int64(i)
		}
		if n := c.Lookup(all, slots); n != len(ref.where) {
			t.Fatalf("Lookup finds %d, reference holds %d", n, len(ref.where))
		}
		for i, id := range all {
			if _, ok := ref.where[id]; ok != (slots[i] >= 0) {
				t.Fatalf("Lookup(%d) = %d, reference holds it: %v", id, slots[i], ok)
			}
		}
		c.Close()
	}
}

func TestSieveBudget(t *testing.T) {
	for _, rb := range []int64{1, 4, 100, 512, 4096} {
		for _, budget := range []int64{0, 1, 67, 68, 200, 1000, 12345, 1 << 20, 7<<20 + 3} {
			c, err := NewSieve(rb, budget)
			if err != nil {
				t.Fatal(err)
			}
			if c.Bytes() > budget {
				t.Fatalf("row %d, budget %d: sieve of %d rows takes %d bytes", rb, budget, c.Capacity(), c.Bytes())
			}
			if want := max(0, budget-sieveFixedBytes) / SieveBytesPerRow(rb); c.Capacity() != want {
				t.Fatalf("row %d, budget %d: capacity %d, want %d", rb, budget, c.Capacity(), want)
			}
			// Filling it past capacity keeps it at capacity.
			ids := make([]int64, 2*c.Capacity()+3)
			for i := range ids {
				ids[i] = int64(i)
			}
			c.Admit(ids, rowsOf(ids, rb), nil)
			if c.Rows() != c.Capacity() {
				t.Fatalf("holds %d rows, capacity %d", c.Rows(), c.Capacity())
			}
			c.Close()
		}
	}
	if _, err := NewSieve(0, 100); err == nil {
		t.Fatal("row size 0 accepted")
	}
	if _, err := NewSieve(8, -1); err == nil {
		t.Fatal("negative budget accepted")
	}
}

// Get and Admit from several goroutines: every row returned has the bytes of its id (run with
// -race).
func TestSieveConcurrent(t *testing.T) {
	_, seed := seeded(t)
	const rb = 40
	c, err := NewSieve(rb, sieveFixedBytes+300*SieveBytesPerRow(rb))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	var hits, gets [6]int
	for g := range 6 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			trace := zipfTrace(rng, 30000, 2000, 5000, 1.1)
			for lo := 0; lo < len(trace); {
				ids := trace[lo:min(len(trace), lo+1+rng.IntN(64))]
				lo += len(ids)
				dst := make([]byte, len(ids)*rb)
				hit := make([]bool, len(ids))
				hits[g] += c.Get(ids, dst, hit)
				gets[g] += len(ids)
				for i, id := range ids {
					if hit[i] && !bytes.Equal(dst[i*rb:(i+1)*rb], rowsOf(ids[i:i+1], rb)) {
						errs <- fmt.Errorf("goroutine %d: row of id %d is wrong: % x", g, id, dst[i*rb:(i+1)*rb])
						return
					}
					if !hit[i] {
						fillRow(id, dst[i*rb:(i+1)*rb])
					}
				}
				c.Admit(ids, dst, hit)
			}
		})
	}
	wg.Go(func() { // readers of the tier interface alongside
		slots := make([]int64, 100)
		ids := make([]int64, 100)
		for range 300 {
			for i := range ids {
				ids[i] = int64(i)
			}
			c.Lookup(ids, slots)
			if r := c.Rows(); r > c.Capacity() {
				errs <- fmt.Errorf("holds %d rows, capacity %d", r, c.Capacity())
				return
			}
			c.Ranges(func(first, count int64) bool { return true })
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if c.Rows() != c.Capacity() {
		t.Fatalf("holds %d rows after the run, capacity %d", c.Rows(), c.Capacity())
	}
	// The index and the queue agree: every resident id is found in the slot whose row is its own.
	all := resident(c)
	if int64(len(all)) != c.Rows() {
		t.Fatalf("Ranges lists %d ids, Rows says %d", len(all), c.Rows())
	}
	dst := make([]byte, len(all)*rb)
	hit := make([]bool, len(all))
	if n := c.Get(all, dst, hit); n != len(all) || !bytes.Equal(dst, rowsOf(all, rb)) {
		t.Fatalf("seed %d: resident rows read back wrong (%d of %d found)", seed, n, len(all))
	}
	tot, h := 0, 0
	for g := range gets {
		tot += gets[g]
		h += hits[g]
	}
	t.Logf("hit ratio %.3f over %d gets; admitted %d, evicted %d", float64(h)/float64(tot), tot, c.Admitted(), c.Evicted())
}
