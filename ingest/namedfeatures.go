package ingest

import (
	"encoding/json"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/internal/wfs"
)

// FeatureInput is one named feature of Options.NodeFeatures or Options.EdgeFeatures.
type FeatureInput struct {
	Name string // the feature's name in the dataset: letters, digits, '_', '-', '.'; not "" or starting with '.'
	// Path is a 2-D .npy (rows, dim), or a 1-D .npy (rows,) for one value a row (edge weights,
	// gathered as a 1-D array); node features may also be Parquet or Arrow IPC, as Features.
	Path  string
	DType dataset.DType // as Options.FeatureDType, for this input
	// Metadata is kept with the feature as given (dataset.FeatureSpec.Metadata: GraphBolt's
	// num_categories, a user's keys).
	Metadata map[string]json.RawMessage `json:"-"`
	// SamplingGraph marks an attribute of the graph for sampling (dataset.FeatureSpec.SamplingGraph:
	// GraphBolt's graph.feature_data).
	SamplingGraph bool `json:"-"`
}

// InputEdgeIDFeature names the int64 scalar edge feature ingest writes where an edge type's
// edge ids (CSC positions) differ from the positions of its edges in the input: row p holds the
// input position of edge id p (the reverse of an undirected input's edge i holds i too). An
// edge type without it has edge ids equal to input positions, or an input order not known
// (Dedup, synth). Users cannot name an edge feature so.
const InputEdgeIDFeature = "input_edge_id"

// maxFeatureNameLen bounds feature names (they become parts of file names).
const maxFeatureNameLen = 64

// checkFeatureName refuses a name that cannot name a feature and its files.
func checkFeatureName(of, name string) error {
	if name == "" || len(name) > maxFeatureNameLen || name[0] == '.' {
		return fmt.Errorf("ingest: %s feature name %q: want 1 to %d characters, not starting with '.'", of, name, maxFeatureNameLen)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Errorf("ingest: %s feature name %q: %q is not allowed (letters, digits, '_', '-', '.')", of, name, r)
		}
	}
	return nil
}

// namedSource is an opened FeatureInput.
type namedSource struct {
	in  FeatureInput
	src *featureSource
}

// openNamedFeatures checks the names of opt's features (unique among the node features, "x"
// taken by Features, and among the edge features; a node and an edge feature may share one, as
// GraphBolt's feat of both) and opens every input's header.
func openNamedFeatures(opt *Options) (node, edge []namedSource, err error) {
	names := map[string]string{}
	if opt.Features != "" {
		names[featureName] = "node"
	}
	open := func(of string, ins []FeatureInput) ([]namedSource, error) {
		var out []namedSource
		if of == "edge" {
			clear(names)
		}
		for _, in := range ins {
			if prev, dup := names[in.Name]; dup {
				what := "the " + prev + " feature of that name"
				if in.Name == featureName && opt.Features != "" && prev == "node" {
					what = "the features input (Features), which is named " + featureName
				}
				return nil, fmt.Errorf("ingest: %s feature name %q is used twice (also %s); feature names must be unique", of, in.Name, what)
			}
			names[in.Name] = of
			ns, err := openFeatureInput(of, in)
			if err != nil {
				return nil, err
			}
			out = append(out, ns)
		}
		return out, nil
	}
	if node, err = open("node", opt.NodeFeatures); err != nil {
		return nil, nil, err
	}
	if edge, err = open("edge", opt.EdgeFeatures); err != nil {
		return nil, nil, err
	}
	if len(edge) > 0 {
		switch {
		case opt.Edges == "":
			return nil, nil, fmt.Errorf("ingest: edge feature %q without edges (set Edges)", edge[0].in.Name)
		case opt.Dedup:
			return nil, nil, fmt.Errorf("ingest: edge feature %q with Dedup: which repeated edge's features to keep is ambiguous; remove repeated edges before ingest", edge[0].in.Name)
		}
	}
	return node, edge, nil
}

// openFeatureInput checks the name of in, a feature of kind of ("node" or "edge"), and opens
// its header; an edge feature must be a .npy.
func openFeatureInput(of string, in FeatureInput) (namedSource, error) {
	if err := checkFeatureName(of, in.Name); err != nil {
		return namedSource{}, err
	}
	if of == "edge" && in.Name == InputEdgeIDFeature {
		return namedSource{}, fmt.Errorf("ingest: edge feature name %q is reserved: ingest writes the input position of every edge under it; rename the feature", in.Name)
	}
	if in.Path == "" {
		return namedSource{}, fmt.Errorf("ingest: %s feature %q has no file", of, in.Name)
	}
	src, err := openFeatures(in.Path, in.DType, true)
	if err != nil {
		return namedSource{}, fmt.Errorf("ingest: %s feature %q: %w", of, in.Name, unwrapIngest(err))
	}
	if of == "edge" && src.format != formatNpy {
		return namedSource{}, fmt.Errorf("ingest: edge feature %q: %s is not a .npy file; edge features are read in the dataset's edge order, which needs a .npy (np.save the array)", in.Name, in.Path)
	}
	return namedSource{in, src}, nil
}

