package ingest

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Parquet is read with parquet/file's column readers (which decode every encoding and
// compression), not parquet/pqarrow: pqarrow brings arrow/flight and with it gRPC and protobuf,
// a third of the library. What ingest reads is narrow: top-level columns of numbers, or one
// list of numbers per row. pqColumn turns such a column into Arrow arrays batch by batch; any
// other column gets a type that arrowPrimitive refuses, so the callers' errors name it.

// pqColumn is one top-level column of a Parquet file.
type pqColumn struct {
	typ    arrow.DataType // what the schema says: a primitive, or a (fixed-size) list of one
	elem   arrow.DataType // the leaf's values
	leaf   int            // the leaf column's index
	list   bool
	maxDef int16
	// A list's definition levels: below listDef the row is null, below elemDef it is empty.
	listDef, elemDef int16
	readable         bool // a leaf ingest can read (numbers; one level of list at most)
}

// pqSchema maps the file's top-level fields to Arrow fields and readable columns. A schema the
// writer stored (ARROW:schema, as pyarrow and pqarrow write it) restores fixed-size lists.
func pqSchema(pf *file.Reader) (*arrow.Schema, []pqColumn) {
	sc := pf.MetaData().Schema
	root := sc.Root()
	var stored *arrow.Schema
	if v := pf.MetaData().KeyValueMetadata().FindValue("ARROW:schema"); v != nil {
		stored = decodeStoredSchema(*v)
	}
	fields := make([]arrow.Field, root.NumFields())
	cols := make([]pqColumn, root.NumFields())
	leaf := 0
	for i := range root.NumFields() {
		n := root.Field(i)
		leaves := countLeaves(n)
		c := pqColumn{leaf: leaf, typ: arrow.StructOf(), elem: arrow.StructOf()}
		if leaves == 1 {
			col := sc.Column(leaf)
			c.elem = leafType(col)
			c.maxDef = col.MaxDefinitionLevel()
			_, isPrim := n.(*schema.PrimitiveNode)
			switch {
			case col.MaxRepetitionLevel() == 0:
				c.typ, c.readable = c.elem, true
			case col.MaxRepetitionLevel() == 1:
				// Levels down to the repeated node: below it the list is null or empty.
				var def int16
				var p schema.Node = col.SchemaNode()
				repeatedDef := int16(-1)
				path := []schema.Node{}
				for ; p != nil && p != schema.Node(root); p = p.Parent() {
					path = append([]schema.Node{p}, path...)
				}
				for _, q := range path {
					if q.RepetitionType() != parquet.Repetitions.Required {
						def++
					}
					if q.RepetitionType() == parquet.Repetitions.Repeated {
						repeatedDef = def
						break
					}
				}
				c.listDef = 0
				if !isPrim && n.RepetitionType() == parquet.Repetitions.Optional {
					c.listDef = 1
				}
				c.elemDef, c.list, c.readable = repeatedDef, true, repeatedDef > 0
				c.typ = arrow.ListOf(c.elem)
				if stored != nil {
					if f, ok := stored.FieldsByName(n.Name()); ok && len(f) == 1 {
						if fsl, ok := f[0].Type.(*arrow.FixedSizeListType); ok && arrow.TypeEqual(fsl.Elem(), c.elem) {
							c.typ = fsl
						}
					}
				}
			}
		}
		if !c.readable {
			c.typ = arrow.StructOf()
		}
		fields[i] = arrow.Field{Name: n.Name(), Type: c.typ, Nullable: n.RepetitionType() != parquet.Repetitions.Required}
		cols[i] = c
		leaf += leaves
	}
	return arrow.NewSchema(fields, nil), cols
}

func countLeaves(n schema.Node) int {
	g, ok := n.(*schema.GroupNode)
	if !ok {
		return 1
	}
	total := 0
	for i := range g.NumFields() {
		total += countLeaves(g.Field(i))
	}
	return total
}

// decodeStoredSchema reads the Arrow schema a writer stored in the file's metadata (an IPC
// schema message, base64), or nil.
func decodeStoredSchema(v string) *arrow.Schema {
	raw, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(v); err != nil {
			return nil
		}
	}
	r, err := ipc.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil
	}
	defer r.Release()
	return r.Schema()
}

