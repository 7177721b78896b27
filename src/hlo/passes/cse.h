// CSE ("cse"): common-subexpression elimination, as XLA's HloCSE does.
#pragma once

#include "hlo/passes/hlo_pass.h"

namespace lazytrain::hlo {

// Merges every instruction into the first earlier one that computes the same
// value: same opcode, shape, dtype and operands (in order, after earlier merges,
// so whole duplicated subgraphs collapse in one walk), and the same attributes
// (dimensions, slice starts/limits/strides, comparison direction, reduce kind,
// dot dimension numbers, fusion kind and fused-computation pointer, and for
// constants the literal's shape, dtype and bytes).
// Never merged: parameters (the argument list never changes),
// rng-bit-generator (two draws are two different values) and the ROOT tuple.
// Operands are compared in order: add(a, b) and add(b, a) stay apart.
// Instructions left unused are removed; the ROOT keeps its outputs (two outputs
// may now name one instruction). Fused computations are not entered.
class Cse : public HloPass {
 public:
  std::string name() const override { return "cse"; }
  // Returns true when any instruction was merged or removed.
  bool run(HloModule& module) override;
};

}  // namespace lazytrain::hlo
