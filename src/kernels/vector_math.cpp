#include "kernels/vector_math.h"

#include <immintrin.h>
#include <sleef.h>

#include <algorithm>

#include "core/error.h"
#include "core/half.h"
#include "core/scalar_ops.h"

namespace lazytrain::kernels {

namespace {

// Elements at which it pays to split a loop over the cores.
constexpr int64_t kParallelThreshold = 1 << 20;

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

// bf16/f16 through the f32 kernels: widened in blocks, computed 8 lanes at a
// time (the same SLEEF calls the generated kernels make), rounded back.
template <typename T>
void apply_16bit(VectorFunction f, const T* in, T* out, int64_t n) {
  constexpr int64_t kBlock = 4096;  // a multiple of 8: lanes group as in the f32 path
#pragma omp parallel for if (n > kParallelThreshold) schedule(static)
  for (int64_t start = 0; start < n; start += kBlock) {
    float block[kBlock];
    const int64_t m = std::min(kBlock, n - start);
    for (int64_t i = 0; i < m; ++i) block[i] = static_cast<float>(in[start + i]);
    vector_unary(f, block, block, m);
    for (int64_t i = 0; i < m; ++i) out[start + i] = static_cast<T>(block[i]);
  }
}

}  // namespace

void vector_unary(VectorFunction f, const float* in, float* out, int64_t n) {
  switch (f) {
    case VectorFunction::kExp: apply<Sleef_expf8_u10avx2>(in, out, n); break;
    case VectorFunction::kLog: apply<Sleef_logf8_u10avx2>(in, out, n); break;
    // core/scalar_ops.h's tanh and erf, as generated kernels compute them (GCC vectorizes the loops).
    case VectorFunction::kTanh:
#pragma omp parallel for simd if (n > kParallelThreshold) schedule(static)
      for (int64_t i = 0; i < n; ++i) out[i] = scalar_ops::tanh_f32(in[i]);
      break;
    case VectorFunction::kErf:
#pragma omp parallel for simd if (n > kParallelThreshold) schedule(static)
      for (int64_t i = 0; i < n; ++i) out[i] = scalar_ops::erf_f32(in[i]);
      break;
  }
}

void vector_unary(VectorFunction f, DType dtype, const void* in, void* out, int64_t n) {
  switch (dtype) {
    case DType::kFloat32: return vector_unary(f, static_cast<const float*>(in), static_cast<float*>(out), n);
    case DType::kBFloat16: return apply_16bit(f, static_cast<const BFloat16*>(in), static_cast<BFloat16*>(out), n);
    case DType::kFloat16: return apply_16bit(f, static_cast<const Half*>(in), static_cast<Half*>(out), n);
    default: throw Error("[vector math] needs f32, bf16 or f16 values, got " + xla_name(dtype));
  }
}

}  // namespace lazytrain::kernels
