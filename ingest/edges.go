package ingest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// edgeChunk is how many edges a source hands over at a time.
const edgeChunk = 1 << 16

// edgeSource yields an edge list in order, in chunks; every scan starts from the first edge,
// so the list can be read twice without being held.
type edgeSource interface {
	// name names the input in errors.
	name() string
	// count is the number of edges, or -1 when unknown until read.
	count() int64
	// scan calls fn with consecutive chunks: edges first .. first+len(src)-1. The slices are
	// reused after fn returns.
	scan(fn func(first int64, src, dst []int64) error) error
}

// openEdges inspects path and returns a source for it: .npy of shape (2, E) or (E, 2), a text
// edge list (.csv, .tsv, .txt, .edges, .el), or a Parquet / Arrow IPC file. The source and
// destination columns of a table are columns (names or 0-based indexes), else those named src
// and dst (or source and target), else the first two.
func openEdges(path string, columns [2]string) (edgeSource, error) {
	if isTextEdges(path) {
		return openTextEdges(path, columns)
	}
	format, err := detectFormat(path)
	if err != nil {
		return nil, fmt.Errorf("ingest: edges: %w", unwrapIngest(err))
	}
	if format == formatNpy {
		if columns != ([2]string{}) {
			return nil, fmt.Errorf("ingest: edges file %s is a .npy array, which has no columns to choose (edge columns %q)", path, columns)
		}
		return openNpyEdges(path)
	}
	t, err := openArrowTable(path, format)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	src, dst, err := edgeColumns(path, t.schema, columns)
	if err != nil {
		return nil, err
	}
	return &arrowEdges{path: path, format: format, fields: []int{src, dst}, rows: t.rows}, nil
}

// unwrapIngest drops the "ingest: " prefix of an inner error, which an outer one repeats.
func unwrapIngest(err error) error {
	if rest, ok := strings.CutPrefix(err.Error(), "ingest: "); ok {
		return errors.New(rest)
	}
	return err
}

func edgeColumns(path string, sc *arrow.Schema, columns [2]string) (src, dst int, err error) {
	names := make([]string, sc.NumFields())
	for i, f := range sc.Fields() {
		names[i] = f.Name
	}
	if src, dst, err = pickColumns(path, names, len(names), columns); err != nil {
		return 0, 0, err
	}
	for _, i := range []int{src, dst} {
		f := sc.Field(i)
		kind, _, ok := arrowPrimitive(f.Type)
		if !ok || kind == 'f' {
			return 0, 0, fmt.Errorf("ingest: edges file %s: column %q has type %s; edge ids must be integers", path, f.Name, f.Type)
		}
	}
	return src, dst, nil
}

type arrowEdges struct {
	path   string
	format fileFormat
	fields []int
	rows   int64
}

func (e *arrowEdges) name() string { return e.path }
func (e *arrowEdges) count() int64 { return e.rows }

func (e *arrowEdges) scan(fn func(first int64, src, dst []int64) error) error {
	t, err := openArrowTable(e.path, e.format)
	if err != nil {
		return err
	}
	defer t.Close()
	srcBuf, dstBuf := make([]int64, edgeChunk), make([]int64, edgeChunk)
	var first int64
	return t.scan(e.fields, edgeChunk, func(cols []arrow.Array, rows int64) error {
		for off := int64(0); off < rows; off += edgeChunk {
			n := min(edgeChunk, rows-off)
			for c, buf := range [][]int64{srcBuf[:n], dstBuf[:n]} {
				kind, size, _ := arrowPrimitive(cols[c].DataType())
				raw, err := primitiveBytes(cols[c], size, off, n)
				if err != nil {
					return fmt.Errorf("ingest: edges file %s: column %d %v", e.path, e.fields[c], err)
				}
				if bad := decodeInts(buf, raw, kind, size); bad >= 0 {
					return fmt.Errorf("ingest: edges file %s: edge %d has id %d, out of range", e.path, first+int64(bad), binary.LittleEndian.Uint64(raw[8*bad:]))
				}
			}
			if err := fn(first, srcBuf[:n], dstBuf[:n]); err != nil {
				return err
			}
			first += n
		}
		return nil
	})
}

