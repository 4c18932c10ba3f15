package cli

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/ingest"
	"github.com/tierfs/tierfs/topology"
)

// linkFlags are the link options of `tierfs sample --seed-edges` and `tierfs plan-epochs
// --seed-edges`: one flag per option of the link table (featurestore.LinkOptions, optionFlags)
// and --edge-labels, the labels' file.
type linkFlags struct {
	labels *string
	opt    *featurestore.LinkOptions
}

// seedFlags are the seed flags sample and plan-epochs share: --seeds, or --seed-edges with the
// link flags beside them, and --fanouts.
type seedFlags struct {
	seeds, seedEdges, fanouts *string
	link                      linkFlags
}

// register adds them: seedsDefault is --seeds's default, edgesUse what --seed-edges does.
func (f *seedFlags) register(fs *pflag.FlagSet, seedsDefault, edgesUse string) {
	f.seeds = fs.String("seeds", seedsDefault, "seed node ids: .npy, or split:NAME (split:train)")
	f.seedEdges = fs.String("seed-edges", "", edgesUse+" instead of --seeds: a (2, n) or (n, 2) integer .npy of (src, dst) pairs, or split:NAME for an edge split of the dataset (split:train, its labels with it)")
	f.link.register(fs)
	f.fanouts = fs.String("fanouts", "25,10", "neighbors per hop, comma separated; -1 takes all")
}

func (l *linkFlags) register(fs *pflag.FlagSet) {
	l.labels = fs.String("edge-labels", "", "with --seed-edges FILE: a 1-D integer .npy of one label per seed edge")
	l.opt = optionFlags[featurestore.LinkOptions](fs)
}

// mode is --neg-sampling, checked.
func (l *linkFlags) mode() (topology.NegativeMode, error) {
	mode := l.opt.Negatives
	if mode != topology.NoNegatives && mode != topology.BinaryNegatives && mode != topology.TripletNegatives {
		return mode, fmt.Errorf("--neg-sampling %q: want binary or triplet", l.opt.Negatives)
	}
	return mode, nil
}

// given names the first link flag set on the command line, or "".
func (l *linkFlags) given(fs *pflag.FlagSet) string {
	names := []string{"edge-labels"}
	for _, o := range featurestore.TableOf[featurestore.LinkOptions]() {
		names = append(names, o.FlagName())
	}
	set := ""
	fs.Visit(func(f *pflag.Flag) {
		if slices.Contains(names, f.Name) && set == "" {
			set = "--" + f.Name
		}
	})
	return set
}

// seedEdgesOf reads the seed edges of arg: split:NAME (an edge split of the store's edge type,
// with its labels, float labels that are whole numbers taken as such) or a .npy of pairs (with
// the labels of labelsPath, if any).
func seedEdgesOf(s *featurestore.Store, arg, labelsPath string) (src, dst, labels []int64, err error) {
	if name, ok := strings.CutPrefix(arg, "split:"); ok {
		if labelsPath != "" {
			return nil, nil, nil, fmt.Errorf("--edge-labels with --seed-edges %s: an edge split has its own labels", arg)
		}
		sp, err := s.Session().ReadEdgeSplit("", name)
		if err != nil {
			return nil, nil, nil, err
		}
		switch sp.Info.LabelDType {
		case dataset.Int64:
			labels = make([]int64, sp.Info.Count)
			for i := range labels {
				labels[i] = int64(binary.LittleEndian.Uint64(sp.Labels[8*i:]))
			}
		case dataset.Float32:
			labels = make([]int64, sp.Info.Count)
			for i := range labels {
				v := math.Float32frombits(binary.LittleEndian.Uint32(sp.Labels[4*i:]))
				if v != float32(int64(v)) {
					return nil, nil, nil, fmt.Errorf("--seed-edges %s: label %d is %v; sampling takes whole-number labels", arg, i, v)
				}
				labels[i] = int64(v)
			}
		}
		return sp.Src(), sp.Dst(), labels, nil
	}
	if src, dst, err = ingest.ReadNpyPairs(arg); err != nil {
		return nil, nil, nil, err
	}
	if labelsPath != "" {
		if labels, err = ingest.ReadNpyInt64s(labelsPath); err != nil {
			return nil, nil, nil, err
		}
		if len(labels) != len(src) {
			return nil, nil, nil, fmt.Errorf("--edge-labels %s holds %d labels for the %d seed edges of %s; give one per seed edge", labelsPath, len(labels), len(src), arg)
		}
	}
	return src, dst, labels, nil
}

