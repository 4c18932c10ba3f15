package main

/*
#include "tierfs.h"
*/
import "C"

import (
	"unsafe"
)

// Edge splits (format version 6): tfs_edge_splits_json describes an edge type's splits,
// tfs_edge_split_copy copies one into the caller's buffers.

//export tfsgo_edge_splits_json
func tfsgo_edge_splits_json(store C.uintptr_t, edgeType *C.char, buf *C.char, capacity C.size_t, needed *C.size_t) C.int {
	return onJSON("tfs_edge_splits_json", store, kindStore, buf, capacity, needed, func(rec *storeRec) (any, error) {
		return rec.s.Session().EdgeSplits(cString(edgeType))
	})
}

//export tfsgo_edge_split_copy
func tfsgo_edge_split_copy(store C.uintptr_t, edgeType, split *C.char, count C.int64_t, edgeLabelIndex *C.int64_t, labels unsafe.Pointer, negDst *C.int64_t) C.int {
	return on("tfs_edge_split_copy", stEIO, store, kindStore, func(rec *storeRec) error {
		return edgeSplitCopy(rec, edgeType, split, int64(count), edgeLabelIndex, labels, negDst)
	})
}

func edgeSplitCopy(rec *storeRec, edgeType, split *C.char, count int64, edgeLabelIndex *C.int64_t, labels unsafe.Pointer, negDst *C.int64_t) error {
	if split == nil {
		return fail(stEINVAL, "split is NULL")
	}
	ss := rec.s.Session()
	et, name := cString(edgeType), C.GoString(split)
	info, err := ss.EdgeSplitInfo(et, name)
	if err != nil {
		return err
	}
	if count != info.Count {
		return fail(stEINVAL, "count = %d, but edge split %q has %d seed edges (see tfs_edge_splits_json)", count, name, info.Count)
	}
	// A buffer of no bytes is given as a non-nil empty slice, so that it is not mistaken for
	// "skip" and still asks for the part to exist.
	var index, negs []int64
	var lb []byte
	if edgeLabelIndex != nil {
		index = nonNil(ids64(edgeLabelIndex, 2*count))
	}
	if labels != nil {
		lb = []byte{}
		if info.LabelDType != "" && count > 0 {
			lb = unsafe.Slice((*byte)(labels), count*int64(info.LabelDType.Size()))
		}
	}
	if negDst != nil {
		negs = nonNil(ids64(negDst, count*info.NegPerSeed))
	}
	_, err = ss.ReadEdgeSplitInto(et, name, index, lb, negs)
	return err
}

func nonNil(v []int64) []int64 {
	if v == nil {
		return []int64{}
	}
	return v
}
