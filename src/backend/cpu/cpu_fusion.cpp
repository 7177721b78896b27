#include "backend/cpu/cpu_fusion.h"

#include "backend/cpu/kernel_emitter.h"

namespace lazytrain::backend::cpu {

namespace {

bool fusible_dtype(DType t) {
  return t == DType::kFloat32 || t == DType::kBFloat16 || t == DType::kInt32 || t == DType::kInt64 || t == DType::kBool;
}

}  // namespace

bool CpuInstructionFusion::ShouldFuse(const hlo::HloModule& module, const hlo::HloInstruction& in) const {
  if (!fusible_dtype(in.dtype)) return false;
  for (int o : in.operands) {
    if (!fusible_dtype(module.at(o).dtype)) return false;
  }
  return true;
}

bool CpuInstructionFusion::ShouldFuseReduce(const hlo::HloModule& module, const hlo::HloInstruction& reduce) const {
  if (!fusible_dtype(reduce.dtype) || reduce.dtype == DType::kBool) return false;
  // bf16: reduced as the interpreter does (kernel_emitter.cpp), except logaddexp and mixed types.
  const bool bf16 = reduce.dtype == DType::kBFloat16;
  if (reduce.reduce_kind == hlo::ReduceKind::kLogAddExp) {
    // Emitted over trailing dims of f32 rows only (online logsumexp).
    const int64_t rank = static_cast<int64_t>(module.at(reduce.operands[0]).shape.size());
    const int64_t n = static_cast<int64_t>(reduce.dimensions.size());
    for (int64_t i = 0; i < n; ++i) {
      if (reduce.dimensions[static_cast<size_t>(i)] != rank - n + i) return false;
    }
    if (bf16) return false;
  }
  return bf16 == (module.at(reduce.operands[0]).dtype == DType::kBFloat16);
}

bool CpuInstructionFusion::ShouldFuseAlone(const hlo::HloModule& module, const hlo::HloInstruction& in) const {
  return ShouldFuse(module, in) && numel(in.shape) >= 65536 && emits_elementwise(in);
}

bool CpuMultiOutputFusion::ShouldFuse(const hlo::HloModule&, const hlo::HloInstruction& a, const hlo::HloInstruction& b) const {
  return a.shape == b.shape && emit_fusion_kernel(a, "a").has_value() && emit_fusion_kernel(b, "b").has_value();
}

}  // namespace lazytrain::backend::cpu
