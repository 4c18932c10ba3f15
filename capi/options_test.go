package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/planned"
)

// tfs_open_json's bad options are TFS_EINVAL naming the option; tfs_options_json("store")'s table
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
			t.Errorf("tfs_options_json(\"store\") entry %+v lacks a name, kind or help", o)
		}
		all[o.Name] = map[string]any{"size": 1, "int": 1, "bool": true, "string": "x"}[o.Kind]
	}
	req, _ := json.Marshal(all)
	if _, err := featurestore.DecodeOptions(req); err != nil {
		t.Errorf("every option of tfs_options_json(\"store\") (%s): %v", req, err)
	}
}

// Every family of tfs_options_json describes each option, and the JSON of its options, each set
// to a value of its kind, is what the C call reading that family decodes (every key reaches it).
func TestOptionFamiliesReachTheirCalls(t *testing.T) {
	for family, table := range optionFamilies {
		all := map[string]any{}
		for _, o := range table() {
			if o.Name == "" || o.Help == "" {
				t.Errorf("%s option %+v lacks a name or help", family, o)
			}
			v, ok := map[string]any{"size": 4096, "int": 2, "uint": 3, "float": 2.5, "bool": true, "string": "x", "map": map[string]string{}}[o.Kind]
			if !ok {
				t.Errorf("%s option %s has kind %q", family, o.Name, o.Kind)
			}
			if len(o.Choices) > 0 {
				v = o.Choices[0]
			}
			all[o.Name] = v
		}
		req, _ := json.Marshal(all)
		var err error
		switch family {
		case "store":
			_, err = featurestore.DecodeOptions(req)
		case "epochs":
			var o planned.EpochOptions
			if o, _, err = decodeEpochsRequest(string(req)); err == nil && (o.BatchSize != 2 || o.Sample.Seed != 3 || !o.PlaceTiers || o.DiskBudget != 4096) {
				t.Errorf("epochs options %s decoded as %+v", req, o)
			}
		case "link":
			_, _, err = decodeLink("link_options_json", string(req))
		default:
			t.Errorf("family %s: no call of this test reads it", family)
		}
		if err != nil {
			t.Errorf("every %s option (%s): %v", family, req, err)
		}
	}
	// Keys left out take the table's defaults.
	o, _, err := decodeEpochsRequest(`{"plan_dir": "p"}`)
	if d := featurestore.Defaults[planned.EpochOptions](); err != nil || o.BatchSize != d.BatchSize || o.PlaceTiers != d.PlaceTiers || !o.Replan || o.Dir != "p" {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	if _, _, err := decodeEpochsRequest(`{"place_tier": true}`); err == nil || classify(err, stEIO) != stEINVAL || !strings.Contains(err.Error(), "place_tier") || !strings.Contains(err.Error(), "fanouts, seed_edges") {
		t.Errorf("an unknown key: %v", err)
	}
}
