package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/ingest"
	"github.com/tierfs/tierfs/internal/bytesize"
	"github.com/tierfs/tierfs/internal/strictjson"
	"github.com/tierfs/tierfs/placement"
	"github.com/tierfs/tierfs/planned"
	"github.com/tierfs/tierfs/topology"
)

func synthCmd(fs *pflag.FlagSet) runFunc {
	// flagged holds the flags' values; only the flags given override a preset.
	flagged := ingest.SynthOptions{TrainFrac: 0.1, ValFrac: 0.05, TestFrac: 0.05}
	fs.Int64Var(&flagged.Nodes, "nodes", 100000, "number of nodes (with --preset: overrides its count, keeping its average degree)")
	fs.Float64Var(&flagged.AvgDegree, "avg-degree", 10, "average in-degree")
	fs.Int64Var(&flagged.Dim, "dim", 128, "feature dimension")
	dtype := fs.String("dtype", "float32", "feature dtype: float32, float16, bfloat16, float64, int8, ...")
	fs.IntVar(&flagged.Classes, "classes", 16, "label classes")
	fs.Uint64Var(&flagged.Seed, "seed", 1, "random seed (same seed, same bytes)")
	fs.Float64Var(&flagged.TrainFrac, "train-frac", 0.1, "fraction of nodes in the train split (negative: no split)")
	fs.Float64Var(&flagged.ValFrac, "val-frac", 0.05, "fraction of nodes in the val split (negative: no split)")
	fs.Float64Var(&flagged.TestFrac, "test-frac", 0.05, "fraction of nodes in the test split (negative: no split)")
	fs.Float64Var(&flagged.DegreeExponent, "degree-exponent", 0, "power-law degree exponent gamma in [1.5, 100], smaller is more skewed (0: R-MAT)")
	fs.Float64Var(&flagged.Locality, "locality", 0, "fraction of edges in [0, 1] drawn inside the source's community")
	fs.Int64Var(&flagged.CommunitySize, "community-size", ingest.DefaultCommunitySize, "ids per community (a block of consecutive ids), with --locality")
	preset := fs.String("preset", "", "shape like a real dataset: "+strings.Join(ingest.SynthPresetNames(), ", ")+" (flags given override its values); heterogeneous: "+strings.Join(ingest.SynthHeteroPresetNames(), ", ")+" (with --scale, --seed, --degree-exponent, --locality, --community-size, --out, --force, --device-path)")
	scale := fs.Float64("scale", 1, "with --preset: the fraction of its node count to make")
	spec := fs.String("spec", "", "a heterogeneous graph described in a JSON file: {\"node_types\": [{\"name\", \"nodes\", \"dim\", \"dtype\", \"classes\", \"train_frac\", ...}], \"edge_types\": [{\"src\", \"rel\", \"dst\", \"avg_degree\"}], \"degree_exponent\", ...} (with --seed, --out, --force, --device-path)")
	report := fs.Bool("report", false, "after writing, print the degree distribution and the nodes per sampled batch (fanouts 25,10 and 15,10,5, batch 1024)")
	fs.StringVar(&flagged.Out, "out", "", "dataset directory to write")
	fs.BoolVar(&flagged.Replace, "force", false, "replace what --out holds (a dataset is swapped out only once the new one is complete)")
	var devs listFlag
	fs.Var(&devs, "device-path", "directory on another device for a feature stripe (repeat per device)")
	return func(pos []string) error {
		given := map[string]bool{}
		fs.Visit(func(f *pflag.Flag) { given[f.Name] = true })
		if flagged.Out == "" {
			return usageErrorf("--out is required")
		}
		if *spec != "" {
			if *preset != "" {
				return fmt.Errorf("--spec %s and --preset %s both describe the graph; give one", *spec, *preset)
			}
			return synthHetero("", *spec, *scale, flagged, devs, given)
		}
		if slices.Contains(ingest.SynthHeteroPresetNames(), *preset) {
			return synthHetero(*preset, "", *scale, flagged, devs, given)
		}
		opt := flagged
		if *preset != "" {
			if given["scale"] && given["nodes"] {
				return fmt.Errorf("--scale %v and --nodes %d both set the node count; give one", *scale, flagged.Nodes)
			}
			var err error
			if opt, err = ingest.SynthPreset(*preset, *scale); err != nil {
				return err
			}
			overrideGiven(&opt, flagged, given)
		} else if given["scale"] {
			return fmt.Errorf("--scale %v needs --preset; without one, set --nodes", *scale)
		}
		var err error
		if opt.DType, err = dataset.ParseDType(*dtype); err != nil {
			return err
		}
		opt.DevicePaths = devs
		if err := withProgressBar(&opt.Progress, func() (*dataset.Manifest, error) { return ingest.Synth(opt) }); err != nil {
			return err
		}
		if *report {
			r, err := ingest.ReportGraph(opt.Out, ingest.ReportOptions{Seed: opt.Seed})
			if err != nil {
				return err
			}
			return r.Write(os.Stdout)
		}
		return nil
	}
}

