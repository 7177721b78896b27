// AlgebraicSimplifier ("algebraic-simplifier"): local rewrites that remove work
// without changing any value, as XLA's AlgebraicSimplifier does.
#pragma once

#include "hlo/passes/hlo_pass.h"

namespace lazytrain::hlo {

// Rewrites, each only when the replacement has exactly the instruction's shape
// and dtype:
//   add(x, 0), add(0, x), subtract(x, 0)              → x
//   multiply(x, 1), multiply(1, x), divide(x, 1)      → x
//   multiply(x, 0), multiply(0, x) for integer/pred x → the zero (never for
//     floats: 0 * inf and 0 * NaN are NaN)
//   negate(negate(x))                                 → x
//   convert(x) to x's own dtype                       → x
//   reshape(x) to x's own shape                       → x
//   reshape(reshape(x))                               → one reshape (or x)
//   transpose(x) with the identity permutation        → x
//   transpose(transpose(x))                           → one transpose (or x)
//   transpose(dot(a, b)) swapping the last two dims,  → dot(b, a) with the
//     when the transpose is the dot's only user          contracting dims swapped
//   broadcast(x) that keeps x's shape and dims        → x
//   broadcast(broadcast(x))                           → one broadcast
//   slice(x) that covers all of x                     → x
// "0" and "1" are constants whose every element has that value, seen directly
// or through broadcasts/reshapes of such a constant (a splat such as
// HloBuilder::full makes). x + 0 may turn an x of -0.0 into +0.0, as in XLA.
//
// Each rewrite looks at already-rewritten operands, so one walk in order
// resolves chains (negate(negate(negate(negate(x)))) → x). Instructions left
// unused are removed; parameters keep their numbers and the ROOT its outputs.
// Fused computations are not entered.
class AlgebraicSimplifier : public HloPass {
 public:
  std::string name() const override { return "algebraic-simplifier"; }
  // Returns true when any rewrite applied or an instruction was removed.
  bool run(HloModule& module) override;
};

}  // namespace lazytrain::hlo
