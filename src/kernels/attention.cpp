#include "kernels/attention.h"

#include <immintrin.h>
#include <sleef.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "kernels/block_gemm.h"

namespace lazytrain::kernels {

namespace {

constexpr int64_t kBlockRows = 32;  // query rows per block (Br)
constexpr int64_t kBlockCols = 64;  // keys per block (Bc)
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

using Problem = SdpaProblem;

// SplitMix64's finaliser: a counter-based hash, the same on every backend.
inline uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Weight (b, i, j) is kept when the top 24 bits of its hash, read as a uniform
// u = bits / 2^24, are >= dropout_p; that is when bits >= ceil(dropout_p 2^24)
// (exact: the product is exact in double), an integer test that vectorizes.
inline uint32_t keep_threshold(const Problem& p) {
  // p >= 1 drops everything (no 24-bit value reaches 2^24), as u >= p never held.
  return static_cast<uint32_t>(std::min(std::ceil(static_cast<double>(p.dropout_p) * 16777216.0), 16777216.0));
}

inline uint32_t dropout_bits(const Problem& p, int64_t b, int64_t i, int64_t j) {
  return static_cast<uint32_t>(mix64(p.seed ^ mix64(static_cast<uint64_t>((b * p.L + i) * p.S + j))) >> 40);
}

// factor[c] = 1/(1-p) where weight (b, i, j0 + c) is kept, else 0, for c < cols.
// The hash's 64-bit multiplies were most of the kernel's cost at long sequences
// when scalar (GPT-2 at seq 1024: half the forward); as a loop GCC vectorizes
// them, emulated on AVX2 and with vpmullq where AVX-512DQ exists. The same
// decisions either way, and in the forward and the backward.
inline void dropout_row_portable(const Problem& p, int64_t b, int64_t i, int64_t j0, int64_t cols, float* factor) {
  const uint32_t threshold = keep_threshold(p);
  const float kept = 1.0f / (1.0f - p.dropout_p);
#pragma omp simd
  for (int64_t c = 0; c < cols; ++c) factor[c] = dropout_bits(p, b, i, j0 + c) >= threshold ? kept : 0.0f;
}

__attribute__((target("avx512f,avx512dq,avx512vl"))) void dropout_row_avx512(const Problem& p, int64_t b, int64_t i, int64_t j0,
                                                                              int64_t cols, float* factor) {
  const uint32_t threshold = keep_threshold(p);
  const float kept = 1.0f / (1.0f - p.dropout_p);
#pragma omp simd
  for (int64_t c = 0; c < cols; ++c) factor[c] = dropout_bits(p, b, i, j0 + c) >= threshold ? kept : 0.0f;
}

void dropout_row(const Problem& p, int64_t b, int64_t i, int64_t j0, int64_t cols, float* factor) {
  if (p.avx512) {
    dropout_row_avx512(p, b, i, j0, cols, factor);
  } else {
    dropout_row_portable(p, b, i, j0, cols, factor);
  }
}

template <typename T>
void load(const T* src, int64_t n, float* dst, float factor = 1.0f) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]) * factor;
}

// src's n elements as f32: src itself when it is f32 (no copy), else converted into dst.
template <typename T>
const float* as_f32(const T* src, int64_t n, float* dst) {
  if constexpr (std::is_same_v<T, float>) {
    return src;
  } else {
    load(src, n, dst);
    return dst;
  }
}

