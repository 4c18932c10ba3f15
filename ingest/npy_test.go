package ingest

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
)

func TestNpyRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, descr := range []string{"<f4", "<f2", "<f8", "|i1", "|u1", "<i2", "<i4", "<i8", "<u2", "<u4", "<u8", "|b1", "<V2"} {
		for _, shape := range [][]int64{{}, {0}, {7}, {3, 5}, {2, 3, 4}} {
			_, size, err := parseDescr(descr)
			if err != nil {
				t.Fatal(err)
			}
			n := int64(1)
			for _, d := range shape {
				n *= d
			}
			data := make([]byte, n*int64(size))
			for i := range data {
				data[i] = byte(i*7 + 1)
			}
			p := filepath.Join(dir, "a.npy")
			if err := WriteNpy(p, descr, shape, data); err != nil {
				t.Fatal(err)
			}
			raw, _ := os.ReadFile(p)
			if (len(raw)-len(data))%64 != 0 {
				t.Errorf("%s %v: header of %d bytes is not 64-aligned", descr, shape, len(raw)-len(data))
			}
			a, err := OpenNpy(p)
			if err != nil {
				t.Fatalf("%s %v: %v", descr, shape, err)
			}
			got, _ := io.ReadAll(a.Data())
			a.Close()
			if a.Descr != descr || !slices.Equal(a.Shape, shape) || a.FortranOrder || a.ItemSize != size || !bytes.Equal(got, data) {
				t.Errorf("%s %v: read back descr %s shape %v size %d, %d bytes", descr, shape, a.Descr, a.Shape, a.ItemSize, len(got))
			}
		}
	}
}

// rawNpy builds a .npy file by hand, for header variants WriteNpy does not produce.
func rawNpy(major byte, header string, data []byte) []byte {
	var b bytes.Buffer
	b.WriteString(npyMagic)
	b.WriteByte(major)
	b.WriteByte(0)
	if major == 1 {
		binary.Write(&b, binary.LittleEndian, uint16(len(header)))
	} else {
		binary.Write(&b, binary.LittleEndian, uint32(len(header)))
	}
	b.WriteString(header)
	b.Write(data)
	return b.Bytes()
}

func TestNpyHeaderVariants(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 6*4)
	cases := []struct {
		major  byte
		header string
		shape  []int64
		fo     bool
	}{
		{1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }\n", []int64{2, 3}, false},
		{2, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }      \n", []int64{2, 3}, true},
		{3, `{"shape": (6,), "fortran_order": False, "descr": "<i4"}` + "\n", []int64{6}, false},
		{1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2L, 3L), }\n", []int64{2, 3}, false}, // Python 2
	}
	for i, c := range cases {
		p := filepath.Join(dir, "h.npy")
		os.WriteFile(p, rawNpy(c.major, c.header, data), 0o644)
		a, err := OpenNpy(p)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		a.Close()
		if !slices.Equal(a.Shape, c.shape) || a.FortranOrder != c.fo || a.Kind != 'i' || a.ItemSize != 4 {
			t.Errorf("case %d: got shape %v fortran %v kind %c size %d", i, a.Shape, a.FortranOrder, a.Kind, a.ItemSize)
		}
	}
}

