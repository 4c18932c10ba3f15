package ingest

import (
	"fmt"
	"path"
	"path/filepath"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/internal/wfs"
)

// typeWriter writes the files of one type into a dataset being written (w, by writeDataset): a
// node type's features, labels and splits, or an edge type's topology and edge features. Ingest
// and Synth write their one node type and edge type with it, IngestHetero and SynthHetero every
// type. files collects what Commit checksums, stripes what Abort removes (stripes on other
// devices are claimed before they are created).
type typeWriter struct {
	w           *dataset.Writing
	devicePaths []string
	progress    func(string, int64, int64)
	files       []string
	stripes     []string
}

// datasetWrite is what writeDataset needs besides the types: where the dataset goes, and what
// its manifest records of how it was made.
type datasetWrite struct {
	fs          wfs.FS // what every file is written through (nil: the operating system's)
	out         string
	replace     bool // replace what out holds; else such an out is refused
	devicePaths []string
	progress    func(string, int64, int64)
	by          string   // Created.By: "tierfs ingest", "tierfs synth"
	args        []string // Created.Args
	// checksumProgress, when set, reports the checksumming of in-place features at commit.
	checksumProgress func(done, total int64)
}

// writeDataset writes one dataset, crash-safe, the way every writer of this package does: it
// begins the dataset in d.out (dataset.Begin: staged beside it, an occupied out refused unless
// d.replace), lets write fill a new manifest through a typeWriter over the staging directory,
// then commits the files the typeWriter collected (checksums, the manifest's hash and version)
// and publishes the dataset whole. On any error nothing is published and what was written,
// stripes on other devices included, is removed.
func writeDataset(d datasetWrite, write func(tw *typeWriter, m *dataset.Manifest) error) (*dataset.Manifest, error) {
	w, err := dataset.Begin(d.fs, d.out, d.replace)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	tw := &typeWriter{w: w, devicePaths: d.devicePaths, progress: d.progress}
	published := false
	defer func() {
		if !published {
			w.Abort(tw.stripes)
		}
	}()
	m := w.Manifest()
	if err := write(tw, m); err != nil {
		return nil, err
	}
	report(d.progress, "commit", 0, 1)
	if err := dataset.CommitProgress(m, tw.files, d.by, d.args, d.checksumProgress); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	if err := w.Publish(m); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	published = true
	report(d.progress, "commit", 1, 1)
	return m, nil
}

// nodeInputs are one node type's opened inputs, checked against its count.
type nodeInputs struct {
	features []namedSource // the first is the type's default
	labels   string        // labels .npy, or ""
	splits   map[string]splitInput
	inPlace  map[string]dataset.FeatureSpec // features used where they are, by name
}

// mkdir creates the directory of a type's files (typeDir, inside the dataset directory).
func (tw *typeWriter) mkdir(typeDir string) error {
	if typeDir == "" {
		return nil
	}
	if err := tw.w.FS.MkdirAll(filepath.Join(tw.w.Dir, typeDir), 0o755); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	return nil
}

// feature writes the feature in of count rows into typeDir (stripes tagged tag on other
// devices; see newFeatureSpec), write streaming its input rows into the writer, which converts
// them to the dtype they are stored at (storeAs; where names a row in its errors).
func (tw *typeWriter) feature(typeDir, tag string, in namedSource, count int64, where func(int64) string, write func(rowWriter) error) (dataset.FeatureSpec, error) {
	sp, err := newFeatureSpec(tw.w.Dest, typeDir, tag, in.in.Name, in.src, count, tw.devicePaths, tw.w.Nonce)
	if err != nil {
		return sp, err
	}
	sp.Metadata, sp.SamplingGraph = in.in.Metadata, in.in.SamplingGraph
	if err := tw.w.Claim(sp.Files); err != nil {
		return sp, fmt.Errorf("ingest: %w", err)
	}
	tw.stripes = append(tw.stripes, sp.Files...)
	fw, err := dataset.NewFeatureWriter(tw.w.FS, tw.w.Dir, &sp)
	if err != nil {
		return sp, fmt.Errorf("ingest: %w", err)
	}
	var rw rowWriter = fw
	if in.src.store != "" {
		rw = &halfWriter{fw: fw, store: in.src.store, dim: in.src.dim, what: in.what(), where: where}
	}
	err = write(rw)
	if cerr := fw.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("ingest: %w", cerr)
	}
	tw.files = append(tw.files, sp.Files...)
	return sp, err
}

