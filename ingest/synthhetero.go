package ingest

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"path"
	"path/filepath"
	"slices"

	"github.com/cespare/xxhash/v2"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/internal/wfs"
)

// SynthHeteroOptions describes a synthetic heterogeneous graph (SynthHetero).
type SynthHeteroOptions struct {
	NodeTypes   []SynthNodeType `json:"node_types"`
	EdgeTypes   []SynthEdgeType `json:"edge_types"`
	Seed        uint64          `json:"seed"`
	Out         string          `json:"out"`
	Replace     bool            `json:"force"`        // replace what Out holds, as Options.Replace
	FS          wfs.FS          `json:"-"`            // what every file is written through, as SynthOptions.FS
	DevicePaths []string        `json:"device_paths"` // stripes every feature, as HeteroOptions.DevicePaths
	// DegreeExponent, Locality and CommunitySize shape every edge type as SynthOptions's shape
	// the one of Synth.
	DegreeExponent float64                               `json:"degree_exponent"`
	Locality       float64                               `json:"locality"`
	CommunitySize  int64                                 `json:"community_size"`
	Progress       func(stage string, done, total int64) `json:"-"`
}

// SynthNodeType is one node type of a synthetic graph: Nodes nodes, a feature "x" of Dim
// values of DType (Dim 0: none), and with Classes > 0 labels and splits as Synth makes them.
type SynthNodeType struct {
	Name      string        `json:"name"`
	Nodes     int64         `json:"nodes"`
	Dim       int64         `json:"dim"`
	DType     dataset.DType `json:"dtype"`   // default float32
	Classes   int           `json:"classes"` // 0: no labels or splits
	TrainFrac float64       `json:"train_frac"`
	ValFrac   float64       `json:"val_frac"` // fractions as SynthOptions's (defaults 0.1, 0.05, 0.05)
	TestFrac  float64       `json:"test_frac"`
}

// SynthEdgeType is one edge type of a synthetic graph: round(count(Dst) * AvgDegree) edges.
type SynthEdgeType struct {
	Src       string  `json:"src"`
	Rel       string  `json:"rel"`
	Dst       string  `json:"dst"`
	AvgDegree float64 `json:"avg_degree"` // edges per destination node
}

