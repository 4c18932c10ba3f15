package main

import (
	"reflect"
	"strings"
	"testing"

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
