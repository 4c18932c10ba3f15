package main

/*
#include "tierfs.h"
*/
import "C"

import (
	"encoding/json"
	"fmt"
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
func tfsgo_types_json(store C.uintptr_t, buf *C.char, capacity C.size_t, needed *C.size_t) (st C.int) {
	defer guard("tfs_types_json", &st)
	return finish("tfs_types_json", typesJSON(uintptr(store), buf, uint64(capacity), needed), stEINTERNAL)
}

func typesJSON(h uintptr, buf *C.char, capacity uint64, needed *C.size_t) error {
	rec, err := lookup[*storeRec](h, kindStore)
	if err != nil {
		return err
	}
	if err := checkJSONOut(buf, capacity, needed); err != nil {
		return err
	}
	ss := rec.s.Session()
	data, err := json.Marshal(struct {
		NodeTypes []featurestore.NodeTypeInfo `json:"node_types"`
		EdgeTypes []featurestore.EdgeTypeInfo `json:"edge_types"`
		Typed     bool                        `json:"typed"`
	}{ss.NodeTypes(), ss.EdgeTypes(), ss.Typed()})
	if err != nil {
		return err
	}
	putJSON(data, buf, capacity, needed)
	return nil
}

//export tfsgo_gather_typed
func tfsgo_gather_typed(store C.uintptr_t, nodeType, feature *C.char, ids *C.int64_t, n C.int64_t, dst unsafe.Pointer, dstBytes C.int64_t) (st C.int) {
	defer guard("tfs_gather_typed", &st)
	return finish("tfs_gather_typed", gatherTyped(uintptr(store), false, nodeType, feature, ids, int64(n), dst, int64(dstBytes)), stEIO)
}

//export tfsgo_gather_edge_feature
func tfsgo_gather_edge_feature(store C.uintptr_t, edgeType, feature *C.char, ids *C.int64_t, n C.int64_t, dst unsafe.Pointer, dstBytes C.int64_t) (st C.int) {
	defer guard("tfs_gather_edge_feature", &st)
	return finish("tfs_gather_edge_feature", gatherTyped(uintptr(store), true, edgeType, feature, ids, int64(n), dst, int64(dstBytes)), stEIO)
}

// gatherTyped serves tfs_gather_typed (a node type's feature) and, with edge, tfs_gather_edge_feature.
func gatherTyped(h uintptr, edge bool, typ, feature *C.char, ids *C.int64_t, n int64, dst unsafe.Pointer, dstBytes int64) error {
	rec, err := lookup[*storeRec](h, kindStore)
	if err != nil {
		return err
	}
	if edge && feature == nil {
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
	ss := rec.s.Session()
	// The session checks dst_bytes against the feature's row size and the ids against its rows.
	if edge {
		return ss.GatherEdgeFeature(cString(typ), cString(feature), ids64(ids, n), hostBytes(dst, dstBytes))
	}
	return ss.Gather(cString(typ), cString(feature), ids64(ids, n), hostBytes(dst, dstBytes))
}

//export tfsgo_gather_typed_device_ids
func tfsgo_gather_typed_device_ids(store C.uintptr_t, nodeType *C.char, ids *C.int64_t, n C.int64_t, dst unsafe.Pointer, dstBytes C.int64_t, stream unsafe.Pointer) (st C.int) {
	defer guard("tfs_gather_typed_device_ids", &st)
	return finish("tfs_gather_typed_device_ids", gatherTypedDeviceIDs(uintptr(store), nodeType, ids, int64(n), dst, int64(dstBytes), stream), stEIO)
}

func gatherTypedDeviceIDs(h uintptr, nodeType *C.char, ids *C.int64_t, n int64, dst unsafe.Pointer, dstBytes int64, stream unsafe.Pointer) error {
	rec, err := lookup[*storeRec](h, kindStore)
	if err != nil {
		return err
	}
	s, err := rec.s.Session().Stack(cString(nodeType))
	if err != nil {
		return err
	}
	if err := checkGatherArgs(s, ids, n, dst, "dst_device", dstBytes); err != nil {
		return err
	}
	return s.GatherDeviceIDs(uintptr(unsafe.Pointer(ids)), int(n), uintptr(dst), uintptr(stream))
}

//export tfsgo_labels_typed
func tfsgo_labels_typed(store C.uintptr_t, nodeType *C.char, ids *C.int64_t, n C.int64_t, out *C.int64_t) (st C.int) {
	defer guard("tfs_labels_typed", &st)
	return finish("tfs_labels_typed", labelsTyped(uintptr(store), nodeType, ids, int64(n), out), stEIO)
}

func labelsTyped(h uintptr, nodeType *C.char, ids *C.int64_t, n int64, out *C.int64_t) error {
	rec, err := lookup[*storeRec](h, kindStore)
	if err != nil {
		return err
	}
	if err := checkArray(unsafe.Pointer(ids), "ids", n, "n"); err != nil {
		return err
	}
	if err := checkArray(unsafe.Pointer(out), "out", n, "n"); err != nil {
		return err
	}
	return rec.s.Session().Labels(cString(nodeType), ids64(ids, n), ids64(out, n))
}

//export tfsgo_split_typed
func tfsgo_split_typed(store C.uintptr_t, nodeType, name *C.char, out *C.int64_t, capacity C.int64_t, count *C.int64_t) (st C.int) {
	defer guard("tfs_split_typed", &st)
	return finish("tfs_split_typed", splitTyped(uintptr(store), nodeType, name, out, int64(capacity), count), stEIO)
}

func splitTyped(h uintptr, nodeType, name *C.char, out *C.int64_t, capacity int64, count *C.int64_t) error {
	rec, err := lookup[*storeRec](h, kindStore)
	if err != nil {
		return err
	}
	if name == nil {
		return fail(stEINVAL, "name is NULL")
	}
	if count == nil {
		return fail(stEINVAL, "count is NULL")
	}
	if err := checkArray(unsafe.Pointer(out), "out", capacity, "cap"); err != nil {
		return err
	}
	size, err := rec.s.Session().ReadSplit(cString(nodeType), C.GoString(name), ids64(out, capacity))
	if err != nil {
		return err
	}
	*count = C.int64_t(size)
	return nil
}

//export tfsgo_hottest_typed
func tfsgo_hottest_typed(store C.uintptr_t, nodeType *C.char, hotness *C.uint32_t, n C.int64_t, k C.int64_t, out *C.int64_t, count *C.int64_t) (st C.int) {
	defer guard("tfs_hottest_typed", &st)
	return finish("tfs_hottest_typed", hottestTyped(uintptr(store), nodeType, hotness, int64(n), int64(k), out, count), stEIO)
}

func hottestTyped(h uintptr, nodeType *C.char, hotness *C.uint32_t, n, k int64, out, count *C.int64_t) error {
	rec, err := lookup[*storeRec](h, kindStore)
	if err != nil {
		return err
	}
	s, err := rec.s.Session().Stack(cString(nodeType))
	if err != nil {
		return err
	}
	return hottestOf(s, fmt.Sprintf("node type %q", cString(nodeType)), hotness, n, k, out, count)
}

//export tfsgo_place_ids_typed
func tfsgo_place_ids_typed(store C.uintptr_t, nodeType *C.char, ids *C.int64_t, n C.int64_t) (st C.int) {
	defer guard("tfs_place_ids_typed", &st)
	return finish("tfs_place_ids_typed", placeIDsTyped(uintptr(store), nodeType, ids, int64(n)), stEINVAL)
}

func placeIDsTyped(h uintptr, nodeType *C.char, ids *C.int64_t, n int64) error {
	rec, err := lookup[*storeRec](h, kindStore)
	if err != nil {
		return err
	}
	s, err := rec.s.Session().Stack(cString(nodeType))
	if err != nil {
		return err
	}
	return placeIDsOf(s, ids, n)
}

//export tfsgo_place_hetero_json
func tfsgo_place_hetero_json(store C.uintptr_t, request *C.char, buf *C.char, capacity C.size_t, needed *C.size_t) (st C.int) {
	defer guard("tfs_place_hetero_json", &st)
	return finish("tfs_place_hetero_json", placeHeteroJSON(uintptr(store), request, buf, uint64(capacity), needed), stEINVAL)
}

// heteroPlaceRequest is tfs_place_hetero_json's request.
type heteroPlaceRequest struct {
	NodeType  string           `json:"node_type"` // the seeds' type
	Split     string           `json:"split"`     // its split the seeds come from; default "train"
	Fanouts   map[string][]int `json:"fanouts"`
	BatchSize int              `json:"batch_size"`
	Batches   int              `json:"batches"`
	Seed      uint64           `json:"seed"`
	Replace   bool             `json:"replace"`
}

func placeHeteroJSON(h uintptr, request *C.char, buf *C.char, capacity uint64, needed *C.size_t) error {
	rec, err := lookup[*storeRec](h, kindStore)
	if err != nil {
		return err
	}
	if err := checkJSONOut(buf, capacity, needed); err != nil {
		return err
	}
	if request == nil {
		return fail(stEINVAL, "request is NULL")
	}
	// The answer of a call whose buffer was too small is kept for the retry, as tfs_place_json's.
	req := C.GoString(request)
	data, err := rec.kept.answer("place-hetero", req, capacity, func(dec *json.Decoder) (any, error) {
		var r heteroPlaceRequest
		if err := dec.Decode(&r); err != nil {
			return nil, fail(stEINVAL, "request: %v", err)
		}
		if r.Split == "" {
			r.Split = "train"
		}
		ss := rec.s.Session()
		n, err := ss.ReadSplit(r.NodeType, r.Split, nil)
		if err != nil {
			return nil, err
		}
		seeds := make([]int64, n)
		if _, err := ss.ReadSplit(r.NodeType, r.Split, seeds); err != nil {
			return nil, err
		}
		rep, err := ss.PlaceProfiled(r.NodeType, seeds, featurestore.SampleOptions{Fanouts: r.Fanouts, Replace: r.Replace, Seed: r.Seed}, r.BatchSize, r.Batches)
		if err != nil {
			return nil, err
		}
		return rep, nil
	})
	if err != nil {
		return err
	}
	putJSON(data, buf, capacity, needed)
	return nil
}

//export tfsgo_share_host_tier
func tfsgo_share_host_tier(store C.uintptr_t, nodeType *C.char, path *C.char, ids *C.int64_t, n C.int64_t) (st C.int) {
	defer guard("tfs_share_host_tier", &st)
	return finish("tfs_share_host_tier", shareHostTier(uintptr(store), nodeType, path, ids, int64(n)), stEINVAL)
}

func shareHostTier(h uintptr, nodeType, path *C.char, ids *C.int64_t, n int64) error {
	s, err := hostTierStack(h, nodeType, path)
	if err != nil {
		return err
	}
	if n < 0 {
		return fail(stEINVAL, "n = %d is negative", n)
	}
	if n > 0 && ids == nil {
		return fail(stEINVAL, "ids is NULL with n = %d", n)
	}
	var list []int64
	if n > 0 {
		list = unsafe.Slice((*int64)(unsafe.Pointer(ids)), n)
	}
	return s.ShareHostTier(cString(path), list)
}

//export tfsgo_map_host_tier
func tfsgo_map_host_tier(store C.uintptr_t, nodeType *C.char, path *C.char) (st C.int) {
	defer guard("tfs_map_host_tier", &st)
	return finish("tfs_map_host_tier", mapHostTier(uintptr(store), nodeType, path), stEINVAL)
}

func mapHostTier(h uintptr, nodeType, path *C.char) error {
	s, err := hostTierStack(h, nodeType, path)
	if err != nil {
		return err
	}
	return s.MapHostTier(cString(path))
}

// hostTierStack is the tier stack of node_type (NULL: the store's own) for tfs_share_host_tier
// and tfs_map_host_tier, after checking the path is given.
func hostTierStack(h uintptr, nodeType, path *C.char) (*featurestore.Store, error) {
	rec, err := lookup[*storeRec](h, kindStore)
	if err != nil {
		return nil, err
	}
	if path == nil || cString(path) == "" {
		return nil, fail(stEINVAL, "path of the shared host tier is NULL or empty")
	}
	if nodeType == nil {
		return rec.s, nil
	}
	return rec.s.Session().Stack(cString(nodeType))
}
