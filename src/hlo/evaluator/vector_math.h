// f32 transcendental functions over arrays, 8 lanes at a time through SLEEF's
// AVX2 kernels (max error 1.0 ULP, SLEEF's u10 variants), split over the cores.
#pragma once

#include <cstdint>

#include "hlo/hlo_opcode.h"

namespace lazytrain::hlo::evaluator {

// True when `opcode` has a vector kernel here (exponential, log, tanh, erf).
bool has_vector_kernel(HloOpcode opcode);
// out[i] = f(in[i]) for i < n, f chosen by `opcode` (has_vector_kernel must hold).
void vector_unary(HloOpcode opcode, const float* in, float* out, int64_t n);

}  // namespace lazytrain::hlo::evaluator
