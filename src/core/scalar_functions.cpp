// The transcendental functions core/scalar_ops.h declares (erf and tanh it computes
// inline, faster in a vectorized loop): SLEEF's u10 kernels
// (max error 1.0 ULP), scalar and as the 8-lane AVX2 variants (_ZGVdN8v*, the
// names GCC calls from loops vectorized under `#pragma omp declare simd`), and,
// when compiled for AVX-512 (generated kernels on such a CPU), the 16-lane
// AVX-512 variants (_ZGVeN16v*).
// Compiled into the library, and its text into every shared object of
// generated kernels (cmake/kernel_prelude.cpp.in): self-contained, and it must
// not see the declarations' `declare simd`, or GCC would make clones of its own.
#include <immintrin.h>
#include <sleef.h>

extern "C" {
float lt_expf(float x) { return Sleef_expf_u10(x); }
float lt_logf(float x) { return Sleef_logf_u10(x); }
float lt_cosf(float x) { return Sleef_cosf_u10(x); }
float lt_sinf(float x) { return Sleef_sinf_u10(x); }
float lt_powf(float x, float y) { return Sleef_powf_u10(x, y); }
__m256 _ZGVdN8v_lt_expf(__m256 x) { return Sleef_expf8_u10avx2(x); }
__m256 _ZGVdN8v_lt_logf(__m256 x) { return Sleef_logf8_u10avx2(x); }
__m256 _ZGVdN8v_lt_cosf(__m256 x) { return Sleef_cosf8_u10avx2(x); }
__m256 _ZGVdN8v_lt_sinf(__m256 x) { return Sleef_sinf8_u10avx2(x); }
__m256 _ZGVdN8vv_lt_powf(__m256 x, __m256 y) { return Sleef_powf8_u10avx2(x, y); }
#ifdef __AVX512F__
__m512 _ZGVeN16v_lt_expf(__m512 x) { return Sleef_expf16_u10avx512f(x); }
__m512 _ZGVeN16v_lt_logf(__m512 x) { return Sleef_logf16_u10avx512f(x); }
__m512 _ZGVeN16v_lt_cosf(__m512 x) { return Sleef_cosf16_u10avx512f(x); }
__m512 _ZGVeN16v_lt_sinf(__m512 x) { return Sleef_sinf16_u10avx512f(x); }
__m512 _ZGVeN16vv_lt_powf(__m512 x, __m512 y) { return Sleef_powf16_u10avx512f(x, y); }
#endif
}
