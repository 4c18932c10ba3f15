package main

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import (
	"bytes"
	"encoding/json"
	"sync"
	"unsafe"

	"github.com/tierfs/tierfs/advise"
)

// pendingAdvice keeps, per store handle, the last report that did not fit the caller's buffer,
// so the retry with a buffer of *needed bytes returns it instead of measuring again.
var pendingAdvice sync.Map // uintptr -> adviceResult

type adviceResult struct {
	request string
	data    []byte
}

//export tfsgo_advise_json
func tfsgo_advise_json(store C.uintptr_t, request *C.char, buf *C.char, capacity C.size_t, needed *C.size_t) (st C.int) {
	defer guard("tfs_advise_json", &st)
	return finish("tfs_advise_json", adviseJSON(uintptr(store), request, buf, uint64(capacity), needed), stEINVAL)
}

func adviseJSON(h uintptr, request *C.char, buf *C.char, capacity uint64, needed *C.size_t) error {
	return storeJSONCall(h, request, buf, capacity, needed, &pendingAdvice, func(rec *storeRec, dec *json.Decoder) (any, error) {
		var req advise.Request
		if err := dec.Decode(&req); err != nil {
			return nil, fail(stEINVAL, "request_json: %v (keys: fanouts, batch_size, ssd_price, machine_price, budget, max_ssds, measure, train_ms, ssd_iops, pcie_gbps, alpha_us, block_cost, batches, seed, replace, mode, current_ssds, queue_depth, probe_seconds, check)", err)
		}
		return advise.Run(rec.s, req)
	})
}

// storeJSONCall runs a JSON request on a store and writes the JSON answer into buf (cap bytes,
// NUL-terminated), setting *needed to its size plus one. When buf is too small the answer is kept
// for the handle, so a retry with the same request gets it without running again.
func storeJSONCall(h uintptr, request *C.char, buf *C.char, capacity uint64, needed *C.size_t, pending *sync.Map,
	run func(rec *storeRec, dec *json.Decoder) (any, error)) error {
	rec, err := lookup[*storeRec](h, kindStore)
	if err != nil {
		return err
	}
	switch {
	case request == nil:
		return fail(stEINVAL, "request_json is NULL")
	case needed == nil:
		return fail(stEINVAL, "needed is NULL")
	case capacity > 0 && buf == nil:
		return fail(stEINVAL, "buf is NULL (with cap = %d)", capacity)
	}
	reqText := C.GoString(request)
	var data []byte
	if p, ok := pending.Load(h); ok && p.(adviceResult).request == reqText {
		data = p.(adviceResult).data
	} else {
		dec := json.NewDecoder(bytes.NewReader([]byte(reqText)))
		dec.DisallowUnknownFields()
		answer, err := run(rec, dec)
		if err != nil {
			return err
		}
		if data, err = json.Marshal(answer); err != nil {
			return err
		}
	}
	*needed = C.size_t(len(data) + 1)
	if uint64(len(data)) >= capacity {
		pending.Store(h, adviceResult{request: reqText, data: data})
		if capacity > 0 {
			*(*byte)(unsafe.Pointer(buf)) = 0
		}
		return nil
	}
	pending.Delete(h)
	dst := unsafe.Slice((*byte)(unsafe.Pointer(buf)), capacity)
	dst[copy(dst, data)] = 0
	return nil
}
