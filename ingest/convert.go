package ingest

import (
	"encoding/binary"
	"math"

	"github.com/tierfs/tierfs/dataset"
)

// float32ToFloat16 converts f to IEEE 754 half precision, rounding to nearest, ties to even;
// overflow becomes ±Inf, NaN stays NaN with its sign and top payload bits, as numpy's
// astype(np.float16) keeps them (bit for bit: a signalling NaN stays signalling, one whose top
// bits are zero becomes 0x7c01).
func float32ToFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff { // Inf or NaN
		if mant != 0 {
			return sign | 0x7c00 | max(1, uint16(mant>>13))
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // biased half exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 { // half subnormal (or zero): value = m * 2^-24
		if e < -10 {
			return sign
		}
		m := mant | 0x800000
		shift := uint32(14 - e)
		half := m >> shift
		rem := m & (1<<shift - 1)
		halfway := uint32(1) << (shift - 1)
		if rem > halfway || (rem == halfway && half&1 == 1) {
			half++ // may carry into the smallest normal, which is right
		}
		return sign | uint16(half)
	}
	half := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++ // may carry into the exponent, up to Inf, which is right
	}
	return sign | uint16(half)
}

// float16ToFloat32 widens a half-precision value exactly.
func float16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		v := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// float32ToBFloat16 converts f to bfloat16 (the top half of a float32), rounding to nearest,
// ties to even; NaN becomes the quiet NaN of its sign (0x7fc0, 0xffc0), as ml_dtypes' (numpy's
// bfloat16) and Eigen's conversions make it (torch's CPU kernels make 0x7fc0 or 0xffff).
func float32ToBFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16)&0x8000 | 0x7fc0
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// bfloat16ToFloat32 widens a bfloat16 value exactly.
func bfloat16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// syntheticRange is the float magnitude mapped to the full range of an integer feature dtype.
const syntheticRange = 4.0

// encodeValues writes vals in dtype's little-endian encoding into out (len(vals)*size bytes).
// Floats are rounded to nearest even; integer dtypes map [-syntheticRange, syntheticRange] onto
// their signed range (uint8 onto [1, 255] around 128), clamping outside it.
func encodeValues(out []byte, vals []float32, dtype dataset.DType) {
	switch dtype {
	case dataset.Float32:
		for i, v := range vals {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		}
	case dataset.Float64:
		for i, v := range vals {
			binary.LittleEndian.PutUint64(out[8*i:], math.Float64bits(float64(v)))
		}
	case dataset.Float16:
		for i, v := range vals {
			binary.LittleEndian.PutUint16(out[2*i:], float32ToFloat16(v))
		}
	case dataset.BFloat16:
		for i, v := range vals {
			binary.LittleEndian.PutUint16(out[2*i:], float32ToBFloat16(v))
		}
	case dataset.Int8:
		for i, v := range vals {
			out[i] = byte(int8(scaleClamp(v, 127)))
		}
	case dataset.Uint8:
		for i, v := range vals {
			out[i] = byte(128 + scaleClamp(v, 127))
		}
	case dataset.Int16:
		for i, v := range vals {
			binary.LittleEndian.PutUint16(out[2*i:], uint16(int16(scaleClamp(v, math.MaxInt16))))
		}
	case dataset.Int32:
		for i, v := range vals {
			binary.LittleEndian.PutUint32(out[4*i:], uint32(int32(scaleClamp(v, math.MaxInt32))))
		}
	case dataset.Int64:
		for i, v := range vals {
			binary.LittleEndian.PutUint64(out[8*i:], uint64(scaleClamp(v, 1<<53)))
		}
	default:
		panic("ingest: encodeValues of unknown dtype " + string(dtype))
	}
}

// scaleClamp maps v from [-syntheticRange, syntheticRange] to [-limit, limit], rounding to
// nearest even and clamping.
func scaleClamp(v float32, limit float64) int64 {
	x := math.RoundToEven(float64(v) * (limit / syntheticRange))
	return int64(max(-limit, min(limit, x)))
}
