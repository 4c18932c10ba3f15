package ingest

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"slices"
	"unsafe"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/internal/wfs"
)

// File names of the topology inside a dataset directory.
const (
	indptrFile  = "indptr.bin"
	indicesFile = "indices.bin"
)

// topologyOptions are the edge transformations applied while building the CSC.
type topologyOptions struct {
	undirected, dropSelfLoops, dedup bool
	progress                         func(stage string, done, total int64)
	// orderPath, when set, is where buildTopology records the input edge of every edge id
	// (builtTopology.order), for writing edge features in edge id order. Not with dedup.
	orderPath string
	// inputEdgeIDs asks edgeType to keep the input position of every edge id
	// (InputEdgeIDFeature): set where the input's order is the user's (Ingest, IngestHetero).
	inputEdgeIDs bool
	// Edge types of a heterogeneous graph (IngestHetero): numSrc, when > 0, is the count of the
	// source node type (numNodes then counts the destination type, over which the CSC is
	// built); src, rel, dst name the edge type ("" for the one type "node:to:node"); typeDir is
	// the directory, inside dir, of its files ("" for the top level).
	numSrc        int64
	src, rel, dst string
	typeDir       string
	// nodeFeatureNames are a one-type dataset's node feature names (Ingest): an edge feature of
	// one of them has its files under sharedNameDir, tagged "edge:", apart from the node
	// feature's of that name.
	nodeFeatureNames map[string]bool
}

// sharedNameDir holds a one-type dataset's edge features named as one of its node features.
const sharedNameDir = "edges"

// what names the edge type in errors: "" for the one type of Ingest and Synth.
func (opt *topologyOptions) what() string {
	if opt.rel == "" {
		return ""
	}
	return fmt.Sprintf("edge type %q: ", dataset.EdgeTypeKey(opt.src, opt.rel, opt.dst))
}

// builtTopology is what buildTopology made.
type builtTopology struct {
	et         dataset.EdgeType
	numNodes   int64
	inputEdges int64      // edges read from the input (before the transformations)
	order      *edgeOrder // with orderPath: order.ids[p] is the input edge of edge id p
}

// buildTopology writes indptr.bin and indices.bin into dir (under opt.typeDir) from two passes
// over edges and returns the edge type and the node count. numNodes < 0 means "max id + 1".
// With opt.numSrc the source and destination node types differ: source ids are below
// opt.numSrc, destination ids below numNodes (both given), and the CSC is over the destinations.
//
// Memory: one int64 per node (the degree counts, which become the fill cursors and then indptr),
// plus fixed chunk buffers. The indices are filled in place in a mapped file.
func buildTopology(fsys wfs.FS, dir string, edges edgeSource, numNodes int64, opt topologyOptions) (builtTopology, error) {
	if opt.orderPath != "" && opt.dedup {
		return builtTopology{}, errors.New("ingest: edge order with dedup") // refused earlier, with the inputs named
	}
	c, err := countDegrees(edges, numNodes, opt)
	if err != nil {
		return builtTopology{}, err
	}
	pos, numNodes, numSrc, total, inputEdges, fingerprint := c.pos, c.numNodes, c.numSrc, c.total, c.inputEdges, c.fingerprint

	idxType := dataset.Int32
	if numSrc > math.MaxInt32 {
		idxType = dataset.Int64
	}
	size := int64(idxType.Size())
	if err := checkSpace(dir, total*size+8*(numNodes+1), fmt.Sprintf("the topology's %d edges and %d nodes", total, numNodes)); err != nil {
		return builtTopology{}, err
	}
	if opt.typeDir != "" {
		if err := fsys.MkdirAll(filepath.Join(dir, opt.typeDir), 0o755); err != nil {
			return builtTopology{}, fmt.Errorf("ingest: %w", err)
		}
	}
	indptrName, indicesName := path.Join(opt.typeDir, indptrFile), path.Join(opt.typeDir, indicesFile)
	idxPath := filepath.Join(dir, indicesName)
	mf, err := dataset.CreateMapped(fsys, idxPath, total*size)
	if err != nil {
		return builtTopology{}, fmt.Errorf("ingest: %w", err)
	}
	if err := preallocate(fsys, idxPath, total*size); err != nil {
		mf.Close()
		return builtTopology{}, err
	}
	mapped := mf.Bytes()
	var idx32 []int32
	var idx64 []int64
	if idxType == dataset.Int32 {
		idx32 = unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(mapped))), total)
	} else {
		idx64 = unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(mapped))), total)
	}
	var order *edgeOrder
	if opt.orderPath != "" {
		if order, err = newEdgeOrder(fsys, opt.orderPath, total); err != nil {
			mf.Close()
			return builtTopology{}, err
		}
	}
	put := func(at, v int64) {
		if idx32 != nil {
			idx32[at] = int32(v)
		} else {
			idx64[at] = v
		}
	}

	// Pass 2: fill each node's list at its cursor, in input order.
	check, err := fillLists(idxPath, edges, pos, put, order, c, opt)
	if err == nil && check != fingerprint {
		err = fmt.Errorf("ingest: edges file %s changed between the two passes", edges.name())
	}
	if err != nil {
		mf.Close()
		order.release()
		return builtTopology{}, err
	}
	// pos[v] is now the end of v's list, the start of v+1's: shift into indptr.
	copy(pos[1:], pos[:numNodes])
	pos[0] = 0
	indptr := pos

	if opt.dedup {
		err = faultsAsErrors(idxPath, func() error {
			if idx32 != nil {
				total = dedupLists(indptr, idx32, opt.progress)
			} else {
				total = dedupLists(indptr, idx64, opt.progress)
			}
			return nil
		})
	}
	if cerr := mf.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("ingest: %w", cerr)
	}
	if err != nil {
		order.release()
		return builtTopology{}, err
	}
	if opt.dedup {
		if err := truncate(fsys, idxPath, total*size); err != nil {
			return builtTopology{}, err
		}
	}
	if err := dataset.WriteInt64s(fsys, filepath.Join(dir, indptrName), indptr); err != nil {
		order.release()
		return builtTopology{}, fmt.Errorf("ingest: %w", err)
	}
	et := dataset.EdgeType{
		Src: nodeTypeName, Rel: "to", Dst: nodeTypeName, Count: total, Layout: "csc",
		Indptr:  dataset.ArraySpec{File: indptrName, DType: dataset.Int64},
		Indices: dataset.ArraySpec{File: indicesName, DType: idxType},
	}
	if opt.rel != "" {
		et.Src, et.Rel, et.Dst = opt.src, opt.rel, opt.dst
	}
	return builtTopology{et: et, numNodes: numNodes, inputEdges: inputEdges, order: order}, nil
}

