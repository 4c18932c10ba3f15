package ingest

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/tierfs/tierfs/dataset"
)

// featureName is the name of the feature Options.Features holds.
const featureName = "x"

// featureChunkBytes bounds the rows buffered between the input and the FeatureWriter.
var featureChunkBytes int64 = 64 << 20

// featureSource is a dense [rows, dim] matrix in some input format.
type featureSource struct {
	path   string
	format fileFormat
	rows   int64
	dim    int64
	dtype  dataset.DType // the input's
	store  dataset.DType // the dtype its rows are written at when not dtype (storeAs); "" for dtype
	// Arrow inputs: either one list column (listColumn) or one column per dimension.
	fields     []int
	listColumn bool
	elemSize   int
	scalar     bool    // a 1-D .npy: one value a row (dim 1), stored as a scalar feature
	shape      []int64 // a .npy of 3 or more dimensions: a row's shape (dim its product), else nil
	dataOffset int64   // a .npy: byte offset of the first row (the header's length)
	// size and mtimeNS are a .npy file's when its header was read (Npy.Stamp).
	size, mtimeNS int64
}

// openFeatures inspects a feature file: a 2-D C-order .npy, or a Parquet / Arrow IPC file with one
// fixed_size_list (or list) column or one numeric column per dimension. override is
// Options.FeatureDType. With scalarOK a 1-D .npy is a feature of one value a row.
func openFeatures(path string, override dataset.DType, scalarOK bool) (*featureSource, error) {
	format, err := detectFormat(path)
	if err != nil {
		return nil, fmt.Errorf("ingest: features: %w", unwrapIngest(err))
	}
	if format == formatNpy {
		a, err := OpenNpy(path)
		if err != nil {
			return nil, fmt.Errorf("ingest: features: %w", unwrapIngest(err))
		}
		defer a.Close()
		scalar := scalarOK && len(a.Shape) == 1
		if scalar {
			a.Shape = []int64{a.Shape[0], 1}
		}
		var shape []int64
		if len(a.Shape) > 2 { // rows of more than one dimension (GraphBolt's (N, a, b)): stored flat
			shape = slices.Clone(a.Shape[1:])
			dim := int64(1)
			for _, d := range shape {
				if d <= 0 || d > 1<<30 || dim > 1<<30/d {
					return nil, fmt.Errorf("ingest: features file %s has shape %s; each size of a row must be positive and a row at most 2^30 values", path, shapeString(a.Shape))
				}
				dim *= d
			}
			a.Shape = []int64{a.Shape[0], dim}
		}
		if len(a.Shape) != 2 {
			want := "2-D (rows, dim) or more (rows, a, b, ...)"
			if scalarOK {
				want = "2-D (rows, dim), more (rows, a, b, ...) or 1-D (rows,)"
			}
			return nil, fmt.Errorf("ingest: features file %s has shape %s; want %s", path, shapeString(a.Shape), want)
		}
		if a.FortranOrder {
			return nil, fmt.Errorf("ingest: features file %s is in Fortran order; save np.ascontiguousarray(x)", path)
		}
		if a.Shape[1] == 0 {
			return nil, fmt.Errorf("ingest: features file %s has shape %s; dim must be positive", path, shapeString(a.Shape))
		}
		dt, err := featureDType(a.Kind, a.ItemSize, a.Descr, override)
		if err != nil {
			return nil, fmt.Errorf("ingest: features file %s: %w", path, err)
		}
		size, mtime, err := a.Stamp()
		if err != nil {
			return nil, err
		}
		return &featureSource{path: path, format: format, rows: a.Shape[0], dim: a.Shape[1], dtype: dt, elemSize: a.ItemSize, scalar: scalar, shape: shape,
			dataOffset: a.DataOffset, size: size, mtimeNS: mtime}, nil
	}
	t, err := openArrowTable(path, format)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	fs := &featureSource{path: path, format: format}
	fields := t.schema.Fields()
	if len(fields) == 0 {
		return nil, fmt.Errorf("ingest: features file %s has no columns", path)
	}
	var kind byte
	var what string
	if len(fields) == 1 && isListType(fields[0].Type) {
		elem := fields[0].Type.(arrow.ListLikeType).Elem()
		k, size, ok := arrowPrimitive(elem)
		if !ok {
			return nil, fmt.Errorf("ingest: features file %s: column %q holds %s; want a list of numbers", path, fields[0].Name, elem)
		}
		fs.fields, fs.listColumn, kind, fs.elemSize, what = []int{0}, true, k, size, elem.String()
		if fsl, ok := fields[0].Type.(*arrow.FixedSizeListType); ok {
			fs.dim = int64(fsl.Len())
		}
	} else {
		for i, f := range fields {
			k, size, ok := arrowPrimitive(f.Type)
			if !ok {
				return nil, fmt.Errorf("ingest: features file %s: column %q has type %s; want one fixed_size_list column or one numeric column per dimension", path, f.Name, f.Type)
			}
			if i > 0 && !arrow.TypeEqual(f.Type, fields[0].Type) {
				return nil, fmt.Errorf("ingest: features file %s: column %q has type %s but column %q has %s; all dimensions need one type", path, f.Name, f.Type, fields[0].Name, fields[0].Type)
			}
			fs.fields = append(fs.fields, i)
			kind, fs.elemSize, what = k, size, f.Type.String()
		}
		fs.dim = int64(len(fields))
	}
	if fs.dtype, err = featureDType(kind, fs.elemSize, what, override); err != nil {
		return nil, fmt.Errorf("ingest: features file %s: %w", path, err)
	}
	if fs.rows, err = t.countRows(); err != nil {
		return nil, err
	}
	if fs.listColumn && fs.dim == 0 {
		// A variable-size list: the first row tells the dim; writeTo checks every row.
		t2, err := openArrowTable(path, format)
		if err != nil {
			return nil, err
		}
		defer t2.Close()
		errStop := fmt.Errorf("stop")
		err = t2.scan(fs.fields, 1, func(cols []arrow.Array, rows int64) error {
			if rows > 0 {
				if _, s, e, ok := listValues(cols[0], 0); ok && cols[0].IsValid(0) {
					fs.dim = e - s
				}
			}
			return errStop
		})
		if err != nil && err != errStop {
			return nil, err
		}
	}
	if fs.dim <= 0 && fs.rows > 0 {
		return nil, fmt.Errorf("ingest: features file %s: rows have no values; dim must be positive", path)
	}
	return fs, nil
}

