// ConstantFolding ("constant-folding"): evaluates, once at compile time,
// instructions whose operands are all known constants, as XLA's
// HloConstantFolding does.
#pragma once

#include <cstdint>

#include "hlo/passes/hlo_pass.h"

namespace lazytrain::hlo {

// An instruction with at least one operand, every operand a constant or a
// broadcast of a constant, is replaced as follows:
//   - when every operand is a splat (a scalar constant or a broadcast of one)
//     and the instruction is elementwise (unary, convert, binary, compare,
//     select) or only moves data (reshape, transpose, broadcast, slice): by a
//     broadcast of the scalar result (a scalar constant for a rank-0 result),
//     whatever its size: mul(broadcast(2), broadcast(3)) → broadcast(6);
//   - otherwise, when the result has at most kMaxFoldedElements elements: by a
//     constant holding the result.
// Values are computed by HloEvaluator (hlo/evaluator), whose kernels the
// interpreter backend also runs, so a folded constant holds what the
// interpreter computes at run time (a splat's op runs on one element, which
// vector math may round differently from a long vector by an ulp; a dot sums
// in double where the interpreter calls oneDNN). No backend is involved.
// Never folded: parameters, constants, iota and rng-bit-generator (no operands
// to fold, or random); broadcasts of a scalar constant (cheap, and fusion wants
// them); instructions whose known operands, broadcasts materialised, hold more
// than kMaxEvaluatedElements elements together (a sum over a broadcast of a
// huge splat would cost compile time and memory); and instructions whose
// evaluation raises an Error (an out-of-range gather index, an integer division
// by zero): those keep failing at run time, where the error belongs.
// Operands left unused are removed; parameters keep their numbers and the ROOT
// its outputs. Fused computations are not entered.
class ConstantFolding : public HloPass {
 public:
  // The largest result, in elements, folded into a new constant.
  static constexpr int64_t kMaxFoldedElements = 1024;
  // The most operand elements the evaluator reads to fold one instruction.
  static constexpr int64_t kMaxEvaluatedElements = int64_t{1} << 20;

  std::string name() const override { return "constant-folding"; }
  // Returns true when any instruction was folded or removed.
  bool run(HloModule& module) override;
};

}  // namespace lazytrain::hlo
