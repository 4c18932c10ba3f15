package main

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import (
	"encoding/json"
	"strings"
	"sync"
	"unsafe"

	"github.com/tierfs/tierfs/advise"
	"github.com/tierfs/tierfs/internal/strictjson"
)

//export tfsgo_advise_json
func tfsgo_advise_json(store C.uintptr_t, request *C.char, buf *C.char, capacity C.size_t, needed *C.size_t) C.int {
	return on("tfs_advise_json", stEINVAL, store, kindStore, func(rec *storeRec) error {
		return storeJSONCall(rec, "advise", request, buf, uint64(capacity), needed, func(dec *json.Decoder) (any, error) {
			var req advise.Request
			if err := dec.Decode(&req); err != nil {
				return nil, fail(stEINVAL, "request_json: %v (keys: fanouts, batch_size, ssd_price, machine_price, budget, max_ssds, measure, train_ms, ssd_iops, pcie_gbps, alpha_us, block_cost, batches, seed, replace, mode, current_ssds, queue_depth, probe_seconds, check)", err)
			}
			return advise.Run(rec.s, req)
		})
	})
}

// storeJSONCall runs a JSON request on a store and writes the JSON answer into buf (cap bytes,
// NUL-terminated), setting *needed to its size plus one. When buf is too small the answer is kept
// on the handle, so a retry with the same request gets it without running again.
func storeJSONCall(rec *storeRec, call string, request *C.char, buf *C.char, capacity uint64, needed *C.size_t, run func(dec *json.Decoder) (any, error)) error {
	if request == nil {
		return fail(stEINVAL, "request_json is NULL")
	}
	if err := checkJSONOut(buf, capacity, needed); err != nil {
		return err
	}
	data, err := rec.kept.answer(call, C.GoString(request), capacity, run)
	if err != nil {
		return err
	}
	putJSON(data, buf, capacity, needed)
	return nil
}

// checkJSONOut checks the out-parameters of a call answering JSON into buf.
func checkJSONOut(buf *C.char, capacity uint64, needed *C.size_t) error {
	switch {
	case needed == nil:
		return fail(stEINVAL, "needed is NULL")
	case capacity > 0 && buf == nil:
		return fail(stEINVAL, "buf is NULL (with cap = %d)", capacity)
	}
	return nil
}

// putJSON sets *needed to len(data)+1 and writes data NUL-terminated into buf when it fits
// (capacity bytes); otherwise it leaves buf an empty string (when capacity > 0).
func putJSON(data []byte, buf *C.char, capacity uint64, needed *C.size_t) {
	*needed = C.size_t(len(data) + 1)
	if uint64(len(data)) >= capacity {
		if capacity > 0 {
			*(*byte)(unsafe.Pointer(buf)) = 0
		}
		return
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(buf)), capacity)
	dst[copy(dst, data)] = 0
}

// copyJSON is tfs_stats_json's copy: it sets *needed to len(data)+1 and copies up to capacity
// bytes of data into buf, NUL-terminated when they fit.
func copyJSON(data []byte, buf *C.char, capacity uint64, needed *C.size_t) {
	*needed = C.size_t(len(data) + 1)
	if capacity == 0 {
		return
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(buf)), capacity)
	if k := copy(dst, data); k < len(dst) {
		dst[k] = 0
	}
}

// writeJSON answers a call answering JSON: after checking the out-parameters (checkJSONOut) it
// writes value's answer, marshalled, into buf as put (putJSON or copyJSON) writes it.
func writeJSON(buf *C.char, capacity C.size_t, needed *C.size_t, put func([]byte, *C.char, uint64, *C.size_t), value func() (any, error)) error {
	if err := checkJSONOut(buf, uint64(capacity), needed); err != nil {
		return err
	}
	v, err := value()
	if err != nil {
		return err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	put(data, buf, uint64(capacity), needed)
	return nil
}

// onJSON is on for an export answering JSON about the handle's value: value's answer goes into
// buf as putJSON writes it (writeJSON).
func onJSON[T any](fn string, h C.uintptr_t, k kind, buf *C.char, capacity C.size_t, needed *C.size_t, value func(T) (any, error)) C.int {
	return on(fn, stEINTERNAL, h, k, func(rec T) error {
		return writeJSON(buf, capacity, needed, putJSON, func() (any, error) { return value(rec) })
	})
}

// keptAnswer is the answer to a JSON call that did not fit the caller's buffer.
type keptAnswer struct {
	request string
	data    []byte
}

// keptAnswers holds, per JSON call ("advise", "place", "verify"), the last answer that did not
// fit the caller's buffer, for the retry tierfs.h promises. The zero value keeps answers; after
// drop it keeps none.
type keptAnswers struct {
	mu      sync.Mutex
	byCall  map[string]keptAnswer
	dropped bool
}

// answer returns the JSON answer to request for call: the one kept from the last call of that
// name when its request was the same, else run's. An answer of capacity bytes or more (it does
// not fit with its NUL) is kept for the retry; one that fits drops what was kept.
func (k *keptAnswers) answer(call, request string, capacity uint64, run func(*json.Decoder) (any, error)) ([]byte, error) {
	k.mu.Lock()
	kept, ok := k.byCall[call]
	k.mu.Unlock()
	data := kept.data
	if !ok || kept.request != request {
		if err := strictjson.CheckKeys([]byte(request)); err != nil {
			return nil, fail(stEINVAL, "request_json: %v", err)
		}
		dec := json.NewDecoder(strings.NewReader(request))
		dec.DisallowUnknownFields()
		answer, err := run(dec)
		if err != nil {
			return nil, err
		}
		if data, err = json.Marshal(answer); err != nil {
			return nil, err
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case uint64(len(data)) < capacity:
		delete(k.byCall, call)
	case !k.dropped:
		if k.byCall == nil {
			k.byCall = map[string]keptAnswer{}
		}
		k.byCall[call] = keptAnswer{request: request, data: data}
	}
	return data, nil
}

// drop forgets every kept answer and keeps none from now on.
func (k *keptAnswers) drop() {
	k.mu.Lock()
	k.byCall, k.dropped = nil, true
	k.mu.Unlock()
}

// count is the number of answers kept.
func (k *keptAnswers) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.byCall)
}