func isListType(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.FIXED_SIZE_LIST, arrow.LIST, arrow.LARGE_LIST:
		return true
	}
	return false
}

// featureDType picks the dataset dtype of feature values of the given npy-style kind and size
// (what names the input type in errors). override (Options.FeatureDType) names raw 2-byte
// values: it applies to void types of its size, and to 2-byte integers as float16 or bfloat16
// (bfloat16 saved as a uint16 view); otherwise it must agree with the input type.
func featureDType(kind byte, size int, what string, override dataset.DType) (dataset.DType, error) {
	native := descrDType(kind, size)
	if override == "" {
		switch {
		case native != "":
			return native, nil
		case kind == 'V':
			return "", fmt.Errorf("dtype %s is raw %d-byte values (e.g. bfloat16 saved by ml_dtypes); set FeatureDType to say what they are", what, size)
		default:
			return "", fmt.Errorf("dtype %s is not a supported feature dtype (want float32, float16, bfloat16, float64, int8, uint8, int16, int32 or int64)", what)
		}
	}
	if override.Size() == 0 {
		return "", fmt.Errorf("FeatureDType %q is not a known dtype", override)
	}
	switch {
	case override == native:
		return native, nil
	case kind == 'V' && size == override.Size():
		return override, nil
	case (kind == 'i' || kind == 'u') && size == 2 && (override == dataset.BFloat16 || override == dataset.Float16):
		return override, nil
	}
	return "", fmt.Errorf("FeatureDType %s does not apply to values of dtype %s (it names raw %d-byte values, such as bfloat16 saved as '<V2')", override, what, override.Size())
}

