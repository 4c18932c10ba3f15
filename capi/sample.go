package main

/*
#include "tierfs.h"
*/
import "C"

import (
	"bytes"
	"encoding/json"
	"strings"
	"unsafe"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/internal/strictjson"
	"github.com/tierfs/tierfs/topology"
)

// Samplers (tierfs_sample.h) are featurestore.Samplers; a sample handle holds a sampleRec: the
// typed sample, its label edges when it was drawn from edges (tfs_sample_from_edges, a link
// plan's tfs_epochs_sample), and the names of the types its lists are indexed by.

// samplerRequest is tfs_sampler_create's options_json: featurestore.SampleOptions's fields by
// their JSON names, the fanouts a list (one edge type) or an object by edge type.
type samplerRequest struct {
	featurestore.SampleOptions
	Fanouts json.RawMessage `json:"fanouts"` // shadows SampleOptions.Fanouts: decoded below
}

// parseSamplerRequest reads options_json into the core's options: fanouts a list (the only edge
// type) or an object by edge type.
func parseSamplerRequest(request string) (featurestore.SampleOptions, error) {
	const want = `(want {"fanouts": [per hop] or {"src:rel:dst": [per hop], ...}, "replace", "seed", "workers", "weight", "disjoint", "time", "temporal_strategy"})`
	var req samplerRequest
	if err := strictjson.Decode([]byte(request), &req); err != nil {
		return featurestore.SampleOptions{}, fail(stEINVAL, "options_json: %v %s", err, want)
	}
	opt := req.SampleOptions
	raw := bytes.TrimSpace(req.Fanouts)
	switch {
	case len(raw) == 0 || bytes.Equal(raw, []byte("null")):
		return opt, fail(stEINVAL, "options_json: no fanouts %s", want)
	case raw[0] == '[':
		var f []int
		if err := json.Unmarshal(raw, &f); err != nil {
			return opt, fail(stEINVAL, "options_json: fanouts: %v %s", err, want)
		}
		opt.Fanouts = map[string][]int{"": f}
	default:
		if err := json.Unmarshal(raw, &opt.Fanouts); err != nil {
			return opt, fail(stEINVAL, "options_json: fanouts: %v %s", err, want)
		}
	}
	return opt, nil
}

//export tfsgo_sampler_create
func tfsgo_sampler_create(store C.uintptr_t, optionsJSON *C.char, h *C.uintptr_t) C.int {
	return on("tfs_sampler_create", stEINVAL, store, kindStore, func(rec *storeRec) error {
		if h == nil {
			return fail(stEINVAL, "out is NULL")
		}
		if optionsJSON == nil {
			return fail(stEINVAL, "options_json is NULL (the fanouts are required)")
		}
		opt, err := parseSamplerRequest(C.GoString(optionsJSON))
		if err != nil {
			return err
		}
		sp, err := rec.s.Session().NewSampler(opt)
		if err != nil {
			return err
		}
		*h = C.uintptr_t(register(kindSampler, sp))
		return nil
	})
}

//export tfsgo_sampler_free
func tfsgo_sampler_free(sampler C.uintptr_t) C.int {
	return call("tfs_sampler_free", stEINTERNAL, func() error {
		_, err := release[*featurestore.Sampler](uintptr(sampler), kindSampler)
		return err
	})
}

// sampleRec is what a struct tfs_sample handle holds.
type sampleRec struct {
	smp       *topology.HeteroSample
	link      *topology.LinkLabels // of a sample drawn from edges, else nil
	nodeTypes []string
	edgeTypes []string
}

// newSampleRec is the handle record of a sample of session ss.
func newSampleRec(smp *topology.HeteroSample, ss *featurestore.Session) *sampleRec {
	return &sampleRec{smp: smp, nodeTypes: sessionNodeTypes(ss), edgeTypes: sessionEdgeTypes(ss)}
}

//export tfsgo_sample
func tfsgo_sample(sampler C.uintptr_t, seedType *C.char, seeds *C.int64_t, n C.int64_t, h *C.uintptr_t) C.int {
	return on("tfs_sample", stEIO, sampler, kindSampler, func(sp *featurestore.Sampler) error {
		return sample(sp, seedType, seeds, nil, int64(n), h)
	})
}

//export tfsgo_sample_at
func tfsgo_sample_at(sampler C.uintptr_t, seedType *C.char, seeds, seedTimes *C.int64_t, n C.int64_t, h *C.uintptr_t) C.int {
	return on("tfs_sample_at", stEIO, sampler, kindSampler, func(sp *featurestore.Sampler) error {
		return sample(sp, seedType, seeds, seedTimes, int64(n), h)
	})
}

