package main

import (
	"bytes"
	"strings"
	"testing"
	"unsafe"

	"github.com/tierfs/tierfs/featurestore"
	fst "github.com/tierfs/tierfs/featurestore/featurestoretest"
)

// cptr and cptr2 are p as the C pointer type P that f takes first (a test file cannot name
// cgo's types).
func cptr[P ~*E, E any, F ~func(P) R, R any](p unsafe.Pointer, _ F) P         { return P(p) }
func cptr2[P ~*E, E any, F ~func(P, int64) R, R any](p unsafe.Pointer, _ F) P { return P(p) }

// ABI 3: every call of a node type's rows takes node_type. NULL means the only node type: on a
// store of several it is TFS_EINVAL naming them, on a one-type store it serves that type.
func TestNullNodeTypeIsTheOnlyType(t *testing.T) {
	rng := fst.NewRand(t)
	hd := fst.WriteHetero(t, rng)
	hs, err := featurestore.Open(hd.Dir, featurestore.Options{HostCacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	hetero := register(kindStore, &storeRec{s: hs})
	defer closeStore(hetero)
	d := fst.WriteSplitDataset(t, 300, 4, 1, 4, rng)
	s, err := featurestore.Open(d.Dir, featurestore.Options{HostCacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	one := register(kindStore, &storeRec{s: s})
	defer closeStore(one)

	ids := []int64{3, 1, 4}
	idsP := cptr2(unsafe.Pointer(&ids[0]), ids64)
	rb := s.RowBytes()
	dst := make([]byte, int64(len(ids))*rb)
	out := make([]int64, len(ids))
	outP := cptr2(unsafe.Pointer(&out[0]), ids64)
	var count int64
	countP := cptr2(unsafe.Pointer(&count), ids64)
	name := []byte("train\x00")
	nameP := cptr(unsafe.Pointer(&name[0]), cString)

	calls := func(h uintptr, n int64) map[string]error {
		return map[string]error{
			"tfs_gather":            gather(h, nil, nil, idsP, n, unsafe.Pointer(&dst[0]), n*rb),
			"tfs_gather_device_ids": gatherDevice(h, nil, idsP, 0, nil, 0, nil, true),
			"tfs_labels":            labels(h, nil, idsP, n, outP),
			"tfs_split":             split(h, nil, nameP, nil, 0, countP),
			"tfs_place":             place(h, nil, nil, 0),
			"tfs_hottest":           hottest(h, nil, nil, 0, 2, outP, countP),
			"tfs_place_ids":         placeIDs(h, nil, idsP, n),
		}
	}
	for call, err := range calls(hetero, int64(len(ids))) {
		if classify(err, stEINTERNAL) != stEINVAL || !strings.Contains(err.Error(), "3 node types (paper, author, institution)") {
			t.Errorf("%s with node_type NULL on a store of 3 node types: %v; want TFS_EINVAL naming them", call, err)
		}
	}
	for call, err := range calls(one, int64(len(ids))) {
		if err != nil && !(call == "tfs_gather_device_ids" && classify(err, stEINTERNAL) == stENOTSUP) { // no GPU here
			t.Errorf("%s with node_type NULL on a one-type store: %v", call, err)
		}
	}
	if !bytes.Equal(dst, d.Want(ids)) {
		t.Error("tfs_gather(NULL) of a one-type store: rows differ")
	}
	if count != 2 { // tfs_hottest's, after tfs_split's
		t.Errorf("tfs_hottest(NULL, k = 2) of a one-type store gave %d ids", count)
	}
	if err := split(one, nil, nameP, nil, 0, countP); err != nil || count != int64(len(d.Train)) {
		t.Errorf("tfs_split(NULL, \"train\") of a one-type store: %d ids, %v; want %d", count, err, len(d.Train))
	}
}
