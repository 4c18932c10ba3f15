package ingest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/internal/wfs"
)

// npyMagic opens every .npy file.
const npyMagic = "\x93NUMPY"

// Npy is an opened .npy file: its parsed header and a reader over its data. The data's size has
// been checked against the file, so reads inside Data never hit a short file.
type Npy struct {
	Path         string
	Descr        string  // numpy dtype string as in the header, e.g. "<f4"
	Kind         byte    // 'f' float, 'i' signed int, 'u' unsigned int, 'b' bool, 'V' raw void
	ItemSize     int     // bytes per element
	Shape        []int64 // as in the header; () is a scalar
	FortranOrder bool
	DataOffset   int64 // byte offset of the first element

	file *os.File
	data *io.SectionReader
}

// Stamp is the size and modification time (ns) of the file as it is now open: read at the
// header, it tells a later reader whether the file is still the one the header described.
func (a *Npy) Stamp() (size, mtimeNS int64, err error) {
	st, err := a.file.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("ingest: stat %s: %w", a.Path, err)
	}
	return st.Size(), st.ModTime().UnixNano(), nil
}

// OpenNpy opens path and parses its header (format versions 1, 2 and 3). It fails, naming the
// file, on a missing file, a bad magic or header, a structured or big-endian dtype, or a file
// whose size does not match the header (truncated or with trailing bytes).
func OpenNpy(path string) (*Npy, error) {
	f, err := openInput(path)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	a, err := parseNpy(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	return a, nil
}

func parseNpy(f *os.File, path string) (*Npy, error) {
	br := bufio.NewReader(f)
	var pre [10]byte
	if _, err := io.ReadFull(br, pre[:8]); err != nil || string(pre[:6]) != npyMagic {
		return nil, fmt.Errorf("ingest: %s is not a .npy file (no \\x93NUMPY magic)", path)
	}
	major := pre[6]
	var headerLen, offset int64
	switch major {
	case 1:
		if _, err := io.ReadFull(br, pre[8:10]); err != nil {
			return nil, fmt.Errorf("ingest: %s: truncated .npy header", path)
		}
		headerLen, offset = int64(binary.LittleEndian.Uint16(pre[8:10])), 10
	case 2, 3:
		var l [4]byte
		if _, err := io.ReadFull(br, l[:]); err != nil {
			return nil, fmt.Errorf("ingest: %s: truncated .npy header", path)
		}
		headerLen, offset = int64(binary.LittleEndian.Uint32(l[:])), 12
	default:
		return nil, fmt.Errorf("ingest: %s: .npy format version %d.%d is not supported (want 1, 2 or 3)", path, major, pre[7])
	}
	if headerLen > 1<<24 {
		return nil, fmt.Errorf("ingest: %s: .npy header length %d is implausible", path, headerLen)
	}
	header := make([]byte, headerLen)
	if _, err := io.ReadFull(br, header); err != nil {
		return nil, fmt.Errorf("ingest: %s: truncated .npy header (want %d header bytes)", path, headerLen)
	}
	a := &Npy{Path: path, DataOffset: offset + headerLen, file: f}
	if err := a.parseHeader(string(header)); err != nil {
		return nil, fmt.Errorf("ingest: %s: %w", path, err)
	}
	n, err := a.checkedLen()
	if err != nil {
		return nil, fmt.Errorf("ingest: %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	want := a.DataOffset + n*int64(a.ItemSize)
	switch {
	case st.Size() < want:
		return nil, fmt.Errorf("ingest: %s is truncated: shape %s of %s needs %d data bytes, the file holds %d",
			path, shapeString(a.Shape), a.Descr, want-a.DataOffset, max(0, st.Size()-a.DataOffset))
	case st.Size() > want:
		return nil, fmt.Errorf("ingest: %s has %d bytes after the %d data bytes its shape %s of %s needs (not a plain .npy file)",
			path, st.Size()-want, want-a.DataOffset, shapeString(a.Shape), a.Descr)
	}
	a.data = io.NewSectionReader(f, a.DataOffset, n*int64(a.ItemSize))
	return a, nil
}

// parseHeader reads the header dict: {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }.
func (a *Npy) parseHeader(h string) error {
	p := &pyParser{s: strings.TrimRight(h, " \n\x00")}
	v, err := p.value()
	if err != nil {
		return fmt.Errorf("bad .npy header %q: %v", h, err)
	}
	dict, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("bad .npy header %q: not a dict", h)
	}
	descr, ok := dict["descr"].(string)
	if !ok {
		if _, isList := dict["descr"].([]any); isList {
			return errors.New("structured (record) dtypes are not supported; save a plain numeric array")
		}
		return fmt.Errorf("bad .npy header %q: no descr string", h)
	}
	fo, ok := dict["fortran_order"].(bool)
	if !ok {
		return fmt.Errorf("bad .npy header %q: no fortran_order", h)
	}
	shape, ok := dict["shape"].([]any)
	if !ok {
		return fmt.Errorf("bad .npy header %q: no shape tuple", h)
	}
	a.Descr, a.FortranOrder = descr, fo
	for _, d := range shape {
		n, ok := d.(int64)
		if !ok || n < 0 {
			return fmt.Errorf("bad .npy header %q: shape entry %v is not a non-negative integer", h, d)
		}
		a.Shape = append(a.Shape, n)
	}
	kind, size, err := parseDescr(descr)
	if err != nil {
		return err
	}
	a.Kind, a.ItemSize = kind, size
	return nil
}

// parseDescr splits a numpy dtype string into kind and item size, accepting only little-endian
// (or byte-order-free) numeric, bool and void types.
func parseDescr(descr string) (kind byte, size int, err error) {
	if len(descr) < 3 {
		return 0, 0, fmt.Errorf("dtype %q is not supported", descr)
	}
	order, kind := descr[0], descr[1]
	size, convErr := strconv.Atoi(descr[2:])
	if convErr != nil || size <= 0 || size > 1<<20 {
		return 0, 0, fmt.Errorf("dtype %q is not supported", descr)
	}
	if order == '>' && size > 1 {
		return 0, 0, fmt.Errorf("dtype %q is big-endian; save it little-endian (arr.astype(arr.dtype.newbyteorder('<')))", descr)
	}
	if order != '<' && order != '|' && order != '=' && order != '>' {
		return 0, 0, fmt.Errorf("dtype %q has an unknown byte order", descr)
	}
	switch kind {
	case 'f':
		if size != 2 && size != 4 && size != 8 {
			return 0, 0, fmt.Errorf("dtype %q (float%d) is not supported (want float16, float32 or float64)", descr, 8*size)
		}
	case 'i', 'u':
		if size != 1 && size != 2 && size != 4 && size != 8 {
			return 0, 0, fmt.Errorf("dtype %q is not supported", descr)
		}
	case 'b':
		if size != 1 {
			return 0, 0, fmt.Errorf("dtype %q is not supported", descr)
		}
	case 'V':
	default:
		return 0, 0, fmt.Errorf("dtype %q is not supported (want a float, integer, bool or raw void dtype)", descr)
	}
	return kind, size, nil
}

func (a *Npy) checkedLen() (int64, error) {
	n := int64(1)
	for _, d := range a.Shape {
		if d != 0 && n > math.MaxInt64/int64(a.ItemSize)/d {
			return 0, fmt.Errorf("shape %s is too large", shapeString(a.Shape))
		}
		n *= d
	}
	return n, nil
}

// Len is the number of elements (the product of Shape).
func (a *Npy) Len() int64 { n, _ := a.checkedLen(); return n }

// Data reads the elements, raw little-endian, in the file's order (C or Fortran).
func (a *Npy) Data() *io.SectionReader { return a.data }

// DType is the dataset dtype of the elements, or "" for bool, void and unsigned types wider than
// one byte, which have none.
func (a *Npy) DType() dataset.DType { return descrDType(a.Kind, a.ItemSize) }

// Close closes the file.
func (a *Npy) Close() error { return a.file.Close() }

// npyDescrs are the .npy dtype strings of the dataset dtypes: bfloat16, which numpy lacks, is
// "<V2" (what ml_dtypes writes).
var npyDescrs = map[dataset.DType]string{
	dataset.Float16: "<f2", dataset.Float32: "<f4", dataset.Float64: "<f8", dataset.BFloat16: "<V2",
	dataset.Int8: "|i1", dataset.Uint8: "|u1", dataset.Int16: "<i2", dataset.Int32: "<i4", dataset.Int64: "<i8",
}

// descrDType is the dataset dtype of numpy elements of kind and size, "" for none (void, bool,
// wider unsigned ones).
func descrDType(kind byte, size int) dataset.DType {
	for d, descr := range npyDescrs {
		if kind != 'V' && descr[1] == kind && int(descr[2]-'0') == size {
			return d
		}
	}
	return ""
}

// NpyDescr is the .npy dtype string of d: "<f4", "|i1", ... bfloat16, which numpy lacks, is
// "<V2" (what ml_dtypes writes). It returns "" for an unknown dtype.
func NpyDescr(d dataset.DType) string { return npyDescrs[d] }

// WriteNpy writes a C-order .npy file (format 1.0, or 2.0 for a header over 64 KiB) holding
// data, which must be exactly the elements of shape in descr's little-endian encoding. The file
// is written beside path under a temporary name and renamed over path: path holds its old
// contents (or nothing) or the new array, never part of one, whatever call fails. It is not
// fsynced (as numpy's save): a power loss may lose the new array, not mix the two.
func WriteNpy(path string, descr string, shape []int64, data []byte) error {
	return writeNpy(wfs.OS, path, descr, shape, data)
}

// writeNpy is WriteNpy through fsys (an ingest's Options.FS for its scratch arrays; a test's
// wfs.Faulty).
func writeNpy(fsys wfs.FS, path string, descr string, shape []int64, data []byte) error {
	fsys = wfs.Or(fsys)
	_, size, err := parseDescr(descr)
	if err != nil {
		return fmt.Errorf("ingest: write %s: %w", path, err)
	}
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("ingest: write %s: negative dimension in shape %s", path, shapeString(shape))
		}
		n *= d
	}
	if int64(len(data)) != n*int64(size) {
		return fmt.Errorf("ingest: write %s: shape %s of %s needs %d bytes, got %d", path, shapeString(shape), descr, n*int64(size), len(data))
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shapeString(shape))
	prefix := []byte(npyMagic + "\x01\x00")
	lenBytes := 2
	if len(dict)+1+64+10 > math.MaxUint16 {
		prefix, lenBytes = []byte(npyMagic+"\x02\x00"), 4
	}
	total := len(prefix) + lenBytes + len(dict) + 1
	pad := (64 - total%64) % 64
	header := dict + strings.Repeat(" ", pad) + "\n"
	buf := make([]byte, 0, total+pad)
	buf = append(buf, prefix...)
	if lenBytes == 2 {
		buf = binary.LittleEndian.AppendUint16(buf, uint16(len(header)))
	} else {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(header)))
	}
	buf = append(buf, header...)
	tmp := path + npyTmpSuffix
	f, err := wfs.Create(fsys, tmp)
	if err != nil {
		return fmt.Errorf("ingest: write %s: %w", path, err)
	}
	for _, b := range [][]byte{buf, data} { // the header, then the elements
		if _, err = f.Write(b); err != nil {
			break
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, path)
	}
	if err != nil {
		_ = fsys.Remove(tmp)
		return fmt.Errorf("ingest: write %s: %w", path, err)
	}
	return nil
}

