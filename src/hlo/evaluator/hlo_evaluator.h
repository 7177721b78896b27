// HloEvaluator: computes HLO on the host, as XLA's HloEvaluator does. Constant
// folding evaluates through it; the interpreter backend runs the same kernels
// on its buffers (evaluate_into), so a folded constant holds what the
// interpreter computes at run time.
//
// Semantics are XLA's operation semantics with lazytrain's restrictions (see
// hlo_instruction.h): float sums and products reduce in double, integer ones in
// int64; a dot accumulates in f32 (bf16, f16, f32) or wraps in its integer
// type; elementwise functions are core/scalar_ops.h's (exp, log, sin, cos and
// pow SLEEF's 1-ULP functions); attention is its formula in double; bf16 and
// f16 values are computed in float and rounded to nearest even. Plain loops,
// obviously correct, the reference the backends' fast kernels (kernels/) are
// compared with: nothing here calls them.
#pragma once

#include <vector>

#include "core/literal.h"
#include "hlo/evaluator/array_ref.h"
#include "hlo/hlo_instruction.h"

namespace lazytrain::hlo {

class HloEvaluator {
 public:
  // Evaluates `module` with `arguments[i]` feeding parameter(i) (shape and dtype
  // must match: Error otherwise); returns one Literal per element of the ROOT tuple.
  // Errors: an out-of-range gather/scatter index, an integer division by zero.
  std::vector<Literal> evaluate(const HloModule& module, const std::vector<Literal>& arguments) const;

  // Evaluates one instruction on its operands' values (`operands[k]` is operand
  // k). A constant gives its literal, a fusion runs its fused computation; a
  // parameter, tuple, multi-output fusion or get-tuple-element raises Error
  // (they have no array value of their own here: evaluate() reads them).
  Literal evaluate_instruction(const HloInstruction& instruction, const std::vector<Literal>& operands) const;
};

// Writes the value of `instruction` into `out` (its shape and dtype, storage
// not shared with any operand), reading `operands[k]` as operand k. Handles
// every opcode but parameter, fusion, tuple and the collectives (Error), for callers that own
// the storage (the interpreter backend). dot multiplies in a plain loop,
// accumulating in f32 (floats) or the integer type.
void evaluate_into(const HloInstruction& instruction, const std::vector<ArrayRef>& operands, const MutableArrayRef& out);

}  // namespace lazytrain::hlo
