package main

/*
#include "tierfs.h"
*/
import "C"

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"unsafe"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/planned"
)

//export tfsgo_open_json
func tfsgo_open_json(path *C.char, options *C.char, out unsafe.Pointer, h *C.uintptr_t) (st C.int) {
	defer guard("tfs_open_json", &st)
	return finish("tfs_open_json", openJSON(path, options, out, h), stEIO)
}

// openJSON is tfs_open with the options as a JSON object keyed by featurestore.OptionTable's
// names (featurestore.DecodeOptions; tfs_options_json("store") lists them): every store option, by the name Python and the CLI use.
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

// optionFamilies are the option tables tfs_options_json hands over, by family name: each one
// type's tagged fields (featurestore.TableOf), its JSON keys, CLI flags and Python keywords.
var optionFamilies = map[string]func() []featurestore.OptionInfo{
	"store":  featurestore.OptionTable,                       // tfs_open_json
	"epochs": featurestore.TableOf[planned.EpochOptions],     // tfs_epochs_open
	"link":   featurestore.TableOf[featurestore.LinkOptions], // tfs_sample_edges, tfs_hetero_sample_from_edges, a plan's seed_edges
}

//export tfsgo_options_json
func tfsgo_options_json(family *C.char, buf *C.char, capacity C.size_t, needed *C.size_t) (st C.int) {
	defer guard("tfs_options_json", &st)
	return finish("tfs_options_json", optionsJSON(family, buf, uint64(capacity), needed), stEINTERNAL)
}

// optionsJSON answers the table of family (optionFamilies): [{"name", "kind", "default",
// "choices", "flag", "help"}], in the order of its type's fields.
func optionsJSON(family *C.char, buf *C.char, capacity uint64, needed *C.size_t) error {
	if family == nil {
		return fail(stEINVAL, "family is NULL (one of %s)", strings.Join(slices.Sorted(maps.Keys(optionFamilies)), ", "))
	}
	table, ok := optionFamilies[C.GoString(family)]
	if !ok {
		return fail(stEINVAL, "family %q: want one of %s", C.GoString(family), strings.Join(slices.Sorted(maps.Keys(optionFamilies)), ", "))
	}
	if err := checkJSONOut(buf, capacity, needed); err != nil {
		return err
	}
	data, err := json.Marshal(table())
	if err != nil {
		return err
	}
	putJSON(data, buf, capacity, needed)
	return nil
}
