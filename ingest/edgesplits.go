package ingest

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/internal/wfs"
)

// EdgeSplitInput is one split of an edge type's seed edges for link prediction (format version
// 6, dataset.EdgeSplit): PyG's RandomLinkSplit edge_label_index and edge_label, OGB's edge split
// (source_node, target_node, target_node_neg), a GraphBolt link task's seeds and labels.
type EdgeSplitInput struct {
	// EdgeType is the edge type's "src:rel:dst"; "" names the graph's one edge type.
	EdgeType string `json:"edge_type"`
	Split    string `json:"split"` // "train", "val" or "test"
	// Seeds is an integer .npy of shape (2, n) (PyG's edge_label_index: src ids, then dst ids)
	// or (n, 2) (one pair a row); (2, 2) is read as (2, n). Src ids are of the edge type's
	// source node type, dst ids of its destination node type.
	Seeds string `json:"seeds"`
	// Labels is an optional 1-D .npy of n labels: integers are stored as int64, floats and
	// bools as float32.
	Labels string `json:"labels"`
	// NegDst is an optional integer .npy of shape (n, k): k negative destination candidates
	// per seed (OGB's target_node_neg), ids of the destination node type.
	NegDst string `json:"neg_dst"`
}

// openedEdgeSplit is an EdgeSplitInput whose headers were checked.
type openedEdgeSplit struct {
	in      EdgeSplitInput
	count   int64 // seed pairs
	blocked bool  // seeds hold every src id, then every dst id (else (src, dst) pairs)
	labels  dataset.DType
	perSeed int64
}

// what names the split in errors.
func (s *openedEdgeSplit) what() string {
	if s.in.EdgeType == "" {
		return fmt.Sprintf("edge split %q", s.in.Split)
	}
	return fmt.Sprintf("edge type %q edge split %q", s.in.EdgeType, s.in.Split)
}

// openEdgeSplits checks the headers of every split: its name, that its edge type is one of
// edgeTypes (keys; a one-type graph also takes ""), that no (edge type, split) repeats, the
// shapes and dtypes of its files, and that the labels and negatives have one row per seed.
func openEdgeSplits(list []EdgeSplitInput, edgeTypes []string) ([]openedEdgeSplit, error) {
	seen := map[[2]string]bool{}
	var out []openedEdgeSplit
	for _, in := range list {
		s := openedEdgeSplit{in: in}
		if in.EdgeType == "" && len(edgeTypes) == 1 {
			s.in.EdgeType = edgeTypes[0]
		}
		if !slices.Contains(dataset.EdgeSplitNames, in.Split) {
			return nil, fmt.Errorf("ingest: %s: unknown split; edge splits are named %v", s.what(), dataset.EdgeSplitNames)
		}
		if !slices.Contains(edgeTypes, s.in.EdgeType) {
			return nil, fmt.Errorf("ingest: %s: the graph has no such edge type (edge types: %s)", s.what(), listOrNone(edgeTypes))
		}
		key := [2]string{s.in.EdgeType, in.Split}
		if seen[key] {
			return nil, fmt.Errorf("ingest: %s is given twice", s.what())
		}
		seen[key] = true
		if in.Seeds == "" {
			return nil, fmt.Errorf("ingest: %s has no seeds file", s.what())
		}
		var err error
		if s.count, s.blocked, err = openPairs(in.Seeds, s.what()+" seeds"); err != nil {
			return nil, err
		}
		if in.Labels != "" {
			a, err := OpenNpy(in.Labels)
			if err != nil {
				return nil, fmt.Errorf("ingest: %s labels: %w", s.what(), unwrapIngest(err))
			}
			a.Close()
			switch {
			case a.Kind == 'i' || a.Kind == 'u':
				s.labels = dataset.Int64
			case a.Kind == 'b' || a.Kind == 'f' && (a.ItemSize == 4 || a.ItemSize == 8):
				s.labels = dataset.Float32
			default:
				return nil, fmt.Errorf("ingest: %s labels file %s has dtype %s; want integers, float32/float64 or bools", s.what(), in.Labels, a.Descr)
			}
			if len(a.Shape) != 1 || a.Shape[0] != s.count {
				return nil, fmt.Errorf("ingest: %s labels file %s has shape %s; want one label per seed edge (%d,) as the seeds file %s holds", s.what(), in.Labels, shapeString(a.Shape), s.count, in.Seeds)
			}
		}
		if in.NegDst != "" {
			a, err := OpenNpy(in.NegDst)
			if err != nil {
				return nil, fmt.Errorf("ingest: %s negatives: %w", s.what(), unwrapIngest(err))
			}
			a.Close()
			if a.Kind != 'i' && a.Kind != 'u' || len(a.Shape) != 2 || a.Shape[0] != s.count || a.Shape[1] < 1 || a.FortranOrder {
				return nil, fmt.Errorf("ingest: %s negatives file %s is %s of shape %s; want C-order integer node ids of shape (%d, k), k >= 1 candidates per seed edge of %s", s.what(), in.NegDst, a.Descr, shapeString(a.Shape), s.count, in.Seeds)
			}
			s.perSeed = a.Shape[1]
		}
		out = append(out, s)
	}
	return out, nil
}

