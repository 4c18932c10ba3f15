package main

/*
#include "tierfs.h"
*/
import "C"

import (
	"encoding/json"
	"unsafe"

	"github.com/tierfs/tierfs/featurestore"
)

//export tfsgo_open_json
func tfsgo_open_json(path *C.char, options *C.char, out unsafe.Pointer, h *C.uintptr_t) (st C.int) {
	defer guard("tfs_open_json", &st)
	return finish("tfs_open_json", openJSON(path, options, out, h), stEIO)
}

// openJSON is tfs_open with the options as a JSON object keyed by featurestore.OptionTable's
// names (featurestore.DecodeOptions): every store option, by the name Python and the CLI use.
func openJSON(path, options *C.char, out unsafe.Pointer, h *C.uintptr_t) error {
	if path == nil {
		return fail(stEINVAL, "path is NULL")
	}
	if out == nil {
		return fail(stEINVAL, "out is NULL")
	}
	var data []byte
	if options != nil {
		data = []byte(C.GoString(options))
	}
	fo, err := featurestore.DecodeOptions(data)
	if err != nil {
		return err
	}
	return openStore(C.GoString(path), fo, h)
}

//export tfsgo_store_options_json
func tfsgo_store_options_json(buf *C.char, capacity C.size_t, needed *C.size_t) (st C.int) {
	defer guard("tfs_store_options_json", &st)
	return finish("tfs_store_options_json", storeOptionsJSON(buf, uint64(capacity), needed), stEINTERNAL)
}

// storeOptionsJSON answers featurestore.OptionTable: [{"name", "kind", "help"}], in the order of
// featurestore.Options' fields.
func storeOptionsJSON(buf *C.char, capacity uint64, needed *C.size_t) error {
	if err := checkJSONOut(buf, capacity, needed); err != nil {
		return err
	}
	data, err := json.Marshal(featurestore.OptionTable())
	if err != nil {
		return err
	}
	putJSON(data, buf, capacity, needed)
	return nil
}
