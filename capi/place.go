package main

/*
#include "tierfs.h"
*/
import "C"

import (
	"encoding/json"
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