// out[j * ldo + i] = in[i * ldi + j] for an 8 x 8 f32 block (the usual unpack
// and shuffle transpose).
inline void transpose8x8(const float* in, int64_t ldi, float* out, int64_t ldo) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(in + i * ldi);
  for (int i = 0; i < 8; i += 2) t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]), t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44), r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44), r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(out + i * ldo, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(out + (i + 4) * ldo, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}

// dst[e * ld + c] = src[c * n + e] for c < rows, e < n: a block of keys (or
// values) transposed, so that q k^T (dout v^T) is a product of row-major blocks.
// 8 x 8 blocks in registers; element by element only for f16/bf16 or ragged edges.
template <typename T>
void load_transposed(const T* src, int64_t rows, int64_t n, float* dst, int64_t ld) {
  int64_t c8 = 0, e8 = 0;
  if constexpr (std::is_same_v<T, float>) {
    c8 = rows / 8 * 8, e8 = n / 8 * 8;
    for (int64_t c = 0; c < c8; c += 8) {
      for (int64_t e = 0; e < e8; e += 8) transpose8x8(src + c * n + e, n, dst + e * ld + c, ld);
    }
  }
  for (int64_t c = 0; c < rows; ++c) {
    for (int64_t e = c < c8 ? e8 : 0; e < n; ++e) dst[e * ld + c] = static_cast<float>(src[c * n + e]);
  }
}

// x[i] = exp(x[i]) for i < n, 8 lanes at a time (SLEEF, 1.0 ULP; exp(-inf) = 0).
void exp_inplace(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, Sleef_expf8_u10avx2(_mm256_loadu_ps(x + i)));
  if (i == n) return;
  alignas(32) float tail[8];
  for (int64_t t = 0; t < 8; ++t) tail[t] = i + t < n ? x[i + t] : 0.0f;
  _mm256_store_ps(tail, Sleef_expf8_u10avx2(_mm256_load_ps(tail)));
  for (int64_t t = 0; i + t < n; ++t) x[i + t] = tail[t];
}

// max(x[0], ..., x[n-1], -inf), 8 lanes at a time: GCC leaves a float max
// reduction scalar (a chain of vmaxss, 4 cycles each), which was two fifths of
// the forward at sequence 64. NaN when any x is NaN (max_ps alone would drop
// it), so that a NaN score makes its row NaN, as softmax does, rather than a
// row of zeros.
float row_max(const float* x, int64_t n) {
  __m256 m = _mm256_set1_ps(kNegInf), nan = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    m = _mm256_max_ps(m, v);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  bool any_nan = _mm256_movemask_ps(nan) != 0;
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float result = kNegInf;
  for (const float v : lanes) result = std::max(result, v);
  for (; i < n; ++i) {
    result = std::max(result, x[i]);
    any_nan = any_nan || std::isnan(x[i]);
  }
  return any_nan ? std::numeric_limits<float>::quiet_NaN() : result;
}

int64_t blocks(int64_t n, int64_t size) { return (n + size - 1) / size; }

// C += A B (block_gemm.h) on the ISA the problem chose.
template <bool kTransposedA = false>
void gemm(const Problem& p, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
          int64_t ldc) {
  if (p.avx512) {
    gemm_accumulate_avx512<kTransposedA>(M, N, K, A, lda, B, ldb, C, ldc);
  } else {
    gemm_accumulate<kTransposedA>(M, N, K, A, lda, B, ldb, C, ldc);
  }
}

// True when every (query, key) pair of the block is masked, so its weights are
// all 0: keys above the causal diagonal, or a bool mask false throughout.
bool block_masked(const Problem& p, int64_t b, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  if (p.causal && j0 > i1 - 1) return true;
  if (!p.mask || !p.mask_is_pred) return false;
  const uint8_t* m = static_cast<const uint8_t*>(p.mask) + p.mask_batch_offset[static_cast<size_t>(b)];
  for (int64_t i = i0; i < i1; ++i) {
    for (int64_t j = j0; j < j1; ++j) {
      if (m[i * p.mask_row_stride + j * p.mask_col_stride]) return false;
    }
  }
  return true;
}

// s[r * ld + c] (scores of query i0 + r against key j0 + c) set to -inf where
// masked, or the f32 mask added.
void apply_mask(const Problem& p, int64_t b, int64_t i0, int64_t rows, int64_t j0, int64_t cols, float* s, int64_t ld) {
  if (p.causal && j0 + cols - 1 > i0) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = std::max<int64_t>(0, i0 + r - j0 + 1); c < cols; ++c) s[r * ld + c] = kNegInf;
    }
  }
  if (!p.mask) return;
  const int64_t cs = p.mask_col_stride;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t at = p.mask_batch_offset[static_cast<size_t>(b)] + (i0 + r) * p.mask_row_stride + j0 * cs;
    float* sr = s + r * ld;
    if (p.mask_is_pred) {
      const uint8_t* m = static_cast<const uint8_t*>(p.mask) + at;
      for (int64_t c = 0; c < cols; ++c) sr[c] = m[c * cs] ? sr[c] : kNegInf;
    } else {
      const float* m = static_cast<const float*>(p.mask) + at;
      for (int64_t c = 0; c < cols; ++c) sr[c] += m[c * cs];
    }
  }
}

