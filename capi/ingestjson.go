package main

/*
#include "tierfs.h"
*/
import "C"

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"unsafe"

	"github.com/tierfs/tierfs/ingest"
	"github.com/tierfs/tierfs/internal/strictjson"
)

// The JSON keys of tfs_synth and tfs_ingest: snake_case of the ingest options' fields (those of
// `tierfs synth` / `tierfs ingest`), mapped to the Go field names.
var (
	synthKeys = map[string]string{
		"out": "Out", "nodes": "Nodes", "avg_degree": "AvgDegree", "dim": "Dim", "dtype": "DType",
		"classes": "Classes", "seed": "Seed", "device_paths": "DevicePaths",
		"train_frac": "TrainFrac", "val_frac": "ValFrac", "test_frac": "TestFrac",
		"degree_exponent": "DegreeExponent", "locality": "Locality", "community_size": "CommunitySize",
		"force": "Replace",
	}
	ingestKeys = map[string]string{
		"edges": "Edges", "features": "Features", "labels": "Labels", "splits": "SplitsDir",
		"out": "Out", "device_paths": "DevicePaths", "num_nodes": "NumNodes",
		"undirected": "Undirected", "drop_self_loops": "DropSelfLoops", "dedup": "Dedup",
		"feature_dtype": "FeatureDType", "store_dtype": "StoreDType", "force": "Replace", "edge_columns": "EdgeColumns",
		"node_features": "NodeFeatures", "edge_features": "EdgeFeatures", // lists of {"name", "path", "dtype"}
		"graphbolt": "GraphBolt", "graphbolt_task": "GraphBoltTask", "features_in_place": "FeaturesInPlace",
		"edge_splits": "EdgeSplits", // list of {"edge_type", "split", "seeds", "labels", "neg_dst"}
	}
)

// decodeOptions fills dst (a pointer to an ingest options struct) from a JSON object whose keys
// must all be in keys. The object is re-keyed to the Go field names and decoded with unknown
// fields disallowed, so the field types are the ingest package's own.
func decodeOptions(js *C.char, keys map[string]string, dst any) error {
	obj, err := jsonObject(js)
	if err != nil {
		return err
	}
	return decodeObject(obj, keys, dst)
}

// jsonObject parses options_json into its keys.
func jsonObject(js *C.char) (map[string]json.RawMessage, error) {
	if js == nil {
		return nil, fail(stEINVAL, "options_json is NULL")
	}
	src := C.GoString(js)
	var obj map[string]json.RawMessage
	if err := strictjson.CheckKeys([]byte(src)); err != nil {
		return nil, fail(stEINVAL, "options_json: %v", err)
	}
	if err := json.Unmarshal([]byte(src), &obj); err != nil || obj == nil {
		if err == nil {
			err = errors.New("it is null")
		}
		return nil, fail(stEINVAL, "options_json is not a JSON object: %v", err)
	}
	return obj, nil
}

// decodeObject is decodeOptions on a parsed object; fields of dst whose keys are absent keep
// their values.
func decodeObject(obj map[string]json.RawMessage, keys map[string]string, dst any) error {
	fieldKey := map[string]string{}
	renamed := map[string]json.RawMessage{}
	for k, v := range obj {
		f, ok := keys[k]
		if !ok {
			known := make([]string, 0, len(keys))
			for k := range keys {
				known = append(known, k)
			}
			slices.Sort(known)
			return fail(stEINVAL, "options_json: unknown key %q (known keys: %s)", k, strings.Join(known, ", "))
		}
		renamed[f], fieldKey[f] = v, k
	}
	data, err := json.Marshal(renamed)
	if err != nil {
		return fail(stEINTERNAL, "options_json: re-encode: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			key := fieldKey[te.Field]
			if key == "" {
				key = te.Field
			}
			return fail(stEINVAL, "options_json: %q must be a JSON value of Go type %s, not a JSON %s", key, te.Type, te.Value)
		}
		return fail(stEINVAL, "options_json: %v", err)
	}
	return nil
}

//export tfsgo_synth
func tfsgo_synth(js *C.char, fn C.tfs_progress_fn, ctx unsafe.Pointer) C.int {
	// Synth's own errors that are not IO are about its options.
	return call("tfs_synth", stEINVAL, func() error {
		if hetero, err := decodeSynthHetero(js); hetero != nil || err != nil {
			if err == nil {
				hetero.Progress = progressFunc(fn, ctx)
				_, err = ingest.SynthHetero(*hetero)
			}
			return err
		}
		opt, err := decodeSynthOptions(js)
		if err == nil {
			opt.Progress = progressFunc(fn, ctx)
			_, err = ingest.Synth(opt)
		}
		return err
	})
}

//export tfsgo_ingest
func tfsgo_ingest(js *C.char, fn C.tfs_progress_fn, ctx unsafe.Pointer) C.int {
	// Ingest's own errors that are not IO (missing files, errno) are about its inputs.
	return call("tfs_ingest", stEINVAL, func() error { return ingestJSON(js, progressFunc(fn, ctx)) })
}

