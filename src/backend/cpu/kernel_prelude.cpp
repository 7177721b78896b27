#include "backend/cpu/kernel_emitter.h"

namespace lazytrain::backend::cpu {

// Scalar lt_* wrappers and their AVX2 vector-ABI variants (_ZGVdN8v*, the names
// GCC calls from loops vectorized under `#pragma omp declare simd`).
std::string kernel_prelude_source() {
  return R"(#include <immintrin.h>
#include <sleef.h>
extern "C" {
float lt_expf(float x) { return Sleef_expf_u10(x); }
float lt_logf(float x) { return Sleef_logf_u10(x); }
float lt_tanhf(float x) { return Sleef_tanhf_u10(x); }
float lt_erff(float x) { return Sleef_erff_u10(x); }
float lt_cosf(float x) { return Sleef_cosf_u10(x); }
float lt_powf(float x, float y) { return Sleef_powf_u10(x, y); }
__m256 _ZGVdN8v_lt_expf(__m256 x) { return Sleef_expf8_u10avx2(x); }
__m256 _ZGVdN8v_lt_logf(__m256 x) { return Sleef_logf8_u10avx2(x); }
__m256 _ZGVdN8v_lt_tanhf(__m256 x) { return Sleef_tanhf8_u10avx2(x); }
__m256 _ZGVdN8v_lt_erff(__m256 x) { return Sleef_erff8_u10avx2(x); }
__m256 _ZGVdN8v_lt_cosf(__m256 x) { return Sleef_cosf8_u10avx2(x); }
__m256 _ZGVdN8vv_lt_powf(__m256 x, __m256 y) { return Sleef_powf8_u10avx2(x, y); }
}
)";
}

std::string kernel_header_source() {
  return R"(#include <cmath>
#include <cstdint>
#include <type_traits>
extern "C" {
#pragma omp declare simd simdlen(8) notinbranch
float lt_expf(float);
#pragma omp declare simd simdlen(8) notinbranch
float lt_logf(float);
#pragma omp declare simd simdlen(8) notinbranch
float lt_tanhf(float);
#pragma omp declare simd simdlen(8) notinbranch
float lt_erff(float);
#pragma omp declare simd simdlen(8) notinbranch
float lt_cosf(float);
#pragma omp declare simd simdlen(8) notinbranch
float lt_powf(float, float);
}
// Branch-free select: GCC does not if-convert `c ? a : b` in loops that also
// call SIMD clones, so blend the bits instead (exact for every value).
template <typename T> static inline T lt_select(bool c, T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    int32_t ia, ib, r;
    __builtin_memcpy(&ia, &a, 4);
    __builtin_memcpy(&ib, &b, 4);
    const int32_t m = -int32_t(c);
    r = (ia & m) | (ib & ~m);
    T out;
    __builtin_memcpy(&out, &r, 4);
    return out;
  } else {
    const T m = T(-T(c));
    return T((a & m) | (b & T(~m)));
  }
}
// bf16 storage <-> float: the upper 16 bits of a float; rounding to nearest even,
// NaN to the quiet NaN 0x7fc0, as lazytrain::BFloat16 (core/half.h) does.
static inline float lt_bf16_load(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
static inline float lt_bf16_round(float x) {
  uint32_t u;
  __builtin_memcpy(&u, &x, 4);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  const uint32_t nan = -uint32_t((u & 0x7fffffffu) > 0x7f800000u);
  const uint32_t r = (0x7fc00000u & nan) | (rounded & ~nan);
  float f;
  __builtin_memcpy(&f, &r, 4);
  return f;
}
static inline uint16_t lt_bf16_bits(float x) {
  uint32_t u;
  __builtin_memcpy(&u, &x, 4);
  return uint16_t(u >> 16);
}
template <typename T> static inline T lt_max(T a, T b) { return lt_select<T>(a != a || a > b, a, b); }
template <typename T> static inline T lt_min(T a, T b) { return lt_select<T>(a != a || a < b, a, b); }
)";
}

}  // namespace lazytrain::backend::cpu
