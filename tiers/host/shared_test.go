package host

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// randomTier returns n random distinct ids and a Source that writes row bytes derived from the
// seed for each id, so two fills of the same ids write the same rows.
func randomTier(rng *rand.Rand, n int, rowBytes int64) ([]int64, func(sorted []int64, arena []byte) error) {
	ids := rng.Perm(4 * n)[:n]
	out := make([]int64, n)
	for i, v := range ids {
		out[i] = int64(v)
	}
	salt := rng.Uint64()
	return out, func(sorted []int64, arena []byte) error {
		for i, id := range sorted {
			r := rand.New(rand.NewPCG(uint64(id), salt))
			for b := int64(0); b < rowBytes; b += 8 {
				binary.LittleEndian.PutUint64(arena[int64(i)*rowBytes+b:], r.Uint64())
			}
		}
		return nil
	}
}

// A tier filled in shared memory and the same tier mapped by another Cache serve the rows a
// private Fill does, bit for bit, also after the file is removed; the creator's and the mapper's
// SharedPath say who made it.
func TestSharedTierMatchesPrivateFill(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, rb := range []int64{8, 24, 512} {
		ids, load := randomTier(rng, 1+rng.IntN(3000), rb)
		plain, creator, mapper := New(rb), New(rb), New(rb)
		defer plain.Close()
		defer creator.Close()
		defer mapper.Close()
		path := filepath.Join(t.TempDir(), "tier")
		if err := plain.Fill(ids, load); err != nil {
			t.Fatal(err)
		}
		if err := creator.FillShared(nil, path, "k", ids, load); err != nil {
			t.Fatal(err)
		}
		if err := mapper.MapShared(path, "k"); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if p, created := creator.SharedPath(); p != path || !created {
			t.Fatalf("creator's SharedPath = %q, %v", p, created)
		}
		if p, created := mapper.SharedPath(); p != path || created {
			t.Fatalf("mapper's SharedPath = %q, %v", p, created)
		}
		query := make([]int64, 2*len(ids))
		for i := range query {
			query[i] = rng.Int64N(int64(5 * len(ids)))
		}
		want := make([]int64, len(query))
		hits := plain.Lookup(query, want)
		for _, c := range []*Cache{creator, mapper} {
			got := make([]int64, len(query))
			if h := c.Lookup(query, got); h != hits {
				t.Fatalf("row bytes %d: %d hits, a private tier %d", rb, h, hits)
			}
			for i := range query {
				if (got[i] < 0) != (want[i] < 0) || got[i] >= 0 && !bytes.Equal(c.Row(got[i]), plain.Row(want[i])) {
					t.Fatalf("row bytes %d: id %d: shared slot %d, private slot %d, rows differ", rb, query[i], got[i], want[i])
				}
			}
			if c.Rows() != plain.Rows() || c.Bytes() != plain.Bytes() {
				t.Fatalf("row bytes %d: %d rows in %d bytes, a private tier %d in %d", rb, c.Rows(), c.Bytes(), plain.Rows(), plain.Bytes())
			}
		}
	}
}

// An empty shared tier maps and holds nothing.
func TestSharedTierEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tier")
	creator, mapper := New(16), New(16)
	defer creator.Close()
	defer mapper.Close()
	if err := creator.FillShared(nil, path, "k", nil, func([]int64, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := mapper.MapShared(path, "k"); err != nil {
		t.Fatal(err)
	}
	if mapper.Rows() != 0 || mapper.Lookup([]int64{0, 5}, make([]int64, 2)) != 0 {
		t.Fatalf("empty shared tier holds %d rows", mapper.Rows())
	}
}

// FillShared refuses a path that exists and removes its file when the Source fails; MapShared
// refuses a file whose creator did not finish (ready word unset, as a killed creator leaves it),
// a file of another row width, a truncated or damaged one, and names the file.
func TestSharedTierRefusals(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	dir := t.TempDir()
	path := filepath.Join(dir, "tier")
	ids, load := randomTier(rng, 100, 16)
	creator := New(16)
	defer creator.Close()
	if err := creator.FillShared(nil, path, "k", ids, load); err != nil {
		t.Fatal(err)
	}
	if err := New(16).FillShared(nil, path, "k", ids, load); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("FillShared over an existing file: %v", err)
	}
	boom := errors.New("boom")
	failed := filepath.Join(dir, "failed")
	if err := New(16).FillShared(nil, failed, "k", ids, func([]int64, []byte) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("FillShared with a failing source: %v", err)
	}
	if _, err := os.Stat(failed); !os.IsNotExist(err) {
		t.Fatalf("FillShared left %s after its source failed: %v", failed, err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	variant := func(name string, edit func([]byte) []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, edit(bytes.Clone(good)), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		path, want string
		rowBytes   int64
	}{
		{variant("unready", func(b []byte) []byte { clear(b[sharedReadyOffset : sharedReadyOffset+8]); return b }), "is not ready", 16},
		{variant("half", func(b []byte) []byte { clear(b[:sharedHeaderBytes]); return b }), "is not ready", 16},
		{path, "holds rows of 16 bytes, this tier's are 8", 8},
		{variant("short", func(b []byte) []byte { return b[:len(b)-16] }), "has " + itoa(len(good)-16) + " bytes", 16},
		{variant("tiny", func(b []byte) []byte { return b[:10] }), "less than its 64-byte header", 16},
		{variant("magic", func(b []byte) []byte { b[0] = 'X'; return b }), "is not a shared host tier", 16},
		{variant("order", func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[sharedHeaderBytes:], 1<<40)
			return b
		}), "must ascend", 16},
		{variant("table", func(b []byte) []byte {
			off := sharedHeaderBytes + 8*len(ids)
			binary.LittleEndian.PutUint32(b[off:], 1<<30)
			return b
		}), "not a slot of its 100 rows", 16},
		{variant("row", func(b []byte) []byte { b[len(b)-3] ^= 0x10; return b }), "it was changed after it was filled", 16},
		// The last id's top byte: it still ascends (a low bit could make it equal its
		// predecessor, which the order check refuses first), so only the checksum can tell.
		{variant("id", func(b []byte) []byte { b[sharedHeaderBytes+8*len(ids)-1] ^= 0x20; return b }), "it was changed after it was filled", 16},
		{variant("pid", func(b []byte) []byte { b[40] ^= 1; return b }), "it was changed after it was filled", 16},
		{filepath.Join(dir, "absent"), "no such file", 16},
	} {
		m := New(c.rowBytes)
		err := m.MapShared(c.path, "k")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("MapShared(%s): %v, want an error naming the file and %q", filepath.Base(c.path), err, c.want)
		}
		if m.Rows() != 0 {
			t.Errorf("MapShared(%s) failed but the tier holds %d rows", filepath.Base(c.path), m.Rows())
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// shmDir is a directory in shared memory (/dev/shm, tmpfs) for a shared tier's file, as
// distributed stores place it: the GPU pins its pages there (pinning a file's pages on a disk
// file system is refused by the driver). Without /dev/shm: a temporary directory.
func shmDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "tierfs-test-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
