// The custom-call targets lazytrain knows (XLA's custom-call: an instruction
// that calls a kernel by name, with its attributes in backend_config). The CPU
// backend runs a fast host kernel for each (kernels/); the HLO evaluator, hence
// the interpreter, computes it by its plain formula (hlo/evaluator/), so a
// differential test compares two implementations, not one with itself.
//
// backend_config holds "key=value" pairs separated by commas, numbers printed
// with 17 significant digits (exact for doubles): "is_causal=0,scale=0.125".
//
// Targets (operands in order; "?" marks an operand present only when its key
// says so). lazytrain's instructions have one array result, so a target with
// several results returns them packed into one f32 array (the lowering slices
// them apart; the slices fuse into their consumers):
//
//   "__lazytrain$topk"  keys k, dim, largest (0/1)
//     x [..., n, ...] (any dtype)  ->  s64 [..., k, ...]: the indices of the k
//     largest (smallest) elements along dim, in descending (ascending) order of
//     value, ties by lower index first, NaN above every number (torch.topk).
//
//   "__lazytrain$sdpa_forward"  keys is_causal, has_mask, has_dropout (0/1)
//     q [B..., L, E], k [B..., S, E], v [B..., S, Ev] (one floating dtype),
//     scale f32[], mask? (has_mask: pred or f32, rank of q, each dim 1 or that
//     of [B..., L, S]), dropout_p? f32[] and seed? s64[] (has_dropout)
//     ->  f32 [B..., L, Ev + 1]: the attention output in columns 0..Ev-1 and
//     the logsumexp of the row's scaled, masked scores in column Ev.
//     Numbers are operands, not keys: a scale or dropout probability that
//     changes between steps never changes the graph (tensor/lowering.h scalar_operand).
//
//   "__lazytrain$sdpa_backward"  the forward's keys
//     q, k, v, scale, fwd (the forward's result), dout [B..., L, Ev] (q's
//     dtype), mask?, dropout_p?, seed?
//     ->  f32 [B..., L*E + S*E + S*Ev]: dq, dk, dv of each batch element, flattened, in that order.
//
//   "Sharding"  no keys (XLA's own target name, as PyTorch/XLA's mark_sharding emits it)
//     x (any)  ->  x unchanged: the instruction's `sharding` is a user's annotation
//     (issue 34) that sharding propagation starts from and never changes; the
//     SPMD partitioner replaces it by x laid out that way.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "hlo/shape_inference.h"

namespace lazytrain::hlo {

inline const std::string kTopKTarget = "__lazytrain$topk";
inline const std::string kSdpaForwardTarget = "__lazytrain$sdpa_forward";
inline const std::string kSdpaBackwardTarget = "__lazytrain$sdpa_backward";
inline const std::string kShardingTarget = "Sharding";

// A parsed backend_config. Throws Error("[hlo custom-call] ...") for a malformed
// text or, from number(), a missing key.
class CustomCallConfig {
 public:
  explicit CustomCallConfig(const std::string& text);
  bool has(const std::string& key) const { return values_.count(key) > 0; }
  double number(const std::string& key) const;
  // "k1=v1,k2=v2" with each value printed exactly (%.17g), keys in the order given.
  static std::string format(const std::vector<std::pair<std::string, double>>& entries);

 private:
  std::map<std::string, double> values_;
};

// The result of custom-call `in` given its operands and backend_config; Error
// for an unknown target or operands that do not fit the target's rule.
ShapeAndType infer_custom_call(const HloModule& module, const HloInstruction& in);

}  // namespace lazytrain::hlo