// s = (q * scale) k^T for a block: q [rows x E] row-major, kT [E x ld] (keys
// transposed), s [rows x ld]; then masked.
void block_scores(const Problem& p, int64_t b, int64_t i0, int64_t rows, int64_t j0, int64_t cols, const float* q, const float* kT,
                  float* s) {
  std::fill(s, s + rows * kBlockCols, 0.0f);
  gemm(p, rows, cols, p.E, q, p.E, kT, kBlockCols, s, kBlockCols);
  apply_mask(p, b, i0, rows, j0, cols, s, kBlockCols);
}

// Per-thread scratch of one block task, reused across tasks.
struct Scratch {
  std::vector<float> q, dout, kT, k, vT, v, s, dp, acc, dk, dv, dq, drop;
  void size(const Problem& p, int64_t rows_needed) {
    auto need = [](std::vector<float>& x, int64_t n) { x.resize(static_cast<size_t>(n)); };
    need(q, rows_needed * p.E), need(dout, rows_needed * p.Ev), need(kT, p.E * kBlockCols), need(k, kBlockCols * p.E);
    need(vT, p.Ev * kBlockCols), need(v, kBlockCols * p.Ev), need(s, kBlockRows * kBlockCols), need(dp, kBlockRows * kBlockCols);
    need(acc, kBlockRows * p.Ev), need(drop, kBlockCols);
    need(dk, kBlockCols * p.E), need(dv, kBlockCols * p.Ev);
  }
};

template <typename T>
void forward(const Problem& p, const T* q, const T* k, const T* v, float* out) {
  const int64_t L = p.L, S = p.S, E = p.E, Ev = p.Ev;
  const int64_t row_blocks = blocks(L, kBlockRows);
  const int64_t tasks = p.batch * row_blocks;
#pragma omp parallel if (tasks > 1 && p.batch * L * S * (E + Ev) > (1 << 18))
  {
    Scratch w;
    w.size(p, kBlockRows);
    std::vector<float> m(kBlockRows), l(kBlockRows);
#pragma omp for schedule(dynamic)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t b = task / row_blocks, i0 = (task % row_blocks) * kBlockRows, i1 = std::min(L, i0 + kBlockRows);
      const int64_t rows = i1 - i0;
      float* acc = w.acc.data();
      std::fill(acc, acc + rows * Ev, 0.0f);
      std::fill(m.begin(), m.end(), kNegInf);
      std::fill(l.begin(), l.end(), 0.0f);
      load(q + (b * L + i0) * E, rows * E, w.q.data(), p.scale);
      const int64_t j_end = p.causal ? std::min(S, i1) : S;
      for (int64_t j0 = 0; j0 < j_end; j0 += kBlockCols) {
        const int64_t j1 = std::min(j_end, j0 + kBlockCols), cols = j1 - j0;
        if (block_masked(p, b, i0, i1, j0, j1)) continue;
        load_transposed(k + (b * S + j0) * E, cols, E, w.kT.data(), kBlockCols);
        const float* vb = as_f32(v + (b * S + j0) * Ev, cols * Ev, w.v.data());
        block_scores(p, b, i0, rows, j0, cols, w.q.data(), w.kT.data(), w.s.data());
        for (int64_t r = 0; r < rows; ++r) {
          float* sr = w.s.data() + r * kBlockCols;
          // NaN (a NaN score, or +inf - +inf below) stays NaN through m, l and out.
          const float block_max = row_max(sr, cols);
          const float m_new = std::isnan(block_max) || std::isnan(m[r]) ? std::numeric_limits<float>::quiet_NaN() : std::max(m[r], block_max);
          if (m_new == kNegInf) {  // every key so far masked: this block adds nothing
            std::fill(sr, sr + cols, 0.0f);
            continue;
          }
          const float alpha = std::exp(m[r] - m_new);
          for (int64_t c = 0; c < cols; ++c) sr[c] -= m_new;
          exp_inplace(sr, cols);
          float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
          for (int64_t c = 0; c < cols; ++c) sum += sr[c];
          if (p.dropout_p > 0) {
            float* drop = w.drop.data();
            dropout_row(p, b, i0 + r, j0, cols, drop);
            for (int64_t c = 0; c < cols; ++c) sr[c] *= drop[c];
          }
          l[r] = l[r] * alpha + sum;
          m[r] = m_new;
          float* ar = acc + r * Ev;
          for (int64_t e = 0; e < Ev; ++e) ar[e] *= alpha;
        }
        gemm(p, rows, Ev, cols, w.s.data(), kBlockCols, vb, Ev, acc, Ev);
      }
      for (int64_t r = 0; r < rows; ++r) {
        float* o = out + (b * L + i0 + r) * (Ev + 1);
        // l = 0: every key masked (out 0, lse -inf); a NaN l (NaN or +inf scores) gives NaN.
        const bool none = l[r] == 0.0f;
        for (int64_t e = 0; e < Ev; ++e) o[e] = none ? 0.0f : acc[r * Ev + e] / l[r];
        o[Ev] = none ? kNegInf : m[r] + std::log(l[r]);
      }
    }
  }
}