// synthHetero is `tierfs synth --preset P` of a heterogeneous preset (its types scaled by
// scale) or `tierfs synth --spec FILE` (the graph FILE describes); of the other flags only those
// that apply to every type go with it.
func synthHetero(preset, spec string, scale float64, flagged ingest.SynthOptions, devs []string, given map[string]bool) error {
	what := "the heterogeneous preset " + preset
	if spec != "" {
		what = "--spec " + spec
	}
	var bad []string
	for name := range given {
		switch name {
		case "preset", "scale", "seed", "out", "force", "device-path", "degree-exponent", "locality", "community-size", "spec":
			if spec != "" && name == "scale" {
				bad = append(bad, "--"+name)
			}
		default:
			bad = append(bad, "--"+name)
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return fmt.Errorf("%s with %s: its types set those (give --seed, --degree-exponent, --locality, --community-size; --scale with a preset)", strings.Join(bad, ", "), what)
	}
	var opt ingest.SynthHeteroOptions
	var err error
	if spec != "" {
		opt, err = readSynthSpec(spec)
	} else {
		opt, err = ingest.SynthHeteroPreset(preset, scale)
	}
	if err != nil {
		return err
	}
	opt.Seed, opt.Out, opt.Replace, opt.DevicePaths = flagged.Seed, flagged.Out, flagged.Replace, devs
	if given["degree-exponent"] {
		opt.DegreeExponent = flagged.DegreeExponent
	}
	if given["locality"] {
		opt.Locality = flagged.Locality
	}
	if given["community-size"] || opt.Locality > 0 {
		opt.CommunitySize = flagged.CommunitySize
	}
	return withProgressBar(&opt.Progress, func() (*dataset.Manifest, error) { return ingest.SynthHetero(opt) })
}

// readSynthSpec reads a `tierfs synth --spec` file: ingest.SynthHeteroOptions as JSON, unknown
// keys refused.
func readSynthSpec(path string) (ingest.SynthHeteroOptions, error) {
	var opt ingest.SynthHeteroOptions
	data, err := os.ReadFile(path)
	if err != nil {
		return opt, err
	}
	if err := strictjson.Decode(data, &opt); err != nil {
		return opt, fmt.Errorf("--spec %s: %w", path, err)
	}
	return opt, nil
}

// overrideGiven copies into opt the fields of flagged whose flags were given; the rest keep
// the preset's values.
func overrideGiven(opt *ingest.SynthOptions, flagged ingest.SynthOptions, given map[string]bool) {
	for name, set := range map[string]func(){
		"nodes":           func() { opt.Nodes = flagged.Nodes },
		"avg-degree":      func() { opt.AvgDegree = flagged.AvgDegree },
		"dim":             func() { opt.Dim = flagged.Dim },
		"classes":         func() { opt.Classes = flagged.Classes },
		"train-frac":      func() { opt.TrainFrac = flagged.TrainFrac },
		"val-frac":        func() { opt.ValFrac = flagged.ValFrac },
		"test-frac":       func() { opt.TestFrac = flagged.TestFrac },
		"degree-exponent": func() { opt.DegreeExponent = flagged.DegreeExponent },
		"locality":        func() { opt.Locality = flagged.Locality },
		"community-size":  func() { opt.CommunitySize = flagged.CommunitySize },
	} {
		if given[name] {
			set()
		}
	}
	opt.Seed, opt.Out = flagged.Seed, flagged.Out
}

func ingestCmd(fs *pflag.FlagSet) runFunc {
	opt := ingest.Options{}
	fs.StringVar(&opt.Edges, "edges", "", "edges: .npy of shape (2,E) or (E,2), a CSV/TSV text edge list (.csv .tsv .txt .edges .el), or Parquet / Arrow IPC with two integer columns (src, dst)")
	edgeColumns := fs.String("edge-columns", "", "SRC,DST: the source and destination columns of a table edge list, by name or 0-based index (default src,dst or source,target, else the first two)")
	fs.StringVar(&opt.Features, "features", "", "features: 2-D .npy, or Parquet (fixed-size-list column or one column per dimension)")
	fs.StringVar(&opt.Labels, "labels", "", "labels: 1-D integer .npy")
	fs.StringVar(&opt.SplitsDir, "splits", "", "directory with train.npy, val.npy, test.npy (ids or boolean masks)")
	fs.StringVar(&opt.Out, "out", "", "dataset directory to write")
	fs.StringVar(&opt.GraphBolt, "graphbolt", "", "a DGL GraphBolt on-disk dataset (directory with metadata.yaml; several node or edge types make a heterogeneous dataset) to ingest instead of --edges and the other inputs")
	fs.StringVar(&opt.GraphBoltTask, "graphbolt-task", "", "with --graphbolt: the task (name, or index in metadata.yaml's tasks) whose labels and seeds to ingest (default: the first)")
	fs.BoolVar(&opt.Replace, "force", false, "replace what --out holds (a dataset is swapped out only once the new one is complete)")
	fs.Int64Var(&opt.NumNodes, "num-nodes", 0, "node count (default: feature rows, else largest id + 1)")
	fs.BoolVar(&opt.Undirected, "undirected", false, "add the reverse of every edge")
	fs.BoolVar(&opt.DropSelfLoops, "drop-self-loops", false, "drop edges v -> v")
	fs.BoolVar(&opt.Dedup, "dedup", false, "drop duplicate edges")
	dtype := fs.String("feature-dtype", "", "dtype of .npy features saved as raw void (e.g. bfloat16)")
	storeDType := fs.String("store-dtype", "", "float16 or bfloat16: store the float32 features at that dtype (half the bytes on disk, read and cached; rounded to nearest even, a value float16 cannot hold is an error)")
	fs.BoolVar(&opt.FeaturesInPlace, "features-in-place", false, "read the node features' .npy files (--features, --node-feature) where they are instead of copying them: checksummed at ingest, refused once changed, never written or removed; rows are not block-aligned (a row can cost two block reads)")
	var devs, nodeFeatures, edgeFeatures listFlag
	fs.Var(&devs, "device-path", "directory on another device for a feature stripe (repeat per device)")
	fs.Var(&nodeFeatures, "node-feature", "NAME=FILE: another node feature beside --features (\"x\"): (N, dim) or (N,) .npy, Parquet or Arrow IPC (repeat per feature)")
	fs.Var(&edgeFeatures, "edge-feature", "NAME=FILE: an edge feature (edge_attr, edge weights): (E, dim) or (E,) .npy, one row per edge of --edges in its order (repeat per feature)")
	var edgeSplits listFlag
	fs.Var(&edgeSplits, "edge-split", "SPLIT=SEEDS[,labels=FILE][,neg_dst=FILE][,edge_type=SRC:REL:DST]: seed edges of link prediction (SPLIT train, val or test): SEEDS a (2, n) or (n, 2) integer .npy of (src, dst) ids, labels one per seed, neg_dst (n, k) negative destinations per seed (repeat per split)")
	spec := fs.String("spec", "", "a JSON file describing a heterogeneous graph (node_types, edge_types, edge_splits; the keys of tfs_ingest): `tierfs ingest --spec FILE.json OUT`")
	return func(pos []string) error {
		for _, v := range edgeSplits {
			in, err := ingest.ParseEdgeSplitArg(v)
			if err != nil {
				return fmt.Errorf("--edge-split: %w", err)
			}
			opt.EdgeSplits = append(opt.EdgeSplits, in)
		}
		if *storeDType != "" {
			var err error
			if opt.StoreDType, err = dataset.ParseDType(*storeDType); err != nil {
				return fmt.Errorf("--store-dtype: %w", err)
			}
		}
		if *spec != "" {
			opt.DevicePaths = devs
			return ingestSpec(fs, *spec, pos, opt)
		}
		if len(pos) != 0 {
			return fmt.Errorf("want 0 argument(s) besides flags, got %d (%s); an output directory as an argument goes with --spec", len(pos), strings.Join(pos, " "))
		}
		if opt.Out == "" || (opt.Edges == "" && opt.GraphBolt == "") {
			return usageErrorf("--out and --edges (or --graphbolt) are required")
		}
		for _, list := range []struct {
			flag string
			in   []string
			dst  *[]ingest.FeatureInput
		}{{"--node-feature", nodeFeatures, &opt.NodeFeatures}, {"--edge-feature", edgeFeatures, &opt.EdgeFeatures}} {
			for _, v := range list.in {
				name, path, ok := strings.Cut(v, "=")
				if !ok || name == "" || path == "" {
					return fmt.Errorf("%s %q: want NAME=FILE", list.flag, v)
				}
				*list.dst = append(*list.dst, ingest.FeatureInput{Name: name, Path: path})
			}
		}
		if *dtype != "" {
			var err error
			if opt.FeatureDType, err = dataset.ParseDType(*dtype); err != nil {
				return err
			}
		}
		opt.DevicePaths = devs
		if *edgeColumns != "" {
			cols := strings.Split(*edgeColumns, ",")
			if len(cols) != 2 || cols[0] == "" || cols[1] == "" {
				return fmt.Errorf("--edge-columns %q: want SRC,DST (names or 0-based indexes)", *edgeColumns)
			}
			opt.EdgeColumns = [2]string{cols[0], cols[1]}
		}
		return withProgressBar(&opt.Progress, func() (*dataset.Manifest, error) { return ingest.Ingest(opt) })
	}
}

// ingestSpec is `tierfs ingest --spec FILE.json [OUT]`: the heterogeneous graph FILE.json
// describes (ingest.ParseHeteroSpec), written to OUT (else --out, else the file's "out"), with
// --force and --device-path applying; the flags that name inputs do not go with it.
func ingestSpec(fs *pflag.FlagSet, path string, pos []string, flagged ingest.Options) error {
	var bad []string
	fs.Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "spec", "out", "force", "device-path", "edge-split", "store-dtype":
		default:
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) > 0 {
		return fmt.Errorf("%s with --spec: the spec file describes the inputs (only --out, --force, --device-path, --edge-split and --store-dtype go with it)", strings.Join(bad, ", "))
	}
	if len(pos) > 1 {
		return fmt.Errorf("--spec takes one output directory besides flags, got %d (%s)", len(pos), strings.Join(pos, " "))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--spec: %w", err)
	}
	opt, err := ingest.ParseHeteroSpec(data)
	if err != nil {
		return fmt.Errorf("--spec %s: %w", path, err)
	}
	for _, out := range []string{flagged.Out, positional(pos)} {
		if out == "" {
			continue
		}
		if opt.Out != "" && opt.Out != out {
			return fmt.Errorf("--spec %s: the output is named twice (%s, %s; by the spec's \"out\", --out or OUT); give one", path, opt.Out, out)
		}
		opt.Out = out
	}
	if opt.Out == "" {
		return fmt.Errorf("--spec %s: no output directory: give OUT after the flags", path)
	}
	opt.Replace = opt.Replace || flagged.Replace
	opt.EdgeSplits = append(opt.EdgeSplits, flagged.EdgeSplits...)
	if len(flagged.DevicePaths) > 0 {
		opt.DevicePaths = flagged.DevicePaths
	}
	if flagged.StoreDType != "" {
		if opt.StoreDType != "" && opt.StoreDType != flagged.StoreDType {
			return fmt.Errorf("--spec %s: the store dtype is named twice (%s by the spec's \"store_dtype\", %s by --store-dtype); give one", path, opt.StoreDType, flagged.StoreDType)
		}
		opt.StoreDType = flagged.StoreDType
	}
	return withProgressBar(&opt.Progress, func() (*dataset.Manifest, error) { return ingest.IngestHetero(opt) })
}

