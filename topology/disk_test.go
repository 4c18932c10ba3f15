package topology

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
)

// memFiles serves reads of in-memory files as a ReadFunc.
func memFiles(files ...[]byte) ReadFunc {
	return func(reqs []gpuio.Request) error {
		for _, r := range reqs {
			f := files[r.File]
			if r.Offset+int64(r.Length) > int64(len(f)) {
				return fmt.Errorf("read of %d bytes at %d past the end of file %d", r.Length, r.Offset, r.File)
			}
			copy(r.Dst, f[r.Offset:])
		}
		return nil
	}
}

// diskOf lays a CSC out as the two files of a dataset.
func diskOf(indptr []int64, indices []int32) (ptrFile, idxFile []byte) {
	ptrFile = make([]byte, 8*len(indptr))
	for i, p := range indptr {
		binary.LittleEndian.PutUint64(ptrFile[8*i:], uint64(p))
	}
	idxFile = make([]byte, 4*len(indices))
	for i, v := range indices {
		binary.LittleEndian.PutUint32(idxFile[4*i:], uint32(v))
	}
	return
}

// TestDiskCSCCorruptPointers: a damaged index pointer on disk (huge, negative, decreasing, past
// the edge count) is corruption naming the node and the values, found before anything is sized
// from it, for every sampling and caching path; a neighbor id outside the graph is corruption too.
func TestDiskCSCCorruptPointers(t *testing.T) {
	indptr := []int64{0, 2, 3, 3, 6}
	indices := []int32{1, 2, 0, 0, 1, 2}
	for _, tc := range []struct {
		name string
		v    int   // the pointer damaged
		val  int64 // its value
	}{
		{"huge", 2, 1 << 40},
		{"max", 4, 1<<63 - 1},
		{"negative", 1, -5},
		{"decreasing", 2, 1},
		{"past the edges", 4, 7},
	} {
		ptr := append([]int64(nil), indptr...)
		ptr[tc.v] = tc.val
		pf, xf := diskOf(ptr, indices)
		g, err := NewDiskCSC(4, 6, 4, 0, 1, memFiles(pf, xf))
		if err != nil {
			t.Fatal(err)
		}
		seeds := []int64{0, 1, 2, 3}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err = SampleNeighbors(g, seeds, SampleOptions{Fanouts: []int{-1, -1}, Seed: 1})
		runtime.ReadMemStats(&after)
		if !dataset.IsCorrupt(err) || !strings.Contains(err.Error(), "index pointers of node") {
			t.Errorf("%s: sample with a damaged indptr[%d] = %d: %v; want corruption", tc.name, tc.v, tc.val, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
			t.Errorf("%s: the failed sample allocated %d bytes", tc.name, grew)
		}
		if err := g.CacheNeighbors(seeds); !dataset.IsCorrupt(err) {
			t.Errorf("%s: caching with a damaged indptr: %v; want corruption", tc.name, err)
		}
	}
	pf, xf := diskOf(indptr, []int32{1, 2, 0, 9, 1, 2})
	g, _ := NewDiskCSC(4, 6, 4, 0, 1, memFiles(pf, xf))
	if _, err := SampleNeighbors(g, []int64{3}, SampleOptions{Fanouts: []int{-1}}); !dataset.IsCorrupt(err) || !strings.Contains(err.Error(), "neighbor id 9") {
		t.Errorf("sample reaching neighbor id 9 of 4 nodes: %v; want corruption", err)
	}
	if err := g.CacheNeighbors([]int64{3}); !dataset.IsCorrupt(err) {
		t.Errorf("caching neighbor id 9 of 4 nodes: %v; want corruption", err)
	}
}
