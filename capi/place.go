package main

/*
#include "tierfs.h"
*/
import "C"

import (
	"encoding/json"
	"strings"
	"time"
	"unsafe"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/placement"
)

// placeRequest is tfs_place_json's request: the keys of `tierfs place`.
type placeRequest struct {
	Fanouts    []int    `json:"fanouts"`
	BatchSize  int      `json:"batch_size"`
	Policy     string   `json:"policy"`
	Epochs     int      `json:"epochs"`
	Batches    int      `json:"batches"`
	TimeBudget float64  `json:"time_budget_s"`
	Seeds      *[]int64 `json:"seeds"`      // absent: the train split, else every node
	GPUBytes   *int64   `json:"gpu_bytes"`  // absent: the store's GPU cache (0 when its GPU path does not run)
	HostBytes  *int64   `json:"host_bytes"` // absent: the store's host cache
	Recompute  bool     `json:"recompute"`
}

//export tfsgo_place_json
func tfsgo_place_json(store C.uintptr_t, request *C.char, buf *C.char, capacity C.size_t, needed *C.size_t) (st C.int) {
	defer guard("tfs_place_json", &st)
	return finish("tfs_place_json", placeJSON(uintptr(store), request, buf, uint64(capacity), needed, nil), stEINVAL)
}

//export tfsgo_place_json_progress
func tfsgo_place_json_progress(store C.uintptr_t, request *C.char, fn C.tfs_progress_fn, ctx unsafe.Pointer, buf *C.char, capacity C.size_t, needed *C.size_t) (st C.int) {
	defer guard("tfs_place_json_progress", &st)
	return finish("tfs_place_json_progress", placeJSON(uintptr(store), request, buf, uint64(capacity), needed, progressFunc(fn, ctx)), stEINVAL)
}

