package embedding

import "math"

// The optimizers, element by element in torch's order of float32 operations (torch 2.11's
// torch/optim/sgd.py, adagrad.py, _functional.py's sparse_adam, and aten's dense += sparse, which
// is a BLAS axpy per row: one fused multiply-add per element). Every float32 operation is a
// separate conversion so the compiler fuses none that torch does not; where torch fuses, fma32
// rounds once. A hyper-parameter torch passes as a Python float is cast to float32 where torch
// casts it (a scalar operand of a float32 tensor op); step sizes are computed in float64 as
// Python does.
//
// Known difference: torch's CPU sqrt of a float32 tensor (MKL's vsSqrt, vectorized) is not
// correctly rounded for some inputs; this sqrt is (as CUDA's is). So adagrad and adam equal
// torch's CUDA step, and torch's CPU step except where MKL's sqrt is off by an ulp.

// newStepper returns the update of one slot by its gradient at step (counted from 1).
func newStepper(o Optimizer, step int64, dim int) func(slot, g []float32) {
	switch o.Name {
	case "adagrad":
		// clr = lr / (1 + (step - 1) * lr_decay); state_sum += g²; std = sqrt(state_sum) + eps;
		// param += -clr * (g / std) (axpy).
		clr := o.LR / (1 + float64(step-1)*o.LRDecay)
		alpha, eps := float32(-clr), float32(o.Eps)
		return func(s, g []float32) {
			w, sum := s[:dim], s[dim:2*dim]
			for j, gj := range g {
				sum[j] = sum[j] + float32(gj*gj)
				std := sqrt32(sum[j]) + eps
				w[j] = fma32(alpha, float32(gj/std), w[j])
			}
		}
	case "adam":
		// SparseAdam: m += (g - m)(1 - b1); v += (g² - v)(1 - b2); numer = update1 + old m;
		// denom = sqrt(update2 + old v) + eps; param += (-step_size) * (numer / denom).
		bc1 := 1 - math.Pow(o.Beta1, float64(step))
		bc2 := 1 - math.Pow(o.Beta2, float64(step))
		size := float32(-(o.LR * math.Sqrt(bc2) / bc1))
		c1, c2, eps := float32(1-o.Beta1), float32(1-o.Beta2), float32(o.Eps)
		return func(s, g []float32) {
			w, m, v := s[:dim], s[dim:2*dim], s[2*dim:3*dim]
			for j, gj := range g {
				om, ov := m[j], v[j]
				u1 := float32(float32(gj-om) * c1)
				u2 := float32(float32(float32(gj*gj)-ov) * c2)
				m[j] = om + u1
				v[j] = ov + u2
				numer := u1 + om
				denom := sqrt32(u2+ov) + eps
				w[j] = w[j] + float32(size*float32(numer/denom))
			}
		}
	}
	// sgd: param += -lr * g (axpy), row by row.
	alpha := float32(-o.LR)
	return func(s, g []float32) {
		w := s[:dim]
		for j, gj := range g {
			w[j] = fma32(alpha, gj, w[j])
		}
	}
}

// sqrt32 is the correctly rounded float32 square root (float64's, rounded: exact, since 53 ≥
// 2×24+2).
func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }

// fma32 is a*x + y rounded once to float32. The product is exact in float64 (24+24 bits); the
// sum is computed in float64 rounded to odd, which makes its rounding to float32 the correct one
// (float64 has more than 24+2 bits), where a plain float64 sum could round twice.
func fma32(a, x, y float32) float32 {
	p := float64(a) * float64(x)
	q := float64(y)
	s := p + q
	// TwoSum: s + e == p + q exactly.
	bb := s - p
	e := (p - (s - bb)) + (q - bb)
	if e != 0 && math.Float64bits(s)&1 == 0 && !math.IsInf(s, 0) {
		// s was rounded to even; round to odd instead: step one ulp toward the exact sum.
		if e > 0 {
			s = math.Nextafter(s, math.Inf(1))
		} else {
			s = math.Nextafter(s, math.Inf(-1))
		}
	}
	return float32(s)
}
