package main

/*
#include "tierfs.h"
*/
import "C"

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
	"unsafe"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/internal/strictjson"
	"github.com/tierfs/tierfs/placement"
)

// placeRequest is tfs_place_json's request: the keys of `tierfs place` for fanouts [per hop], those
// of a profile of every node type for fanouts per edge type.
type placeRequest struct {
	Fanouts   json.RawMessage `json:"fanouts"`
	NodeType  string          `json:"node_type"` // the seeds' type; "": the only one
	BatchSize int             `json:"batch_size"`
	Batches   int             `json:"batches"`
	// `tierfs place` (fanouts [per hop]).
	Policy     string   `json:"policy"`
	Epochs     int      `json:"epochs"`
	TimeBudget float64  `json:"time_budget_s"`
	Seeds      *[]int64 `json:"seeds"`      // absent: the train split, else every node
	GPUBytes   *int64   `json:"gpu_bytes"`  // absent: the store's GPU cache (0 when its GPU path does not run)
	HostBytes  *int64   `json:"host_bytes"` // absent: the store's host cache
	Recompute  bool     `json:"recompute"`
	// A profile of every node type (fanouts per edge type).
	Split   string `json:"split"` // the split the seeds come from; default "train"
	Seed    uint64 `json:"seed"`
	Replace bool   `json:"replace"`
}

// placeKeys lists the request keys, for errors.
const placeKeys = "fanouts, batch_size, node_type, batches; with fanouts [per hop] policy, epochs, time_budget_s, seeds, gpu_bytes, host_bytes, recompute; with fanouts per edge type split, seed, replace"

//export tfsgo_place_json
func tfsgo_place_json(store C.uintptr_t, request *C.char, buf *C.char, capacity C.size_t, needed *C.size_t) C.int {
	return on("tfs_place_json", stEINVAL, store, kindStore, func(rec *storeRec) error {
		return placeJSON(rec, request, buf, uint64(capacity), needed, nil)
	})
}

//export tfsgo_place_json_progress
func tfsgo_place_json_progress(store C.uintptr_t, request *C.char, fn C.tfs_progress_fn, ctx unsafe.Pointer, buf *C.char, capacity C.size_t, needed *C.size_t) C.int {
	return on("tfs_place_json_progress", stEINVAL, store, kindStore, func(rec *storeRec) error {
		return placeJSON(rec, request, buf, uint64(capacity), needed, progressFunc(fn, ctx))
	})
}

// placeJSON serves tfs_place_json; progress (may be nil) follows the profiling of a placement of
// fanouts [per hop] ("profile": batches sampled of those planned so far).
func placeJSON(rec *storeRec, request *C.char, buf *C.char, capacity uint64, needed *C.size_t, progress func(string, int64, int64)) error {
	return storeJSONCall(rec, "place", request, buf, capacity, needed, func(dec *json.Decoder) (any, error) {
		var req placeRequest
		if err := dec.Decode(&req); err != nil {
			return nil, fail(stEINVAL, "request_json: %v (keys: %s)", err, placeKeys)
		}
		var hops []int
		var byType map[string][]int
		if err := decodeFanouts(req.Fanouts, &hops, &byType); err != nil {
			return nil, err
		}
		if byType != nil {
			return placeProfiled(rec, req, byType)
		}
		return placePlanned(rec, req, hops, progress)
	})
}

// decodeFanouts decodes a request's fanouts: [per hop] into hops, {"src:rel:dst": [per hop]} into
// byType; absent or null leaves both nil.
func decodeFanouts(raw json.RawMessage, hops *[]int, byType *map[string][]int) error {
	f := bytes.TrimSpace(raw)
	switch {
	case len(f) == 0 || bytes.Equal(f, []byte("null")):
		return nil
	case f[0] == '{':
		if err := json.Unmarshal(f, byType); err != nil {
			return fail(stEINVAL, "request_json: fanouts: %v (want [per hop] or {\"src:rel:dst\": [per hop], ...})", err)
		}
		if *byType == nil {
			*byType = map[string][]int{}
		}
	default:
		if err := json.Unmarshal(f, hops); err != nil {
			return fail(stEINVAL, "request_json: fanouts: %v (want [per hop] or {\"src:rel:dst\": [per hop], ...})", err)
		}
	}
	return nil
}

