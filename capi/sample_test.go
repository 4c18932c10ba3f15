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
		want topology.LinkOptions
	}{
		{"", topology.LinkOptions{}},
		{`{"neg_sampling": null}`, topology.LinkOptions{}},
		{`{"neg_sampling": "binary", "amount": 2.5, "strict": true}`, topology.LinkOptions{Negatives: topology.BinaryNegatives, NegAmount: 2.5, StrictNegatives: true}},
		{`{"neg_sampling": "triplet", "exclude_seed_edges": true, "undirected": true}`,
			topology.LinkOptions{Negatives: topology.TripletNegatives, ExcludeSeedEdges: true, ReverseEdgeTypes: map[int]int{0: 0}}},
	} {
		got, err := parseLinkRequest(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("parseLinkRequest(%s) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for in, words := range map[string]string{
		`{"negatives": "binary"}`:                     "unknown field",
		`{"neg_sampling": "binary", "amount": 0}`:     "amount = 0",
		`{"neg_sampling": "binary", "amount": "one"}`: "link_options_json",
		`[`: "link_options_json",
	} {
		if _, err := parseLinkRequest(in); err == nil || classify(err, stEINTERNAL) != stEINVAL || !strings.Contains(err.Error(), words) {
			t.Errorf("parseLinkRequest(%s): %v, want TFS_EINVAL naming %q", in, err, words)
		}
	}
}

// A sample handle holds a node sample or a link sample; the tfs_sample_* calls read either.
func TestSampleHandlesHoldLinkSamples(t *testing.T) {
	ls := &topology.LinkSample{Sample: topology.Sample{Nodes: []int64{3, 4}}, LinkLabels: topology.LinkLabels{EdgeLabel: []int64{1}}}
	h := register(kindSample, ls)
	smp, lk, err := lookupSample(h)
	if err != nil || smp != &ls.Sample || lk != &ls.LinkLabels {
		t.Fatalf("lookupSample of a link sample: %p %p %v", smp, lk, err)
	}
	if _, err := release[any](h, kindSample); err != nil {
		t.Fatal(err)
	}
	h = register(kindSample, &topology.Sample{})
	if _, lk, err := lookupSample(h); err != nil || lk != nil {
		t.Fatalf("lookupSample of a node sample: labels %v, %v", lk, err)
	}
	if err := sampleLinkCopy(h, nil, nil, nil, nil, nil); err == nil || classify(err, stEINTERNAL) != stENOENT {
		t.Errorf("link copy of a node sample: %v, want TFS_ENOENT", err)
	}
	release[any](h, kindSample)
}

func TestParseHeteroLinkRequest(t *testing.T) {
	got, err := parseHeteroLinkRequest(`{"neg_sampling": "triplet", "amount": 3, "exclude_seed_edges": true, "reverse_edge_types": {"a:w:p": "p:rev_w:a"}}`)
	want := featurestore.HeteroLinkOptions{Negatives: topology.TripletNegatives, NegAmount: 3, ExcludeSeedEdges: true, ReverseEdgeTypes: map[string]string{"a:w:p": "p:rev_w:a"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parseHeteroLinkRequest = %+v, %v; want %+v", got, err, want)
	}
	if got, err := parseHeteroLinkRequest(""); err != nil || !reflect.DeepEqual(got, featurestore.HeteroLinkOptions{}) {
		t.Errorf(`parseHeteroLinkRequest("") = %+v, %v`, got, err)
	}
	for in, words := range map[string]string{
		`{"undirected": true}`:                    "unknown field",
		`{"neg_sampling": "binary", "amount": 0}`: "amount = 0",
		`{"reverse_edge_types": ["a:w:p"]}`:       "link_options_json",
	} {
		if _, err := parseHeteroLinkRequest(in); err == nil || classify(err, stEINTERNAL) != stEINVAL || !strings.Contains(err.Error(), words) {
			t.Errorf("parseHeteroLinkRequest(%s): %v, want TFS_EINVAL naming %q", in, err, words)
		}
	}
}

// A hetero sample drawn from nodes has no label edges: the link calls answer TFS_ENOENT.
func TestHeteroLinkCallsOnNodeSample(t *testing.T) {
	h := register(kindHeteroSample, &heteroSampleRec{smp: &topology.HeteroSample{}})
	defer release[*heteroSampleRec](h, kindHeteroSample)
	if _, err := lookupHeteroLink(h); err == nil || classify(err, stEINTERNAL) != stENOENT || !strings.Contains(err.Error(), "drawn from nodes") {
		t.Errorf("link labels of a node sample: %v, want TFS_ENOENT", err)
	}
}