// leafType is the Arrow type of a leaf column's values.
func leafType(c *schema.Column) arrow.DataType {
	lt := c.LogicalType()
	it, isInt := lt.(schema.IntLogicalType)
	bits, signed := 0, true
	if isInt {
		bits, signed = int(it.BitWidth()), it.IsSigned()
	} else {
		switch c.ConvertedType() {
		case schema.ConvertedTypes.Int8:
			bits = 8
		case schema.ConvertedTypes.Int16:
			bits = 16
		case schema.ConvertedTypes.Uint8:
			bits, signed = 8, false
		case schema.ConvertedTypes.Uint16:
			bits, signed = 16, false
		case schema.ConvertedTypes.Uint32:
			bits, signed = 32, false
		case schema.ConvertedTypes.Uint64:
			bits, signed = 64, false
		}
	}
	switch c.PhysicalType() {
	case parquet.Types.Int32:
		switch {
		case bits == 8 && signed:
			return arrow.PrimitiveTypes.Int8
		case bits == 8:
			return arrow.PrimitiveTypes.Uint8
		case bits == 16 && signed:
			return arrow.PrimitiveTypes.Int16
		case bits == 16:
			return arrow.PrimitiveTypes.Uint16
		case bits == 32 && !signed:
			return arrow.PrimitiveTypes.Uint32
		}
		return arrow.PrimitiveTypes.Int32
	case parquet.Types.Int64:
		if bits == 64 && !signed {
			return arrow.PrimitiveTypes.Uint64
		}
		return arrow.PrimitiveTypes.Int64
	case parquet.Types.Float:
		return arrow.PrimitiveTypes.Float32
	case parquet.Types.Double:
		return arrow.PrimitiveTypes.Float64
	case parquet.Types.FixedLenByteArray:
		if _, ok := lt.(schema.Float16LogicalType); ok && c.TypeLength() == 2 {
			return arrow.FixedWidthTypes.Float16
		}
		return &arrow.FixedSizeBinaryType{ByteWidth: c.TypeLength()}
	case parquet.Types.Boolean:
		return arrow.FixedWidthTypes.Boolean
	case parquet.Types.ByteArray:
		if _, ok := lt.(schema.StringLogicalType); ok {
			return arrow.BinaryTypes.String
		}
	}
	return arrow.BinaryTypes.Binary
}

// pqCursor reads one column's rows in order, across row groups, k rows at a time.
type pqCursor struct {
	pf   *file.Reader
	col  *pqColumn
	size int // bytes per value
	rg   int
	cr   file.ColumnChunkReader
	eof  bool
	// Levels read but not handed out yet, and the values of their present entries (little
	// endian, size bytes each).
	def, rep []int16
	vals     []byte
	// Scratch for one read.
	i32  []int32
	i64  []int64
	f32  []float32
	f64  []float64
	flba []parquet.FixedLenByteArray
}

const pqReadLevels = 1 << 16

func newPQCursor(pf *file.Reader, col *pqColumn) *pqCursor {
	_, size, _ := arrowPrimitive(col.elem)
	return &pqCursor{pf: pf, col: col, size: size}
}

// fill reads up to pqReadLevels more levels; it sets eof when the column has no more.
func (c *pqCursor) fill() error {
	for c.cr == nil || !c.cr.HasNext() {
		if c.rg >= c.pf.NumRowGroups() {
			c.eof = true
			return nil
		}
		cr, err := c.pf.RowGroup(c.rg).Column(c.col.leaf)
		if err != nil {
			return err
		}
		c.cr, c.rg = cr, c.rg+1
	}
	n := pqReadLevels
	def, rep := make([]int16, n), make([]int16, n)
	var levels int64
	var got int
	var err error
	le := binary.LittleEndian
	appendVals := func(k int, put func(b []byte, i int)) {
		at := len(c.vals)
		c.vals = append(c.vals, make([]byte, k*c.size)...)
		for i := range k {
			put(c.vals[at+i*c.size:], i)
		}
	}
	switch r := c.cr.(type) {
	case *file.Int32ColumnChunkReader:
		c.i32 = growTo(c.i32, n)
		levels, got, err = r.ReadBatch(int64(n), c.i32, def, rep)
		appendVals(got, func(b []byte, i int) {
			v := uint32(c.i32[i])
			switch c.size {
			case 1:
				b[0] = byte(v)
			case 2:
				le.PutUint16(b, uint16(v))
			default:
				le.PutUint32(b, v)
			}
		})
	case *file.Int64ColumnChunkReader:
		c.i64 = growTo(c.i64, n)
		levels, got, err = r.ReadBatch(int64(n), c.i64, def, rep)
		appendVals(got, func(b []byte, i int) { le.PutUint64(b, uint64(c.i64[i])) })
	case *file.Float32ColumnChunkReader:
		c.f32 = growTo(c.f32, n)
		levels, got, err = r.ReadBatch(int64(n), c.f32, def, rep)
		appendVals(got, func(b []byte, i int) { le.PutUint32(b, math.Float32bits(c.f32[i])) })
	case *file.Float64ColumnChunkReader:
		c.f64 = growTo(c.f64, n)
		levels, got, err = r.ReadBatch(int64(n), c.f64, def, rep)
		appendVals(got, func(b []byte, i int) { le.PutUint64(b, math.Float64bits(c.f64[i])) })
	case *file.FixedLenByteArrayColumnChunkReader:
		c.flba = growTo(c.flba, n)
		levels, got, err = r.ReadBatch(int64(n), c.flba, def, rep)
		appendVals(got, func(b []byte, i int) { copy(b[:c.size], c.flba[i]) })
	default:
		return fmt.Errorf("a %s column cannot be read", c.col.elem)
	}
	if err != nil {
		return err
	}
	if c.col.maxDef == 0 {
		clear(def[:levels]) // not filled for a required column; every entry is present
	}
	if c.col.list {
		c.rep = append(c.rep, rep[:levels]...)
	}
	c.def = append(c.def, def[:levels]...)
	return nil
}