func positional(pos []string) string {
	if len(pos) == 0 {
		return ""
	}
	return pos[0]
}

// withProgressBar runs build (synth or ingest) with a progress bar in *progress and prints what
// it made.
func withProgressBar(progress *func(stage string, done, total int64), build func() (*dataset.Manifest, error)) error {
	bar := newProgressBar()
	*progress = bar.update
	m, err := build()
	bar.done()
	if err == nil {
		printInfo(m)
	}
	return err
}

func infoCmd(fs *pflag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print the manifest as JSON")
	return func(pos []string) error {
		m, err := dataset.Load(pos[0])
		if err != nil {
			return err
		}
		return printReport(*asJSON, m, printInfo)
	}
}

// printTypes prints every node type and edge type of a dataset of several.
func printTypes(m *dataset.Manifest) {
	for i := range m.NodeTypes {
		nt := &m.NodeTypes[i]
		fmt.Printf("node type   %s: %d nodes\n", nt.Name, nt.Count)
		printNodeFeatures(nt, "  ")
		printLabels(nt, "  ")
	}
	for i := range m.EdgeTypes {
		et := &m.EdgeTypes[i]
		fmt.Printf("edge type   %s: %d edges (CSC over %s, %s indices)\n", et.Key(), et.Count, et.Dst, et.Indices.DType)
		printEdgeFeatures(et, "  ")
	}
}

