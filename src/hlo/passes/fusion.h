// InstructionFusion ("fusion"): groups elementwise work into kFusion
// instructions that the CPU backend compiles into one loop each (XLA's
// instruction fusion, simplified).
//
// - kLoop: elementwise ops (unary, binary, compare, select, convert), reshapes
//   and the broadcasts that feed them. Every value inside is read at the root's
//   linear index; a broadcast inside a fusion reads a value from outside it
//   (a fusion parameter or a scalar constant), so index arithmetic stays affine.
// - kInput: a reduce over trailing dims (a row reduction: softmax sums, layer
//   norm statistics) or leading dims (a column reduction: bias gradients),
//   together with the loop fusion that produces its operand.
// Cheap producers (broadcasts, scalar constants, iota, and non-transcendental
// elementwise ops of those only, such as masks) are duplicated into every
// consumer fusion rather than materialised; a value that reads a real array is
// computed once. f32, bf16, s32, s64 and pred values are fused; reductions only
// into f32 and integer results.
#pragma once

#include "hlo/passes/hlo_pass.h"

namespace lazytrain::hlo {

class InstructionFusion : public HloPass {
 public:
  std::string name() const override { return "fusion"; }
  bool run(HloModule& module) override;
};

}  // namespace lazytrain::hlo
