package main

/*
#include "tierfs.h"
*/
import "C"

import (
	"encoding/json"
	"unsafe"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/topology"
)

// Link samples (tierfs.h, tfs_sample_edges) are sample handles like any other: the tfs_sample_*
// calls read their node sample, tfs_sample_link_* their label edges. A handle of kind sample
// holds a *topology.Sample or a *topology.LinkSample.

// lookupSample returns the node sample behind a sample handle and, for a link sample, its labels.
func lookupSample(h uintptr) (*topology.Sample, *topology.LinkLabels, error) {
	v, err := lookup[any](h, kindSample)
	if err != nil {
		return nil, nil, err
	}
	return sampleOf(h, v)
}

func sampleOf(h uintptr, v any) (*topology.Sample, *topology.LinkLabels, error) {
	switch s := v.(type) {
	case *topology.Sample:
		return s, nil, nil
	case *topology.LinkSample:
		return &s.Sample, &s.LinkLabels, nil
	}
	return nil, nil, fail(stEINTERNAL, "handle %#x of kind sample holds a %T", h, v)
}

// decodeLink reads link options (the link family, featurestore.LinkRequest; a key left out takes
// the table's default) from the JSON object data ("" or NULL: none, no negatives); what names
// the JSON in errors. Keys in extra are the caller's and come back undecoded.
func decodeLink(what string, data string, extra ...string) (featurestore.LinkRequest, map[string]json.RawMessage, error) {
	r := featurestore.Defaults[featurestore.LinkRequest]()
	rest, err := featurestore.DecodeTable("link", []byte(data), &r, extra...)
	if err != nil {
		return r, nil, fail(stEINVAL, "%s: %v", what, err)
	}
	return r, rest, nil
}

// parseLinkRequest reads link_options_json of tfs_sample_edges into the core's options.
func parseLinkRequest(request string) (topology.LinkOptions, error) {
	r, _, err := decodeLink("link_options_json", request)
	if err != nil {
		return topology.LinkOptions{}, err
	}
	o, err := r.OneType()
	if err != nil {
		return o, fail(stEINVAL, "link_options_json: %v", err)
	}
	return o, nil
}

//export tfsgo_sample_edges
func tfsgo_sample_edges(sampler C.uintptr_t, src, dst, labels *C.int64_t, n C.int64_t, request *C.char, out unsafe.Pointer, h *C.uintptr_t) (st C.int) {
	defer guard("tfs_sample_edges", &st)
	return finish("tfs_sample_edges", sampleEdges(uintptr(sampler), src, dst, labels, int64(n), request, out, h), stEIO)
}