// FlashAttention-2's backward for one batch index (one head): key blocks
// outer, query blocks inner; dk, dv of a key block complete when its inner
// loop ends, dq accumulates over key blocks in `dq` [L x E] (this task's own).
template <typename T>
void backward_one(const Problem& p, int64_t b, const T* q, const T* k, const T* v, const T* dout, const float* lse, const float* D,
                  Scratch& w, float* out) {
  const int64_t L = p.L, S = p.S, E = p.E, Ev = p.Ev;
  const int64_t per_batch = L * E + S * E + S * Ev;
  float* dq = w.dq.data();
  std::fill(dq, dq + L * E, 0.0f);
  float* base = out + b * per_batch;
  for (int64_t j0 = 0; j0 < S; j0 += kBlockCols) {
    const int64_t j1 = std::min(S, j0 + kBlockCols), cols = j1 - j0;
    load_transposed(k + (b * S + j0) * E, cols, E, w.kT.data(), kBlockCols);
    const float* kb = as_f32(k + (b * S + j0) * E, cols * E, w.k.data());
    load_transposed(v + (b * S + j0) * Ev, cols, Ev, w.vT.data(), kBlockCols);
    float* dk = w.dk.data();
    float* dv = w.dv.data();
    // Zeroed and copied out for every key block, even one no query sees (its
    // gradient is 0): with dq below, every element of the output is written.
    std::fill(dk, dk + cols * E, 0.0f);
    std::fill(dv, dv + cols * Ev, 0.0f);
    for (int64_t i0 = p.causal ? j0 / kBlockRows * kBlockRows : 0; i0 < L; i0 += kBlockRows) {
      const int64_t i1 = std::min(L, i0 + kBlockRows), rows = i1 - i0;
      if (block_masked(p, b, i0, i1, j0, j1)) continue;
      load(q + (b * L + i0) * E, rows * E, w.q.data(), p.scale);
      const float* doutb = as_f32(dout + (b * L + i0) * Ev, rows * Ev, w.dout.data());
      float* s = w.s.data();
      block_scores(p, b, i0, rows, j0, cols, w.q.data(), w.kT.data(), s);
      // P = exp(s - lse): the forward's weights, recomputed.
      for (int64_t r = 0; r < rows; ++r) {
        float* sr = s + r * kBlockCols;
        const float row_lse = lse[b * L + i0 + r];
        if (row_lse == kNegInf) {
          std::fill(sr, sr + cols, 0.0f);
          continue;
        }
        for (int64_t c = 0; c < cols; ++c) sr[c] -= row_lse;
        exp_inplace(sr, cols);
      }
      // dP = dout v^T; dS = P (dP drop - D); dv += (P drop)^T dout, dk += dS^T (q scale), dq += dS k.
      float* dp = w.dp.data();
      std::fill(dp, dp + rows * kBlockCols, 0.0f);
      gemm(p, rows, cols, Ev, doutb, Ev, w.vT.data(), kBlockCols, dp, kBlockCols);
      // s becomes P * drop (row-major, for dv), dp becomes dS (for dk and dq).
      for (int64_t r = 0; r < rows; ++r) {
        const float d = D[b * L + i0 + r];
        float* sr = s + r * kBlockCols;
        float* dpr = dp + r * kBlockCols;
        if (p.dropout_p > 0) {
          float* drop = w.drop.data();
          dropout_row(p, b, i0 + r, j0, cols, drop);
          for (int64_t c = 0; c < cols; ++c) {
            dpr[c] = sr[c] * (dpr[c] * drop[c] - d);
            sr[c] *= drop[c];
          }
        } else {
          for (int64_t c = 0; c < cols; ++c) dpr[c] = sr[c] * (dpr[c] - d);
        }
      }
      gemm<true>(p, cols, Ev, rows, s, kBlockCols, doutb, Ev, dv, Ev);
      gemm<true>(p, cols, E, rows, dp, kBlockCols, w.q.data(), E, dk, E);
      gemm(p, rows, E, cols, dp, kBlockCols, kb, E, dq + i0 * E, E);
    }
    std::copy(dk, dk + cols * E, base + L * E + j0 * E);
    std::copy(dv, dv + cols * Ev, base + L * E + S * E + j0 * Ev);
  }
  for (int64_t i = 0; i < L * E; ++i) base[i] = dq[i] * p.scale;
}