// ingestJSON is tfs_ingest of options_json js.
func ingestJSON(js *C.char, progress func(string, int64, int64)) error {
	if obj, err := jsonObject(js); err == nil && ingest.IsHeteroSpec(obj) {
		return ingestHetero(C.GoString(js), progress)
	}
	var opt ingest.Options
	err := decodeOptions(js, ingestKeys, &opt)
	opt.Progress = progress
	if err == nil {
		err = checkInputs(map[string]string{"edges": opt.Edges, "features": opt.Features, "labels": opt.Labels, "splits": opt.SplitsDir, "graphbolt": opt.GraphBolt})
	}
	for _, list := range []struct {
		key string
		in  []ingest.FeatureInput
	}{{"node_features", opt.NodeFeatures}, {"edge_features", opt.EdgeFeatures}} {
		for _, f := range list.in {
			if _, serr := os.Stat(f.Path); err == nil && f.Path != "" && serr != nil {
				err = fmt.Errorf("options_json: %q: feature %q: %w", list.key, f.Name, serr)
			}
		}
	}
	for _, in := range ingest.EdgeSplitPaths(opt.EdgeSplits) {
		if _, serr := os.Stat(in[1]); err == nil && serr != nil {
			err = fmt.Errorf("options_json: \"edge_splits\": %s: %w", in[0], serr)
		}
	}
	if err == nil {
		_, err = ingest.Ingest(opt)
	}
	return err
}

// ingestHetero is tfs_ingest of a heterogeneous graph (options with "node_types" or
// "edge_types"; see ingest.ParseHeteroSpec for the keys).
func ingestHetero(js string, progress func(string, int64, int64)) error {
	opt, err := ingest.ParseHeteroSpec([]byte(js))
	if err != nil {
		return fail(stEINVAL, "options_json: %v", err)
	}
	for _, in := range opt.Inputs() {
		if _, err := os.Stat(in[1]); in[1] != "" && err != nil {
			return fmt.Errorf("options_json: %s: %w", in[0], err)
		}
	}
	opt.Progress = progress
	_, err = ingest.IngestHetero(opt)
	return err
}

// checkInputs gives TFS_ENOENT, naming the key and the path, for an input that is not there (the
// ingest package reports it too, but without wrapping os.ErrNotExist).
func checkInputs(inputs map[string]string) error {
	for _, key := range []string{"edges", "features", "labels", "splits", "graphbolt"} {
		if p := inputs[key]; p != "" {
			if _, err := os.Stat(p); err != nil {
				return fmt.Errorf("options_json: %q: %w", key, err)
			}
		}
	}
	return nil
}

// decodeSynthHetero reads tfs_synth's options of a heterogeneous graph — a heterogeneous
// "preset" (with "scale", "seed", "out", "force", "device_paths", "degree_exponent", "locality",
// "community_size"), or the graph itself ("node_types", "edge_types": the JSON of `tierfs synth
// --spec`) — and returns nil, nil for a homogeneous one.
func decodeSynthHetero(js *C.char) (*ingest.SynthHeteroOptions, error) {
	obj, err := jsonObject(js)
	if err != nil {
		return nil, err
	}
	var name string
	if raw, ok := obj["preset"]; ok && json.Unmarshal(raw, &name) == nil && slices.Contains(ingest.SynthHeteroPresetNames(), name) {
		scale := 1.0
		if raw, ok := obj["scale"]; ok {
			if err := json.Unmarshal(raw, &scale); err != nil {
				return nil, fail(stEINVAL, "options_json: \"scale\" must be a JSON number")
			}
		}
		opt, err := ingest.SynthHeteroPreset(name, scale)
		if err != nil {
			return nil, fail(stEINVAL, "%v", err)
		}
		delete(obj, "preset")
		delete(obj, "scale")
		for k := range obj {
			switch k {
			case "seed", "out", "force", "device_paths", "degree_exponent", "locality", "community_size":
			default:
				return nil, fail(stEINVAL, "options_json: %q with the heterogeneous preset %s: its types set those (give scale, seed, out, force, device_paths, degree_exponent, locality, community_size)", k, name)
			}
		}
		data, _ := json.Marshal(obj)
		return &opt, strictDecode(data, &opt)
	}
	if _, ok := obj["node_types"]; !ok {
		return nil, nil
	}
	var opt ingest.SynthHeteroOptions
	return &opt, strictDecode([]byte(C.GoString(js)), &opt)
}

// strictDecode decodes data into dst (fields keep their values where data has none), refusing
// unknown keys.
func strictDecode(data []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fail(stEINVAL, "options_json: %v", err)
	}
	return nil
}

// decodeSynthOptions reads tfs_synth's options: with "preset" (and optionally "scale") the
// preset's options, overridden by the other keys given; without, the keys alone.
func decodeSynthOptions(js *C.char) (ingest.SynthOptions, error) {
	var opt ingest.SynthOptions
	obj, err := jsonObject(js)
	if err != nil {
		return opt, err
	}
	rawPreset, hasPreset := obj["preset"]
	rawScale, hasScale := obj["scale"]
	delete(obj, "preset")
	delete(obj, "scale")
	if hasPreset {
		var name string
		scale := 1.0
		if err := json.Unmarshal(rawPreset, &name); err != nil {
			return opt, fail(stEINVAL, "options_json: \"preset\" must be a JSON string naming one of %s", strings.Join(ingest.SynthPresetNames(), ", "))
		}
		if hasScale {
			if err := json.Unmarshal(rawScale, &scale); err != nil {
				return opt, fail(stEINVAL, "options_json: \"scale\" must be a JSON number")
			}
			if _, ok := obj["nodes"]; ok {
				return opt, fail(stEINVAL, "options_json: \"scale\" and \"nodes\" both set the node count; give one")
			}
		}
		if opt, err = ingest.SynthPreset(name, scale); err != nil {
			return opt, fail(stEINVAL, "%v", err)
		}
	} else if hasScale {
		return opt, fail(stEINVAL, "options_json: \"scale\" needs \"preset\"; without one, set \"nodes\"")
	}
	keys := maps.Clone(synthKeys)
	keys["preset"], keys["scale"] = "", "" // handled above; listed among the known keys in errors
	return opt, decodeObject(obj, keys, &opt)
}