// sample is tfs_sample, or tfs_sample_at where seedTimes is not NULL.
func sample(sp *featurestore.Sampler, seedType *C.char, seeds, seedTimes *C.int64_t, n int64, hout *C.uintptr_t) error {
	if hout == nil {
		return fail(stEINVAL, "out is NULL")
	}
	if err := checkArray(unsafe.Pointer(seeds), "seeds", n, "n"); err != nil {
		return err
	}
	var times []int64
	if seedTimes != nil {
		times = make([]int64, n)
		copy(times, ids64(seedTimes, n))
	}
	nt, err := onlyTypeOr(sessionNodeTypes(sp.Session()), cString(seedType), "seed_type", "node type")
	if err != nil {
		return err
	}
	// The seed of this call (seed + call number) is the core's rule (featurestore.Sampler); a
	// sampler of a closed store gets ErrClosed from the core.
	smp, err := sp.SampleAt(nt, ids64(seeds, n), times)
	if err != nil {
		return err
	}
	*hout = C.uintptr_t(register(kindSample, newSampleRec(smp, sp.Session())))
	return nil
}

// sessionNodeTypes names ss's node types; sessionEdgeTypes its edge types' keys.
func sessionNodeTypes(ss *featurestore.Session) []string {
	nts := ss.Manifest().NodeTypes
	out := make([]string, len(nts))
	for i, nt := range nts {
		out[i] = nt.Name
	}
	return out
}

func sessionEdgeTypes(ss *featurestore.Session) []string {
	ets := ss.Manifest().EdgeTypes
	out := make([]string, len(ets))
	for i, et := range ets {
		out[i] = et.Key()
	}
	return out
}

// onlyTypeOr is name, or for "" (a NULL or empty argument arg) the only one of names: TFS_EINVAL
// naming them when there are several.
func onlyTypeOr(names []string, name, arg, what string) (string, error) {
	if name != "" || len(names) == 1 {
		if name == "" {
			return names[0], nil
		}
		return name, nil
	}
	return "", fail(stEINVAL, "%s is NULL or \"\" (the only %s), but the dataset has %d: %s; name one", arg, what, len(names), strings.Join(names, ", "))
}

//export tfsgo_sample_json
func tfsgo_sample_json(sample C.uintptr_t, buf *C.char, capacity C.size_t, needed *C.size_t) C.int {
	return onJSON("tfs_sample_json", sample, kindSample, buf, capacity, needed, func(rec *sampleRec) (any, error) {
		out := struct {
			NodesPerHop map[string][]int64 `json:"nodes_per_hop"`
			EdgesPerHop map[string][]int64 `json:"edges_per_hop"`
			EdgeIDs     map[string]bool    `json:"edge_ids"`
			Disjoint    bool               `json:"disjoint"`
		}{map[string][]int64{}, map[string][]int64{}, map[string]bool{}, rec.smp.Batch != nil}
		for i, name := range rec.nodeTypes {
			out.NodesPerHop[name] = rec.smp.NodesPerHop[i]
		}
		for e, key := range rec.edgeTypes {
			out.EdgesPerHop[key] = rec.smp.EdgesPerHop[e]
			out.EdgeIDs[key] = rec.smp.EdgeIDs[e] != nil
		}
		return out, nil
	})
}

// typeIndex is the index of name in names ("" for the only one: TFS_EINVAL naming them when
// there are several), or a TFS_ENOENT error naming what there is.
func typeIndex(names []string, name, arg, what string) (int, error) {
	name, err := onlyTypeOr(names, name, arg, what)
	if err != nil {
		return -1, err
	}
	for i, n := range names {
		if n == name {
			return i, nil
		}
	}
	return -1, fail(stENOENT, "the sample has no %s %q (it has %s)", what, name, strings.Join(names, ", "))
}

//export tfsgo_sample_nodes
func tfsgo_sample_nodes(sample C.uintptr_t, nodeType *C.char, out *C.int64_t) C.int {
	return call("tfs_sample_nodes", stEINTERNAL, func() error { return sampleNodes(uintptr(sample), nodeType, out) })
}

func sampleNodes(h uintptr, nodeType *C.char, out *C.int64_t) error {
	rec, err := lookup[*sampleRec](h, kindSample)
	if err != nil {
		return err
	}
	return copyNodeArray(rec, nodeType, rec.smp.Nodes, out)
}