// rowBytes is the size of one row.
func (fs *featureSource) rowBytes() int64 { return fs.dim * int64(fs.elemSize) }

// writeTo streams every row into w, in order, in chunks of at most featureChunkBytes.
func (fs *featureSource) writeTo(w rowWriter, progress func(string, int64, int64)) error {
	rb := fs.rowBytes()
	chunkRows := max(1, featureChunkBytes/rb)
	buf := make([]byte, min(chunkRows, max(fs.rows, 1))*rb)
	if fs.format == formatNpy {
		a, err := OpenNpy(fs.path)
		if err != nil {
			return err
		}
		defer a.Close()
		if a.Len() != fs.rows*fs.dim {
			return fmt.Errorf("ingest: features file %s changed while being read", fs.path)
		}
		data := a.Data()
		for row := int64(0); row < fs.rows; {
			n := min(chunkRows, fs.rows-row)
			if _, err := io.ReadFull(data, buf[:n*rb]); err != nil {
				return readErr(fs.path, err)
			}
			if err := w.WriteRows(buf[:n*rb]); err != nil {
				return fmt.Errorf("ingest: %w", err)
			}
			row += n
			report(progress, "features", row, fs.rows)
		}
		return nil
	}
	t, err := openArrowTable(fs.path, fs.format)
	if err != nil {
		return err
	}
	defer t.Close()
	var row int64
	err = t.scan(fs.fields, chunkRows, func(cols []arrow.Array, rows int64) error {
		for off := int64(0); off < rows; off += chunkRows {
			n := min(chunkRows, rows-off)
			if err := fs.assemble(buf[:n*rb], cols, row, off, n); err != nil {
				return err
			}
			if err := w.WriteRows(buf[:n*rb]); err != nil {
				return fmt.Errorf("ingest: %w", err)
			}
			row += n
			report(progress, "features", row, fs.rows)
		}
		return nil
	})
	if err == nil && row != fs.rows {
		err = fmt.Errorf("ingest: features file %s changed while being read (%d rows, then %d)", fs.path, fs.rows, row)
	}
	return err
}

// assemble copies rows [off, off+n) of a batch into out as packed rows; first is the index of
// the batch's first row in the file (for errors).
func (fs *featureSource) assemble(out []byte, cols []arrow.Array, first, off, n int64) error {
	size := int64(fs.elemSize)
	rb := fs.rowBytes()
	if fs.listColumn {
		col := cols[0]
		if col.NullN() > 0 {
			for i := off; i < off+n; i++ {
				if col.IsNull(int(i)) {
					return fmt.Errorf("ingest: features file %s: row %d is null", fs.path, first+i-off)
				}
			}
		}
		for i := int64(0); i < n; i++ {
			child, s, e, _ := listValues(col, int(off+i))
			if e-s != fs.dim {
				return fmt.Errorf("ingest: features file %s: row %d has %d values, want %d (rows must all have the same dim)", fs.path, first+i, e-s, fs.dim)
			}
			raw, err := primitiveBytes(child, int(size), s, fs.dim)
			if err != nil {
				return fmt.Errorf("ingest: features file %s: list values %v", fs.path, err)
			}
			copy(out[i*rb:(i+1)*rb], raw)
		}
		return nil
	}
	for c, col := range cols {
		raw, err := primitiveBytes(col, int(size), off, n)
		if err != nil {
			return fmt.Errorf("ingest: features file %s: column %d %v", fs.path, fs.fields[c], err)
		}
		at := int64(c) * size
		for i := int64(0); i < n; i++ {
			copy(out[i*rb+at:i*rb+at+size], raw[i*size:(i+1)*size])
		}
	}
	return nil
}