// npyEdges reads a .npy edge list: shape (2, E) (a PyG edge_index) or (E, 2), in C or Fortran
// order. A (2, 2) array is read as (2, E).
type npyEdges struct {
	path       string
	edges      int64
	rowsLayout bool // sources then destinations (C (2,E) or Fortran (E,2)); else pairs
}

func openNpyEdges(path string) (*npyEdges, error) {
	a, err := OpenNpy(path)
	if err != nil {
		return nil, fmt.Errorf("ingest: edges: %w", unwrapIngest(err))
	}
	defer a.Close()
	if a.Kind != 'i' && a.Kind != 'u' {
		return nil, fmt.Errorf("ingest: edges file %s has dtype %s; edge ids must be integers", path, a.Descr)
	}
	if len(a.Shape) != 2 || (a.Shape[0] != 2 && a.Shape[1] != 2) {
		return nil, fmt.Errorf("ingest: edges file %s has shape %s; want (2, E) or (E, 2)", path, shapeString(a.Shape))
	}
	e := &npyEdges{path: path}
	if a.Shape[0] == 2 {
		e.edges, e.rowsLayout = a.Shape[1], !a.FortranOrder
	} else {
		e.edges, e.rowsLayout = a.Shape[0], a.FortranOrder
	}
	return e, nil
}

func (e *npyEdges) name() string { return e.path }
func (e *npyEdges) count() int64 { return e.edges }

func (e *npyEdges) scan(fn func(first int64, src, dst []int64) error) error {
	a, err := OpenNpy(e.path)
	if err != nil {
		return err
	}
	defer a.Close()
	if a.Len() != 2*e.edges {
		return fmt.Errorf("ingest: edges file %s changed while being read", e.path)
	}
	size := int64(a.ItemSize)
	c := min(edgeChunk, e.edges) // the buffers' edges: a chunk, or every edge of a small file
	raw := make([]byte, 2*c*size)
	pairs := make([]int64, 2*c)
	srcBuf, dstBuf := make([]int64, c), make([]int64, c)
	data := a.Data()
	for first := int64(0); first < e.edges; first += edgeChunk {
		n := min(edgeChunk, e.edges-first)
		if e.rowsLayout {
			if _, err := data.ReadAt(raw[:n*size], first*size); err != nil {
				return readErr(e.path, err)
			}
			if _, err := data.ReadAt(raw[n*size:2*n*size], (e.edges+first)*size); err != nil {
				return readErr(e.path, err)
			}
		} else if _, err := data.ReadAt(raw[:2*n*size], 2*first*size); err != nil {
			return readErr(e.path, err)
		}
		if bad := decodeInts(pairs[:2*n], raw[:2*n*size], a.Kind, a.ItemSize); bad >= 0 {
			edge := int64(bad % int(n))
			if !e.rowsLayout {
				edge = int64(bad / 2)
			}
			return fmt.Errorf("ingest: edges file %s: edge %d has id %d, out of range", e.path, first+edge, binary.LittleEndian.Uint64(raw[8*bad:]))
		}
		if e.rowsLayout {
			copy(srcBuf, pairs[:n])
			copy(dstBuf, pairs[n:2*n])
		} else {
			for i := int64(0); i < n; i++ {
				srcBuf[i], dstBuf[i] = pairs[2*i], pairs[2*i+1]
			}
		}
		if err := fn(first, srcBuf[:n], dstBuf[:n]); err != nil {
			return err
		}
	}
	return nil
}

func readErr(path string, err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("ingest: %s is truncated (it shrank while being read)", path)
	}
	return fmt.Errorf("ingest: read %s: %w", path, err)
}