// SynthHetero writes a deterministic synthetic heterogeneous graph to opt.Out. Every node type
// is made as Synth makes its one (features around class centroids, labels, splits), each from
// seeds of its own; every edge type by Synth's generator (R-MAT, or the power law with
// DegreeExponent) over max(count(Src), count(Dst)) ids, source and destination ids then folded
// into their types' counts (id mod count), with a seed of its own. Files go through the same
// typeWriter as IngestHetero's, so the layout is the same.
func SynthHetero(opt SynthHeteroOptions) (*dataset.Manifest, error) {
	if !hostIsLittleEndian {
		return nil, errors.New("ingest: big-endian hosts are not supported")
	}
	if opt.Out == "" {
		return nil, errors.New("ingest: synth: no output directory (SynthHeteroOptions.Out)")
	}
	if len(opt.NodeTypes) == 0 {
		return nil, errors.New("ingest: synth: no node types")
	}
	count := map[string]int64{}
	for i := range opt.NodeTypes {
		n := &opt.NodeTypes[i]
		if err := dataset.CheckTypeName(fmt.Sprintf("ingest: synth: node type %d:", i), n.Name); err != nil {
			return nil, err
		}
		if _, dup := count[n.Name]; dup {
			return nil, fmt.Errorf("ingest: synth: node type %q is given twice", n.Name)
		}
		if n.Nodes <= 0 || n.Dim < 0 || n.Classes < 0 {
			return nil, fmt.Errorf("ingest: synth: node type %q: nodes %d, dim %d, classes %d; want nodes >= 1, dim and classes >= 0", n.Name, n.Nodes, n.Dim, n.Classes)
		}
		if err := checkNodes(n.Nodes, fmt.Sprintf("synth node type %q", n.Name)); err != nil {
			return nil, err
		}
		count[n.Name] = n.Nodes
	}
	seen := map[string]bool{}
	for i, e := range opt.EdgeTypes {
		key := dataset.EdgeTypeKey(e.Src, e.Rel, e.Dst)
		if _, _, _, err := dataset.ParseEdgeTypeKey(key); err != nil {
			return nil, fmt.Errorf("ingest: synth: edge type %d: %w", i, err)
		}
		if seen[key] {
			return nil, fmt.Errorf("ingest: synth: edge type %q is given twice", key)
		}
		seen[key] = true
		if _, ok := count[e.Src]; !ok {
			return nil, fmt.Errorf("ingest: synth: edge type %q: no node type %q", key, e.Src)
		}
		if _, ok := count[e.Dst]; !ok {
			return nil, fmt.Errorf("ingest: synth: edge type %q: no node type %q", key, e.Dst)
		}
		if e.AvgDegree < 0 || math.IsNaN(e.AvgDegree) || e.AvgDegree*float64(count[e.Dst]) > 1<<50 {
			return nil, fmt.Errorf("ingest: synth: edge type %q: avg degree %v is out of range", key, e.AvgDegree)
		}
	}
	d := datasetWrite{fs: opt.FS, out: opt.Out, replace: opt.Replace, devicePaths: opt.DevicePaths, progress: opt.Progress, by: "tierfs synth", args: opt.args()}
	return writeDataset(d, func(tw *typeWriter, m *dataset.Manifest) error {
		m.Typed = len(opt.NodeTypes) == 1 && len(opt.EdgeTypes) <= 1
		for _, n := range opt.NodeTypes {
			nt, err := synthNodeType(tw, n, opt)
			if err != nil {
				return fmt.Errorf("ingest: synth: node type %q: %w", n.Name, unwrapIngest(err))
			}
			m.NodeTypes = append(m.NodeTypes, nt)
		}
		for _, e := range opt.EdgeTypes {
			key := dataset.EdgeTypeKey(e.Src, e.Rel, e.Dst)
			ns, nd := count[e.Src], count[e.Dst]
			so := SynthOptions{Nodes: max(ns, nd), Seed: typeSeed(opt.Seed, "edge", key),
				DegreeExponent: opt.DegreeExponent, Locality: opt.Locality, CommunitySize: opt.CommunitySize}
			if so.Locality > 0 && so.CommunitySize == 0 {
				so.CommunitySize = DefaultCommunitySize
			}
			edges := int64(math.Round(float64(nd) * e.AvgDegree))
			if so.Nodes < 2 {
				edges = 0 // R-MAT rejects self loops: one id has no edges
			}
			src := &foldedEdges{g: newRMAT(so, edges), ns: ns, nd: nd, key: key}
			topt := topologyOptions{progress: opt.Progress, numSrc: ns, src: e.Src, rel: e.Rel, dst: e.Dst, typeDir: dataset.EdgeTypeDir(e.Src, e.Rel, e.Dst)}
			et, _, err := tw.edgeType(src, src.name(), nd, topt, nil, "")
			if err != nil {
				return err
			}
			m.EdgeTypes = append(m.EdgeTypes, et)
		}
		m.DatasetID = synthDatasetID(opt.args())
		return nil
	})
}

// typeSeed is the seed of one type's draws: the graph's seed mixed with the type's kind and name.
func typeSeed(seed uint64, kind, name string) uint64 {
	return seed ^ xxhash.Sum64String(kind+"\x00"+name)
}

