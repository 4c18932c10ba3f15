package featurestore

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/topology"
)

// TestMaxSampleEdges: the store option bounds every sample the store draws — a bound of exactly
// the edges a sample draws lets it through, one less refuses it with ErrSampleTooLarge naming
// the seeds, fanouts, bound and the option — and a per-call MaxEdges wins over it.
func TestMaxSampleEdges(t *testing.T) {
	r := newRand(t)
	d := writeDataset(t, 2000, 4, 1, 8, r)
	seeds := []int64{3, 70, 1500, 1999}
	opt := topology.SampleOptions{Fanouts: []int{5, 3}, Seed: r.Uint64()}
	free, err := Open(d.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	full, err := sampleOf(free, seeds, opt)
	free.Close()
	if err != nil {
		t.Fatal(err)
	}
	drawn := int64(len(full.Row))
	if drawn < 2 {
		t.Fatalf("the sample drew %d edges; want a graph with some", drawn)
	}
	for _, bound := range []int64{drawn, drawn - 1} {
		s, err := Open(d.Dir, Options{MaxSampleEdges: bound})
		if err != nil {
			t.Fatal(err)
		}
		_, err = sampleOf(s, seeds, opt)
		if bound == drawn && err != nil {
			t.Fatalf("max_sample_edges %d = the edges drawn: %v", bound, err)
		}
		if bound < drawn {
			if !errors.Is(err, topology.ErrSampleTooLarge) {
				t.Fatalf("max_sample_edges %d < %d drawn: %v, want ErrSampleTooLarge", bound, drawn, err)
			}
			for _, want := range []string{"a sample of 4 seeds with fanouts [5 3]", fmt.Sprintf("bound of %d edges", bound), "max_sample_edges"} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("%v: does not say %q", err, want)
				}
			}
		}
		s.Close()
	}
	if _, err := Open(d.Dir, Options{MaxSampleEdges: -1}); !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "max_sample_edges") {
		t.Fatalf("max_sample_edges -1: %v", err)
	}
}
