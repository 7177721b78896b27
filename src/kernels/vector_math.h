// f32 transcendental functions over arrays, 8 lanes at a time through SLEEF's
// AVX2 kernels (max error 1.0 ULP, SLEEF's u10 variants) and the inline
// polynomials of core/scalar_ops.h, split over the cores. The CPU backend runs
// an unfused exp, log, tanh or erf through them; the HLO evaluator applies
// core/scalar_ops.h's functors element by element instead.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace lazytrain::kernels {

enum class VectorFunction { kExp, kLog, kTanh, kErf };

// out[i] = f(in[i]) for i < n, f32.
void vector_unary(VectorFunction f, const float* in, float* out, int64_t n);

// The same on bf16 or f16 values (`dtype`): widened to f32 in blocks, computed
// as above, rounded to nearest even. Error for another dtype.
void vector_unary(VectorFunction f, DType dtype, const void* in, void* out, int64_t n);

}  // namespace lazytrain::kernels