// newFeatureSpec lays out the feature matrix over one file in dir (typeDir/features.<name>.0.bin),
// or one stripe per device path: stripe k of dataset dir D goes to
// <devicePaths[k]>/<base of D>.<tag>.<k>.<nonce>.bin (absolute; the write's nonce keeps a
// replaced dataset's stripes apart from the new ones). tag is the feature's name, prefixed by
// its type ("paper:x", "author:writes:paper:w") in a dataset of several types.
func newFeatureSpec(dir, typeDir, tag, name string, src *featureSource, count int64, devicePaths []string, nonce string) (dataset.FeatureSpec, error) {
	spec, err := dataset.NewFeatureSpec(name, src.storedDType(), src.dim, count, max(1, len(devicePaths)), dataset.DefaultBlockSize)
	if err != nil {
		return spec, fmt.Errorf("ingest: %w", err)
	}
	spec.Scalar, spec.Shape = src.scalar, src.shape
	if len(devicePaths) == 0 {
		spec.Files[0] = path.Join(typeDir, "features."+name+".0.bin")
		return spec, nil
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return spec, fmt.Errorf("ingest: %w", err)
	}
	base := filepath.Base(absDir)
	for k, p := range devicePaths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return spec, fmt.Errorf("ingest: device path %s: %w", p, err)
		}
		st, err := os.Stat(abs)
		if err != nil {
			return spec, fmt.Errorf("ingest: device path %s: %w", p, err)
		}
		if !st.IsDir() {
			return spec, fmt.Errorf("ingest: device path %s is not a directory", p)
		}
		spec.Files[k] = filepath.Join(abs, base+"."+tag+"."+strconv.Itoa(k)+"."+nonce+".bin")
	}
	return spec, nil
}

// newInPlaceSpec describes src, a .npy file, as the in-place feature name of count rows:
// the dataset reads the file where it is (Options.FeaturesInPlace).
func newInPlaceSpec(name string, src *featureSource, count int64) (dataset.FeatureSpec, error) {
	if src.format != formatNpy {
		return dataset.FeatureSpec{}, fmt.Errorf("ingest: feature %q: %s is not a .npy file; only a .npy feature file can be used in place (FeaturesInPlace)", name, src.path)
	}
	abs, err := filepath.Abs(src.path)
	if err != nil {
		return dataset.FeatureSpec{}, fmt.Errorf("ingest: feature %q: %w", name, err)
	}
	spec, err := dataset.NewInPlaceFeatureSpec(name, src.dtype, src.dim, count, abs, src.dataOffset, dataset.DefaultBlockSize)
	if err != nil {
		return spec, fmt.Errorf("ingest: %w", err)
	}
	spec.Scalar, spec.Shape = src.scalar, src.shape
	spec.ExpectInPlaceFile(src.size, src.mtimeNS)
	return spec, nil
}

// checkInPlace refuses in-place feature files (absolute paths) that ingest could harm or that
// collide: one inside the output directory out, which a replacing write removes, and one file
// given for two features.
func checkInPlace(out string, specs []*dataset.FeatureSpec) error {
	absOut, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	outs := []string{absOut}
	if real, err := filepath.EvalSymlinks(absOut); err == nil && real != absOut {
		outs = append(outs, real)
	}
	seen := map[string]string{}
	for _, s := range specs {
		p := s.Files[0]
		paths := []string{p}
		if real, err := filepath.EvalSymlinks(p); err == nil && real != p {
			paths = append(paths, real)
		}
		for _, q := range paths {
			for _, o := range outs {
				if rel, err := filepath.Rel(o, q); err == nil && filepath.IsLocal(rel) {
					return fmt.Errorf("ingest: feature %q: the in-place file %s is inside the output directory %s, whose files ingest replaces; move it elsewhere", s.Name, p, out)
				}
			}
			if other, dup := seen[q]; dup {
				return fmt.Errorf("ingest: features %q and %q both name the in-place file %s; give each feature its own file", other, s.Name, p)
			}
			seen[q] = s.Name
		}
	}
	return nil
}