// copyNodeArray copies node_type's array of perType (the sample's Nodes or Batch, one a node)
// into out.
func copyNodeArray(rec *sampleRec, nodeType *C.char, perType [][]int64, out *C.int64_t) error {
	t, err := typeIndex(rec.nodeTypes, cString(nodeType), "node_type", "node type")
	if err != nil {
		return err
	}
	arr := perType[t]
	if err := checkArray(unsafe.Pointer(out), "out", int64(len(arr)), "its node count"); err != nil {
		return err
	}
	if len(arr) > 0 {
		copy(ids64(out, int64(len(arr))), arr)
	}
	return nil
}

//export tfsgo_sample_batch
func tfsgo_sample_batch(sample C.uintptr_t, nodeType *C.char, out *C.int64_t) C.int {
	return on("tfs_sample_batch", stEINTERNAL, sample, kindSample, func(rec *sampleRec) error { return sampleBatch(rec, nodeType, out) })
}

func sampleBatch(rec *sampleRec, nodeType *C.char, out *C.int64_t) error {
	if _, err := typeIndex(rec.nodeTypes, cString(nodeType), "node_type", "node type"); err != nil {
		return err
	}
	if rec.smp.Batch == nil {
		return fail(stENOENT, "the sample is not disjoint (its sampler was created without \"disjoint\": true); it has no batch")
	}
	return copyNodeArray(rec, nodeType, rec.smp.Batch, out)
}

//export tfsgo_sample_edges
func tfsgo_sample_edges(sample C.uintptr_t, edgeType *C.char, row, col, edgeIDs *C.int64_t) C.int {
	return on("tfs_sample_edges", stEINTERNAL, sample, kindSample, func(rec *sampleRec) error {
		return sampleEdges(rec, edgeType, row, col, edgeIDs)
	})
}