// sampleEdges is `tierfs sample --seed-edges`: the k-hop neighborhood of seed edges
// (Store.SampleFromEdges) written as `tierfs sample` writes a node sample, plus the label
// edges.
func sampleEdges(dir string, opt *featurestore.Options, usePlacement bool, fanouts, arg string, link linkFlags, so topology.SampleOptions, out string) error {
	mode, err := link.mode()
	if err != nil {
		return err
	}
	names := []string{"nodes", "row", "col", "nodes_per_hop", "edges_per_hop", "edge_label_index", "edge_label", "src_index", "dst_pos_index", "dst_neg_index"}
	paths := make([]string, len(names))
	for i, name := range names {
		paths[i] = filepath.Join(out, name+".npy")
	}
	if err := errors.Join(refuseInsideDataset(paths[0]), refuseDatasetFile(dir, paths...)); err != nil {
		return err
	}
	if err := withPlacement(dir, opt, usePlacement); err != nil {
		return err
	}
	hops, err := parseFanouts(fanouts)
	if err != nil {
		return err
	}
	s, err := openStore(dir, *opt)
	if err != nil {
		return err
	}
	defer s.Close()
	src, dst, labels, err := seedEdgesOf(s, arg, *link.labels)
	if err != nil {
		return err
	}
	if mode == topology.TripletNegatives && labels != nil && strings.HasPrefix(arg, "split:") {
		// PyG's triplet loader takes positives without labels: a split of positives only (all
		// labels 1) goes in as such; one with negatives among its seed edges cannot.
		for i, l := range labels {
			if l != 1 {
				return fmt.Errorf("--seed-edges %s with --neg-sampling triplet: seed edge %d has label %d; triplet negatives are drawn for positive seed edges only (labels all 1)", arg, i, l)
			}
		}
		labels = nil
	}
	so.Fanouts = hops
	lo := *link.opt
	sp, err := oneTypeSampler(s, so)
	if err != nil {
		return err
	}
	typed, err := sp.SampleFromEdges("", src, dst, labels, lo)
	if err != nil {
		return err
	}
	nodes, _ := typed.OneType()
	sample := &topology.LinkSample{Sample: *nodes, LinkLabels: typed.LinkLabels}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	write := func(i int, shape []int64, arr []int64) error {
		return ingest.WriteNpy(paths[i], "<i8", shape, int64sAsBytes(arr))
	}
	one := func(a []int64) []int64 { return []int64{int64(len(a))} }
	for i, arr := range [][]int64{sample.Nodes, sample.Row, sample.Col, sample.NodesPerHop, sample.EdgesPerHop} {
		if err := write(i, one(arr), arr); err != nil {
			return err
		}
	}
	for _, p := range paths[5:] { // the link outputs of an earlier run that this one may not write
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	ll := sample.LinkLabels
	if mode == topology.TripletNegatives {
		k := int64(lo.NegAmount)
		for i, w := range []struct {
			shape []int64
			arr   []int64
		}{{one(ll.SrcIndex), ll.SrcIndex}, {one(ll.DstPosIndex), ll.DstPosIndex}, {[]int64{int64(len(src)), k}, ll.DstNegIndex}} {
			if err := write(7+i, w.shape, w.arr); err != nil {
				return err
			}
		}
	} else {
		if err := write(5, []int64{2, int64(len(ll.EdgeLabelIndex[0]))}, append(append([]int64{}, ll.EdgeLabelIndex[0]...), ll.EdgeLabelIndex[1]...)); err != nil {
			return err
		}
		if ll.EdgeLabel != nil {
			if err := write(6, one(ll.EdgeLabel), ll.EdgeLabel); err != nil {
				return err
			}
		}
	}
	fmt.Printf("sampled %d nodes and %d edges from %d seed edges (%d negatives; nodes per hop %v)\n", len(sample.Nodes), len(sample.Row), len(src), len(ll.NegDst), sample.NodesPerHop)
	return nil
}