// openPairs checks the header of an integer .npy of (src, dst) pairs (what names it in errors)
// and returns the number of pairs and whether the file holds every src id, then every dst id
// (shape (2, n) in C order, or (n, 2) in Fortran order; (2, 2) counts as (2, n)).
func openPairs(path, what string) (count int64, blocked bool, err error) {
	a, err := OpenNpy(path)
	if err != nil {
		return 0, false, fmt.Errorf("ingest: %s: %w", what, unwrapIngest(err))
	}
	a.Close()
	switch {
	case a.Kind != 'i' && a.Kind != 'u':
		return 0, false, fmt.Errorf("ingest: %s file %s has dtype %s; want integer node ids", what, path, a.Descr)
	case len(a.Shape) == 2 && a.Shape[0] == 2:
		return a.Shape[1], !a.FortranOrder, nil
	case len(a.Shape) == 2 && a.Shape[1] == 2:
		return a.Shape[0], a.FortranOrder, nil
	}
	return 0, false, fmt.Errorf("ingest: %s file %s has shape %s; want (2, n) or (n, 2) (src, dst) pairs", what, path, shapeString(a.Shape))
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return fmt.Sprint(names)
}

// edgeSplits writes the splits of edge type et (whose files lie in typeDir) whose node types
// have srcCount and dstCount nodes, checking every id, into et.Splits.
func (tw *typeWriter) edgeSplits(et *dataset.EdgeType, typeDir string, splits []openedEdgeSplit, srcCount, dstCount int64) error {
	for i := range splits {
		s := &splits[i]
		if s.in.EdgeType != et.Key() {
			continue
		}
		sp, files, err := writeEdgeSplit(tw.w.FS, tw.w.Dir, typeDir, s, srcCount, dstCount, tw.progress)
		tw.files = append(tw.files, files...)
		if err != nil {
			return err
		}
		if et.Splits == nil {
			et.Splits = map[string]dataset.EdgeSplit{}
		}
		et.Splits[s.in.Split] = sp
	}
	return nil
}

