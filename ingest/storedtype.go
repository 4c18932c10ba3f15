package ingest

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tierfs/tierfs/dataset"
)

// Store dtypes (Options.StoreDType, HeteroOptions.StoreDType): float32 features written at half
// precision, so the dataset's files, every read of a gather and every cached row take half the
// bytes. Values are rounded to nearest, ties to even, as numpy's astype(np.float16) and torch's
// .to(torch.bfloat16) round them; NaN and ±Inf stay NaN and ±Inf (a float16 NaN keeps its sign
// and top payload bits as numpy's does, a bfloat16 NaN becomes the quiet NaN of its sign as
// ml_dtypes' does; float32ToFloat16, float32ToBFloat16). A finite value that the store dtype
// can hold only as ±Inf (|x| ≥ 65520 in float16; beyond bfloat16's largest finite value,
// 3.3895e38, by half its last step) is an error naming the feature, row, column and value: a
// silent Inf is a corrupted feature (numpy warns, torch says nothing; bfloat16 holds float32's
// range, so only values at float32's very edge can overflow it).
//
// Which features convert: every float32 feature, node and edge, of every type. A feature
// already at the store dtype is kept. Integer features other than a node type's default (ids,
// years, counts) are kept as they are; any other feature (float64, the other half dtype, an
// integer default feature) is an error: only float32 converts.

// checkStoreDType refuses a StoreDType that is not a half-precision float ("" and float32 are
// none: every feature as its input holds it).
func checkStoreDType(store dataset.DType, inPlace bool) error {
	switch store {
	case "", dataset.Float32:
		return nil
	case dataset.Float16, dataset.BFloat16:
	default:
		return fmt.Errorf("ingest: StoreDType %q: want float16 or bfloat16 (float32 features stored at half precision)", store)
	}
	if inPlace {
		return fmt.Errorf("ingest: StoreDType %s with FeaturesInPlace: an in-place feature is read as its file holds it; leave one of them out", store)
	}
	return nil
}

// storeAs sets the dtype src (the feature what, a node type's default when isDefault) is stored
// at under store (checked by checkStoreDType), refusing a feature that cannot be converted.
func storeAs(src *featureSource, store dataset.DType, what string, isDefault bool) error {
	switch {
	case store == "" || src.dtype == store:
		return nil
	case src.dtype == dataset.Float32:
		src.store = store
		return nil
	case !isDefault && isIntegerDType(src.dtype):
		return nil
	}
	kept := ""
	if isDefault && isIntegerDType(src.dtype) {
		kept = " (integer features are kept as they are, but this is its type's default feature, the rows a store caches)"
	}
	return fmt.Errorf("ingest: %s has dtype %s; StoreDType %s converts float32 features only%s: give it as float32, or leave StoreDType out", what, src.dtype, store, kept)
}

func isIntegerDType(d dataset.DType) bool {
	switch d {
	case dataset.Int8, dataset.Uint8, dataset.Int16, dataset.Int32, dataset.Int64:
		return true
	}
	return false
}

// storedDType is the dtype the feature's rows are written at.
func (fs *featureSource) storedDType() dataset.DType {
	if fs.store != "" {
		return fs.store
	}
	return fs.dtype
}

// rowWriter takes a feature's rows in order (a dataset.FeatureWriter, or a halfWriter in front
// of one).
type rowWriter interface{ WriteRows(rows []byte) error }

// halfWriter converts float32 rows to its store dtype before the FeatureWriter takes them.
type halfWriter struct {
	fw    rowWriter
	store dataset.DType
	dim   int64
	what  string             // the feature, for errors
	where func(int64) string // row r as the input names it ("row 7", "edge id 7 (input row 3)")
	row   int64              // rows written so far
	buf   []byte
}

// WriteRows converts rows (whole float32 rows) and writes them, refusing a finite value that
// the store dtype would hold as Inf.
func (h *halfWriter) WriteRows(rows []byte) error {
	n := int64(len(rows)) / 4
	if int64(len(rows))%(4*h.dim) != 0 {
		return fmt.Errorf("ingest: %s: %d bytes is not a whole number of %d float32 values", h.what, len(rows), h.dim)
	}
	if int64(cap(h.buf)) < 2*n {
		h.buf = make([]byte, 2*n)
	}
	out := h.buf[:2*n]
	half := float32ToFloat16
	if h.store == dataset.BFloat16 {
		half = float32ToBFloat16
	}
	for i := int64(0); i < n; i++ {
		v := math.Float32frombits(binary.LittleEndian.Uint32(rows[4*i:]))
		b := half(v)
		if b&0x7fff == h.infBits() && !math.IsInf(float64(v), 0) {
			r := h.row + i/h.dim
			return fmt.Errorf("ingest: %s: %s, column %d holds %g, outside %s's finite range (largest %g): it would be stored as Inf; scale the feature, or store it as bfloat16",
				h.what, h.where(r), i%h.dim, v, h.store, h.largest())
		}
		binary.LittleEndian.PutUint16(out[2*i:], b)
	}
	h.row += n / h.dim
	return h.fw.WriteRows(out)
}

// infBits is the store dtype's +Inf.
func (h *halfWriter) infBits() uint16 {
	if h.store == dataset.BFloat16 {
		return 0x7f80
	}
	return 0x7c00
}

// largest is the store dtype's largest finite value.
func (h *halfWriter) largest() float32 {
	if h.store == dataset.BFloat16 {
		return bfloat16ToFloat32(0x7f7f)
	}
	return float16ToFloat32(0x7bff)
}

// rowsOf names row r of a node feature's input.
func rowsOf(r int64) string { return fmt.Sprintf("row %d", r) }

// what names the feature in errors.
func (ns namedSource) what() string {
	return fmt.Sprintf("feature %q (file %s)", ns.in.Name, ns.in.Path)
}

// storeFeaturesAs applies store to a type's node features (the first its default) and edge
// features, by storeAs.
func storeFeaturesAs(store dataset.DType, node, edge []namedSource) error {
	if store == dataset.Float32 {
		return nil
	}
	for i, f := range node {
		if err := storeAs(f.src, store, "node "+f.what(), i == 0); err != nil {
			return err
		}
	}
	for _, f := range edge {
		if err := storeAs(f.src, store, "edge "+f.what(), false); err != nil {
			return err
		}
	}
	return nil
}