func sampleEdges(h uintptr, src, dst, labels *C.int64_t, n int64, request *C.char, out unsafe.Pointer, hout *C.uintptr_t) error {
	sp, err := lookup[*featurestore.Sampler](h, kindSampler)
	if err != nil {
		return err
	}
	if err := checkArray(unsafe.Pointer(src), "src", n, "n"); err != nil {
		return err
	}
	if err := checkArray(unsafe.Pointer(dst), "dst", n, "n"); err != nil {
		return err
	}
	if out == nil {
		return fail(stEINVAL, "out is NULL")
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
	// The seed of this call (seed + call number) is the core's rule (featurestore.Sampler).
	smp, err := sp.SampleFromEdges(ids64(src, n), ids64(dst, n), lab, link)
	if err != nil {
		return err
	}
	*hout = C.uintptr_t(register(kindSample, smp))
	return nil
}

//export tfsgo_sample_link_json
func tfsgo_sample_link_json(sample C.uintptr_t, buf *C.char, capacity C.size_t, needed *C.size_t) (st C.int) {
	defer guard("tfs_sample_link_json", &st)
	return finish("tfs_sample_link_json", sampleLinkJSON(uintptr(sample), buf, uint64(capacity), needed), stEINTERNAL)
}

// errNotLink is the answer of the link calls for a sample drawn from nodes.
func errNotLink(h uintptr) error {
	return fail(stENOENT, "sample %#x was drawn from nodes (tfs_sample), not edges (tfs_sample_edges); it has no label edges", h)
}

func sampleLinkJSON(h uintptr, buf *C.char, capacity uint64, needed *C.size_t) error {
	_, lk, err := lookupSample(h)
	if err != nil {
		return err
	}
	if lk == nil {
		return errNotLink(h)
	}
	return putLinkLengthsJSON(lk, buf, capacity, needed)
}

//export tfsgo_sample_link_copy
func tfsgo_sample_link_copy(sample C.uintptr_t, edgeLabelIndex, edgeLabel, srcIndex, dstPosIndex, dstNegIndex *C.int64_t) (st C.int) {
	defer guard("tfs_sample_link_copy", &st)
	return finish("tfs_sample_link_copy", sampleLinkCopy(uintptr(sample), edgeLabelIndex, edgeLabel, srcIndex, dstPosIndex, dstNegIndex), stEINTERNAL)
}

func sampleLinkCopy(h uintptr, edgeLabelIndex, edgeLabel, srcIndex, dstPosIndex, dstNegIndex *C.int64_t) error {
	_, lk, err := lookupSample(h)
	if err != nil {
		return err
	}
	if lk == nil {
		return errNotLink(h)
	}
	copyLinkLabels(lk, edgeLabelIndex, edgeLabel, srcIndex, dstPosIndex, dstNegIndex)
	return nil
}

// linkLengthsJSON is the answer of tfs_sample_link_json and tfs_hetero_sample_link_json: the
// lengths of the label arrays.
func linkLengthsJSON(lk *topology.LinkLabels) ([]byte, error) {
	return json.Marshal(struct {
		EdgeLabelIndex int  `json:"edge_label_index"`
		EdgeLabel      int  `json:"edge_label"`
		SrcIndex       int  `json:"src_index"`
		DstPosIndex    int  `json:"dst_pos_index"`
		DstNegIndex    int  `json:"dst_neg_index"`
		Triplet        bool `json:"triplet"`
	}{len(lk.EdgeLabelIndex[0]), len(lk.EdgeLabel), len(lk.SrcIndex), len(lk.DstPosIndex), len(lk.DstNegIndex), lk.SrcIndex != nil})
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

// Heterogeneous link samples (tfs_hetero_sample_from_edges) are hetero sample handles whose
// record holds the label edges too; tfs_hetero_sample_* read their node sample,
// tfs_hetero_sample_link_* their label edges.

// parseHeteroLinkRequest reads the link_options_json of tfs_hetero_sample_from_edges (seed edges
// of edgeType) into the core's options.
func parseHeteroLinkRequest(request, edgeType string) (featurestore.HeteroLinkOptions, error) {
	r, _, err := decodeLink("link_options_json", request)
	if err != nil {
		return featurestore.HeteroLinkOptions{}, err
	}
	o, err := r.Options(edgeType)
	if err != nil {
		return o, fail(stEINVAL, "link_options_json: %v", err)
	}
	return o, nil
}

//export tfsgo_hetero_sample_from_edges
func tfsgo_hetero_sample_from_edges(sampler C.uintptr_t, edgeType *C.char, src, dst, labels *C.int64_t, n C.int64_t, request *C.char, h *C.uintptr_t) (st C.int) {
	defer guard("tfs_hetero_sample_from_edges", &st)
	return finish("tfs_hetero_sample_from_edges", heteroSampleFromEdges(uintptr(sampler), edgeType, src, dst, labels, int64(n), request, h), stEIO)
}

func heteroSampleFromEdges(h uintptr, edgeType *C.char, src, dst, labels *C.int64_t, n int64, request *C.char, hout *C.uintptr_t) error {
	sp, err := lookup[*featurestore.HeteroSampler](h, kindHeteroSampler)
	if err != nil {
		return err
	}
	if hout == nil {
		return fail(stEINVAL, "out is NULL")
	}
	if err := checkArray(unsafe.Pointer(src), "src", n, "n"); err != nil {
		return err
	}
	if err := checkArray(unsafe.Pointer(dst), "dst", n, "n"); err != nil {
		return err
	}
	link, err := parseHeteroLinkRequest(cString(request), cString(edgeType))
	if err != nil {
		return err
	}
	var lab []int64
	if labels != nil {
		lab = make([]int64, n)
		copy(lab, ids64(labels, n))
	}
	smp, err := sp.SampleFromEdges(cString(edgeType), ids64(src, n), ids64(dst, n), lab, link)
	if err != nil {
		return err
	}
	rec := newHeteroSampleRec(&smp.HeteroSample, sp.Session())
	rec.link = &smp.LinkLabels
	*hout = C.uintptr_t(register(kindHeteroSample, rec))
	return nil
}

// lookupHeteroLink returns the label edges of a hetero sample drawn from edges.
func lookupHeteroLink(h uintptr) (*topology.LinkLabels, error) {
	rec, err := lookup[*heteroSampleRec](h, kindHeteroSample)
	if err != nil {
		return nil, err
	}
	if rec.link == nil {
		return nil, fail(stENOENT, "hetero sample %#x was drawn from nodes (tfs_hetero_sample), not edges (tfs_hetero_sample_from_edges); it has no label edges", h)
	}
	return rec.link, nil
}

//export tfsgo_hetero_sample_link_json
func tfsgo_hetero_sample_link_json(sample C.uintptr_t, buf *C.char, capacity C.size_t, needed *C.size_t) (st C.int) {
	defer guard("tfs_hetero_sample_link_json", &st)
	return finish("tfs_hetero_sample_link_json", heteroSampleLinkJSON(uintptr(sample), buf, uint64(capacity), needed), stEINTERNAL)
}

func heteroSampleLinkJSON(h uintptr, buf *C.char, capacity uint64, needed *C.size_t) error {
	lk, err := lookupHeteroLink(h)
	if err != nil {
		return err
	}
	return putLinkLengthsJSON(lk, buf, capacity, needed)
}

//export tfsgo_hetero_sample_link_copy
func tfsgo_hetero_sample_link_copy(sample C.uintptr_t, edgeLabelIndex, edgeLabel, srcIndex, dstPosIndex, dstNegIndex *C.int64_t) (st C.int) {
	defer guard("tfs_hetero_sample_link_copy", &st)
	lk, err := lookupHeteroLink(uintptr(sample))
	if err == nil {
		copyLinkLabels(lk, edgeLabelIndex, edgeLabel, srcIndex, dstPosIndex, dstNegIndex)
	}
	return finish("tfs_hetero_sample_link_copy", err, stEINTERNAL)
}

// putLinkLengthsJSON writes lk's array lengths (linkLengthsJSON) into buf as tfs_stats_json does.
func putLinkLengthsJSON(lk *topology.LinkLabels, buf *C.char, capacity uint64, needed *C.size_t) error {
	if err := checkJSONOut(buf, capacity, needed); err != nil {
		return err
	}
	data, err := linkLengthsJSON(lk)
	if err != nil {
		return err
	}
	putJSON(data, buf, capacity, needed)
	return nil
}