func TestNpyBadFiles(t *testing.T) {
	dir := t.TempDir()
	good := rawNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n", make([]byte, 16))
	cases := []struct {
		name, want string
		content    []byte
	}{
		{"truncated", "truncated", good[:len(good)-3]},
		{"trailing", "after the", append(slices.Clone(good), 1, 2)},
		{"magic", "not a .npy", []byte("PK\x03\x04 zip file")},
		{"empty", "not a .npy", nil},
		{"bigendian", "big-endian", rawNpy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }\n", make([]byte, 16))},
		{"structured", "structured", rawNpy(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }\n", make([]byte, 16))},
		{"complex", "not supported", rawNpy(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }\n", make([]byte, 16))},
		{"object", "not supported", rawNpy(1, "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }\n", make([]byte, 16))},
		{"header", "bad .npy header", rawNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,) \n", make([]byte, 16))},
		{"version", "version 9", rawNpy(9, "{}", nil)},
		{"shorthead", "truncated .npy header", good[:20]},
	}
	for _, c := range cases {
		p := filepath.Join(dir, c.name+".npy")
		os.WriteFile(p, c.content, 0o644)
		_, err := OpenNpy(p)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) || !strings.HasPrefix(err.Error(), "ingest: ") {
			t.Errorf("%s: got error %v, want one naming %s and saying %q", c.name, err, p, c.want)
		}
	}
	if _, err := OpenNpy(filepath.Join(dir, "missing.npy")); err == nil || !strings.Contains(err.Error(), "missing.npy") {
		t.Errorf("missing file: %v", err)
	}
	if err := WriteNpy(filepath.Join(dir, "w.npy"), "<f4", []int64{3}, make([]byte, 8)); err == nil {
		t.Error("WriteNpy accepted 8 bytes for 3 float32s")
	}
}

func TestReadNpyInt64s(t *testing.T) {
	dir := t.TempDir()
	want := []int64{0, 1, 5, 100, 127}
	for _, descr := range []string{"|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8"} {
		_, size, _ := parseDescr(descr)
		data := make([]byte, len(want)*size)
		for i, v := range want {
			switch size {
			case 1:
				data[i] = byte(v)
			case 2:
				binary.LittleEndian.PutUint16(data[2*i:], uint16(v))
			case 4:
				binary.LittleEndian.PutUint32(data[4*i:], uint32(v))
			case 8:
				binary.LittleEndian.PutUint64(data[8*i:], uint64(v))
			}
		}
		p := filepath.Join(dir, "ids.npy")
		WriteNpy(p, descr, []int64{int64(len(want))}, data)
		got, err := ReadNpyInt64s(p)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: got %v, %v", descr, got, err)
		}
	}
	p := filepath.Join(dir, "neg.npy")
	WriteNpy(p, "|i1", []int64{2}, []byte{0xff, 0x80})
	if got, _ := ReadNpyInt64s(p); !slices.Equal(got, []int64{-1, -128}) {
		t.Errorf("int8 sign extension: %v", got)
	}
	WriteNpy(p, "<u8", []int64{1}, binary.LittleEndian.AppendUint64(nil, math.MaxUint64))
	if _, err := ReadNpyInt64s(p); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Errorf("uint64 max: %v", err)
	}
	WriteNpy(p, "<f4", []int64{1}, make([]byte, 4))
	if _, err := ReadNpyInt64s(p); err == nil || !strings.Contains(err.Error(), "integer") {
		t.Errorf("float ids: %v", err)
	}
	WriteNpy(p, "<i8", []int64{1, 1}, make([]byte, 8))
	if _, err := ReadNpyInt64s(p); err == nil || !strings.Contains(err.Error(), "1-D") {
		t.Errorf("2-D ids: %v", err)
	}
}

func TestNpyDescr(t *testing.T) {
	for _, d := range []dataset.DType{dataset.Float32, dataset.Float16, dataset.Float64, dataset.Int8, dataset.Uint8, dataset.Int16, dataset.Int32, dataset.Int64} {
		kind, size, err := parseDescr(NpyDescr(d))
		if err != nil || descrDType(kind, size) != d {
			t.Errorf("%s: descr %q maps back to %q (%v)", d, NpyDescr(d), descrDType(kind, size), err)
		}
	}
	if NpyDescr(dataset.BFloat16) != "<V2" || NpyDescr("float8") != "" {
		t.Errorf("bfloat16 -> %q, float8 -> %q", NpyDescr(dataset.BFloat16), NpyDescr("float8"))
	}
}