// printNodeFeatures prints a node type's features, each line after indent.
func printNodeFeatures(nt *dataset.NodeType, indent string) {
	for _, f := range nt.Features {
		var bytes int64
		for k := range f.Files {
			bytes += f.ContentBytesOfFile(k)
		}
		layout := "rows packed back to back"
		if f.RowsPerBlock > 0 {
			layout = fmt.Sprintf("%d rows per block", f.RowsPerBlock)
		}
		if f.InPlace {
			layout = fmt.Sprintf("in place: %s, rows packed from byte %d", f.Files[0], f.DataOffset)
		}
		fmt.Printf("%sfeature     %s: %d x %s (%d B rows, %s, %d file(s), %s)\n", indent, f.Name, f.Dim, f.DType, f.RowBytes, layout, len(f.Files), bytesize.Format(bytes))
	}
}

// printLabels prints a node type's labels and splits, each line after indent.
func printLabels(nt *dataset.NodeType, indent string) {
	if l := nt.Labels; l != nil {
		fmt.Printf("%slabels      %d classes\n", indent, l.NumClasses)
	}
	for _, name := range []string{"train", "val", "test"} {
		if s, ok := nt.Splits[name]; ok {
			fmt.Printf("%ssplit       %-5s %d nodes\n", indent, name, s.Count)
		}
	}
}

