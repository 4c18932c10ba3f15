package ingest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"golang.org/x/sys/unix"
)

// fileFormat is what an input file holds, told by its first bytes.
type fileFormat int

const (
	formatNpy fileFormat = iota
	formatParquet
	formatArrowFile
	formatArrowStream
)

func (f fileFormat) String() string {
	return [...]string{"npy", "Parquet", "Arrow IPC file", "Arrow IPC stream"}[f]
}

// detectFormat reads the magic bytes of path. An Arrow IPC stream has no magic; a file that opens
// like an IPC message is taken for one, and opening it tells.
func detectFormat(path string) (fileFormat, error) {
	f, err := openInput(path)
	if err != nil {
		return 0, fmt.Errorf("ingest: %w", err)
	}
	defer f.Close()
	var head [8]byte
	n, err := io.ReadFull(f, head[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("ingest: read %s: %w", path, err)
	}
	h := string(head[:n])
	switch {
	case len(h) >= 6 && h[:6] == npyMagic:
		return formatNpy, nil
	case len(h) >= 4 && h[:4] == "PAR1":
		return formatParquet, nil
	case len(h) >= 6 && h[:6] == "ARROW1":
		return formatArrowFile, nil
	case n == 0:
		return 0, fmt.Errorf("ingest: %s is empty", path)
	case n >= 4 && binary.LittleEndian.Uint32(head[:4]) == 0xffffffff:
		return formatArrowStream, nil // continuation marker of an IPC message
	}
	// Streams from before Arrow 0.15 open with the schema message's length.
	if st, err := f.Stat(); err == nil && n >= 4 {
		if l := int64(binary.LittleEndian.Uint32(head[:4])); l > 0 && l < min(st.Size(), 64<<20) {
			return formatArrowStream, nil
		}
	}
	return 0, fmt.Errorf("ingest: %s is not .npy, Parquet or Arrow IPC (it starts with %q)", path, head[:n])
}

// arrowTable reads selected top-level columns of a Parquet or Arrow IPC file batch by batch,
// holding one batch at a time.
type arrowTable struct {
	path   string
	format fileFormat
	schema *arrow.Schema
	rows   int64 // total rows, or -1 when the format does not say up front

	pqCols []pqColumn
	pqFile *file.Reader
	ipcF   *ipc.FileReader
	mapped []byte
	ipcS   *ipc.Reader
	osFile *os.File
}

// openArrowTable opens a Parquet or Arrow IPC (file or stream) file and reads its schema.
func openArrowTable(path string, format fileFormat) (*arrowTable, error) {
	t := &arrowTable{path: path, format: format, rows: -1}
	switch format {
	case formatParquet:
		props := parquet.NewReaderProperties(memory.DefaultAllocator)
		props.BufferedStreamEnabled = true // read pages as needed, not whole row groups
		props.BufferSize = 1 << 20
		pf, err := file.OpenParquetFile(path, false, file.WithReadProps(props))
		if err != nil {
			return nil, fmt.Errorf("ingest: %s: not a readable Parquet file: %w", path, err)
		}
		sc, cols := pqSchema(pf)
		t.pqCols, t.pqFile, t.schema, t.rows = cols, pf, sc, pf.NumRows()
	case formatArrowFile:
		f, err := openInput(path)
		if err != nil {
			return nil, fmt.Errorf("ingest: %w", err)
		}
		st, err := f.Stat()
		if err != nil || st.Size() == 0 {
			f.Close()
			return nil, fmt.Errorf("ingest: %s: cannot map an empty or unreadable file", path)
		}
		// Mapped, so batches reference the page cache instead of being copied into memory.
		data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("ingest: map %s: %w", path, err)
		}
		r, err := ipc.NewMappedFileReader(data, ipc.WithBodySizeLimit(0))
		if err != nil {
			unix.Munmap(data)
			return nil, fmt.Errorf("ingest: %s: not a readable Arrow IPC file: %w", path, err)
		}
		t.ipcF, t.mapped, t.schema = r, data, r.Schema()
	case formatArrowStream:
		f, err := openInput(path)
		if err != nil {
			return nil, fmt.Errorf("ingest: %w", err)
		}
		r, err := ipc.NewReader(bufio.NewReaderSize(f, 1<<20), ipc.WithBodySizeLimit(1<<31))
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("ingest: %s is not .npy, Parquet or Arrow IPC (%v)", path, err)
		}
		t.ipcS, t.osFile, t.schema = r, f, r.Schema()
	default:
		return nil, fmt.Errorf("ingest: %s: %v is not an Arrow format", path, format)
	}
	return t, nil
}

// Close releases the readers and the mapping.
func (t *arrowTable) Close() error {
	if t.pqFile != nil {
		t.pqFile.Close()
	}
	if t.ipcF != nil {
		t.ipcF.Close()
	}
	if t.mapped != nil {
		unix.Munmap(t.mapped)
		t.mapped = nil
	}
	if t.ipcS != nil {
		t.ipcS.Release()
	}
	if t.osFile != nil {
		t.osFile.Close()
	}
	return nil
}

