package main

/*
#include "tierfs.h"
*/
import "C"

import (
	"unsafe"
)

//export tfsgo_sample_edge_ids
func tfsgo_sample_edge_ids(sample C.uintptr_t, out *C.int64_t) (st C.int) {
	defer guard("tfs_sample_edge_ids", &st)
	return finish("tfs_sample_edge_ids", sampleEdgeIDs(uintptr(sample), out), stEINTERNAL)
}

func sampleEdgeIDs(h uintptr, out *C.int64_t) error {
	smp, _, err := lookupSample(h)
	if err != nil {
		return err
	}
	if smp.EdgeIDs == nil {
		return fail(stENOENT, "the sample has no edge ids (its graph does not number its edges)")
	}
	if err := checkArray(unsafe.Pointer(out), "out", int64(len(smp.EdgeIDs)), "num_edges"); err != nil {
		return err
	}
	if len(smp.EdgeIDs) > 0 {
		copy(ids64(out, int64(len(smp.EdgeIDs))), smp.EdgeIDs)
	}
	return nil
}