// printEdgeFeatures prints an edge type's features and edge splits, each line after indent.
func printEdgeFeatures(et *dataset.EdgeType, indent string) {
	for _, f := range et.Features {
		shape := fmt.Sprintf("%d x %s", f.Dim, f.DType)
		if f.Scalar {
			shape = string(f.DType) + " scalar"
		}
		fmt.Printf("%sedge feat.  %s: %s (%d B rows, by edge id)\n", indent, f.Name, shape, f.RowBytes)
	}
	for _, name := range dataset.EdgeSplitNames {
		s, ok := et.Splits[name]
		if !ok {
			continue
		}
		more := ""
		if s.Labels != nil {
			more += fmt.Sprintf(", %s labels", s.Labels.DType)
		}
		if s.NegDst != nil {
			more += fmt.Sprintf(", %d negative destinations each", s.NegDst.PerSeed)
		}
		fmt.Printf("%sedge split  %-5s %d seed edges%s\n", indent, name, s.Seeds.Count, more)
	}
}

// printJSON writes v to stdout as indented JSON.
func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printReport prints a command's report r: as JSON with asJSON (--json), else as text.
func printReport[R any](asJSON bool, r R, text func(R)) error {
	if asJSON {
		return printJSON(r)
	}
	text(r)
	return nil
}

