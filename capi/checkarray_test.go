package main

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/tierfs/tierfs/featurestore"
	fst "github.com/tierfs/tierfs/featurestore/featurestoretest"
)

// Every (pointer, count) argument pair is checked one way (checkArray): a negative count, or a
// NULL pointer with a positive count, is TFS_EINVAL naming both.
func TestPointerCountPairs(t *testing.T) {
	d := fst.WriteSplitDataset(t, 300, 4, 1, 4, fst.NewRand(t))
	s, err := featurestore.Open(d.Dir, featurestore.Options{HostCacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	rec := &storeRec{s: s}
	h := register(kindStore, rec)
	defer closeStore(h)
	var count int64
	countP := cptr2(unsafe.Pointer(&count), ids64)
	path := []byte("shared\x00")
	pathP := cptr(unsafe.Pointer(&path[0]), cString)
	for call, c := range map[string]struct {
		err  error
		want string
	}{
		"tfs_hottest(k = -1)":                  {hottest(h, nil, nil, 0, -1, nil, countP), "k = -1 is negative"},
		"tfs_hottest(out NULL, k = 2)":         {hottest(h, nil, nil, 0, 2, nil, countP), "out is NULL (with k = 2)"},
		"tfs_place_ids(n = -1)":                {placeIDs(h, nil, nil, -1), "n = -1 is negative"},
		"tfs_place_ids(ids NULL, n = 3)":       {placeIDs(h, nil, nil, 3), "ids is NULL (with n = 3)"},
		"tfs_share_host_tier(ids NULL, n = 3)": {shareHostTier(rec, nil, pathP, nil, 3), "ids is NULL (with n = 3)"},
	} {
		if c.err == nil || classify(c.err, stEINTERNAL) != stEINVAL || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v; want TFS_EINVAL saying %q", call, c.err, c.want)
		}
	}
}