func growTo[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// next returns the next k rows as an Arrow array (a List of the values for a list column), or
// fewer at the end of the column.
func (c *pqCursor) next(k int64) (arrow.Array, error) {
	if !c.col.list {
		for int64(len(c.def)) < k && !c.eof {
			if err := c.fill(); err != nil {
				return nil, err
			}
		}
		n := min(k, int64(len(c.def)))
		arr := c.build(c.col.elem, c.def[:n], c.col.maxDef)
		c.consume(int(n))
		return arr, nil
	}
	// A row starts at each repetition level 0: take levels up to the (k+1)-th start.
	end, rows := -1, int64(0)
	scanned := 0
	for {
		for ; scanned < len(c.rep); scanned++ {
			if c.rep[scanned] == 0 {
				if rows == k {
					end = scanned
					break
				}
				rows++
			}
		}
		if end >= 0 || c.eof {
			break
		}
		if err := c.fill(); err != nil {
			return nil, err
		}
	}
	if end < 0 {
		end = len(c.rep)
	}
	def := c.def[:end]
	offsets := make([]int32, 0, rows+1)
	valid := make([]bool, 0, rows)
	nulls := 0
	var elemDefs []int16
	for i, d := range def {
		if c.rep[i] == 0 {
			offsets = append(offsets, int32(len(elemDefs)))
			valid = append(valid, d >= c.col.listDef)
			if d < c.col.listDef {
				nulls++
			}
		}
		if d >= c.col.elemDef {
			elemDefs = append(elemDefs, d)
		}
	}
	offsets = append(offsets, int32(len(elemDefs)))
	child := c.build(c.col.elem, elemDefs, c.col.maxDef)
	defer child.Release()
	var bitmap *memory.Buffer
	if nulls > 0 {
		bitmap = validityBitmap(valid)
	}
	data := array.NewData(arrow.ListOf(c.col.elem), len(valid), []*memory.Buffer{bitmap, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offsets))}, []arrow.ArrayData{child.Data()}, nulls, 0)
	defer data.Release()
	c.consume(end)
	return array.MakeFromData(data), nil
}

// build makes an array of len(defs) values from the buffered values: entry i is present when
// defs[i] == maxDef (taking the next buffered value), null otherwise. It does not consume.
func (c *pqCursor) build(dt arrow.DataType, defs []int16, maxDef int16) arrow.Array {
	out := make([]byte, len(defs)*c.size)
	valid := make([]bool, len(defs))
	nulls, v := 0, 0
	for i, d := range defs {
		if d == maxDef {
			copy(out[i*c.size:(i+1)*c.size], c.vals[v*c.size:(v+1)*c.size])
			v++
			valid[i] = true
		} else {
			nulls++
		}
	}
	var bitmap *memory.Buffer
	if nulls > 0 {
		bitmap = validityBitmap(valid)
	}
	data := array.NewData(dt, len(defs), []*memory.Buffer{bitmap, memory.NewBufferBytes(out)}, nil, nulls, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// consume drops the first n buffered levels and their values.
func (c *pqCursor) consume(n int) {
	present := 0
	for _, d := range c.def[:n] {
		if d == c.col.maxDef {
			present++
		}
	}
	c.vals = c.vals[:copy(c.vals, c.vals[present*c.size:])]
	c.def = c.def[:copy(c.def, c.def[n:])]
	if c.col.list {
		c.rep = c.rep[:copy(c.rep, c.rep[n:])]
	}
}

func validityBitmap(valid []bool) *memory.Buffer {
	b := make([]byte, bitutil.BytesForBits(int64(len(valid))))
	for i, ok := range valid {
		if ok {
			bitutil.SetBit(b, i)
		}
	}
	return memory.NewBufferBytes(b)
}

// scanParquet calls fn with batches of at most rowsPerBatch rows of the given top-level fields;
// fn's errors come back as they are.
func scanParquet(path string, pf *file.Reader, cols []pqColumn, fields []int, rowsPerBatch int64, fn func(cols []arrow.Array, rows int64) error) error {
	cursors := make([]*pqCursor, len(fields))
	for i, fi := range fields {
		if !cols[fi].readable {
			return fmt.Errorf("ingest: read %s: column %d cannot be read", path, fi)
		}
		cursors[i] = newPQCursor(pf, &cols[fi])
	}
	arrs := make([]arrow.Array, len(fields))
	for left := pf.NumRows(); left > 0; {
		k := min(left, max(1, rowsPerBatch))
		for i, cur := range cursors {
			a, err := cur.next(k)
			if err != nil {
				releaseAll(arrs[:i])
				return fmt.Errorf("ingest: read %s: %w", path, err)
			}
			if int64(a.Len()) != k {
				a.Release()
				releaseAll(arrs[:i])
				return fmt.Errorf("ingest: read %s: column %d ends after %d rows; the file says %d", path, fields[i], pf.NumRows()-left+int64(a.Len()), pf.NumRows())
			}
			arrs[i] = a
		}
		err := fn(arrs, k)
		releaseAll(arrs)
		if err != nil {
			return err
		}
		left -= k
	}
	return nil
}

func releaseAll(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}
