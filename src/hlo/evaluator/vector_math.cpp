#include "hlo/evaluator/vector_math.h"

#include <immintrin.h>
#include <sleef.h>

#include "core/scalar_ops.h"
#include "hlo/evaluator/kernels.h"

namespace lazytrain::hlo::evaluator {

namespace {

using VecFn = const __m256 (*)(__m256);  // SLEEF declares its functions CONST

template <VecFn F>
void apply(const float* in, float* out, int64_t n) {
  const int64_t full = n / 8 * 8;
#pragma omp parallel for if (n > kParallelThreshold) schedule(static)
  for (int64_t i = 0; i < full; i += 8) _mm256_storeu_ps(out + i, F(_mm256_loadu_ps(in + i)));
  if (full < n) {
    alignas(32) float tail[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t i = full; i < n; ++i) tail[i - full] = in[i];
    _mm256_store_ps(tail, F(_mm256_load_ps(tail)));
    for (int64_t i = full; i < n; ++i) out[i] = tail[i - full];
  }
}

}  // namespace

bool has_vector_kernel(HloOpcode opcode) {
    return opcode == HloOpcode::kExp || opcode == HloOpcode::kLog || opcode == HloOpcode::kTanh || opcode == HloOpcode::kErf;
}

void vector_unary(HloOpcode opcode, const float* in, float* out, int64_t n) {
    switch (opcode) {
    case HloOpcode::kExp: apply<Sleef_expf8_u10avx2>(in, out, n); break;
    case HloOpcode::kLog: apply<Sleef_logf8_u10avx2>(in, out, n); break;
    // core/scalar_ops.h's tanh and erf, as generated kernels compute them (GCC vectorizes the loops).
    case HloOpcode::kTanh:
#pragma omp parallel for simd if (n > kParallelThreshold) schedule(static)
      for (int64_t i = 0; i < n; ++i) out[i] = scalar_ops::tanh_f32(in[i]);
      break;
    case HloOpcode::kErf:
#pragma omp parallel for simd if (n > kParallelThreshold) schedule(static)
      for (int64_t i = 0; i < n; ++i) out[i] = scalar_ops::erf_f32(in[i]);
      break;
    default: break;
  }
}

}  // namespace lazytrain::hlo::evaluator