func printInfo(m *dataset.Manifest) {
	fmt.Printf("dataset     %s (format v%d, %d-byte blocks, made by %s %s)\n", m.Dir(), m.Version, m.BlockSize, m.Created.By, m.Created.Time)
	if m.IsTyped() {
		printTypes(m)
	} else {
		nt := m.Nodes()
		fmt.Printf("nodes       %d\n", nt.Count)
		if et := m.Edges(); et != nil {
			fmt.Printf("edges       %d (CSC, %s indices)\n", et.Count, et.Indices.DType)
		}
		printNodeFeatures(nt, "")
		if et := m.Edges(); et != nil {
			printEdgeFeatures(et, "")
		}
		printLabels(nt, "")
	}
	var total, inPlace int64
	for _, f := range m.Files {
		total += f.Bytes
		if f.InPlace {
			inPlace++
		}
	}
	fmt.Printf("on disk     %s in %d files, xxhash64 per block", bytesize.Format(total), len(m.Files))
	if inPlace > 0 {
		fmt.Printf(" (%d of them read in place, not the dataset's)", inPlace)
	}
	fmt.Println()
	if _, err := os.Stat(m.Path(placement.FileName)); err == nil {
		if in, err := placement.Saved(m.Dir()); err == nil {
			fmt.Printf("placement   saved: %s policy, fanouts %v, batch size %d, GPU %s, host %s\n", in.Policy, in.Fanouts, in.BatchSize,
				bytesize.Format(in.Budget.GPUBytes), bytesize.Format(in.Budget.HostBytes))
		} else {
			fmt.Printf("placement   unreadable: %v\n", err)
		}
	}
	if err := cuda.Load(); err != nil {
		fmt.Printf("gpu path    unavailable: %v (gathers are served from the host)\n", err)
	} else if d, err := cuda.Info(0); err == nil {
		fmt.Printf("gpu path    %s, %d SMs, %s free (shim %s)\n", d.Name, d.SMs, bytesize.Format(int64(d.FreeBytes)), cuda.Path())
	}
	switch err := gpuio.ProbeGPURing(); {
	case err != nil:
		fmt.Printf("gpu-uring   unavailable: %v (--io-backend gpu-uring falls back to CPU submission)\n", err)
	case cuda.Load() != nil:
		fmt.Printf("gpu-uring   ring ok (NO_MMAP + SQPOLL), but no GPU: --io-backend gpu-uring falls back to CPU submission\n")
	default:
		fmt.Printf("gpu-uring   available (--io-backend gpu-uring: device gathers' reads submitted by the GPU)\n")
	}
}

func verifyCmd(fs *pflag.FlagSet) runFunc {
	return func(pos []string) error {
		// What killed writes to the dataset left beside it goes first (a dataset a killed write had
		// moved aside is put back); a live writer's files are left alone.
		did, err := dataset.CleanStale(pos[0])
		// So does what a killed `place` (its temporary file) and a killed `plan-epochs` (packed
		// files no index lists, in the default plan directory) left.
		pdid, perr := placement.CleanStale(pos[0])
		edid, eerr := planned.CleanEpochPlan(defaultPlanDir(pos[0]))
		for _, d := range slices.Concat(did, pdid, edid) {
			fmt.Println("cleaned:", d)
		}
		if err := errors.Join(err, perr, eerr); err != nil {
			fmt.Fprintf(os.Stderr, "tierfs verify: warning: %s\n", userMessage(err))
		}
		m, err := dataset.Load(pos[0])
		if err != nil {
			return err
		}
		bar := newProgressBar()
		problems, err := m.Verify(20, func(done, total int64) { bar.update("verify", done, total) })
		bar.done()
		if err != nil {
			return err
		}
		total := m.TotalBytes()
		if len(problems) > 0 {
			for _, p := range problems {
				fmt.Println(p)
			}
			return fmt.Errorf("%s: %d problem(s) found: %w", m.Dir(), len(problems), dataset.ErrCorrupt)
		}
		fmt.Printf("ok: %d files, %s, every block matches its checksum\n", len(m.Files), bytesize.Format(total))
		return nil
	}
}

