package main

/*
#include "tierfs.h"
*/
import "C"

import (
	"encoding/json"
	"math"
	"unsafe"
)

//export tfsgo_features_json
func tfsgo_features_json(store C.uintptr_t, buf *C.char, capacity C.size_t, needed *C.size_t) (st C.int) {
	defer guard("tfs_features_json", &st)
	return finish("tfs_features_json", featuresJSON(uintptr(store), buf, uint64(capacity), needed), stEINTERNAL)
}

func featuresJSON(h uintptr, buf *C.char, capacity uint64, needed *C.size_t) error {
	rec, err := lookup[*storeRec](h, kindStore)
	if err != nil {
		return err
	}
	if err := checkJSONOut(buf, capacity, needed); err != nil {
		return err
	}
	data, err := json.Marshal(rec.s.Features())
	if err != nil {
		return err
	}
	putJSON(data, buf, capacity, needed)
	return nil
}

//export tfsgo_gather_feature
func tfsgo_gather_feature(store C.uintptr_t, name *C.char, ids *C.int64_t, n C.int64_t, dst unsafe.Pointer, dstBytes C.int64_t) (st C.int) {
	defer guard("tfs_gather_feature", &st)
	return finish("tfs_gather_feature", gatherFeature(uintptr(store), name, ids, int64(n), dst, int64(dstBytes)), stEIO)
}

func gatherFeature(h uintptr, name *C.char, ids *C.int64_t, n int64, dst unsafe.Pointer, dstBytes int64) error {
	rec, err := lookup[*storeRec](h, kindStore)
	if err != nil {
		return err
	}
	if name == nil {
		return fail(stEINVAL, "name is NULL")
	}
	if err := checkArray(unsafe.Pointer(ids), "ids", n, "n"); err != nil {
		return err
	}
	if err := checkArray(dst, "dst", n, "n"); err != nil {
		return err
	}
	if n > math.MaxInt64>>33 { // rows are under 2^33 bytes (dim <= 2^30 of <= 8 bytes): n*row_bytes fits
		return fail(stEINVAL, "n = %d ids is more than one gather takes (2^30)", n)
	}
	var out []byte
	if dstBytes > 0 && dst != nil {
		out = unsafe.Slice((*byte)(dst), dstBytes)
	}
	// GatherFeature checks dst_bytes against the feature's row size and the ids against its rows.
	return rec.s.GatherFeature(C.GoString(name), ids64(ids, n), out)
}