// nodeType writes the features, labels and splits of nt (its Count set) into typeDir; tagPrefix
// prefixes the features' names in the names of stripes on other devices.
func (tw *typeWriter) nodeType(nt *dataset.NodeType, typeDir, tagPrefix string, in nodeInputs) error {
	if err := tw.mkdir(typeDir); err != nil {
		return err
	}
	for _, f := range in.features {
		if sp, ok := in.inPlace[f.in.Name]; ok {
			nt.Features = append(nt.Features, sp)
			tw.files = append(tw.files, sp.Files...)
			continue
		}
		sp, err := tw.feature(typeDir, tagPrefix+f.in.Name, f, nt.Count, rowsOf, func(fw rowWriter) error {
			return f.src.writeTo(fw, tw.progress)
		})
		if err != nil {
			return err
		}
		nt.Features = append(nt.Features, sp)
	}
	if in.labels != "" {
		l, err := writeLabels(tw.w.FS, tw.w.Dir, typeDir, in.labels, nt.Count, tw.progress)
		if err != nil {
			return err
		}
		nt.Labels = l
		tw.files = append(tw.files, l.File)
	}
	for _, name := range splitNames {
		s, ok := in.splits[name]
		if !ok {
			continue
		}
		ids, err := writeSplit(tw.w.FS, tw.w.Dir, typeDir, name, s, nt.Count, tw.progress)
		if err != nil {
			return err
		}
		if nt.Splits == nil {
			nt.Splits = map[string]dataset.IDsSpec{}
		}
		nt.Splits[name] = ids
		tw.files = append(tw.files, ids.File)
	}
	return nil
}

// edgeType builds the topology of edges (edgesPath names it in errors; see buildTopology for
// numNodes and topt) and writes features, one row per input edge, in edge id order. With
// topt.inputEdgeIDs (and not dedup) it also writes InputEdgeIDFeature when the edge ids are
// not the input's positions. It returns the edge type and the node count.
func (tw *typeWriter) edgeType(edges edgeSource, edgesPath string, numNodes int64, topt topologyOptions, features []namedSource, tagPrefix string) (dataset.EdgeType, int64, error) {
	keepInputIDs := topt.inputEdgeIDs && !topt.dedup
	if len(features) > 0 || keepInputIDs {
		topt.orderPath = filepath.Join(tw.w.Dir, ".edge-order.tmp")
	}
	topo, err := buildTopology(tw.w.FS, tw.w.Dir, edges, numNodes, topt)
	if err != nil {
		return dataset.EdgeType{}, 0, err
	}
	defer topo.order.release()
	et := topo.et
	tw.files = append(tw.files, et.Indptr.File, et.Indices.File)
	if err := checkEdgeRows(features, topo.inputEdges, edgesPath); err != nil {
		return et, 0, err
	}
	for _, ef := range features {
		dir, tag := topt.typeDir, tagPrefix+ef.in.Name
		if topt.nodeFeatureNames[ef.in.Name] {
			dir, tag = path.Join(dir, sharedNameDir), "edge:"+tag
			if err := tw.mkdir(dir); err != nil {
				return et, 0, err
			}
		}
		where := func(p int64) string { return fmt.Sprintf("edge id %d (input row %d)", p, topo.order.ids[p]) }
		sp, err := tw.feature(dir, tag, ef, et.Count, where, func(fw rowWriter) error {
			return writeEdgeFeature(fw, ef, topo.order.ids, tw.progress)
		})
		if err != nil {
			return et, 0, err
		}
		et.Features = append(et.Features, sp)
	}
	if keepInputIDs && !topo.order.isIdentity() {
		// In the dataset's directory, never striped: it is read a batch's edges at a time.
		ids := namedSource{FeatureInput{Name: InputEdgeIDFeature}, &featureSource{dtype: dataset.Int64, dim: 1, scalar: true}}
		local := typeWriter{w: tw.w, progress: tw.progress}
		sp, err := local.feature(topt.typeDir, tagPrefix+InputEdgeIDFeature, ids, et.Count, rowsOf, func(fw rowWriter) error {
			return writeInputEdgeIDs(fw, topo.order.ids)
		})
		tw.files = append(tw.files, local.files...)
		tw.stripes = append(tw.stripes, local.stripes...)
		if err != nil {
			return et, 0, err
		}
		et.Features = append(et.Features, sp)
	}
	return et, topo.numNodes, nil
}