func gatherCmd(fs *pflag.FlagSet) runFunc {
	opt := storeFlags(fs)
	idsPath := fs.String("ids", "", "node ids: .npy of any integer dtype, or split:NAME for a split of the dataset (split:test)")
	out := fs.String("out", "", "output .npy of shape (len(ids), dim)")
	usePlacement := placementFlag(fs)
	return func(pos []string) error {
		if *idsPath == "" || *out == "" {
			return usageErrorf("--ids and --out are required")
		}
		if err := refuseInsideDataset(*out); err != nil {
			return err
		}
		if err := refuseDatasetFile(pos[0], *out); err != nil {
			return err
		}
		if err := withPlacement(pos[0], opt, *usePlacement); err != nil {
			return err
		}
		s, err := openStore(pos[0], *opt)
		if err != nil {
			return err
		}
		defer s.Close()
		ids, err := readIDs(s, *idsPath)
		if err != nil {
			return err
		}
		dst := make([]byte, int64(len(ids))*s.RowBytes())
		before := s.Stats().IO
		if err := s.Gather(ids, dst); err != nil {
			return err
		}
		printIO(os.Stderr, before, s.Stats().IO)
		f := s.Feature()
		if err := ingest.WriteNpy(*out, ingest.NpyDescr(f.DType), []int64{int64(len(ids)), f.Dim}, dst); err != nil {
			return err
		}
		fmt.Printf("wrote %d rows x %d %s (%s) to %s\n", len(ids), f.Dim, f.DType, bytesize.Format(int64(len(dst))), *out)
		return nil
	}
}

// refuseInsideDataset refuses an output file in a dataset's directory, where it could replace or
// shadow one of the dataset's files.
func refuseInsideDataset(out string) error {
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	dir := filepath.Dir(abs)
	if _, err := os.Stat(filepath.Join(dir, dataset.ManifestName)); err == nil {
		return fmt.Errorf("--out %s is inside the dataset %s; write it elsewhere", out, dir)
	}
	return nil
}

// refuseDatasetFile refuses an output file that is one of the dataset dir's own files outside
// its directory: a feature stripe on another device, or a feature file it reads in place.
func refuseDatasetFile(dir string, outs ...string) error {
	m, err := dataset.Load(dir)
	if err != nil {
		return nil // Open reports it
	}
	for _, out := range outs {
		st, err := os.Stat(out)
		abs, _ := filepath.Abs(out)
		for _, f := range m.Files {
			p := m.Path(f.Path)
			fst, ferr := os.Stat(p)
			if p == abs || (err == nil && ferr == nil && os.SameFile(st, fst)) {
				what := "a file of the dataset"
				if f.InPlace {
					what = "the feature file the dataset reads in place"
				}
				return fmt.Errorf("--out %s is %s %s; write it elsewhere", out, what, dir)
			}
		}
	}
	return nil
}

// openToSample opens the store of dir for sampling (following its saved placement when asked),
// with the fanouts and seeds of the command's flags.
func openToSample(dir string, opt *featurestore.Options, usePlacement bool, fanouts, seedsArg string) (*featurestore.Store, []int, []int64, error) {
	if err := withPlacement(dir, opt, usePlacement); err != nil {
		return nil, nil, nil, err
	}
	hops, err := parseFanouts(fanouts)
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := openStore(dir, *opt)
	if err != nil {
		return nil, nil, nil, err
	}
	seeds, err := readIDs(s, seedsArg)
	if err != nil {
		s.Close()
		return nil, nil, nil, err
	}
	return s, hops, seeds, nil
}

