// The custom-calls "__lazytrain$sdpa_forward" and "__lazytrain$sdpa_backward"
// (hlo/custom_call.h gives their operands, keys and packed results) by their
// plain formula, the reference the CPU backend's FlashAttention kernel
// (kernels/attention.h) is compared with; nothing is shared with it.
//
// Per batch index b and query row i, in double whatever the operands' dtype:
//   s_j   = scale * sum_e q[i, e] k[j, e], then masked: -inf where is_causal
//           and j > i, or where a pred mask is false; an f32 mask is added
//   m     = max_j s_j (NaN if any s_j is NaN);  p_j = exp(s_j - m);  l = sum_j p_j
//   out_e = sum_j p_j drop_j v[j, e] / l,  lse = m + log(l)
// A row whose every score is -inf gives out 0 and lse -inf (and no gradient).
// Dropout keeps weight (b, i, j) when the top 24 bits of
// mix(seed ^ mix(b L S + i S + j)) (SplitMix64's finaliser), read as a uniform
// in [0, 1), are >= dropout_p, and scales it by 1/(1 - dropout_p).
// The backward recomputes P = softmax(s) and the output from q, k, v (not
// from the forward's result) and gives, with D_i = sum_e dout[i, e] out[i, e]:
//   dv_j = sum_i P_ij drop_ij dout_i;  dS_ij = P_ij (drop_ij dout_i . v_j - D_i);
//   dq_i = scale sum_j dS_ij k_j;  dk_j = scale sum_i dS_ij q_i.
#pragma once

#include "hlo/evaluator/kernels.h"

namespace lazytrain::hlo::evaluator {

// `in` is a custom-call of the forward / backward target; args its operands;
// out its f32 result. Error for operands other than f32, bf16 or f16.
void sdpa_forward(const HloInstruction& in, const Operands& args, const MutableArrayRef& out);
void sdpa_backward(const HloInstruction& in, const Operands& args, const MutableArrayRef& out);

}  // namespace lazytrain::hlo::evaluator
