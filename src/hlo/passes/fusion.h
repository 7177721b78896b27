// InstructionFusion ("fusion"): groups elementwise work into kFusion
// instructions that a backend compiles into one loop each (XLA's
// instruction fusion, simplified).
//
// - kLoop: elementwise ops (unary, binary, compare, select, convert), reshapes
//   and the broadcasts that feed them. Every value inside is read at the root's
//   linear index; a broadcast inside a fusion reads a value from outside it
//   (a fusion parameter or a scalar constant), so index arithmetic stays affine.
// - kInput: a reduce over trailing dims (a row reduction: softmax sums, layer
//   norm statistics) or leading dims (a column reduction: bias gradients),
//   together with the loop fusion that produces its operand; a reduce with no
//   such producer (its operand a dot, a parameter, a value read elsewhere too)
//   is a kInput fusion of its own, so that it too runs as a generated kernel.
// Cheap producers (broadcasts, scalar constants, iota, and non-transcendental
// elementwise ops of those only, such as masks) are duplicated into every
// consumer fusion rather than materialised; a value that reads a real array is
// computed once.
//
// What a backend can compile (its dtypes, which reductions) it says through
// ShouldFuse and ShouldFuseReduce, as XLA's backends subclass InstructionFusion
// (CpuInstructionFusion in backend/cpu/cpu_fusion.h); this pass knows no backend.
#pragma once

#include "hlo/passes/hlo_pass.h"

namespace lazytrain::hlo {

class InstructionFusion : public HloPass {
 public:
  std::string name() const override { return "fusion"; }
  bool run(HloModule& module) override;

  // XLA's InstructionFusion::ShouldFuse: whether the backend can compute
  // `instruction` of `module` inside a kLoop fusion. Asked only of the
  // instructions a loop fusion can hold at all (elementwise ops, reshapes,
  // broadcasts, iotas, scalar constants), about the root and every producer the
  // pass would pull in; false keeps it out (materialised by itself).
  virtual bool ShouldFuse(const HloModule& module, const HloInstruction& instruction) const = 0;
  // Whether `reduce` (over leading or trailing dims, a scalar constant init)
  // may be a kInput fusion: with the loop fusion that produces its operand, or alone.
  virtual bool ShouldFuseReduce(const HloModule& module, const HloInstruction& reduce) const = 0;
  // Whether an elementwise op that fuses with nothing (a convert feeding a
  // dot, say) is worth a loop fusion of its own, i.e. a generated kernel,
  // rather than running by itself. Default: no.
  virtual bool ShouldFuseAlone(const HloModule& module, const HloInstruction& instruction) const {
    (void)module;
    (void)instruction;
    return false;
  }
};

}  // namespace lazytrain::hlo