func TestFloat16Conversion(t *testing.T) {
	for h := range 1 << 16 {
		h := uint16(h)
		f := float16ToFloat32(h)
		if f != f {
			if g := float32ToFloat16(f); g&0x7c00 != 0x7c00 || g&0x3ff == 0 {
				t.Fatalf("NaN %#04x -> %#04x, not NaN", h, g)
			}
			continue
		}
		if got := float32ToFloat16(f); got != h {
			t.Fatalf("%#04x (%g) round-trips to %#04x", h, f, got)
		}
		if h&0x7fff >= 0x7c00 { // Inf: no next value
			continue
		}
		// The midpoint between h and the next half away from zero rounds to the even one; a
		// float32 ulp either side rounds to the nearer one.
		next := float16ToFloat32(h + 1)
		if h&0x7fff == 0x7bff {
			next = float32(math.Copysign(65536, float64(f)))
		}
		mid := float32((float64(f) + float64(next)) / 2)
		even := h
		if h&1 == 1 {
			even = h + 1
		}
		if got := float32ToFloat16(mid); got != even {
			t.Fatalf("midpoint %g between %#04x and %#04x -> %#04x, want %#04x", mid, h, h+1, got, even)
		}
		if got := float32ToFloat16(math.Nextafter32(mid, 0)); got != h {
			t.Fatalf("just below midpoint after %#04x -> %#04x", h, got)
		}
		if got := float32ToFloat16(math.Nextafter32(mid, 2*next)); got != h+1 {
			t.Fatalf("just above midpoint after %#04x -> %#04x", h, got)
		}
	}
	for _, c := range []struct {
		f    float32
		want uint16
	}{{65519, 0x7bff}, {65520, 0x7c00}, {1e10, 0x7c00}, {-1e10, 0xfc00}, {float32(math.Ldexp(1, -25)), 0}, {float32(math.Ldexp(1.0001, -25)), 1}, {1e-10, 0}, {1, 0x3c00}, {-2, 0xc000}} {
		if got := float32ToFloat16(c.f); got != c.want {
			t.Errorf("float16(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
	// NaN bits as numpy 2.4's astype(np.float16) makes them (python/tests/test_half_dtype.py
	// compares the rest bit for bit): sign and the top payload bits kept, signalling stays so.
	for _, c := range [][2]uint32{{0x7fc00001, 0x7e00}, {0xffc00000, 0xfe00}, {0x7f800001, 0x7c01}, {0xff812345, 0xfc09}, {0x7fa00000, 0x7d00}} {
		if got := float32ToFloat16(math.Float32frombits(c[0])); got != uint16(c[1]) {
			t.Errorf("float16(NaN %#08x) = %#04x, want numpy's %#04x", c[0], got, c[1])
		}
	}
}

func TestBFloat16Conversion(t *testing.T) {
	for h := range 1 << 16 {
		h := uint16(h)
		f := bfloat16ToFloat32(h)
		if f != f {
			if g := float32ToBFloat16(f); g&0x7f80 != 0x7f80 || g&0x7f == 0 {
				t.Fatalf("NaN %#04x -> %#04x, not NaN", h, g)
			}
			continue
		}
		if got := float32ToBFloat16(f); got != h {
			t.Fatalf("%#04x round-trips to %#04x", h, got)
		}
		if h&0x7fff >= 0x7f80 {
			continue
		}
		mid := math.Float32frombits(uint32(h)<<16 | 0x8000)
		even := h
		if h&1 == 1 {
			even = h + 1
		}
		if got := float32ToBFloat16(mid); got != even {
			t.Fatalf("midpoint above %#04x -> %#04x, want %#04x", h, got, even)
		}
		if got := float32ToBFloat16(math.Float32frombits(uint32(h)<<16 | 0x7fff)); got != h {
			t.Fatalf("below midpoint above %#04x -> %#04x", h, got)
		}
		if got := float32ToBFloat16(math.Float32frombits(uint32(h)<<16 | 0x8001)); got != h+1 {
			t.Fatalf("above midpoint above %#04x -> %#04x", h, got)
		}
	}
	// NaN bits as ml_dtypes' bfloat16 makes them: the quiet NaN of the sign.
	for _, c := range [][2]uint32{{0x7fc00001, 0x7fc0}, {0xffc00000, 0xffc0}, {0x7f800001, 0x7fc0}, {0xff812345, 0xffc0}} {
		if got := float32ToBFloat16(math.Float32frombits(c[0])); got != uint16(c[1]) {
			t.Errorf("bfloat16(NaN %#08x) = %#04x, want ml_dtypes' %#04x", c[0], got, c[1])
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		f := float32(rng.NormFloat64())
		if d := math.Abs(float64(bfloat16ToFloat32(float32ToBFloat16(f))-f)) / math.Abs(float64(f)); d > 1.0/256 {
			t.Fatalf("bfloat16(%g) is %g away", f, d)
		}
	}
}
