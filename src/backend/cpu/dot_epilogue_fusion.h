// DotEpilogueFusion ("dot-epilogue-fusion"): folds the elementwise work that
// follows a dot into it where oneDNN's matmul can apply it before writing the
// result (a bias and a binary-add post-op), as XLA's kOutput fusions:
//
//   add(dot(a, b), broadcast(bias[n]) along the last dim)          → fusion(a, b, bias)
//   add(add(dot(a, b), broadcast(bias)), residual)                  → fusion(a, b, bias, residual)
//
// also through a reshape of the dot's result that keeps its last dim (the
// [batch * seq, n] product of nn.Linear reshaped back to [batch, seq, n]). Each
// intermediate must have one user. Only f32 dots: there the fused epilogue
// rounds exactly as the separate adds do (bf16 would round once instead of twice).
// The fusion's kind is kOutput; its computation is the original instructions, so
// the interpreter runs it unchanged and the CPU backend maps it to one oneDNN call.
// Runs before InstructionFusion, which would otherwise take the adds into loops.
// A CPU pass: its pattern is what oneDNN's post-ops can apply.
#pragma once

#include <optional>

#include "hlo/passes/hlo_pass.h"

namespace lazytrain::backend::cpu {

using hlo::HloInstruction;
using hlo::HloModule;

class DotEpilogueFusion : public hlo::HloPass {
 public:
  std::string name() const override { return "dot-epilogue-fusion"; }
  bool run(HloModule& module) override;
};

// For a kOutput fusion made by DotEpilogueFusion: whether its operands after
// (lhs, rhs) are a bias and/or a residual, in that order.
struct DotEpilogueOperands {
  bool bias = false;
  bool residual = false;
};
// The epilogue of `fusion` (kOutput), or nullopt when it is not one this pass makes.
std::optional<DotEpilogueOperands> dot_epilogue_of(const HloInstruction& fusion);

}  // namespace lazytrain::backend::cpu