// checkEdgeRows refuses an edge feature whose rows are not one per input edge.
func checkEdgeRows(edge []namedSource, inputEdges int64, edgesPath string) error {
	for _, e := range edge {
		if e.src.rows != inputEdges {
			return fmt.Errorf("ingest: edge feature %q: file %s has %d rows, but the edges file %s has %d edges (one row per edge, in its order)",
				e.in.Name, e.in.Path, e.src.rows, edgesPath, inputEdges)
		}
	}
	return nil
}

// writeEdgeFeature writes the rows of an edge feature in edge id order: edge id p (a CSC
// position) gets row order[p] of the input. The input is mapped read-only; rows are copied in
// CSC order, so the input is read at random (through the page cache).
func writeEdgeFeature(fw rowWriter, e namedSource, order []int64, progress func(string, int64, int64)) error {
	a, err := OpenNpy(e.src.path)
	if err != nil {
		return err
	}
	defer a.Close()
	rb := e.src.rowBytes()
	if a.Len()*int64(a.ItemSize) != e.src.rows*rb {
		return fmt.Errorf("ingest: edge feature %q: file %s changed while being read", e.in.Name, e.src.path)
	}
	size := a.DataOffset + e.src.rows*rb
	var data []byte
	if e.src.rows > 0 {
		mapped, err := unix.Mmap(int(a.file.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return fmt.Errorf("ingest: edge feature %q: map %s: %w", e.in.Name, e.src.path, err)
		}
		defer unix.Munmap(mapped)
		data = mapped[a.DataOffset:]
	}
	chunkRows := max(1, featureChunkBytes/rb)
	buf := make([]byte, min(chunkRows, max(int64(len(order)), 1))*rb)
	stage := "edge feature " + e.in.Name
	return faultsAsErrors(e.src.path, func() error {
		for p := int64(0); p < int64(len(order)); {
			n := min(chunkRows, int64(len(order))-p)
			for k := int64(0); k < n; k++ {
				r := order[p+k]
				if r < 0 || r >= e.src.rows {
					return fmt.Errorf("ingest: edge feature %q: edge %d has input row %d outside [0, %d)", e.in.Name, p+k, r, e.src.rows)
				}
				copy(buf[k*rb:(k+1)*rb], data[r*rb:(r+1)*rb])
			}
			if err := fw.WriteRows(buf[:n*rb]); err != nil {
				return fmt.Errorf("ingest: %w", err)
			}
			p += n
			report(progress, stage, p, int64(len(order)))
		}
		return nil
	})
}

// writeInputEdgeIDs writes order (the input position of every edge id) as int64 rows.
func writeInputEdgeIDs(fw rowWriter, order []int64) error {
	chunk := int(featureChunkBytes / 8)
	for p := 0; p < len(order); p += chunk {
		rows := order[p:min(p+chunk, len(order))]
		if err := fw.WriteRows(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(rows))), 8*len(rows))); err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
	}
	return nil
}

// edgeOrder is a mapped temporary file of one int64 per edge id: the input edge it came from.
type edgeOrder struct {
	fs   wfs.FS
	path string
	mf   *dataset.MappedFile
	ids  []int64
}

func newEdgeOrder(fsys wfs.FS, path string, edges int64) (*edgeOrder, error) {
	mf, err := dataset.CreateMapped(fsys, path, 8*edges)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	if err := preallocate(fsys, path, 8*edges); err != nil {
		mf.Close()
		fsys.Remove(path)
		return nil, err
	}
	o := &edgeOrder{fs: fsys, path: path, mf: mf}
	if edges > 0 {
		o.ids = unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(mf.Bytes()))), edges)
	}
	return o, nil
}

// isIdentity says whether every edge id is its input position (nil: no order recorded, false).
func (o *edgeOrder) isIdentity() bool {
	if o == nil {
		return false
	}
	for p, r := range o.ids {
		if r != int64(p) {
			return false
		}
	}
	return true
}

// release unmaps and removes the file; later calls do nothing.
func (o *edgeOrder) release() {
	if o == nil || o.mf == nil {
		return
	}
	o.ids = nil
	o.mf.Close()
	o.mf = nil
	o.fs.Remove(o.path)
}
