// Small f32 matrix products for the blocked host kernels (kernels/attention.cpp): the
// blocks there are at most 64 x 64, too small for a library call to pay off, so
// these are register-tiled loops: AVX2/FMA (the build targets x86-64-v3), and
// an AVX-512 twin (target attribute) that the caller picks where the CPU has it
// (the ISA is the caller's choice: kernels never read the environment).
// Both add each C element's products in k order with one FMA each, so they give
// the same bits on full 16-column tiles (the AVX2 loop's last N % 16 columns are
// plain C++).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace lazytrain::kernels {

namespace block_gemm_detail {

// A's element (row r, column k): A[r * lda + k], or A[k * lda + r] when A is stored transposed.
template <bool kTransposedA>
inline const float* a_at(const float* A, int64_t lda, int64_t r, int64_t k) {
  return kTransposedA ? A + k * lda + r : A + r * lda + k;
}

// C[R x 16] += A[R x K] B[K x 16]: R rows of two 8-lane accumulators each, kept in registers.
template <int R, bool kTransposedA>
inline void tile16(int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc) {
  __m256 c[R][2];
  for (int r = 0; r < R; ++r) c[r][0] = _mm256_loadu_ps(C + r * ldc), c[r][1] = _mm256_loadu_ps(C + r * ldc + 8);
  for (int64_t k = 0; k < K; ++k) {
    const __m256 b0 = _mm256_loadu_ps(B + k * ldb), b1 = _mm256_loadu_ps(B + k * ldb + 8);
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_broadcast_ss(a_at<kTransposedA>(A, lda, r, k));
      c[r][0] = _mm256_fmadd_ps(a, b0, c[r][0]);
      c[r][1] = _mm256_fmadd_ps(a, b1, c[r][1]);
    }
  }
  for (int r = 0; r < R; ++r) _mm256_storeu_ps(C + r * ldc, c[r][0]), _mm256_storeu_ps(C + r * ldc + 8, c[r][1]);
}

}  // namespace block_gemm_detail

// C[M x N] += A[M x K] B[K x N]; all row-major f32 with leading dimensions
// lda, ldb, ldc (in elements); with kTransposedA, A is stored as its transpose
// [K x M] (C += A^T B without a copy). Columns in 16-wide register tiles of 4
// rows (then 1 row); the last N % 16 columns by a plain loop.
template <bool kTransposedA = false>
inline void gemm_accumulate(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
                            int64_t ldc) {
  using block_gemm_detail::a_at;
  const int64_t n16 = N / 16 * 16;
  int64_t i = 0;
  for (; i + 4 <= M; i += 4) {
    const float* Ai = kTransposedA ? A + i : A + i * lda;
    for (int64_t j = 0; j < n16; j += 16) block_gemm_detail::tile16<4, kTransposedA>(K, Ai, lda, B + j, ldb, C + i * ldc + j, ldc);
  }
  for (; i < M; ++i) {
    const float* Ai = kTransposedA ? A + i : A + i * lda;
    for (int64_t j = 0; j < n16; j += 16) block_gemm_detail::tile16<1, kTransposedA>(K, Ai, lda, B + j, ldb, C + i * ldc + j, ldc);
  }
  if (n16 == N) return;
  for (int64_t r = 0; r < M; ++r) {
    for (int64_t k = 0; k < K; ++k) {
      const float a = *a_at<kTransposedA>(A, lda, r, k);
      for (int64_t j = n16; j < N; ++j) C[r * ldc + j] += a * B[k * ldb + j];
    }
  }
}

namespace block_gemm_detail {

// C[R x 32] += A[R x K] B[K x 32] with 16-lane accumulators, 2 per row; the
// masks m0, m1 select the columns that exist (a partial last tile).
template <int R, bool kTransposedA>
__attribute__((target("avx512f"))) inline void tile32_avx512(int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                                                             float* C, int64_t ldc, __mmask16 m0, __mmask16 m1) {
  __m512 c[R][2];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) c[r][0] = _mm512_maskz_loadu_ps(m0, C + r * ldc), c[r][1] = _mm512_maskz_loadu_ps(m1, C + r * ldc + 16);
  for (int64_t k = 0; k < K; ++k) {
    const __m512 b0 = _mm512_maskz_loadu_ps(m0, B + k * ldb), b1 = _mm512_maskz_loadu_ps(m1, B + k * ldb + 16);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(*a_at<kTransposedA>(A, lda, r, k));
      c[r][0] = _mm512_fmadd_ps(a, b0, c[r][0]);
      c[r][1] = _mm512_fmadd_ps(a, b1, c[r][1]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(C + r * ldc, m0, c[r][0]), _mm512_mask_storeu_ps(C + r * ldc + 16, m1, c[r][1]);
}

__attribute__((target("avx512f"))) inline __mmask16 lanes(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : n <= 0 ? static_cast<__mmask16>(0) : static_cast<__mmask16>((1u << n) - 1u);
}

}  // namespace block_gemm_detail

// gemm_accumulate on AVX-512 (F): the same arguments and result; 32-wide
// register tiles of 8 rows (16 accumulators of the 32 registers), then 1 row,
// the last columns through masked loads. Call only where the CPU has AVX-512F.
template <bool kTransposedA = false>
__attribute__((target("avx512f"))) void gemm_accumulate_avx512(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                                                               const float* B, int64_t ldb, float* C, int64_t ldc) {
  using block_gemm_detail::lanes;
  for (int64_t j = 0; j < N; j += 32) {
    const __mmask16 m0 = lanes(N - j), m1 = lanes(N - j - 16);
    int64_t i = 0;
    for (; i + 8 <= M; i += 8) {
      const float* Ai = kTransposedA ? A + i : A + i * lda;
      block_gemm_detail::tile32_avx512<8, kTransposedA>(K, Ai, lda, B + j, ldb, C + i * ldc + j, ldc, m0, m1);
    }
    for (; i < M; ++i) {
      const float* Ai = kTransposedA ? A + i : A + i * lda;
      block_gemm_detail::tile32_avx512<1, kTransposedA>(K, Ai, lda, B + j, ldb, C + i * ldc + j, ldc, m0, m1);
    }
  }
}

}  // namespace lazytrain::kernels