// placePlanned is tfs_place_json of fanouts [per hop]: the saved topology+feature placement of
// node_type's stack (`tierfs place`).
func placePlanned(rec *storeRec, req placeRequest, hops []int, progress func(string, int64, int64)) (any, error) {
	switch {
	case req.Split != "" || req.Seed != 0 || req.Replace:
		return nil, fail(stEINVAL, "request_json: split, seed and replace are keys of a placement of fanouts per edge type; with fanouts [per hop] give policy, epochs, time_budget_s, seeds, gpu_bytes, host_bytes, recompute")
	case req.TimeBudget < 0:
		return nil, fail(stEINVAL, "request_json: time_budget_s = %v is negative", req.TimeBudget)
	}
	policy, err := placement.ParsePolicy(req.Policy)
	if err != nil {
		return nil, withStatus(stEINVAL, err)
	}
	s, err := rec.s.Session().Stack(req.NodeType)
	if err != nil {
		return nil, err
	}
	opt := featurestore.PlanOptions{Fanouts: hops, BatchSize: req.BatchSize, Epochs: req.Epochs, Batches: req.Batches,
		TimeBudget: time.Duration(req.TimeBudget * float64(time.Second)), Policy: policy, Recompute: req.Recompute,
		HostBytes: rec.opened.HostCacheBytes}
	if progress != nil {
		opt.Progress = func(done, total int) { progress("profile", int64(done), int64(total)) }
	}
	if ok, _ := s.GPUAvailable(); ok {
		opt.GPUBytes = rec.opened.GPUCacheBytes
	}
	if req.GPUBytes != nil {
		opt.GPUBytes = *req.GPUBytes
	}
	if req.HostBytes != nil {
		opt.HostBytes = *req.HostBytes
	}
	if req.Seeds != nil {
		opt.Seeds = *req.Seeds
		if opt.Seeds == nil {
			opt.Seeds = []int64{}
		}
	}
	p, r, err := s.PlanPlacement(opt)
	if err != nil {
		return nil, err
	}
	if err := s.ApplyPlacement(p); err != nil {
		return nil, err
	}
	rec.mu.Lock()
	rec.opened.Placement, rec.opened.Hotness = p, nil // the mount's placement.json names it
	rec.mu.Unlock()
	return r, nil
}

// placeProfiled is tfs_place_json of fanouts per edge type: every node type's memory tiers placed
// by a profile of node_type's split (Session.PlaceProfiled).
func placeProfiled(rec *storeRec, req placeRequest, fanouts map[string][]int) (any, error) {
	if req.Policy != "" || req.Epochs != 0 || req.TimeBudget != 0 || req.Seeds != nil || req.GPUBytes != nil || req.HostBytes != nil || req.Recompute {
		return nil, fail(stEINVAL, "request_json: policy, epochs, time_budget_s, seeds, gpu_bytes, host_bytes and recompute are keys of a placement of fanouts [per hop]; with fanouts per edge type give node_type, split, batch_size, batches, seed, replace")
	}
	if req.Split == "" {
		req.Split = "train"
	}
	ss := rec.s.Session()
	seeds, err := ss.Split(req.NodeType, req.Split)
	if err != nil {
		return nil, err
	}
	return ss.PlaceProfiled(req.NodeType, seeds, featurestore.SampleOptions{Fanouts: fanouts, Replace: req.Replace, Seed: req.Seed}, req.BatchSize, req.Batches)
}

