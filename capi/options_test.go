package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/featurestore"
)

// tfs_open_json's bad options are TFS_EINVAL naming the option; tfs_store_options_json's table
// names every option DecodeOptions takes.
func TestOpenJSONOptions(t *testing.T) {
	for in, words := range map[string]string{
		`{"host_cahce": 1}`:         "host_cahce",
		`{"queue_depth": "8"}`:      "queue_depth",
		`{"unverified_reads": "y"}`: "unverified_reads",
		`not json`:                  "a JSON object",
	} {
		_, err := featurestore.DecodeOptions([]byte(in))
		if err == nil || classify(err, stEIO) != stEINVAL || !strings.Contains(err.Error(), words) {
			t.Errorf("tfs_open_json options %s: %v, want TFS_EINVAL naming %q", in, err, words)
		}
	}
	data, err := json.Marshal(featurestore.OptionTable())
	if err != nil {
		t.Fatal(err)
	}
	var table []struct{ Name, Kind, Help string }
	if err := json.Unmarshal(data, &table); err != nil {
		t.Fatal(err)
	}
	all := map[string]any{}
	for _, o := range table {
		if o.Name == "" || o.Kind == "" || o.Help == "" {
			t.Errorf("tfs_store_options_json entry %+v lacks a name, kind or help", o)
		}
		all[o.Name] = map[string]any{"size": 1, "int": 1, "bool": true, "string": "x"}[o.Kind]
	}
	req, _ := json.Marshal(all)
	if _, err := featurestore.DecodeOptions(req); err != nil {
		t.Errorf("every option of tfs_store_options_json (%s): %v", req, err)
	}
}