// degreeCount is what buildTopology's first pass over the edges finds.
type degreeCount struct {
	pos              []int64 // pos[v]: the first slot of v's neighbor list
	numNodes, numSrc int64   // the bounds of destination and source ids (from the ids when numNodes < 0)
	total            int64   // slots: the edges kept, both directions of an undirected one
	inputEdges       int64
	inputTotal       int64  // edges.count(): -1 when unknown up front
	fingerprint      uint64 // of the edges in order: the second pass must see the same
}

// countDegrees is buildTopology's first pass: it checks every edge's ends against the node
// counts (numNodes < 0: grows them to the largest id + 1, checked against memory) and counts
// each destination's neighbors (and each source's, undirected).
func countDegrees(edges edgeSource, numNodes int64, opt topologyOptions) (degreeCount, error) {
	if opt.numSrc > 0 && (numNodes < 0 || opt.undirected) {
		return degreeCount{}, errors.New("ingest: an edge type between two node types needs both counts and is not made undirected")
	}
	numSrc := numNodes // the bound of source ids; numNodes bounds destination ids
	if opt.numSrc > 0 {
		numSrc = opt.numSrc
	}
	var pos []int64
	growable := numNodes < 0
	if !growable {
		if err := checkNodes(numNodes, "the node count"); err != nil {
			return degreeCount{}, err
		}
		pos = make([]int64, numNodes+1)
	}
	grownTo := int64(0) // node count checked against memory while counts grow with edge ids
	var total, inputEdges int64
	var fingerprint uint64
	inputTotal := edges.count()
	err := edges.scan(func(first int64, src, dst []int64) error {
		for i := range src {
			s, d := src[i], dst[i]
			if s < 0 || d < 0 || (!growable && (s >= numSrc || d >= numNodes)) {
				return edgeRangeError(&opt, edges.name(), first+int64(i), s, d, numSrc, numNodes)
			}
			fingerprint = fingerprint*0x9e3779b97f4a7c15 + uint64(s)*0xff51afd7ed558ccd ^ uint64(d)
			if growable {
				if need := max(s, d) + 2; need > int64(len(pos)) {
					if need > 2*grownTo {
						if err := checkNodes(need-1, fmt.Sprintf("edges file %s: edge %d (%d -> %d) makes the node count (largest id + 1; set it to refuse such ids)", edges.name(), first+int64(i), s, d)); err != nil {
							return err
						}
						grownTo = need
					}
					pos = slices.Grow(pos, int(need)-len(pos))[:need]
				}
			}
			if opt.dropSelfLoops && s == d {
				continue
			}
			pos[d+1]++
			total++
			if opt.undirected && s != d {
				pos[s+1]++
				total++
			}
		}
		inputEdges = first + int64(len(src))
		report(opt.progress, "edges: count", first+int64(len(src)), inputTotal)
		return nil
	})
	if err != nil {
		return degreeCount{}, err
	}
	if growable {
		numNodes = max(0, int64(len(pos))-1)
		numSrc = numNodes
		if len(pos) == 0 {
			pos = make([]int64, 1)
		}
	}
	for v := int64(1); v <= numNodes; v++ {
		pos[v] += pos[v-1]
	}
	return degreeCount{pos: pos, numNodes: numNodes, numSrc: numSrc, total: total, inputEdges: inputEdges, fingerprint: fingerprint, inputTotal: inputTotal}, nil
}