// writeEdgeSplit copies the split s into dir/typeDir (dataset.EdgeSplitFiles) and returns its
// spec and the files written. Src ids must lie in [0, srcCount), dst ids and negatives in [0,
// dstCount); the error names the file, the entry and the range.
func writeEdgeSplit(fsys wfs.FS, dir, typeDir string, s *openedEdgeSplit, srcCount, dstCount int64, progress func(string, int64, int64)) (dataset.EdgeSplit, []string, error) {
	seedsFile, labelsFile, negFile := dataset.EdgeSplitFiles(typeDir, s.in.Split)
	var files []string
	out := dataset.EdgeSplit{Seeds: dataset.IDsSpec{ArraySpec: dataset.ArraySpec{File: seedsFile, DType: dataset.Int64}, Count: s.count}}
	stage := "edge splits: " + s.in.Split
	n := s.count
	// Seeds: src ids at [0, n), dst ids at [n, 2n) of the file, whatever the input's layout.
	files = append(files, seedsFile)
	err := withOffsetWriters(fsys, filepath.Join(dir, seedsFile), []int64{0, 8 * n}, func(w []*bufio.Writer) error {
		return eachInt(s.in.Seeds, func(j, v int64) error {
			end, i := j%2, j/2 // (src, dst) pairs
			if s.blocked {
				end, i = j/max(n, 1), j%max(n, 1)
			}
			count, name := srcCount, "source"
			if end == 1 {
				count, name = dstCount, "destination"
			}
			if v < 0 || v >= count {
				return fmt.Errorf("ingest: %s seeds file %s: seed edge %d has %s node id %d, outside the %d nodes [0, %d) of the edge type's %s node type", s.what(), s.in.Seeds, i, name, v, count, count, name)
			}
			if (j+1)%(1<<16) == 0 || j+1 == 2*n {
				report(progress, stage, j+1, 2*n)
			}
			return putInt64(w[end], v)
		})
	})
	if err != nil {
		return out, files, err
	}
	if s.in.Labels != "" {
		files = append(files, labelsFile)
		out.Labels = &dataset.ArraySpec{File: labelsFile, DType: s.labels}
		if err := writeLabelsAs(fsys, filepath.Join(dir, labelsFile), s.in.Labels, s.labels); err != nil {
			return out, files, fmt.Errorf("ingest: %s labels: %w", s.what(), unwrapIngest(err))
		}
	}
	if s.in.NegDst != "" {
		files = append(files, negFile)
		out.NegDst = &dataset.NegativesSpec{ArraySpec: dataset.ArraySpec{File: negFile, DType: dataset.Int64}, PerSeed: s.perSeed}
		err := withOffsetWriters(fsys, filepath.Join(dir, negFile), []int64{0}, func(w []*bufio.Writer) error {
			return eachInt(s.in.NegDst, func(j, v int64) error {
				if v < 0 || v >= dstCount {
					return fmt.Errorf("ingest: %s negatives file %s: seed edge %d's negative %d is node id %d, outside the %d nodes [0, %d) of the edge type's destination node type", s.what(), s.in.NegDst, j/s.perSeed, j%s.perSeed, v, dstCount, dstCount)
				}
				return putInt64(w[0], v)
			})
		})
		if err != nil {
			return out, files, err
		}
	}
	return out, files, nil
}

// eachInt calls fn with the flat index and value of every element of the integer .npy path.
func eachInt(path string, fn func(j, v int64) error) error {
	a, err := OpenNpy(path)
	if err != nil {
		return err
	}
	defer a.Close()
	return intChunks(a, func(first int64, vals []int64) error {
		for i, v := range vals {
			if err := fn(first+int64(i), v); err != nil {
				return err
			}
		}
		return nil
	})
}

// withOffsetWriters creates path and calls fn with one buffered writer per offset (each writing
// from its offset on), then flushes them and closes the file.
func withOffsetWriters(fsys wfs.FS, path string, offsets []int64, fn func(w []*bufio.Writer) error) error {
	f, err := wfs.Create(fsys, path)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	ws := make([]*bufio.Writer, len(offsets))
	for i, off := range offsets {
		ws[i] = bufio.NewWriterSize(io.NewOffsetWriter(f, off), 1<<20)
	}
	err = fn(ws)
	for _, w := range ws {
		if ferr := w.Flush(); err == nil && ferr != nil {
			err = fmt.Errorf("ingest: write %s: %w", path, ferr)
		}
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("ingest: write %s: %w", path, cerr)
	}
	return err
}

func putInt64(w *bufio.Writer, v int64) error {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	_, err := w.Write(b[:])
	return err
}