// synthNodeType writes node type n's feature, labels and splits as Synth writes its one type's.
func synthNodeType(tw *typeWriter, n SynthNodeType, opt SynthHeteroOptions) (dataset.NodeType, error) {
	nt := dataset.NodeType{Name: n.Name, Count: n.Nodes}
	typeDir := dataset.NodeTypeDir(n.Name)
	if err := tw.mkdir(typeDir); err != nil {
		return nt, err
	}
	so := SynthOptions{FS: tw.w.FS, Out: filepath.Join(tw.w.Dir, typeDir), Nodes: n.Nodes, Dim: n.Dim, DType: n.DType, Classes: max(n.Classes, 1),
		Seed: typeSeed(opt.Seed, "node", n.Name), TrainFrac: n.TrainFrac, ValFrac: n.ValFrac, TestFrac: n.TestFrac, Progress: opt.Progress}
	if err := so.setDefaults(); err != nil {
		return nt, err
	}
	if n.Dim > 0 {
		spec, err := newFeatureSpec(tw.w.Dest, typeDir, n.Name+":"+featureName, featureName, &featureSource{dtype: so.DType, dim: n.Dim}, n.Nodes, tw.devicePaths, tw.w.Nonce)
		if err != nil {
			return nt, err
		}
		if err := tw.w.Claim(spec.Files); err != nil {
			return nt, fmt.Errorf("ingest: %w", err)
		}
		tw.stripes = append(tw.stripes, spec.Files...)
		fo := so
		fo.Out = tw.w.Dir // spec's files are relative to the dataset directory
		if err := synthFeatures(fo, &spec); err != nil {
			return nt, err
		}
		nt.Features = []dataset.FeatureSpec{spec}
		tw.files = append(tw.files, spec.Files...)
	}
	if n.Classes > 0 {
		labels, splits, err := synthLabelsAndSplits(so)
		if err != nil {
			return nt, err
		}
		labels.File = path.Join(typeDir, labels.File)
		nt.Labels = labels
		tw.files = append(tw.files, labels.File)
		for _, name := range splitNames {
			if s, ok := splits[name]; ok {
				s.File = path.Join(typeDir, s.File)
				splits[name] = s
				tw.files = append(tw.files, s.File)
			}
		}
		nt.Splits = splits
	}
	return nt, nil
}

// foldedEdges are Synth's generated edges over max(ns, nd) ids folded into ns source and nd
// destination ids (id mod count).
type foldedEdges struct {
	g      *rmat
	ns, nd int64
	key    string
}

func (f *foldedEdges) name() string { return "synthetic edge type " + f.key }
func (f *foldedEdges) count() int64 { return f.g.count() }

func (f *foldedEdges) scan(fn func(first int64, src, dst []int64) error) error {
	return f.g.scan(func(first int64, src, dst []int64) error {
		for i := range src {
			src[i] %= f.ns
			dst[i] %= f.nd
		}
		return fn(first, src, dst)
	})
}

func (opt SynthHeteroOptions) args() []string {
	a := []string{fmt.Sprintf("seed=%d", opt.Seed)}
	for _, n := range opt.NodeTypes {
		a = append(a, fmt.Sprintf("node-type=%s:nodes=%d,dim=%d,dtype=%s,classes=%d", n.Name, n.Nodes, n.Dim, n.DType, n.Classes))
	}
	for _, e := range opt.EdgeTypes {
		a = append(a, fmt.Sprintf("edge-type=%s:avg-degree=%g", dataset.EdgeTypeKey(e.Src, e.Rel, e.Dst), e.AvgDegree))
	}
	if opt.DegreeExponent != 0 {
		a = append(a, fmt.Sprintf("degree-exponent=%g", opt.DegreeExponent))
	}
	if opt.Locality != 0 {
		a = append(a, fmt.Sprintf("locality=%g", opt.Locality))
	}
	for _, p := range opt.DevicePaths {
		a = append(a, "device-path="+p)
	}
	return a
}