// npyTmpSuffix names the file WriteNpy writes before renaming it over its path.
const npyTmpSuffix = ".tierfs-tmp"

// ReadNpyInt64s reads a 1-D .npy array of any integer dtype as int64s (node id lists).
func ReadNpyInt64s(path string) ([]int64, error) {
	a, err := OpenNpy(path)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	if a.Kind != 'i' && a.Kind != 'u' {
		return nil, fmt.Errorf("ingest: %s has dtype %s; want an integer array of ids", path, a.Descr)
	}
	if len(a.Shape) != 1 {
		return nil, fmt.Errorf("ingest: %s has shape %s; want a 1-D array of ids", path, shapeString(a.Shape))
	}
	raw := make([]byte, a.Len()*int64(a.ItemSize))
	if _, err := io.ReadFull(a.Data(), raw); err != nil {
		return nil, fmt.Errorf("ingest: read %s: %w", path, err)
	}
	out := make([]int64, a.Len())
	if bad := decodeInts(out, raw, a.Kind, a.ItemSize); bad >= 0 {
		return nil, fmt.Errorf("ingest: %s: entry %d = %d does not fit in int64", path, bad, binary.LittleEndian.Uint64(raw[8*bad:]))
	}
	return out, nil
}

// decodeInts converts len(dst) little-endian integers of the given kind ('i' or 'u') and size
// from raw into dst. It returns the index of the first uint64 too large for int64, or -1.
func decodeInts(dst []int64, raw []byte, kind byte, size int) int {
	switch {
	case kind == 'i' && size == 1:
		for i := range dst {
			dst[i] = int64(int8(raw[i]))
		}
	case kind == 'u' && size == 1:
		for i := range dst {
			dst[i] = int64(raw[i])
		}
	case kind == 'i' && size == 2:
		for i := range dst {
			dst[i] = int64(int16(binary.LittleEndian.Uint16(raw[2*i:])))
		}
	case kind == 'u' && size == 2:
		for i := range dst {
			dst[i] = int64(binary.LittleEndian.Uint16(raw[2*i:]))
		}
	case kind == 'i' && size == 4:
		for i := range dst {
			dst[i] = int64(int32(binary.LittleEndian.Uint32(raw[4*i:])))
		}
	case kind == 'u' && size == 4:
		for i := range dst {
			dst[i] = int64(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case kind == 'i' && size == 8:
		for i := range dst {
			dst[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
		}
	case kind == 'u' && size == 8:
		for i := range dst {
			v := binary.LittleEndian.Uint64(raw[8*i:])
			if v > math.MaxInt64 {
				return i
			}
			dst[i] = int64(v)
		}
	default:
		panic(fmt.Sprintf("ingest: decodeInts of kind %c size %d", kind, size))
	}
	return -1
}

func shapeString(shape []int64) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.FormatInt(d, 10)
	}
	if len(shape) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// pyParser parses the Python literals a .npy header uses: dicts, tuples, lists, strings, ints,
// True, False and None.
type pyParser struct {
	s   string
	pos int
}

func (p *pyParser) skipSpace() {
	for p.pos < len(p.s) && strings.IndexByte(" \t\n\r", p.s[p.pos]) >= 0 {
		p.pos++
	}
}

func (p *pyParser) value() (any, error) {
	p.skipSpace()
	if p.pos >= len(p.s) {
		return nil, errors.New("unexpected end")
	}
	switch c := p.s[p.pos]; {
	case c == '{':
		p.pos++
		d := map[string]any{}
		for {
			p.skipSpace()
			if p.pos < len(p.s) && p.s[p.pos] == '}' {
				p.pos++
				return d, nil
			}
			k, err := p.value()
			if err != nil {
				return nil, err
			}
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("dict key %v is not a string", k)
			}
			p.skipSpace()
			if p.pos >= len(p.s) || p.s[p.pos] != ':' {
				return nil, fmt.Errorf("want ':' at offset %d", p.pos)
			}
			p.pos++
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			d[ks] = v
			if err := p.separator('}'); err != nil {
				return nil, err
			}
		}
	case c == '(' || c == '[':
		end := byte(')')
		if c == '[' {
			end = ']'
		}
		p.pos++
		var items []any
		for {
			p.skipSpace()
			if p.pos < len(p.s) && p.s[p.pos] == end {
				p.pos++
				if items == nil {
					items = []any{}
				}
				return items, nil
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			items = append(items, v)
			if err := p.separator(end); err != nil {
				return nil, err
			}
		}
	case c == '\'' || c == '"':
		end := strings.IndexByte(p.s[p.pos+1:], c)
		if end < 0 {
			return nil, errors.New("unterminated string")
		}
		s := p.s[p.pos+1 : p.pos+1+end]
		p.pos += end + 2
		return s, nil
	case c == '-' || (c >= '0' && c <= '9'):
		start := p.pos
		p.pos++
		for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
			p.pos++
		}
		n, err := strconv.ParseInt(p.s[start:p.pos], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad integer %q", p.s[start:p.pos])
		}
		if p.pos < len(p.s) && (p.s[p.pos] == 'L' || p.s[p.pos] == 'l') { // Python 2 long
			p.pos++
		}
		return n, nil
	default:
		for _, w := range []struct {
			word string
			v    any
		}{{"True", true}, {"False", false}, {"None", nil}} {
			if strings.HasPrefix(p.s[p.pos:], w.word) {
				p.pos += len(w.word)
				return w.v, nil
			}
		}
		return nil, fmt.Errorf("unexpected %q at offset %d", c, p.pos)
	}
}

// separator consumes a ',' or peeks the closing bracket.
func (p *pyParser) separator(end byte) error {
	p.skipSpace()
	if p.pos < len(p.s) && p.s[p.pos] == ',' {
		p.pos++
		return nil
	}
	if p.pos < len(p.s) && p.s[p.pos] == end {
		return nil
	}
	return fmt.Errorf("want ',' or %q at offset %d", end, p.pos)
}
