// The scaled-dot-product-attention host kernel behind the custom-calls
// "__lazytrain$sdpa_forward" and "__lazytrain$sdpa_backward" (hlo/custom_call.h
// gives their operands and packed results). The CPU backend runs it as a
// precompiled function rather than generated code (backend/cpu/host_kernels.h
// reads the custom-call into an SdpaProblem); the HLO evaluator, the reference
// it is compared with, computes the same custom-calls by their plain formula
// (hlo/evaluator/attention.cpp) and shares nothing with it.
//
// Algorithm: FlashAttention-2 (Dao 2023, "FlashAttention-2: Faster Attention
// with Better Parallelism and Work Partitioning", Algorithms 1 and 2) on the
// host. The forward takes blocks of 32 query rows (one task each, over every
// batch index); for each block of 64 keys it computes the scaled, masked scores,
// keeps a running row maximum m and sum l (online softmax), rescales the output
// accumulator and adds P V; it writes out = acc / l and lse = m + log(l). The
// backward, one task per batch index (head), takes key blocks outer and query
// blocks inner, recomputing P = exp(S - lse) with D = rowsum(dout * out):
// dv += P^T dout, dp = dout v^T, ds = P (dp - D), dk += ds^T q scale, and dq +=
// ds k scale into the task's own [L, E] buffer (no two threads write one row:
// deterministic for any thread count). The block products are register-tiled
// loops (block_gemm.h), AVX-512 when the caller says so (SdpaProblem::avx512:
// the CPU backend's kernel ISA, backend/cpu/kernel_isa.h) and AVX2 otherwise
// (the same bits on full 16-column tiles); exp is SLEEF's vector expf; blocks that the causal mask or a bool mask
// hides whole are skipped. Everything accumulates in f32 whatever the input
// dtype (f32, bf16, f16). With f32 inputs the forward reads v and the backward
// k and dout in place; q is copied scaled, and k (v) transposed, per block.
//
// Masks: is_causal keeps key j <= query row i (torch's tril(ones(L, S))); a
// pred mask keeps true; an f32 mask is added to the scores. A row whose every
// score is -inf gives out 0 and lse -inf, and no gradient; a NaN or +inf
// score makes its row's out, lse and gradients NaN, as softmax would.
// Dropout (has_dropout): attention weight (b, i, j) is kept when a counter
// hash of (seed, b * L * S + i * S + j) gives a uniform >= dropout_p, and scaled
// by 1/(1 - dropout_p); forward and backward draw the same decisions. The
// uniform is the top 24 bits of the hash over 2^24 (SplitMix64's finaliser
// mix: mix(seed ^ mix(index))); the kernel draws a row of them as one vector
// loop, the same values on every ISA path.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.h"

namespace lazytrain::kernels {

// One attention call: q [batch, L, E], k [batch, S, E], v [batch, S, Ev]
// (batch: the product of the leading dims), contiguous.
struct SdpaProblem {
  int64_t batch = 1, L = 0, S = 0, E = 0, Ev = 0;
  float scale = 1.0f;  // the scores are (q * scale) k^T
  bool causal = false;
  float dropout_p = 0.0f;  // > 0: dropout drawn from `seed`
  uint64_t seed = 0;
  // Optional mask (nullptr: none): pred (true keeps) or f32 (added to the
  // scores); element (b, i, j) at mask_batch_offset[b] + i * mask_row_stride +
  // j * mask_col_stride elements (a stride 0 broadcasts).
  const void* mask = nullptr;
  bool mask_is_pred = false;
  std::vector<int64_t> mask_batch_offset;  // one per flattened batch index
  int64_t mask_row_stride = 0, mask_col_stride = 0;
  // The block products and the dropout hash on AVX-512 F/DQ/VL (the caller
  // checks that the CPU has them); AVX2 otherwise.
  bool avx512 = false;
};

// Forward: out [batch, L, Ev + 1] f32, each row the attention output then its
// logsumexp. q, k, v of `dtype` (f32, bf16 or f16; Error for another).
void sdpa_forward(const SdpaProblem& p, DType dtype, const void* q, const void* k, const void* v, float* out);

// Backward: `forward` is the forward's output, dout [batch, L, Ev] of `dtype`;
// out f32, per batch index dq [L, E], then dk [S, E], then dv [S, Ev].
void sdpa_backward(const SdpaProblem& p, DType dtype, const void* q, const void* k, const void* v, const float* forward,
                   const void* dout, float* out);

}  // namespace lazytrain::kernels
