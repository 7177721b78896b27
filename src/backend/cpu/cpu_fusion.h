// CpuInstructionFusion: InstructionFusion (hlo/passes/fusion.h) with what the
// CPU backend's kernel emitter (kernel_emitter.h) can compile, as XLA's
// CpuInstructionFusion subclasses InstructionFusion.
#pragma once

#include "hlo/passes/fusion.h"

namespace lazytrain::backend::cpu {

class CpuInstructionFusion : public hlo::InstructionFusion {
 public:
  // True when `instruction` and all its operands are f32, bf16, s32, s64 or
  // pred: the types the emitter computes in (no f16).
  bool ShouldFuse(const hlo::HloModule& module, const hlo::HloInstruction& instruction) const override;
  // True for f32, s32 and s64 reductions of an operand that is not bf16: the
  // emitter accumulates f32 in double and has no bf16 accumulator, so bf16
  // reductions stay unfused (the interpreter's kernel runs them); pred
  // reductions stay unfused too.
  bool ShouldFuseReduce(const hlo::HloModule& module, const hlo::HloInstruction& reduce) const override;
};

}  // namespace lazytrain::backend::cpu