template <typename T>
void backward(const Problem& p, const T* q, const T* k, const T* v, const float* fwd, const T* dout, float* out) {
  const int64_t L = p.L, S = p.S, E = p.E, Ev = p.Ev;
  std::vector<float> D(static_cast<size_t>(p.batch * L)), lse(static_cast<size_t>(p.batch * L));
  // One task per batch index: no two tasks write one gradient row, so the
  // result is the same for any thread count.
#pragma omp parallel if (p.batch > 1 && p.batch * L * S * (E + Ev) > (1 << 18))
  {
    // D_i = rowsum(dout * out) and the forward's lse, per row (a vector sum: its
    // order is the compiler's, the same for every thread count).
#pragma omp for schedule(static)
    for (int64_t row = 0; row < p.batch * L; ++row) {
      const float* o = fwd + row * (Ev + 1);
      float d = 0.0f;
#pragma omp simd reduction(+ : d)
      for (int64_t e = 0; e < Ev; ++e) d += static_cast<float>(dout[row * Ev + e]) * o[e];
      D[static_cast<size_t>(row)] = d;
      lse[static_cast<size_t>(row)] = o[Ev];
    }
    Scratch w;
    w.size(p, kBlockRows);
    w.dq.resize(static_cast<size_t>(L * E));
#pragma omp for schedule(dynamic)
    for (int64_t b = 0; b < p.batch; ++b) backward_one(p, b, q, k, v, dout, lse.data(), D.data(), w, out);
  }
}

template <typename F>
void dispatch_floating(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32: f.template operator()<float>(); return;
    case DType::kBFloat16: f.template operator()<BFloat16>(); return;
    case DType::kFloat16: f.template operator()<Half>(); return;
    default: throw Error("[attention kernel] needs f32, bf16 or f16 operands, got " + xla_name(dtype));
  }
}

}  // namespace

void sdpa_forward(const SdpaProblem& p, DType dtype, const void* q, const void* k, const void* v, float* out) {
  dispatch_floating(dtype, [&]<typename T>() {
    forward<T>(p, static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v), out);
  });
}

void sdpa_backward(const SdpaProblem& p, DType dtype, const void* q, const void* k, const void* v, const float* fwd, const void* dout,
                   float* out) {
  dispatch_floating(dtype, [&]<typename T>() {
    backward<T>(p, static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v), fwd, static_cast<const T*>(dout), out);
  });
}

}  // namespace lazytrain::kernels