// profileRequest is tfs_profile_reads's request.
type profileRequest struct {
	NodeType  string          `json:"node_type"` // the seeds' type; "": the only one
	Fanouts   json.RawMessage `json:"fanouts"`   // [per hop] for the only edge type, or per edge type key
	BatchSize int             `json:"batch_size"`
	Batches   int             `json:"batches"` // 0: one epoch of the seeds
	Seed      uint64          `json:"seed"`
	Replace   bool            `json:"replace"`
}

//export tfsgo_profile_reads
func tfsgo_profile_reads(store C.uintptr_t, seeds *C.int64_t, nSeeds C.int64_t, request *C.char, counts **C.uint32_t, countsN *C.int64_t, nTypes C.int64_t) C.int {
	return on("tfs_profile_reads", stEINVAL, store, kindStore, func(rec *storeRec) error {
		return profileReads(rec, seeds, int64(nSeeds), request, counts, countsN, int64(nTypes))
	})
}

func profileReads(rec *storeRec, seeds *C.int64_t, nSeeds int64, request *C.char, counts **C.uint32_t, countsN *C.int64_t, nTypes int64) error {
	ss := rec.s.Session()
	types := ss.NodeTypes()
	if nTypes != int64(len(types)) || counts == nil || countsN == nil {
		return fail(stEINVAL, "n_types = %d with counts and counts_n one entry per node type: the dataset has %d node types (not NULL)", nTypes, len(types))
	}
	bufs := unsafe.Slice(counts, nTypes)
	lens := unsafe.Slice((*int64)(unsafe.Pointer(countsN)), nTypes)
	for i, t := range types {
		if bufs[i] != nil && lens[i] != t.Count {
			return fail(stEINVAL, "counts_n[%d] = %d; node type %q has %d nodes", i, lens[i], t.Name, t.Count)
		}
	}
	if err := checkArray(unsafe.Pointer(seeds), "seeds", nSeeds, "n_seeds"); err != nil {
		return err
	}
	if nSeeds == 0 {
		return fail(stEINVAL, "n_seeds = 0: no seeds to profile")
	}
	if request == nil {
		return fail(stEINVAL, "request_json is NULL")
	}
	var req profileRequest
	if err := strictjson.Decode([]byte(C.GoString(request)), &req); err != nil {
		return fail(stEINVAL, "request_json: %v (keys: node_type, fanouts, batch_size, batches, seed, replace)", err)
	}
	var hops []int
	var fanouts map[string][]int
	if err := decodeFanouts(req.Fanouts, &hops, &fanouts); err != nil {
		return err
	}
	switch {
	case len(hops) == 0 && len(fanouts) == 0:
		return fail(stEINVAL, "request_json: fanouts are empty; give the fanouts per hop")
	case req.BatchSize <= 0:
		return fail(stEINVAL, "request_json: batch_size = %d; want > 0", req.BatchSize)
	case req.Batches < 0:
		return fail(stEINVAL, "request_json: batches = %d; want >= 0 (0 is one epoch of the seeds)", req.Batches)
	}
	if fanouts == nil { // [per hop]: of the only edge type
		edges := ss.EdgeTypes()
		if len(edges) != 1 {
			keys := make([]string, len(edges))
			for i, e := range edges {
				keys[i] = e.Key
			}
			return fail(stEINVAL, "request_json: fanouts %v are one list, but the dataset has %d edge types (%s): give fanouts per edge type", hops, len(edges), strings.Join(keys, ", "))
		}
		fanouts = map[string][]int{edges[0].Key: hops}
	}
	got, err := ss.ProfileReads(req.NodeType, ids64(seeds, nSeeds), featurestore.SampleOptions{Fanouts: fanouts, Replace: req.Replace, Seed: req.Seed}, req.BatchSize, req.Batches)
	if err != nil {
		return err
	}
	for i, b := range bufs {
		if b == nil {
			continue
		}
		out := unsafe.Slice((*uint32)(unsafe.Pointer(b)), lens[i])
		if got[i] == nil {
			clear(out)
		} else {
			copy(out, got[i])
		}
	}
	return nil
}
