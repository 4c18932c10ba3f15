package main

/*
#include "tierfs.h"
*/
import "C"

import (
	"encoding/json"
	"strings"
	"unsafe"

	"github.com/tierfs/tierfs/dataset"
)

// verifyReport is tfs_verify_json's answer.
type verifyReport struct {
	OK       bool            `json:"ok"`
	Files    int             `json:"files"`
	Bytes    int64           `json:"bytes"`
	Problems []verifyProblem `json:"problems"`
}

type verifyProblem struct {
	File   string `json:"file"`
	Offset int64  `json:"offset"` // -1: the file as a whole
	What   string `json:"what"`
}

// keptVerify holds the last report that did not fit its caller's buffer, for the retry
// (verifying again would read the whole dataset again), under the request dir NUL request_json.
var keptVerify keptAnswers

//export tfsgo_verify_json
func tfsgo_verify_json(path *C.char, request *C.char, fn C.tfs_progress_fn, ctx unsafe.Pointer, buf *C.char, capacity C.size_t, needed *C.size_t) C.int {
	return call("tfs_verify_json", stEIO, func() error { return verifyJSON(path, request, progressFunc(fn, ctx), buf, uint64(capacity), needed) })
}

func verifyJSON(path, request *C.char, progress func(string, int64, int64), buf *C.char, capacity uint64, needed *C.size_t) error {
	if path == nil {
		return fail(stEINVAL, "path is NULL")
	}
	if request == nil {
		return fail(stEINVAL, "request_json is NULL")
	}
	if err := checkJSONOut(buf, capacity, needed); err != nil {
		return err
	}
	dir, req := C.GoString(path), C.GoString(request)
	data, err := keptVerify.answer("verify", dir+"\x00"+req, capacity, func(*json.Decoder) (any, error) {
		var opt struct {
			Limit *int `json:"limit"`
		}
		dec := json.NewDecoder(strings.NewReader(req))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&opt); err != nil {
			return nil, fail(stEINVAL, "request_json: %v (keys: limit)", err)
		}
		limit := 20
		if opt.Limit != nil {
			if *opt.Limit < 0 {
				return nil, fail(stEINVAL, "request_json: limit = %d is negative (0: no limit)", *opt.Limit)
			}
			limit = *opt.Limit
		}
		m, err := dataset.Load(dir)
		if err != nil {
			return nil, err
		}
		var fn func(done, total int64)
		if progress != nil {
			fn = func(done, total int64) { progress("verify", done, total) }
		}
		problems, err := m.Verify(limit, fn)
		if err != nil {
			return nil, err
		}
		r := verifyReport{OK: len(problems) == 0, Files: len(m.Files), Bytes: m.TotalBytes(), Problems: []verifyProblem{}}
		for _, p := range problems {
			r.Problems = append(r.Problems, verifyProblem{p.File, p.Offset, p.What})
		}
		return r, nil
	})
	if err != nil {
		return err
	}
	putJSON(data, buf, capacity, needed)
	return nil
}

//export tfsgo_upgrade
func tfsgo_upgrade(path *C.char, fn C.tfs_progress_fn, ctx unsafe.Pointer, from *C.int32_t) C.int {
	return call("tfs_upgrade", stEIO, func() error { return upgrade(path, progressFunc(fn, ctx), from) })
}

func upgrade(path *C.char, progress func(string, int64, int64), from *C.int32_t) error {
	if path == nil {
		return fail(stEINVAL, "path is NULL")
	}
	var fn func(done, total int64)
	if progress != nil {
		fn = func(done, total int64) { progress("verify", done, total) }
	}
	v, err := dataset.Upgrade(C.GoString(path), fn)
	if err != nil {
		return err
	}
	if from != nil {
		*from = C.int32_t(v)
	}
	return nil
}