func sampleEdges(rec *sampleRec, edgeType *C.char, row, col, edgeIDs *C.int64_t) error {
	e, err := typeIndex(rec.edgeTypes, cString(edgeType), "edge_type", "edge type")
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

//export tfsgo_sample_free
func tfsgo_sample_free(sample C.uintptr_t) C.int {
	return call("tfs_sample_free", stEINTERNAL, func() error {
		_, err := release[*sampleRec](uintptr(sample), kindSample)
		return err
	})
}

// decodeLink reads link options (the link family, featurestore.LinkOptions; a key left out takes
// the table's default) from the JSON object data ("" or NULL: none, no negatives); what names
// the JSON in errors. Keys in extra are the caller's and come back undecoded. An amount of 0
// (the core's "default, 1", but given here it is a mistake) is TFS_EINVAL.
func decodeLink(what string, data string, extra ...string) (featurestore.LinkOptions, map[string]json.RawMessage, error) {
	o := featurestore.Defaults[featurestore.LinkOptions]()
	rest, err := featurestore.DecodeTable("link", []byte(data), &o, extra...)
	if err != nil {
		return o, nil, fail(stEINVAL, "%s: %v", what, err)
	}
	if o.NegAmount == 0 {
		return o, nil, fail(stEINVAL, "%s.amount = 0; want > 0 (binary: negative pairs per seed edge; triplet: a whole number of negatives per seed edge)", what)
	}
	return o, rest, nil
}

// parseLinkRequest reads link_options_json ("" or NULL: no negatives).
func parseLinkRequest(request string) (featurestore.LinkOptions, error) {
	o, _, err := decodeLink("link_options_json", request)
	return o, err
}

//export tfsgo_sample_from_edges
func tfsgo_sample_from_edges(sampler C.uintptr_t, edgeType *C.char, src, dst, labels *C.int64_t, n C.int64_t, request *C.char, h *C.uintptr_t) C.int {
	return on("tfs_sample_from_edges", stEIO, sampler, kindSampler, func(sp *featurestore.Sampler) error {
		return sampleFromEdges(sp, edgeType, src, dst, labels, nil, int64(n), request, h)
	})
}

//export tfsgo_sample_from_edges_at
func tfsgo_sample_from_edges_at(sampler C.uintptr_t, edgeType *C.char, src, dst, labels, times *C.int64_t, n C.int64_t, request *C.char, h *C.uintptr_t) C.int {
	return on("tfs_sample_from_edges_at", stEIO, sampler, kindSampler, func(sp *featurestore.Sampler) error {
		return sampleFromEdges(sp, edgeType, src, dst, labels, times, int64(n), request, h)
	})
}

// sampleFromEdges is tfs_sample_from_edges, or tfs_sample_from_edges_at where times is not NULL.
func sampleFromEdges(sp *featurestore.Sampler, edgeType *C.char, src, dst, labels, times *C.int64_t, n int64, request *C.char, hout *C.uintptr_t) error {
	if hout == nil {
		return fail(stEINVAL, "out is NULL")
	}
	if err := checkArray(unsafe.Pointer(src), "src", n, "n"); err != nil {
		return err
	}
	if err := checkArray(unsafe.Pointer(dst), "dst", n, "n"); err != nil {
		return err
	}
	et, err := onlyTypeOr(sessionEdgeTypes(sp.Session()), cString(edgeType), "edge_type", "edge type")
	if err != nil {
		return err
	}
	link, err := parseLinkRequest(cString(request))
	if err != nil {
		return err
	}
	var lab []int64
	if labels != nil {
		lab = make([]int64, n)
		copy(lab, ids64(labels, n))
	}
	var seedTimes []int64
	if times != nil {
		seedTimes = make([]int64, n)
		copy(seedTimes, ids64(times, n))
	}
	// The seed of this call (seed + call number) is the core's rule (featurestore.Sampler).
	smp, err := sp.SampleFromEdgesAt(et, ids64(src, n), ids64(dst, n), lab, seedTimes, link)
	if err != nil {
		return err
	}
	rec := newSampleRec(&smp.HeteroSample, sp.Session())
	rec.link = &smp.LinkLabels
	*hout = C.uintptr_t(register(kindSample, rec))
	return nil
}

// lookupLink returns the label edges of a sample drawn from edges.
func lookupLink(h uintptr) (*topology.LinkLabels, error) {
	rec, err := lookup[*sampleRec](h, kindSample)
	if err != nil {
		return nil, err
	}
	if rec.link == nil {
		return nil, fail(stENOENT, "sample %#x was drawn from nodes (tfs_sample), not edges (tfs_sample_from_edges); it has no label edges", h)
	}
	return rec.link, nil
}

//export tfsgo_sample_link_json
func tfsgo_sample_link_json(sample C.uintptr_t, buf *C.char, capacity C.size_t, needed *C.size_t) C.int {
	return call("tfs_sample_link_json", stEINTERNAL, func() error {
		lk, err := lookupLink(uintptr(sample))
		if err != nil {
			return err
		}
		return writeJSON(buf, capacity, needed, putJSON, func() (any, error) {
			return struct {
				EdgeLabelIndex int  `json:"edge_label_index"`
				EdgeLabel      int  `json:"edge_label"`
				SrcIndex       int  `json:"src_index"`
				DstPosIndex    int  `json:"dst_pos_index"`
				DstNegIndex    int  `json:"dst_neg_index"`
				Triplet        bool `json:"triplet"`
			}{len(lk.EdgeLabelIndex[0]), len(lk.EdgeLabel), len(lk.SrcIndex), len(lk.DstPosIndex), len(lk.DstNegIndex), lk.SrcIndex != nil}, nil
		})
	})
}

//export tfsgo_sample_link_copy
func tfsgo_sample_link_copy(sample C.uintptr_t, edgeLabelIndex, edgeLabel, srcIndex, dstPosIndex, dstNegIndex *C.int64_t) C.int {
	return call("tfs_sample_link_copy", stEINTERNAL, func() error {
		lk, err := lookupLink(uintptr(sample))
		if err == nil {
			copyLinkLabels(lk, edgeLabelIndex, edgeLabel, srcIndex, dstPosIndex, dstNegIndex)
		}
		return err
	})
}

// copyLinkLabels copies lk's arrays into the non-NULL ones (tfs_sample_link_copy's layout).
func copyLinkLabels(lk *topology.LinkLabels, edgeLabelIndex, edgeLabel, srcIndex, dstPosIndex, dstNegIndex *C.int64_t) {
	m := len(lk.EdgeLabelIndex[0])
	if edgeLabelIndex != nil && m > 0 {
		rows := ids64(edgeLabelIndex, 2*int64(m))
		copy(rows[:m], lk.EdgeLabelIndex[0])
		copy(rows[m:], lk.EdgeLabelIndex[1])
	}
	for _, a := range []struct {
		dst *C.int64_t
		src []int64
	}{{edgeLabel, lk.EdgeLabel}, {srcIndex, lk.SrcIndex}, {dstPosIndex, lk.DstPosIndex}, {dstNegIndex, lk.DstNegIndex}} {
		if a.dst != nil && len(a.src) > 0 {
			copy(ids64(a.dst, int64(len(a.src))), a.src)
		}
	}
}
