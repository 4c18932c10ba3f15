package main

/*
#include <stdlib.h>
#include "tierfs.h"
void tfs_call_progress(tfs_progress_fn fn, void *ctx, const char *stage, int64_t done, int64_t total);
*/
import "C"

import (
	"sync"
	"time"
	"unsafe"
)

// progressEvery is the least time between two reports of one stage (its completion is always
// reported).
const progressEvery = 100 * time.Millisecond

// progressFunc adapts a caller's tfs_progress_fn to the ingest package's Progress: at most one
// report of a stage per progressEvery, plus the stage's completion, one report at a time. nil
// for a NULL fn.
func progressFunc(fn C.tfs_progress_fn, ctx unsafe.Pointer) func(stage string, done, total int64) {
	if fn == nil {
		return nil
	}
	var mu sync.Mutex
	last := map[string]time.Time{}
	return func(stage string, done, total int64) {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if now.Sub(last[stage]) < progressEvery && (total <= 0 || done < total) {
			return
		}
		last[stage] = now
		cs := C.CString(stage)
		defer C.free(unsafe.Pointer(cs))
		C.tfs_call_progress(fn, ctx, cs, C.int64_t(done), C.int64_t(total))
	}
}
