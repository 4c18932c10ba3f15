package main

/*
#include "tierfs.h"
*/
import "C"

import (
	"encoding/json"
	"math"
	"strings"
	"unsafe"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/topology"
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

//export tfsgo_gather_edge_feature
func tfsgo_gather_edge_feature(store C.uintptr_t, edgeType, feature *C.char, ids *C.int64_t, n C.int64_t, dst unsafe.Pointer, dstBytes C.int64_t) (st C.int) {
	defer guard("tfs_gather_edge_feature", &st)
	return finish("tfs_gather_edge_feature", gatherEdgeFeature(uintptr(store), edgeType, feature, ids, int64(n), dst, int64(dstBytes)), stEIO)
}

// gatherEdgeFeature serves tfs_gather_edge_feature.
func gatherEdgeFeature(h uintptr, typ, feature *C.char, ids *C.int64_t, n int64, dst unsafe.Pointer, dstBytes int64) error {
	rec, err := lookup[*storeRec](h, kindStore)
	if err != nil {
		return err
	}
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

//export tfsgo_hetero_sampler_create
func tfsgo_hetero_sampler_create(store C.uintptr_t, optionsJSON *C.char, h *C.uintptr_t) (st C.int) {
	defer guard("tfs_hetero_sampler_create", &st)
	return finish("tfs_hetero_sampler_create", heteroSamplerCreate(uintptr(store), optionsJSON, h), stEINVAL)
}

func heteroSamplerCreate(h uintptr, optionsJSON *C.char, hout *C.uintptr_t) error {
	rec, err := lookup[*storeRec](h, kindStore)
	if err != nil {
		return err
	}
	if hout == nil {
		return fail(stEINVAL, "out is NULL")
	}
	if optionsJSON == nil {
		return fail(stEINVAL, "options_json is NULL")
	}
	var opt featurestore.HeteroSampleOptions
	dec := json.NewDecoder(strings.NewReader(C.GoString(optionsJSON)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&opt); err != nil {
		return fail(stEINVAL, "options_json: %v (want {\"fanouts\": {\"src:rel:dst\": [...], ...}, \"replace\", \"seed\", \"workers\"})", err)
	}
	sp, err := rec.s.Session().NewHeteroSampler(opt)
	if err != nil {
		return err
	}
	*hout = C.uintptr_t(register(kindHeteroSampler, sp))
	return nil
}

//export tfsgo_hetero_sampler_free
func tfsgo_hetero_sampler_free(sampler C.uintptr_t) (st C.int) {
	defer guard("tfs_hetero_sampler_free", &st)
	_, err := release[*featurestore.HeteroSampler](uintptr(sampler), kindHeteroSampler)
	return finish("tfs_hetero_sampler_free", err, stEINTERNAL)
}

// heteroSampleRec is what a struct tfs_hetero_sample handle holds: the sample and the names of
// the types its lists are indexed by.
type heteroSampleRec struct {
	smp       *topology.HeteroSample
	link      *topology.LinkLabels // of a sample drawn from edges (tfs_hetero_sample_from_edges), else nil
	nodeTypes []string
	edgeTypes []string
}

//export tfsgo_hetero_sample
func tfsgo_hetero_sample(sampler C.uintptr_t, seedType *C.char, seeds *C.int64_t, n C.int64_t, h *C.uintptr_t) (st C.int) {
	defer guard("tfs_hetero_sample", &st)
	return finish("tfs_hetero_sample", heteroSample(uintptr(sampler), seedType, seeds, int64(n), h), stEIO)
}

func heteroSample(h uintptr, seedType *C.char, seeds *C.int64_t, n int64, hout *C.uintptr_t) error {
	sp, err := lookup[*featurestore.HeteroSampler](h, kindHeteroSampler)
	if err != nil {
		return err
	}
	if hout == nil {
		return fail(stEINVAL, "out is NULL")
	}
	if err := checkArray(unsafe.Pointer(seeds), "seeds", n, "n"); err != nil {
		return err
	}
	smp, err := sp.Sample(cString(seedType), ids64(seeds, n))
	if err != nil {
		return err
	}
	*hout = C.uintptr_t(register(kindHeteroSample, newHeteroSampleRec(smp, sp.Session())))
	return nil
}

// newHeteroSampleRec is the handle record of a sample of session ss.
func newHeteroSampleRec(smp *topology.HeteroSample, ss *featurestore.Session) *heteroSampleRec {
	rec := &heteroSampleRec{smp: smp}
	for _, nt := range ss.NodeTypes() {
		rec.nodeTypes = append(rec.nodeTypes, nt.Name)
	}
	for _, et := range ss.EdgeTypes() {
		rec.edgeTypes = append(rec.edgeTypes, et.Key)
	}
	return rec
}

//export tfsgo_hetero_sample_json
func tfsgo_hetero_sample_json(sample C.uintptr_t, buf *C.char, capacity C.size_t, needed *C.size_t) (st C.int) {
	defer guard("tfs_hetero_sample_json", &st)
	return finish("tfs_hetero_sample_json", heteroSampleJSON(uintptr(sample), buf, uint64(capacity), needed), stEINTERNAL)
}

func heteroSampleJSON(h uintptr, buf *C.char, capacity uint64, needed *C.size_t) error {
	rec, err := lookup[*heteroSampleRec](h, kindHeteroSample)
	if err != nil {
		return err
	}
	if err := checkJSONOut(buf, capacity, needed); err != nil {
		return err
	}
	out := struct {
		NodesPerHop map[string][]int64 `json:"nodes_per_hop"`
		EdgesPerHop map[string][]int64 `json:"edges_per_hop"`
		EdgeIDs     map[string]bool    `json:"edge_ids"`
	}{map[string][]int64{}, map[string][]int64{}, map[string]bool{}}
	for i, name := range rec.nodeTypes {
		out.NodesPerHop[name] = rec.smp.NodesPerHop[i]
	}
	for e, key := range rec.edgeTypes {
		out.EdgesPerHop[key] = rec.smp.EdgesPerHop[e]
		out.EdgeIDs[key] = rec.smp.EdgeIDs[e] != nil
	}
	data, err := json.Marshal(out)
	if err != nil {
		return err
	}
	putJSON(data, buf, capacity, needed)
	return nil
}

// typeIndex is the index of name in names, or a TFS_ENOENT error naming what there is.
func typeIndex(names []string, name, what string) (int, error) {
	for i, n := range names {
		if n == name {
			return i, nil
		}
	}
	return -1, fail(stENOENT, "the sample has no %s %q (it has %v)", what, name, names)
}

//export tfsgo_hetero_sample_nodes
func tfsgo_hetero_sample_nodes(sample C.uintptr_t, nodeType *C.char, out *C.int64_t) (st C.int) {
	defer guard("tfs_hetero_sample_nodes", &st)
	return finish("tfs_hetero_sample_nodes", heteroSampleNodes(uintptr(sample), nodeType, out), stEINTERNAL)
}

func heteroSampleNodes(h uintptr, nodeType *C.char, out *C.int64_t) error {
	rec, err := lookup[*heteroSampleRec](h, kindHeteroSample)
	if err != nil {
		return err
	}
	t, err := typeIndex(rec.nodeTypes, cString(nodeType), "node type")
	if err != nil {
		return err
	}
	nodes := rec.smp.Nodes[t]
	if err := checkArray(unsafe.Pointer(out), "out", int64(len(nodes)), "its node count"); err != nil {
		return err
	}
	if len(nodes) > 0 {
		copy(ids64(out, int64(len(nodes))), nodes)
	}
	return nil
}

//export tfsgo_hetero_sample_edges
func tfsgo_hetero_sample_edges(sample C.uintptr_t, edgeType *C.char, row, col, edgeIDs *C.int64_t) (st C.int) {
	defer guard("tfs_hetero_sample_edges", &st)
	return finish("tfs_hetero_sample_edges", heteroSampleEdges(uintptr(sample), edgeType, row, col, edgeIDs), stEINTERNAL)
}

func heteroSampleEdges(h uintptr, edgeType *C.char, row, col, edgeIDs *C.int64_t) error {
	rec, err := lookup[*heteroSampleRec](h, kindHeteroSample)
	if err != nil {
		return err
	}
	e, err := typeIndex(rec.edgeTypes, cString(edgeType), "edge type")
	if err != nil {
		return err
	}
	smp := rec.smp
	m := int64(len(smp.Row[e]))
	for _, a := range []struct {
		p    *C.int64_t
		name string
	}{{row, "row"}, {col, "col"}} {
		if err := checkArray(unsafe.Pointer(a.p), a.name, m, "its edge count"); err != nil {
			return err
		}
	}
	if edgeIDs != nil && smp.EdgeIDs[e] == nil {
		return fail(stENOENT, "the sample has no edge ids for %s (its graph does not number its edges)", rec.edgeTypes[e])
	}
	if m == 0 {
		return nil
	}
	copy(ids64(row, m), smp.Row[e])
	copy(ids64(col, m), smp.Col[e])
	if edgeIDs != nil {
		copy(ids64(edgeIDs, m), smp.EdgeIDs[e])
	}
	return nil
}

//export tfsgo_hetero_sample_free
func tfsgo_hetero_sample_free(sample C.uintptr_t) (st C.int) {
	defer guard("tfs_hetero_sample_free", &st)
	_, err := release[*heteroSampleRec](uintptr(sample), kindHeteroSample)
	return finish("tfs_hetero_sample_free", err, stEINTERNAL)
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

// hostTierStack is the tier stack of node_type (NULL or "": the only one) for
// tfs_share_host_tier and tfs_map_host_tier, after checking the path is given.
func hostTierStack(h uintptr, nodeType, path *C.char) (*featurestore.Store, error) {
	if _, err := lookup[*storeRec](h, kindStore); err != nil {
		return nil, err
	}
	if path == nil || cString(path) == "" {
		return nil, fail(stEINVAL, "path of the shared host tier is NULL or empty")
	}
	return storeStack(h, nodeType)
}