// fillLists is buildTopology's second pass: it writes each edge's source into its destination's
// list (put(slot, id), at pos's cursors, which it advances) in input order, and the edge's input
// position into order when it is set; it returns the fingerprint of the edges it saw.
func fillLists(idxPath string, edges edgeSource, pos []int64, put func(at, v int64), order *edgeOrder, c degreeCount, opt topologyOptions) (uint64, error) {
	var check uint64
	err := faultsAsErrors(idxPath, func() error {
		return edges.scan(func(first int64, src, dst []int64) error {
			for i := range src {
				s, d := src[i], dst[i]
				if s < 0 || d < 0 || s >= c.numSrc || d >= c.numNodes {
					return fmt.Errorf("ingest: edges file %s changed between the two passes (edge %d)", edges.name(), first+int64(i))
				}
				check = check*0x9e3779b97f4a7c15 + uint64(s)*0xff51afd7ed558ccd ^ uint64(d)
				if opt.dropSelfLoops && s == d {
					continue
				}
				if pos[d] >= c.total || (opt.undirected && s != d && pos[s] >= c.total) {
					return fmt.Errorf("ingest: edges file %s changed between the two passes (edge %d)", edges.name(), first+int64(i))
				}
				put(pos[d], s)
				if order != nil {
					order.ids[pos[d]] = first + int64(i)
				}
				pos[d]++
				if opt.undirected && s != d {
					put(pos[s], d)
					if order != nil {
						order.ids[pos[s]] = first + int64(i)
					}
					pos[s]++
				}
			}
			report(opt.progress, "edges: fill", first+int64(len(src)), c.inputTotal)
			return nil
		})
	})
	return check, err
}

// edgeRangeError names the end of edge (source s, destination d) that is out of range: below 0,
// or at or past its node count (numSrc for sources, numDst for destinations; < 0: unbounded),
// and, with several types, the edge type and the node type of that end.
func edgeRangeError(opt *topologyOptions, input string, edge, s, d, numSrc, numDst int64) error {
	which, v, n, of := "source", s, numSrc, opt.src
	if s >= 0 && (numSrc < 0 || s < numSrc) {
		which, v, n, of = "destination", d, numDst, opt.dst
	}
	if v < 0 {
		return fmt.Errorf("ingest: %sedges file %s: edge %d has negative %s id %d", opt.what(), input, edge, which, v)
	}
	nodes := "nodes"
	if opt.rel != "" {
		nodes = fmt.Sprintf("nodes of type %q", of)
	}
	return fmt.Errorf("ingest: %sedges file %s: edge %d has %s id %d, outside the %d %s [0, %d)", opt.what(), input, edge, which, v, n, nodes, n)
}

// dedupLists sorts each node's list in place and removes duplicates, compacting the lists
// towards the front and rewriting indptr. It returns the new number of indices.
func dedupLists[T int32 | int64](indptr []int64, idx []T, progress func(string, int64, int64)) int64 {
	n := int64(len(indptr) - 1)
	var w int64
	start := indptr[0]
	for v := int64(0); v < n; v++ {
		end := indptr[v+1]
		list := idx[start:end]
		slices.Sort(list)
		indptr[v] = w
		for i, x := range list {
			if i > 0 && x == idx[w-1] {
				continue
			}
			idx[w] = x
			w++
		}
		start = end
		if v&0xfffff == 0xfffff {
			report(progress, "edges: dedup", v+1, n)
		}
	}
	indptr[n] = w
	report(progress, "edges: dedup", n, n)
	return w
}

// preallocate reserves the disk blocks of a sparse file, so that running out of space is an
// error here instead of a SIGBUS while writing through a mapping.
func preallocate(fsys wfs.FS, path string, size int64) error {
	if size == 0 {
		return nil
	}
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	defer f.Close()
	err = f.Allocate(size)
	if err == nil {
		return nil
	}
	if !errors.Is(err, wfs.ErrUnsupported) {
		return fmt.Errorf("ingest: reserve %d bytes for %s: %w", size, path, err)
	}
	// No fallocate on this file system: allocate by writing the zeros.
	zeros := make([]byte, min(size, 1<<20))
	for off := int64(0); off < size; off += int64(len(zeros)) {
		if _, err := f.WriteAt(zeros[:min(int64(len(zeros)), size-off)], off); err != nil {
			return fmt.Errorf("ingest: reserve %d bytes for %s: %w", size, path, err)
		}
	}
	return nil
}

// truncate cuts path to size through fsys.
func truncate(fsys wfs.FS, path string, size int64) error {
	f, err := fsys.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("ingest: truncate %s: %w", path, err)
	}
	return nil
}

// faultsAsErrors runs fn, turning a fault on mapped memory (an IO error of the mapped file
// surfacing as SIGBUS) into an error naming the file.
func faultsAsErrors(path string, fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			if re, ok := r.(interface{ Addr() uintptr }); ok {
				err = fmt.Errorf("ingest: writing %s through its mapping failed at address %#x (disk full or IO error)", path, re.Addr())
				return
			}
			panic(r)
		}
	}()
	return fn()
}

// report calls progress when set.
func report(progress func(string, int64, int64), stage string, done, total int64) {
	if progress != nil {
		progress(stage, done, max(total, 0))
	}
}
