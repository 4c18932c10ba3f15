package main

/*
#include "tierfs.h"
*/
import "C"

import (
	"strings"
	"unsafe"

	"github.com/tierfs/tierfs/embedding"
	"github.com/tierfs/tierfs/internal/strictjson"
)

// The embedding tables (tierfs_embedding.h): a handle of kind kindTable holds an
// *embedding.Table.

//export tfsgo_table_create
func tfsgo_table_create(store C.uintptr_t, nodeType, path, specJSON *C.char) C.int {
	return call("tfs_table_create", stEIO, func() error {
		if path == nil || specJSON == nil {
			return fail(stEINVAL, "path and spec_json must not be NULL")
		}
		var spec embedding.Spec
		if err := strictjson.Decode([]byte(C.GoString(specJSON)), &spec); err != nil {
			return fail(stEINVAL, "spec_json: %v", err)
		}
		if store != 0 {
			if err := specOfStore(uintptr(store), cString(nodeType), &spec); err != nil {
				return err
			}
		} else if nodeType != nil && spec.NodeType == "" {
			spec.NodeType = C.GoString(nodeType)
		}
		return embedding.Create(nil, C.GoString(path), spec)
	})
}

// specOfStore fills spec's rows, node type and dataset id from the store's node type.
func specOfStore(h uintptr, name string, spec *embedding.Spec) error {
	rec, err := lookup[*storeRec](h, kindStore)
	if err != nil {
		return err
	}
	ss := rec.s.Session()
	types := ss.NodeTypes()
	var names []string
	for _, t := range types {
		names = append(names, t.Name)
		if t.Name == name || (name == "" && len(types) == 1) {
			if spec.Rows != 0 && spec.Rows != t.Count {
				return fail(stEINVAL, "spec_json rows %d: node type %q has %d nodes", spec.Rows, t.Name, t.Count)
			}
			spec.Rows, spec.NodeType, spec.DatasetID = t.Count, t.Name, ss.Manifest().DatasetID
			return nil
		}
	}
	if name == "" {
		return fail(stEINVAL, "the store has %d node types (%s): name one", len(names), strings.Join(names, ", "))
	}
	return fail(stENOENT, "the store has no node type %q (it has %s)", name, strings.Join(names, ", "))
}

//export tfsgo_table_open
func tfsgo_table_open(path, optionsJSON *C.char, h *C.uintptr_t) C.int {
	return call("tfs_table_open", stEIO, func() error {
		if path == nil {
			return fail(stEINVAL, "path is NULL")
		}
		var opt struct {
			HostCacheBytes int64 `json:"host_cache_bytes"`
		}
		if optionsJSON != nil {
			if err := strictjson.Decode([]byte(C.GoString(optionsJSON)), &opt); err != nil {
				return fail(stEINVAL, "options_json: %v", err)
			}
		}
		if opt.HostCacheBytes < 0 {
			return fail(stEINVAL, "options_json host_cache_bytes %d is negative", opt.HostCacheBytes)
		}
		t, err := embedding.Open(C.GoString(path), embedding.Options{HostCacheBytes: opt.HostCacheBytes})
		if err != nil {
			return err
		}
		*h = C.uintptr_t(register(kindTable, t))
		return nil
	})
}

// onRows is on for a table call that moves n ids' rows of floats between the caller's buffer
// and the table.
func onRows(fn string, table C.uintptr_t, ids *C.int64_t, n C.int64_t, buf unsafe.Pointer, bufLen C.int64_t, do func(t *embedding.Table, ids []int64, buf []float32) error) C.int {
	return on(fn, stEIO, table, kindTable, func(t *embedding.Table) error {
		if err := checkArray(unsafe.Pointer(ids), "ids", int64(n), "n"); err != nil {
			return err
		}
		if err := checkArray(buf, "the rows' buffer", int64(bufLen), "its length"); err != nil {
			return err
		}
		var fs []float32
		if bufLen > 0 {
			fs = unsafe.Slice((*float32)(buf), int64(bufLen))
		}
		return do(t, ids64(ids, int64(n)), fs)
	})
}

//export tfsgo_table_gather
func tfsgo_table_gather(table C.uintptr_t, ids *C.int64_t, n C.int64_t, out unsafe.Pointer, outLen C.int64_t) C.int {
	return onRows("tfs_table_gather", table, ids, n, out, outLen, (*embedding.Table).Gather)
}

//export tfsgo_table_apply
func tfsgo_table_apply(table C.uintptr_t, ids *C.int64_t, n C.int64_t, grads unsafe.Pointer, gradsLen C.int64_t) C.int {
	return onRows("tfs_table_apply", table, ids, n, grads, gradsLen, (*embedding.Table).Apply)
}

//export tfsgo_table_write
func tfsgo_table_write(table C.uintptr_t, ids *C.int64_t, n C.int64_t, rows unsafe.Pointer, rowsLen C.int64_t) C.int {
	return onRows("tfs_table_write", table, ids, n, rows, rowsLen, (*embedding.Table).Write)
}

//export tfsgo_table_read_slots
func tfsgo_table_read_slots(table C.uintptr_t, ids *C.int64_t, n C.int64_t, out unsafe.Pointer, outLen C.int64_t) C.int {
	return onRows("tfs_table_read_slots", table, ids, n, out, outLen, (*embedding.Table).ReadSlots)
}

//export tfsgo_table_write_slots
func tfsgo_table_write_slots(table C.uintptr_t, ids *C.int64_t, n C.int64_t, slots unsafe.Pointer, slotsLen C.int64_t, step C.int64_t) C.int {
	return onRows("tfs_table_write_slots", table, ids, n, slots, slotsLen, func(t *embedding.Table, ids []int64, slots []float32) error {
		return t.WriteSlots(ids, slots, int64(step))
	})
}

//export tfsgo_table_checkpoint
func tfsgo_table_checkpoint(table C.uintptr_t) C.int {
	return on("tfs_table_checkpoint", stEIO, table, kindTable, func(t *embedding.Table) error {
		return t.Checkpoint()
	})
}

//export tfsgo_table_info_json
func tfsgo_table_info_json(table C.uintptr_t, buf *C.char, capacity C.size_t, needed *C.size_t) C.int {
	return onJSON("tfs_table_info_json", table, kindTable, buf, capacity, needed, func(t *embedding.Table) (any, error) {
		return t.Info(), nil
	})
}

//export tfsgo_table_stats_json
func tfsgo_table_stats_json(table C.uintptr_t, buf *C.char, capacity C.size_t, needed *C.size_t) C.int {
	return onJSON("tfs_table_stats_json", table, kindTable, buf, capacity, needed, func(t *embedding.Table) (any, error) {
		return t.Stats(), nil
	})
}

//export tfsgo_table_close
func tfsgo_table_close(table C.uintptr_t) C.int {
	return call("tfs_table_close", stEIO, func() error {
		t, err := release[*embedding.Table](uintptr(table), kindTable)
		if err != nil {
			return err
		}
		return t.Close()
	})
}