// synthHeteroPresets are heterogeneous graphs shaped like public ones: node counts, edge counts
// (as average degree per destination node), feature dims and dtypes, classes and split
// fractions of the real dataset (IGBH: its "small" size; counts as published, rounded).
var synthHeteroPresets = map[string]SynthHeteroOptions{
	// ogbn-mag: 736,389 papers (128-dim, 349 venues, split 629,571 / 64,879 / 41,939),
	// 1,134,649 authors, 8,740 institutions, 59,965 fields of study; 5,416,271 cites,
	// 7,145,660 writes, 1,043,998 affiliated_with, 7,505,078 has_topic edges.
	"ogbn-mag": {
		NodeTypes: []SynthNodeType{
			{Name: "paper", Nodes: 736_389, Dim: 128, Classes: 349, TrainFrac: 0.8550, ValFrac: 0.0881, TestFrac: 0.0569},
			{Name: "author", Nodes: 1_134_649},
			{Name: "institution", Nodes: 8_740},
			{Name: "field_of_study", Nodes: 59_965},
		},
		EdgeTypes: []SynthEdgeType{
			{"paper", "cites", "paper", 7.355},
			{"author", "writes", "paper", 9.704},
			{"author", "affiliated_with", "institution", 119.45},
			{"paper", "has_topic", "field_of_study", 125.16},
		},
		DegreeExponent: 2.5,
	},
	// IGBH small: 1,000,000 papers (19 classes, 60/20/20), 1,926,066 authors, 14,751
	// institutes, 190,449 fields of study, 1024-dim features on every type; about 12.07M
	// cites, 4.55M written_by, 0.88M affiliated_to and 7.82M topic edges.
	"igbh-small": {
		NodeTypes: []SynthNodeType{
			{Name: "paper", Nodes: 1_000_000, Dim: 1024, Classes: 19, TrainFrac: 0.6, ValFrac: 0.2, TestFrac: 0.2},
			{Name: "author", Nodes: 1_926_066, Dim: 1024},
			{Name: "institute", Nodes: 14_751, Dim: 1024},
			{Name: "fos", Nodes: 190_449, Dim: 1024},
		},
		EdgeTypes: []SynthEdgeType{
			{"paper", "cites", "paper", 12.07},
			{"paper", "written_by", "author", 2.364},
			{"author", "affiliated_to", "institute", 59.6},
			{"paper", "topic", "fos", 41.05},
		},
		DegreeExponent: 2.7,
	},
	// MAG240M: 121,751,666 papers (768-dim float16, 153 classes, split 1,112,392 / 138,949 /
	// 88,092), 122,383,112 authors, 25,721 institutions; 1,297,748,926 cites, 386,022,720
	// writes, 44,592,586 affiliated_with edges.
	"mag240m": {
		NodeTypes: []SynthNodeType{
			{Name: "paper", Nodes: 121_751_666, Dim: 768, DType: dataset.Float16, Classes: 153, TrainFrac: 0.009137, ValFrac: 0.001141, TestFrac: 0.000724},
			{Name: "author", Nodes: 122_383_112},
			{Name: "institution", Nodes: 25_721},
		},
		EdgeTypes: []SynthEdgeType{
			{"paper", "cites", "paper", 10.66},
			{"author", "writes", "paper", 3.171},
			{"author", "affiliated_with", "institution", 1733.7},
		},
		DegreeExponent: 2.7,
	},
}

// SynthHeteroPresetNames lists the presets SynthHeteroPreset knows, sorted.
func SynthHeteroPresetNames() []string { return slices.Sorted(maps.Keys(synthHeteroPresets)) }

// SynthHeteroPreset returns the options of the heterogeneous preset name with every node count
// times scale (at least 1 node a type; average degrees stay, so edges scale too). Out and Seed
// are left zero.
func SynthHeteroPreset(name string, scale float64) (SynthHeteroOptions, error) {
	p, err := presetOf(synthHeteroPresets, "heterogeneous ", name, scale, func(SynthHeteroOptions) string { return "" })
	if err != nil {
		return SynthHeteroOptions{}, err
	}
	p.NodeTypes = slices.Clone(p.NodeTypes)
	p.EdgeTypes = slices.Clone(p.EdgeTypes)
	for i := range p.NodeTypes {
		p.NodeTypes[i].Nodes = max(1, int64(math.Round(float64(p.NodeTypes[i].Nodes)*scale)))
	}
	return p, nil
}
