package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/topology"
)

func TestParseLinkRequest(t *testing.T) {
	for _, c := range []struct {
		in   string
		want featurestore.LinkOptions
	}{
		{"", featurestore.LinkOptions{NegAmount: 1}}, // the link table's default amount
		{`{"neg_sampling": null}`, featurestore.LinkOptions{NegAmount: 1}},
		{`{"neg_sampling": "binary", "amount": 2.5, "strict": true}`, featurestore.LinkOptions{Negatives: topology.BinaryNegatives, NegAmount: 2.5, StrictNegatives: true}},
		{`{"neg_sampling": "triplet", "exclude_seed_edges": true, "undirected": true}`,
			featurestore.LinkOptions{Negatives: topology.TripletNegatives, NegAmount: 1, ExcludeSeedEdges: true, Undirected: true}},
		{`{"neg_sampling": "triplet", "amount": 3, "exclude_seed_edges": true, "reverse_edge_types": {"a:w:p": "p:rev_w:a"}}`,
			featurestore.LinkOptions{Negatives: topology.TripletNegatives, NegAmount: 3, ExcludeSeedEdges: true, ReverseEdgeTypes: map[string]string{"a:w:p": "p:rev_w:a"}}},
	} {
		got, err := parseLinkRequest(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("parseLinkRequest(%s) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for in, words := range map[string]string{
		`{"negatives": "binary"}`:                     "one of the link options neg_sampling, amount",
		`{"neg_sampling": "binary", "amount": 0}`:     "amount = 0",
		`{"strict": true, "strict": false}`:           `key "strict" appears twice`,
		`{"neg_sampling": "binary", "amount": "one"}`: "link_options_json",
		`{"reverse_edge_types": ["a:w:p"]}`:           "link_options_json",
		`[`:                                           "link_options_json",
	} {
		if _, err := parseLinkRequest(in); err == nil || classify(err, stEINTERNAL) != stEINVAL || !strings.Contains(err.Error(), words) {
			t.Errorf("parseLinkRequest(%s): %v, want TFS_EINVAL naming %q", in, err, words)
		}
	}
}

// tfs_sampler_create's fanouts are a list (the only edge type) or an object by edge type.
func TestParseSamplerRequest(t *testing.T) {
	for in, want := range map[string]featurestore.SampleOptions{
		`{"fanouts": [10, -1], "seed": 7}`:                           {Fanouts: map[string][]int{"": {10, -1}}, Seed: 7},
		`{"fanouts": {"a:w:p": [2]}, "replace": true, "workers": 3}`: {Fanouts: map[string][]int{"a:w:p": {2}}, Replace: true, Workers: 3},
		`{"fanouts": [3], "disjoint": true}`:                         {Fanouts: map[string][]int{"": {3}}, Disjoint: true},
		`{"fanouts": [3], "time": "t", "temporal_strategy": "last"}`: {Fanouts: map[string][]int{"": {3}}, Time: "t", TemporalStrategy: "last"},
	} {
		got, err := parseSamplerRequest(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("parseSamplerRequest(%s) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for in, words := range map[string]string{
		`{}`:                               "no fanouts",
		`{"fanouts": [1], "fanouts": [2]}`: `key "fanouts" appears twice`,
		`{"fanouts": [1.5]}`:               "fanouts",
		`{"fanouts": "10"}`:                "fanouts",
		`{"fanout": [1]}`:                  "unknown field",
		`{"fanouts": {"a:w:p": 2}}`:        "fanouts",
	} {
		if _, err := parseSamplerRequest(in); err == nil || classify(err, stEINTERNAL) != stEINVAL || !strings.Contains(err.Error(), words) {
			t.Errorf("parseSamplerRequest(%s): %v, want TFS_EINVAL naming %q", in, err, words)
		}
	}
}

// A sample drawn from nodes has no label edges: the link calls answer TFS_ENOENT. A type
// argument of "" names the only type; with several it is TFS_EINVAL naming them.
func TestSampleHandles(t *testing.T) {
	h := register(kindSample, &sampleRec{smp: &topology.HeteroSample{Nodes: [][]int64{{3, 4}, {}}}, nodeTypes: []string{"a", "b"}, edgeTypes: []string{"a:r:b"}})
	defer release[*sampleRec](h, kindSample)
	if _, err := lookupLink(h); err == nil || classify(err, stEINTERNAL) != stENOENT || !strings.Contains(err.Error(), "drawn from nodes") {
		t.Errorf("link labels of a node sample: %v, want TFS_ENOENT", err)
	}
	if err := sampleNodes(h, nil, nil); err == nil || classify(err, stEINTERNAL) != stEINVAL || !strings.Contains(err.Error(), "a, b") {
		t.Errorf("nodes of no type of two: %v, want TFS_EINVAL naming them", err)
	}
	rec, _ := lookup[*sampleRec](h, kindSample)
	if err := sampleBatch(rec, nil, nil); err == nil || classify(err, stEINTERNAL) != stEINVAL {
		t.Errorf("batch of no type of two: %v, want TFS_EINVAL", err)
	}
	one := &sampleRec{smp: &topology.HeteroSample{Nodes: [][]int64{{3}}}, nodeTypes: []string{"a"}, edgeTypes: []string{"a:r:a"}}
	if err := sampleBatch(one, nil, nil); err == nil || classify(err, stEINTERNAL) != stENOENT || !strings.Contains(err.Error(), "not disjoint") {
		t.Errorf("batch of a sample that is not disjoint: %v, want TFS_ENOENT", err)
	}
	if e, err := typeIndex([]string{"a:r:b"}, "", "edge_type", "edge type"); e != 0 || err != nil {
		t.Errorf(`edge type "" of one: %d, %v`, e, err)
	}
	if _, err := typeIndex([]string{"a:r:b"}, "x:y:z", "edge_type", "edge type"); err == nil || classify(err, stEINTERNAL) != stENOENT {
		t.Errorf("an unknown edge type: %v, want TFS_ENOENT", err)
	}
}