// scan calls fn with each batch's columns fields (top-level field indices, in that order) and
// its row count. The arrays are valid only during the call. rowsPerBatch caps Parquet batches.
func (t *arrowTable) scan(fields []int, rowsPerBatch int64, fn func(cols []arrow.Array, rows int64) error) error {
	cols := make([]arrow.Array, len(fields))
	switch t.format {
	case formatParquet:
		return scanParquet(t.path, t.pqFile, t.pqCols, fields, rowsPerBatch, fn)
	case formatArrowFile:
		for b := 0; b < t.ipcF.NumRecords(); b++ {
			rec, err := t.ipcF.RecordBatchAt(b)
			if err != nil {
				return fmt.Errorf("ingest: read %s batch %d: %w", t.path, b, err)
			}
			for i, fi := range fields {
				cols[i] = rec.Column(fi)
			}
			err = fn(cols, rec.NumRows())
			rec.Release()
			if err != nil {
				return err
			}
		}
	case formatArrowStream:
		for t.ipcS.Next() {
			rec := t.ipcS.RecordBatch()
			for i, fi := range fields {
				cols[i] = rec.Column(fi)
			}
			if err := fn(cols, rec.NumRows()); err != nil {
				return err
			}
		}
		if err := t.ipcS.Err(); err != nil {
			return fmt.Errorf("ingest: read %s: %w", t.path, err)
		}
	}
	return nil
}

// countRows returns the table's row count, reading it through once when the format does not
// say (Arrow IPC). The table can be scanned only once afterwards for a stream; callers reopen.
func (t *arrowTable) countRows() (int64, error) {
	if t.rows >= 0 {
		return t.rows, nil
	}
	var n int64
	switch t.format {
	case formatArrowFile:
		for b := 0; b < t.ipcF.NumRecords(); b++ {
			rec, err := t.ipcF.RecordBatchAt(b)
			if err != nil {
				return 0, fmt.Errorf("ingest: read %s batch %d: %w", t.path, b, err)
			}
			n += rec.NumRows()
			rec.Release()
		}
	case formatArrowStream:
		for t.ipcS.Next() {
			n += t.ipcS.RecordBatch().NumRows()
		}
		if err := t.ipcS.Err(); err != nil {
			return 0, fmt.Errorf("ingest: read %s: %w", t.path, err)
		}
	}
	t.rows = n
	return n, nil
}

// arrowPrimitives are the fixed-width numeric Arrow types: their npy-style kind and size.
var arrowPrimitives = map[arrow.Type]struct {
	kind byte
	size int
}{
	arrow.INT8: {'i', 1}, arrow.INT16: {'i', 2}, arrow.INT32: {'i', 4}, arrow.INT64: {'i', 8},
	arrow.UINT8: {'u', 1}, arrow.UINT16: {'u', 2}, arrow.UINT32: {'u', 4}, arrow.UINT64: {'u', 8},
	arrow.FLOAT16: {'f', 2}, arrow.FLOAT32: {'f', 4}, arrow.FLOAT64: {'f', 8},
}

// arrowPrimitive describes a fixed-width numeric Arrow type: its npy-style kind and size.
func arrowPrimitive(dt arrow.DataType) (kind byte, size int, ok bool) {
	p, ok := arrowPrimitives[dt.ID()]
	return p.kind, p.size, ok
}

// primitiveBytes returns the little-endian value bytes of elements [from, from+n) of a
// fixed-width array (offset applied). It reports nulls as an error.
func primitiveBytes(arr arrow.Array, size int, from, n int64) ([]byte, error) {
	if arr.NullN() > 0 {
		return nil, errors.New("has null values")
	}
	data := arr.Data()
	bufs := data.Buffers()
	if len(bufs) < 2 || bufs[1] == nil {
		if n == 0 {
			return nil, nil
		}
		return nil, errors.New("has no value buffer")
	}
	start := (int64(data.Offset()) + from) * int64(size)
	return bufs[1].Bytes()[start : start+n*int64(size)], nil
}

// listValues returns the child array of a list-like array and the child index range of row i.
func listValues(arr arrow.Array, i int) (child arrow.Array, start, end int64, ok bool) {
	switch a := arr.(type) {
	case *array.FixedSizeList:
		n := int64(a.DataType().(*arrow.FixedSizeListType).Len())
		off := int64(a.Data().Offset()) + int64(i)
		return a.ListValues(), off * n, (off + 1) * n, true
	case *array.List:
		s, e := a.ValueOffsets(i)
		return a.ListValues(), s, e, true
	case *array.LargeList:
		s, e := a.ValueOffsets(i)
		return a.ListValues(), s, e, true
	}
	return nil, 0, 0, false
}
