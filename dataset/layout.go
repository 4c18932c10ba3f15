package dataset

import (
	"fmt"
	"path/filepath"
	"strings"
	"unsafe"
)

// DType names an element type, as numpy spells it.
type DType string

const (
	Float32  DType = "float32"
	Float16  DType = "float16"
	BFloat16 DType = "bfloat16"
	Float64  DType = "float64"
	Int8     DType = "int8"
	Uint8    DType = "uint8"
	Int16    DType = "int16"
	Int32    DType = "int32"
	Int64    DType = "int64"
)

var dtypeSizes = map[DType]int{Float32: 4, Float16: 2, BFloat16: 2, Float64: 8, Int8: 1, Uint8: 1, Int16: 2, Int32: 4, Int64: 8}

// Size is the element size in bytes, or 0 for an unknown dtype.
func (d DType) Size() int { return dtypeSizes[d] }

// ParseDType accepts a dtype name ("float32", "f4", "bf16", ...).
func ParseDType(s string) (DType, error) {
	aliases := map[string]DType{"f4": Float32, "f32": Float32, "float": Float32, "f2": Float16, "f16": Float16, "half": Float16,
		"bf16": BFloat16, "f8": Float64, "f64": Float64, "double": Float64, "i1": Int8, "u1": Uint8, "i2": Int16, "i4": Int32, "i8": Int64}
	d := DType(strings.ToLower(s))
	if a, ok := aliases[string(d)]; ok {
		d = a
	}
	if d.Size() == 0 {
		return "", fmt.Errorf("unknown dtype %q (want one of float32, float16, bfloat16, float64, int8, uint8, int16, int32, int64)", s)
	}
	return d, nil
}

// NewFeatureSpec lays out count rows of dim elements of dtype over nfiles files, for a dataset of
// the given block size. Files are named by the caller afterwards.
func NewFeatureSpec(name string, dtype DType, dim, count int64, nfiles, blockSize int) (FeatureSpec, error) {
	if dtype.Size() == 0 {
		return FeatureSpec{}, fmt.Errorf("feature %q: unknown dtype %q", name, dtype)
	}
	if dim <= 0 {
		return FeatureSpec{}, fmt.Errorf("feature %q: dim %d must be positive", name, dim)
	}
	if nfiles < 1 {
		return FeatureSpec{}, fmt.Errorf("feature %q: needs at least one file", name)
	}
	f := FeatureSpec{Name: name, DType: dtype, Dim: dim, RowBytes: dim * int64(dtype.Size()), Files: make([]string, nfiles)}
	bs := int64(blockSize)
	const stripeBytes = 1 << 20
	if f.RowBytes <= bs {
		f.RowsPerBlock = bs / f.RowBytes
		f.StripeRows = f.RowsPerBlock * max(1, stripeBytes/bs)
	} else {
		f.StripeRows = max(1, stripeBytes/f.RowBytes)
	}
	f.blockSize, f.count = bs, count
	return f, nil
}

// NewInPlaceFeatureSpec describes count rows of dim elements of dtype packed back to back from
// byte dataOffset of the user's file path (absolute), read where it is (FeatureSpec.InPlace).
func NewInPlaceFeatureSpec(name string, dtype DType, dim, count int64, path string, dataOffset int64, blockSize int) (FeatureSpec, error) {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return FeatureSpec{}, fmt.Errorf("feature %q: in-place file %q is not a clean absolute path", name, path)
	}
	if dataOffset < 0 {
		return FeatureSpec{}, fmt.Errorf("feature %q: in-place file %s: data offset %d is negative", name, path, dataOffset)
	}
	f, err := NewFeatureSpec(name, dtype, dim, count, 1, blockSize)
	if err != nil {
		return f, err
	}
	f.InPlace, f.DataOffset, f.Files[0] = true, dataOffset, path
	f.RowsPerBlock, f.StripeRows = 0, max(1, (1<<20)/f.RowBytes)
	return f, nil
}

// ExpectInPlaceFile records the size and modification time (ns) the in-place file had when its
// header was read: Commit checksums it only while it still has them, so a file replaced between
// the two is refused rather than described by another file's header.
func (f *FeatureSpec) ExpectInPlaceFile(size, mtimeNS int64) {
	f.inPlaceSize, f.inPlaceMTimeNS = size, mtimeNS
}

// Count is the number of rows.
func (f *FeatureSpec) Count() int64 { return f.count }

// Locate returns the file index and byte offset of row. Rows are grouped into stripes of
// StripeRows; stripe s is stored in file s % len(Files), stripes of a file back to back. Inside a
// file, when RowsPerBlock > 0, each block holds RowsPerBlock rows followed by zero padding, so no
// row straddles a block; otherwise rows are packed back to back from DataOffset (0 unless the
// feature is in place).
func (f *FeatureSpec) Locate(row int64) (file int, offset int64) {
	n := int64(len(f.Files))
	stripe := row / f.StripeRows
	local := (stripe/n)*f.StripeRows + row%f.StripeRows
	return int(stripe % n), f.localOffset(local)
}

func (f *FeatureSpec) localOffset(local int64) int64 {
	if f.RowsPerBlock > 0 {
		return f.DataOffset + (local/f.RowsPerBlock)*f.blockSize + (local%f.RowsPerBlock)*f.RowBytes
	}
	return f.DataOffset + local*f.RowBytes
}

// RowsInFile is the number of rows stored in file k.
func (f *FeatureSpec) RowsInFile(k int) int64 {
	n := int64(len(f.Files))
	full, rem := f.count/f.StripeRows, f.count%f.StripeRows
	rows := (full / n) * f.StripeRows
	if int64(k) < full%n {
		rows += f.StripeRows
	}
	if full%n == int64(k) {
		rows += rem
	}
	return rows
}

// ContentBytesOfFile is the number of bytes file k holds before its final padding (an in-place
// file: its header and rows).
func (f *FeatureSpec) ContentBytesOfFile(k int) int64 {
	rows := f.RowsInFile(k)
	if rows == 0 {
		return 0
	}
	return f.localOffset(rows-1) + f.RowBytes
}

// RoundUp rounds n up to a multiple of block.
func RoundUp(n, block int64) int64 { return (n + block - 1) / block * block }

// BytesOf views an array of fixed-size integers as the bytes a dataset file stores it in (arrays
// are little-endian, as is every machine tierfs builds for), for reading a file straight into it.
func BytesOf[T ~int32 | ~int64 | ~uint32 | ~uint64](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(v[0])))
}
