package host

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/internal/wfs"
)

// sameRows fails t unless c holds exactly want's rows.
func sameRows(t *testing.T, what string, c, want *Cache, ids []int64) {
	t.Helper()
	if c.Rows() != want.Rows() {
		t.Fatalf("%s: %d rows, want %d", what, c.Rows(), want.Rows())
	}
	got, exp := make([]int64, len(ids)), make([]int64, len(ids))
	c.Lookup(ids, got)
	want.Lookup(ids, exp)
	for i := range ids {
		if (got[i] < 0) != (exp[i] < 0) || got[i] >= 0 && !bytes.Equal(c.Row(got[i]), want.Row(exp[i])) {
			t.Fatalf("%s: id %d: slot %d, want slot %d of equal bytes", what, ids[i], got[i], exp[i])
		}
	}
}

// TestSharedTierFaults fails each call FillShared makes of its FS in turn (create, size,
// reserve, close; the removal that follows a failure) with each fault wfs.Faulty injects, until
// it makes no call the fault applies to (FillShared writes the file through its mapping: no
// write or fsync calls, so a short write or a failed fsync has none to fail). Each fault but one
// of the close after mapping (harmless) is FillShared's error. After each, the path holds no file
// and the tier its old rows (an earlier private fill), or the whole new tier, which another
// Cache maps with the rows of a private fill; a later FillShared of the path succeeds. For each
// EIO, the removal after it fails too (a second fault): then the path holds a file no one maps
// (never ready), which the caller removes.
func TestSharedTierFaults(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	const rb = 24
	oldIDs, oldLoad := randomTier(rng, 300, rb)
	ids, load := randomTier(rng, 500, rb)
	old, want := New(rb), New(rb)
	defer old.Close()
	defer want.Close()
	if err := old.Fill(oldIDs, oldLoad); err != nil {
		t.Fatal(err)
	}
	if err := want.Fill(ids, load); err != nil {
		t.Fatal(err)
	}
	query := append(append([]int64(nil), oldIDs...), ids...)
	run := func(fault wfs.Fault, n, then int) (hit, thenHit bool) {
		dir := t.TempDir()
		path := filepath.Join(dir, "tier")
		c := New(rb)
		defer c.Close()
		if err := c.Fill(oldIDs, oldLoad); err != nil {
			t.Fatal(err)
		}
		f := &wfs.Faulty{Fault: fault, N: n, Then: then}
		err := c.FillShared(f, path, "k", ids, load)
		what := fmt.Sprintf("%v (%s; %s), FillShared: %v", f, f.Hit(), f.ThenHit(), err)
		if err == nil && f.Hit() != "" && !strings.HasPrefix(f.Hit(), "close ") {
			t.Fatalf("%s: the fault was not reported", what) // only a failed close after the mapping is harmless
		}
		if err != nil {
			sameRows(t, what+": the tier after", c, old, query)
			if f.ThenHit() != "" {
				// The removal failed too: the file stays, never ready, and no one maps it; its
				// caller removes the path (python/tierfs/distributed.py does, always).
				if err := New(rb).MapShared(path, "k"); err == nil || !strings.Contains(err.Error(), "not ready") && !strings.Contains(err.Error(), "less than its") {
					t.Fatalf("%s: the file left by the failed removal: MapShared %v; want it refused", what, err)
				}
				os.Remove(path)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Fatalf("%s: %d entries left (%s)", what, len(entries), entries[0].Name())
			}
			if err := New(rb).FillShared(nil, path, "k", ids, load); err != nil {
				t.Fatalf("%s: a later FillShared: %v", what, err)
			}
		} else {
			sameRows(t, what+": the creator", c, want, query)
		}
		m := New(rb)
		if err := m.MapShared(path, "k"); err != nil {
			t.Fatalf("%s: MapShared: %v", what, err)
		}
		sameRows(t, what+": a mapper", m, want, query)
		m.Close()
		if f.Hit() == "" && err != nil {
			t.Fatalf("%s: no fault hit", what)
		}
		return f.Hit() != "", f.ThenHit() != ""
	}
	walked, seconds := wfs.Walk(0, run)
	t.Logf("%d faulted fills, %d with the removal after failing too", walked, seconds)
}
