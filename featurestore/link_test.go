package featurestore

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/topology"
)

// Store.SampleFromEdges is topology.SampleFromEdges over the store's graph; call k of a Sampler
// draws with seed Seed + k, node and link samples counting alike.
func TestSampleFromEdgesMatchesTopology(t *testing.T) {
	d := writeDataset(t, 3000, 4, 1, 8, newRand(t))
	s, err := Open(d.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	src, dst := []int64{5, 99, 2000, 5}, []int64{7, 5, 1, 2999}
	for _, link := range []topology.LinkOptions{
		{},
		{Negatives: topology.BinaryNegatives, NegAmount: 1.5},
		{Negatives: topology.TripletNegatives, NegAmount: 2, ExcludeSeedEdges: true, ReverseEdgeTypes: map[int]int{0: 0}},
	} {
		opt := topology.LinkSampleOptions{SampleOptions: topology.SampleOptions{Fanouts: []int{4, 3}, Seed: 41}, LinkOptions: link}
		var labels []int64
		if link.Negatives != topology.TripletNegatives {
			labels = []int64{1, 2, 1, 3}
		}
		want, err := topology.SampleFromEdges(s.graph, src, dst, labels, opt)
		if err != nil {
			t.Fatal(err)
		}
		got, err := linkSampleOf(s, src, dst, labels, opt)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%+v: the one sampler differs from topology.SampleFromEdges", link)
		}
		sp, err := s.Session().NewSampler(SampleOptions{Fanouts: map[string][]int{"": opt.Fanouts}, Seed: opt.Seed})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sp.Sample("", []int64{1}); err != nil {
			t.Fatal(err)
		}
		if _, err := sp.SampleFromEdges("", src, []int64{0}, nil, linkOf(link)); err == nil {
			t.Fatal("src and dst of other lengths: no error")
		}
		typed, err := sp.SampleFromEdges("", src, dst, labels, linkOf(link))
		if err != nil {
			t.Fatal(err)
		}
		one, _ := typed.OneType()
		got = &topology.LinkSample{Sample: *one, LinkLabels: typed.LinkLabels}
		opt.Seed++
		if want, err = linkSampleOf(s, src, dst, labels, opt); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) || sp.Calls() != 2 {
			t.Fatalf("%+v: the sampler's second call differs from seed 42 (calls %d)", link, sp.Calls())
		}
	}
}

func TestSampleFromEdgesErrors(t *testing.T) {
	d := writeDataset(t, 100, 4, 1, 4, newRand(t))
	s, err := Open(d.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := topology.SampleOptions{Fanouts: []int{2}}
	for _, c := range []struct {
		src, dst, labels []int64
		link             topology.LinkOptions
		is               error
		want             string
	}{
		{[]int64{0, 100}, []int64{1, 2}, nil, topology.LinkOptions{}, ErrIDOutOfRange, "src[1] = 100"},
		{[]int64{0}, []int64{-3}, nil, topology.LinkOptions{}, ErrIDOutOfRange, "dst[0] = -3"},
		{[]int64{0, 1}, []int64{1}, nil, topology.LinkOptions{}, ErrInvalidOption, "2 src ids but 1 dst ids"},
		{[]int64{0, 1}, []int64{1, 2}, []int64{1}, topology.LinkOptions{}, ErrInvalidOption, "1 labels for 2 seed edges"},
		{[]int64{0}, []int64{1}, nil, topology.LinkOptions{Negatives: topology.BinaryNegatives, NegAmount: -1}, ErrInvalidOption, "neg_amount = -1"},
		{[]int64{0}, []int64{1}, nil, topology.LinkOptions{Negatives: topology.TripletNegatives, NegAmount: 1.5}, ErrInvalidOption, "neg_amount = 1.5"},
		{[]int64{0}, []int64{1}, []int64{1}, topology.LinkOptions{Negatives: topology.TripletNegatives}, ErrInvalidOption, "labels"},
		{[]int64{0}, []int64{1}, nil, topology.LinkOptions{Negatives: "pairs"}, ErrInvalidOption, `negatives = "pairs"`},
		{[]int64{0}, []int64{1}, nil, topology.LinkOptions{ReverseEdgeTypes: map[int]int{0: 1}}, ErrInvalidOption, "reverse_edge_types"},
	} {
		_, err := linkSampleOf(s, c.src, c.dst, c.labels, topology.LinkSampleOptions{SampleOptions: base, LinkOptions: c.link})
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SampleFromEdges(%v, %v, %v, %+v): %v, want %v naming %q", c.src, c.dst, c.labels, c.link, err, c.is, c.want)
		}
	}
	if _, err := linkSampleOf(s, []int64{0}, []int64{1}, nil, topology.LinkSampleOptions{}); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("no fanouts: %v, want ErrInvalidOption", err)
	}
}

// Link samples through a GPU topology (its HopDrawer) equal the host's, negatives, exclusion and all.
func TestGPULinkSamplingMatchesHost(t *testing.T) {
	requireGPU(t)
	rng := newRand(t)
	d := writeDataset(t, 4000, 4, 1, 40, rng)
	host, err := Open(d.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	s, err := Open(d.Dir, Options{GPUTopology: "device"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st := s.Stats(); st.GPU.Topology != "device" {
		t.Fatalf("GPU topology not in use: %+v", st.GPU)
	}
	for _, link := range []topology.LinkOptions{
		{},
		{Negatives: topology.BinaryNegatives, NegAmount: 2, StrictNegatives: true},
		{Negatives: topology.TripletNegatives, NegAmount: 3, ExcludeSeedEdges: true, ReverseEdgeTypes: map[int]int{0: 0}},
	} {
		src, dst := randomIDs(rng, 300, 4000), randomIDs(rng, 300, 4000)
		opt := topology.LinkSampleOptions{SampleOptions: topology.SampleOptions{Fanouts: []int{10, 5}, Seed: rng.Uint64()}, LinkOptions: link}
		want, err := linkSampleOf(host, src, dst, nil, opt)
		if err != nil {
			t.Fatal(err)
		}
		got, err := linkSampleOf(s, src, dst, nil, opt)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%+v: GPU link sample differs from the host's", link)
		}
	}
}