// placeJSON serves tfs_place_json; progress (may be nil) follows the profiling ("profile":
// batches sampled of those planned so far).
func placeJSON(h uintptr, request *C.char, buf *C.char, capacity uint64, needed *C.size_t, progress func(string, int64, int64)) error {
	return storeJSONCall(h, "place", request, buf, capacity, needed, func(rec *storeRec, dec *json.Decoder) (any, error) {
		var req placeRequest
		if err := dec.Decode(&req); err != nil {
			return nil, fail(stEINVAL, "request_json: %v (keys: fanouts, batch_size, policy, epochs, batches, time_budget_s, seeds, gpu_bytes, host_bytes, recompute)", err)
		}
		if req.TimeBudget < 0 {
			return nil, fail(stEINVAL, "request_json: time_budget_s = %v is negative", req.TimeBudget)
		}
		policy, err := placement.ParsePolicy(req.Policy)
		if err != nil {
			return nil, withStatus(stEINVAL, err)
		}
		opt := featurestore.PlanOptions{Fanouts: req.Fanouts, BatchSize: req.BatchSize, Epochs: req.Epochs, Batches: req.Batches,
			TimeBudget: time.Duration(req.TimeBudget * float64(time.Second)), Policy: policy, Recompute: req.Recompute,
			HostBytes: rec.opened.HostCacheBytes}
		if progress != nil {
			opt.Progress = func(done, total int) { progress("profile", int64(done), int64(total)) }
		}
		if ok, _ := rec.s.GPUAvailable(); ok {
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
		p, r, err := rec.s.PlanPlacement(opt)
		if err != nil {
			return nil, err
		}
		if err := rec.s.ApplyPlacement(p); err != nil {
			return nil, err
		}
		rec.mu.Lock()
		rec.opened.Placement, rec.opened.Hotness = p, nil // the mount's placement.json names it
		rec.mu.Unlock()
		return r, nil
	})
}

// profileRequest is tfs_profile_reads's request.
type profileRequest struct {
	Fanouts []int `json:"fanouts"`
	profileSizes
}

// profileSizes are the request keys both profile calls share.
type profileSizes struct {
	BatchSize int    `json:"batch_size"`
	Batches   int    `json:"batches"` // 0: one pass over the seeds
	Seed      uint64 `json:"seed"`
	Replace   bool   `json:"replace"`
}

// decodeProfile checks the seeds and request of a profile call and decodes the request into req
// (its keys listed in errors); fanouts is how many fanouts it gave.
func decodeProfile(seeds *C.int64_t, nSeeds int64, request *C.char, req any, sizes *profileSizes, fanouts func() int, keys string) error {
	if err := checkArray(unsafe.Pointer(seeds), "seeds", nSeeds, "n_seeds"); err != nil {
		return err
	}
	if nSeeds == 0 {
		return fail(stEINVAL, "n_seeds = 0: no seeds to profile")
	}
	if request == nil {
		return fail(stEINVAL, "request_json is NULL")
	}
	dec := json.NewDecoder(strings.NewReader(C.GoString(request)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(req); err != nil {
		return fail(stEINVAL, "request_json: %v (keys: %s)", err, keys)
	}
	switch {
	case fanouts() == 0:
		return fail(stEINVAL, "request_json: fanouts are empty; give the fanouts per hop")
	case sizes.BatchSize <= 0:
		return fail(stEINVAL, "request_json: batch_size = %d; want > 0", sizes.BatchSize)
	case sizes.Batches < 0:
		return fail(stEINVAL, "request_json: batches = %d; want >= 0 (0 is one pass of full batches over the seeds)", sizes.Batches)
	}
	return nil
}

//export tfsgo_profile_reads
func tfsgo_profile_reads(store C.uintptr_t, seeds *C.int64_t, nSeeds C.int64_t, request *C.char, counts *C.uint32_t, n C.int64_t) (st C.int) {
	defer guard("tfs_profile_reads", &st)
	return finish("tfs_profile_reads", profileReads(uintptr(store), seeds, int64(nSeeds), request, counts, int64(n)), stEINVAL)
}

func profileReads(h uintptr, seeds *C.int64_t, nSeeds int64, request *C.char, counts *C.uint32_t, n int64) error {
	rec, err := lookup[*storeRec](h, kindStore)
	if err != nil {
		return err
	}
	if nodes := rec.s.NumNodes(); n != nodes || counts == nil {
		return fail(stEINVAL, "counts has n = %d entries; the dataset has %d nodes (one count per node, not NULL)", n, nodes)
	}
	var req profileRequest
	if err := decodeProfile(seeds, nSeeds, request, &req, &req.profileSizes, func() int { return len(req.Fanouts) }, "fanouts, batch_size, batches, seed, replace"); err != nil {
		return err
	}
	opt := placement.ProfileOptions{Fanouts: req.Fanouts, BatchSize: req.BatchSize, Batches: req.Batches, Epochs: 1, Seed: req.Seed, Replace: req.Replace}
	got, err := rec.s.ProfileReads(ids64(seeds, nSeeds), opt)
	if err != nil {
		return err
	}
	copy(unsafe.Slice((*uint32)(unsafe.Pointer(counts)), n), got)
	return nil
}

// profileHeteroRequest is tfs_profile_reads_hetero's request.
type profileHeteroRequest struct {
	NodeType string           `json:"node_type"` // the seeds' type
	Fanouts  map[string][]int `json:"fanouts"`   // per edge type key, per hop
	profileSizes
}

//export tfsgo_profile_reads_hetero
func tfsgo_profile_reads_hetero(store C.uintptr_t, seeds *C.int64_t, nSeeds C.int64_t, request *C.char, counts **C.uint32_t, countsN *C.int64_t, nTypes C.int64_t) (st C.int) {
	defer guard("tfs_profile_reads_hetero", &st)
	return finish("tfs_profile_reads_hetero", profileReadsHetero(uintptr(store), seeds, int64(nSeeds), request, counts, countsN, int64(nTypes)), stEINVAL)
}

func profileReadsHetero(h uintptr, seeds *C.int64_t, nSeeds int64, request *C.char, counts **C.uint32_t, countsN *C.int64_t, nTypes int64) error {
	rec, err := lookup[*storeRec](h, kindStore)
	if err != nil {
		return err
	}
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
	var req profileHeteroRequest
	if err := decodeProfile(seeds, nSeeds, request, &req, &req.profileSizes, func() int { return len(req.Fanouts) }, "node_type, fanouts, batch_size, batches, seed, replace"); err != nil {
		return err
	}
	batches := req.Batches
	if batches == 0 { // one pass of full batches (one batch of every seed when they are fewer)
		batches = int(max(1, nSeeds/int64(req.BatchSize)))
	}
	got, err := ss.ProfileReadsTyped(req.NodeType, ids64(seeds, nSeeds), featurestore.SampleOptions{Fanouts: req.Fanouts, Replace: req.Replace, Seed: req.Seed}, req.BatchSize, batches)
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