// writeLabelsAs copies the 1-D .npy labels into path as dtype (int64 from integers, float32
// from floats or bools).
func writeLabelsAs(fsys wfs.FS, path, labels string, dtype dataset.DType) error {
	if dtype == dataset.Int64 {
		return withOffsetWriters(fsys, path, []int64{0}, func(w []*bufio.Writer) error {
			return eachInt(labels, func(_, v int64) error { return putInt64(w[0], v) })
		})
	}
	a, err := OpenNpy(labels)
	if err != nil {
		return err
	}
	defer a.Close()
	return withOffsetWriters(fsys, path, []int64{0}, func(w []*bufio.Writer) error {
		br := bufio.NewReaderSize(a.Data(), 1<<20)
		raw := make([]byte, a.ItemSize)
		var b [4]byte
		for j := int64(0); j < a.Len(); j++ {
			if _, err := io.ReadFull(br, raw); err != nil {
				return readErr(labels, err)
			}
			var v float32
			switch {
			case a.Kind == 'b':
				if raw[0] != 0 {
					v = 1
				}
			case a.ItemSize == 4:
				v = math.Float32frombits(binary.LittleEndian.Uint32(raw))
			default:
				v = float32(math.Float64frombits(binary.LittleEndian.Uint64(raw)))
			}
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
			if _, err := w[0].Write(b[:]); err != nil {
				return err
			}
		}
		return nil
	})
}

// ParseEdgeSplitArg parses `tierfs ingest --edge-split` (see EdgeSplitInput.arg):
// SPLIT=SEEDS[,labels=FILE][,neg_dst=FILE][,edge_type=SRC:REL:DST].
func ParseEdgeSplitArg(s string) (EdgeSplitInput, error) {
	parts := strings.Split(s, ",")
	var in EdgeSplitInput
	var ok bool
	if in.Split, in.Seeds, ok = strings.Cut(parts[0], "="); !ok || in.Split == "" || in.Seeds == "" {
		return in, fmt.Errorf("edge split %q: want SPLIT=SEEDS[,labels=FILE][,neg_dst=FILE][,edge_type=SRC:REL:DST]", s)
	}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		var dst *string
		switch k {
		case "labels":
			dst = &in.Labels
		case "neg_dst":
			dst = &in.NegDst
		case "edge_type":
			dst = &in.EdgeType
		default:
			return in, fmt.Errorf("edge split %q: unknown part %q (want labels=FILE, neg_dst=FILE or edge_type=SRC:REL:DST)", s, p)
		}
		if v == "" || *dst != "" {
			return in, fmt.Errorf("edge split %q: %s is empty or given twice", s, k)
		}
		*dst = v
	}
	return in, nil
}

// arg is the split as `tierfs ingest --edge-split` takes it: NAME=SEEDS[,labels=L][,neg_dst=N]
// [,edge_type=T], paths absolute.
func (in EdgeSplitInput) arg() string {
	a := in.Split + "=" + absPath(in.Seeds)
	if in.Labels != "" {
		a += ",labels=" + absPath(in.Labels)
	}
	if in.NegDst != "" {
		a += ",neg_dst=" + absPath(in.NegDst)
	}
	if in.EdgeType != "" {
		a += ",edge_type=" + in.EdgeType
	}
	return a
}

// EdgeSplitPaths lists the input paths of the splits with what they are, for checking that
// they exist.
func EdgeSplitPaths(list []EdgeSplitInput) [][2]string {
	var out [][2]string
	for _, in := range list {
		s := openedEdgeSplit{in: in}
		for _, f := range []struct{ what, path string }{{"seeds", in.Seeds}, {"labels", in.Labels}, {"negatives", in.NegDst}} {
			if f.path != "" {
				out = append(out, [2]string{s.what() + " " + f.what, f.path})
			}
		}
	}
	return out
}

// ReadNpyPairs reads an integer .npy of (src, dst) pairs, of shape (2, n) or (n, 2) ((2, 2) is
// read as (2, n), PyG's edge_label_index), into its src and dst ids.
func ReadNpyPairs(path string) (src, dst []int64, err error) {
	n, blocked, err := openPairs(path, "seed edges")
	if err != nil {
		return nil, nil, err
	}
	src, dst = make([]int64, n), make([]int64, n)
	err = eachInt(path, func(j, v int64) error {
		end, i := j%2, j/2
		if blocked {
			end, i = j/n, j%n
		}
		if end == 0 {
			src[i] = v
		} else {
			dst[i] = v
		}
		return nil
	})
	return src, dst, err
}