func sampleCmd(fs *pflag.FlagSet) runFunc {
	opt := storeFlags(fs)
	var sf seedFlags
	sf.register(fs, "", "sample around seed edges")
	seedsPath, seedEdges, fanouts, link := sf.seeds, sf.seedEdges, sf.fanouts, sf.link
	replace := fs.Bool("replace", false, "sample with replacement")
	seed := fs.Uint64("seed", 0, "random seed")
	out := fs.String("out", "", "directory for nodes.npy, row.npy, col.npy, nodes_per_hop.npy, edges_per_hop.npy (and with --seed-edges edge_label_index.npy, edge_label.npy, or src_index.npy, dst_pos_index.npy, dst_neg_index.npy for triplets)")
	usePlacement := placementFlag(fs)
	return func(pos []string) error {
		if (*seedsPath == "") == (*seedEdges == "") || *out == "" {
			return usageErrorf("--out and one of --seeds or --seed-edges are required")
		}
		if *seedEdges != "" {
			return sampleEdges(pos[0], opt, *usePlacement, *fanouts, *seedEdges, link, topology.SampleOptions{Replace: *replace, Seed: *seed}, *out)
		}
		if set := link.given(fs); set != "" {
			return fmt.Errorf("%s goes with --seed-edges (sampling around seed edges)", set)
		}
		names := []string{"nodes", "row", "col", "nodes_per_hop", "edges_per_hop"}
		paths := make([]string, len(names))
		for i, name := range names {
			paths[i] = filepath.Join(*out, name+".npy")
		}
		// The outputs share a directory: one is inside a dataset exactly when all are.
		if err := errors.Join(refuseInsideDataset(paths[0]), refuseDatasetFile(pos[0], paths...)); err != nil {
			return err
		}
		s, hops, seeds, err := openToSample(pos[0], opt, *usePlacement, *fanouts, *seedsPath)
		if err != nil {
			return err
		}
		defer s.Close()
		sample, err := sampleOnce(s, seeds, topology.SampleOptions{Fanouts: hops, Replace: *replace, Seed: *seed})
		if err != nil {
			return err
		}
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
		for i, arr := range [][]int64{sample.Nodes, sample.Row, sample.Col, sample.NodesPerHop, sample.EdgesPerHop} {
			if err := ingest.WriteNpy(paths[i], "<i8", []int64{int64(len(arr))}, int64sAsBytes(arr)); err != nil {
				return err
			}
		}
		fmt.Printf("sampled %d nodes and %d edges from %d seeds (nodes per hop %v)\n", len(sample.Nodes), len(sample.Row), len(seeds), sample.NodesPerHop)
		return nil
	}
}

// readIDs reads ids from a .npy file, or from the store's split NAME for "split:NAME".
func readIDs(s *featurestore.Store, arg string) ([]int64, error) {
	if name, ok := strings.CutPrefix(arg, "split:"); ok {
		return s.Session().Split(s.NodeType(), name)
	}
	return ingest.ReadNpyInt64s(arg)
}

// printIO writes one line about the disk reads between two IO snapshots: reads, bytes read for
// bytes requested (read amplification) and the bytes read only to bridge gaps.
func printIO(w io.Writer, before, after gpuio.Stats) {
	d := gpuio.Stats{Reads: after.Reads - before.Reads, BytesRead: after.BytesRead - before.BytesRead,
		BytesRequested: after.BytesRequested - before.BytesRequested, GapBytes: after.GapBytes - before.GapBytes}
	fmt.Fprintf(w, "disk: %d reads, %d bytes read for %d requested (read amplification %.2f, %d bytes of bridged gaps; %d-byte alignment, gap %d)\n",
		d.Reads, d.BytesRead, d.BytesRequested, d.ReadAmplification(), d.GapBytes, after.BlockSize, after.CoalesceGap)
}
