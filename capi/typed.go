package main

/*
#include "tierfs.h"
*/
import "C"

import (
	"encoding/json"
	"math"
	"unsafe"

	"github.com/tierfs/tierfs/featurestore"
)

// The typed calls (tierfs.h, "Heterogeneous graphs"): node types by name, edge types by
// src:rel:dst, ids local to their type. They act on the store's session, so one handle serves
// every type.

// cString is s's Go string, "" for NULL.
func cString(s *C.char) string {
	if s == nil {
		return ""
	}
	return C.GoString(s)
}

// hostBytes is dst as a byte slice of dstBytes bytes (nil when empty).
func hostBytes(dst unsafe.Pointer, dstBytes int64) []byte {
	if dstBytes > 0 && dst != nil {
		return unsafe.Slice((*byte)(dst), dstBytes)
	}
	return nil
}

//export tfsgo_types_json
func tfsgo_types_json(store C.uintptr_t, buf *C.char, capacity C.size_t, needed *C.size_t) C.int {
	return onJSON("tfs_types_json", store, kindStore, buf, capacity, needed, func(rec *storeRec) (any, error) {
		ss := rec.s.Session()
		return struct {
			NodeTypes    []featurestore.NodeTypeInfo `json:"node_types"`
			EdgeTypes    []featurestore.EdgeTypeInfo `json:"edge_types"`
			Typed        bool                        `json:"typed"`
			TaskMetadata map[string]json.RawMessage  `json:"task_metadata,omitempty"`
			DatasetName  string                      `json:"dataset_name,omitempty"`
		}{ss.NodeTypes(), ss.EdgeTypes(), ss.Typed(), ss.TaskMetadata(), ss.DatasetName()}, nil
	})
}

//export tfsgo_gather_edge_feature
func tfsgo_gather_edge_feature(store C.uintptr_t, edgeType, feature *C.char, ids *C.int64_t, n C.int64_t, dst unsafe.Pointer, dstBytes C.int64_t) C.int {
	return on("tfs_gather_edge_feature", stEIO, store, kindStore, func(rec *storeRec) error {
		return gatherEdgeFeature(rec, edgeType, feature, ids, int64(n), dst, int64(dstBytes))
	})
}

// gatherEdgeFeature serves tfs_gather_edge_feature.
func gatherEdgeFeature(rec *storeRec, typ, feature *C.char, ids *C.int64_t, n int64, dst unsafe.Pointer, dstBytes int64) error {
	if feature == nil {
		return fail(stEINVAL, "feature is NULL")
	}
	if err := checkArray(unsafe.Pointer(ids), "ids", n, "n"); err != nil {
		return err
	}
	if err := checkArray(dst, "dst", n, "n"); err != nil {
		return err
	}
	if n > math.MaxInt64>>33 { // rows are under 2^33 bytes: n*row_bytes fits
		return fail(stEINVAL, "n = %d ids is more than one gather takes (2^30)", n)
	}
	// The session checks dst_bytes against the feature's row size and the ids against its rows.
	return rec.s.Session().GatherEdgeFeature(cString(typ), cString(feature), ids64(ids, n), hostBytes(dst, dstBytes))
}

//export tfsgo_share_host_tier
func tfsgo_share_host_tier(store C.uintptr_t, nodeType *C.char, path *C.char, ids *C.int64_t, n C.int64_t) C.int {
	return on("tfs_share_host_tier", stEINVAL, store, kindStore, func(rec *storeRec) error {
		return shareHostTier(rec, nodeType, path, ids, int64(n))
	})
}

func shareHostTier(rec *storeRec, nodeType, path *C.char, ids *C.int64_t, n int64) error {
	s, err := hostTierStack(rec, nodeType, path)
	if err != nil {
		return err
	}
	if err := checkArray(unsafe.Pointer(ids), "ids", n, "n"); err != nil {
		return err
	}
	return s.ShareHostTier(cString(path), ids64(ids, n))
}

//export tfsgo_map_host_tier
func tfsgo_map_host_tier(store C.uintptr_t, nodeType *C.char, path *C.char) C.int {
	return on("tfs_map_host_tier", stEINVAL, store, kindStore, func(rec *storeRec) error {
		s, err := hostTierStack(rec, nodeType, path)
		if err != nil {
			return err
		}
		return s.MapHostTier(cString(path))
	})
}

// hostTierStack is the tier stack of node_type (NULL or "": the only one) for
// tfs_share_host_tier and tfs_map_host_tier, after checking the path is given.
func hostTierStack(rec *storeRec, nodeType, path *C.char) (*featurestore.Store, error) {
	if path == nil || cString(path) == "" {
		return nil, fail(stEINVAL, "path of the shared host tier is NULL or empty")
	}
	return rec.s.Session().Stack(cString(nodeType))
}
