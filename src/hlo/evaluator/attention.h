// The scaled-dot-product-attention host kernel behind the custom-calls
// "__lazytrain$sdpa_forward" and "__lazytrain$sdpa_backward" (hlo/custom_call.h
// gives their operands and packed results). One implementation, called by the
// HLO evaluator (constant folding, the interpreter backend) and by the CPU
// backend, which runs it as a precompiled function rather than generated code.
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
// loops (block_gemm.h), AVX-512 where the CPU has AVX-512 F/DQ/VL and AVX2
// otherwise or under LAZYTRAIN_KERNEL_ISA=avx2 (the same bits on full 16-column
// tiles); exp is SLEEF's vector expf; blocks that the causal mask or a bool mask
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

#include "hlo/evaluator/kernels.h"

namespace lazytrain::hlo::evaluator {

// `in` is a custom-call of the forward / backward target; args its operands;
// out its f32 result. Error for a dtype the kernel does not take.
void sdpa_forward(const HloInstruction& in, const Operands& args, const MutableArrayRef& out);
void sdpa_backward(const HloInstruction& in, const Operands& args, const MutableArrayRef& out);

}  // namespace lazytrain::hlo::evaluator
