// CpuInstructionFusion: InstructionFusion (hlo/passes/fusion.h) with what the
// CPU backend's kernel emitter (kernel_emitter.h) can compile, as XLA's
// CpuInstructionFusion subclasses InstructionFusion.
#pragma once

#include "hlo/passes/fusion.h"
#include "hlo/passes/multi_output_fusion.h"

namespace lazytrain::backend::cpu {

class CpuInstructionFusion : public hlo::InstructionFusion {
 public:
  // True when `instruction` and all its operands are f32, bf16, s32, s64 or
  // pred: the types the emitter computes in (no f16).
  bool ShouldFuse(const hlo::HloModule& module, const hlo::HloInstruction& instruction) const override;
  // True for f32, s32 and s64 reductions, and for bf16 reductions of bf16
  // values other than logaddexp: the emitter accumulates f32 and bf16 values
  // in double (sums, products) or float (max, min) and rounds a bf16 result
  // once, as the interpreter's kernel does. logaddexp only over trailing dims
  // of f32. Mixed-type and pred reductions stay unfused (the interpreter runs them).
  bool ShouldFuseReduce(const hlo::HloModule& module, const hlo::HloInstruction& reduce) const override;
  // A lone elementwise op of at least 65536 elements (the size from which
  // generated kernels use every thread) that the emitter computes: a kernel
  // of its own, vectorized and threaded, instead of the interpreter's generic
  // loop (a bf16 weight's convert before its dot: 1.3-1.5 ms of a 40 ms
  // bert-tiny bf16 step at 2 threads, about 1.0 ms as a kernel).
  bool ShouldFuseAlone(const hlo::HloModule& module, const hlo::HloInstruction& instruction) const override;
};

// CpuMultiOutputFusion: MultiOutputFusion (hlo/passes/multi_output_fusion.h)
// with what the kernel emitter can write in one loop, as XLA's
// CpuMultiOutputFusion subclasses MultiOutputFusion.
class CpuMultiOutputFusion : public hlo::MultiOutputFusion {
 public:
  // True when `a` and `b` have one shape (the loop's rows and inner block
  // serve both) and the emitter generates a kernel for each (then it does for
  // the two in one loop: the same instructions, one iteration space).
  bool ShouldFuse(const hlo::HloModule& module, const hlo::HloInstruction& a, const hlo::HloInstruction& b) const override;
};

}  // namespace lazytrain::backend::cpu
