package host

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/featurestore/featurestoretest"
)

// The tamper matrix of the shared host tier's file (issue 43's bar): a bit flipped in every
// header word, in the ids (first, middle, last), the hash table and the rows (first, middle and
// last byte) and at random offsets; the file truncated (to nothing, into its header, to half,
// by one byte) and grown; two ids or two rows exchanged; the file swapped for another fill's
// (other ids, same key), another node type's or dataset's (same width, another key) and another
// feature's of another width. Each must be refused by MapShared, or map a tier whose every hit
// is the true row of its id (what the untampered tier serves for the ids it holds).
func TestSharedTierTamperMatrix(t *testing.T) {
	rng := featurestoretest.NewRand(t)
	const rb = 24
	dir := shmDir(t)
	const key = "dataset 1 node type paper feature x"
	ids, load := randomTier(rng, 300, rb)
	truth := func(id int64) []byte {
		row := make([]byte, rb)
		if err := load([]int64{id}, row); err != nil {
			t.Fatal(err)
		}
		return row
	}
	fill := func(name, key string, rowBytes int64, ids []int64, load func([]int64, []byte) error) []byte {
		path := filepath.Join(dir, name)
		c := New(rowBytes)
		defer c.Close()
		if err := c.FillShared(nil, path, key, ids, load); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	good := fill("good", key, rb, ids, load)
	otherIDs := slices.Clone(ids)
	rng.Shuffle(len(otherIDs), func(i, j int) { otherIDs[i], otherIDs[j] = otherIDs[j], otherIDs[i] })
	otherIDs = otherIDs[:150]
	swaps := map[string][]byte{
		"another fill (other ids, same key)":   fill("fill", key, rb, otherIDs, load),
		"another node type (same width)":       fill("type", "dataset 1 node type author feature x", rb, ids, load),
		"another dataset (same width and ids)": fill("dataset", "dataset 2 node type paper feature x", rb, ids, load),
		"another feature (another width)":      fill("width", "dataset 1 node type paper feature y", 2*rb, ids, func(s []int64, a []byte) error { return nil }),
	}
	n := len(good)
	l := layoutOf(int64(len(ids)), int64(tableSize(len(ids))), rb)
	type tampering struct {
		class, name string
		data        []byte
	}
	var list []tampering
	flip := func(class string, at int) {
		bit := byte(1) << rng.IntN(8)
		b := bytes.Clone(good)
		b[at] ^= bit
		list = append(list, tampering{class, fmt.Sprintf("byte %d of %d bit %#x", at, n, bit), b})
	}
	for w := 0; w < sharedHeaderBytes; w += 8 {
		flip("bit flip: header", w+rng.IntN(8))
	}
	for _, i := range []int{0, len(ids) / 2, len(ids) - 1} {
		flip("bit flip: ids", sharedHeaderBytes+8*i+rng.IntN(8))
	}
	flip("bit flip: table", int(l.tableOff)+rng.IntN(int(4*l.tableLen)))
	for _, at := range []int{int(l.arenaOff), int(l.arenaOff) + int(l.rows*rb)/2, n - 1} {
		flip("bit flip: rows", at)
	}
	for range 4 {
		flip("bit flip: anywhere", rng.IntN(n))
	}
	for _, to := range []int{0, 10, sharedHeaderBytes, n / 2, n - 1} {
		list = append(list, tampering{"truncation", fmt.Sprintf("to %d of %d bytes", to, n), good[:to]})
	}
	list = append(list, tampering{"truncation", "grown by a page", append(bytes.Clone(good), make([]byte, 4096)...)})
	i, j := rng.IntN(len(ids)), rng.IntN(len(ids)-1)
	if j >= i {
		j++
	}
	exchange := func(off, size int) []byte {
		b := bytes.Clone(good)
		a, c := off+i*size, off+j*size
		tmp := bytes.Clone(b[a : a+size])
		copy(b[a:a+size], b[c:c+size])
		copy(b[c:c+size], tmp)
		return b
	}
	list = append(list,
		tampering{"exchange", fmt.Sprintf("ids %d and %d", i, j), exchange(sharedHeaderBytes, 8)},
		tampering{"exchange", fmt.Sprintf("rows %d and %d", i, j), exchange(int(l.arenaOff), rb)})
	for name, data := range swaps {
		list = append(list, tampering{"file swap", name, data})
	}

	outcomes := map[string]map[string]int{}
	for k, tm := range list {
		path := filepath.Join(dir, fmt.Sprintf("tampered-%d", k))
		if err := os.WriteFile(path, tm.data, 0o600); err != nil {
			t.Fatal(err)
		}
		outcome := "refused"
		m := New(rb)
		err := m.MapShared(path, key)
		if tm.class == "file swap" && strings.Contains(tm.name, "same width") && (err == nil || !strings.Contains(err.Error(), "was filled for another tier")) {
			t.Errorf("%s, %s: %v; want the file refused as another tier's", tm.class, tm.name, err)
		}
		if err == nil {
			outcome = "served the true rows"
			query := make([]int64, 4*len(ids))
			for id := range query {
				query[id] = int64(id)
			}
			slots := make([]int64, len(query))
			m.Lookup(query, slots)
			for q, s := range slots {
				if s >= 0 && !bytes.Equal(m.Row(s), truth(query[q])) {
					t.Errorf("%s, %s: mapped, and id %d's row is not its own", tm.class, tm.name, query[q])
					break
				}
			}
		}
		m.Close()
		os.Remove(path)
		if outcomes[tm.class] == nil {
			outcomes[tm.class] = map[string]int{}
		}
		outcomes[tm.class][outcome]++
		if tm.class == "file swap" && tm.name != "another fill (other ids, same key)" && outcome != "refused" {
			t.Errorf("%s, %s: mapped under key %q", tm.class, tm.name, key)
		}
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
}
