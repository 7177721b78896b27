// An HLO dot as kernels::OneDnnMatmul takes it (kernels/ knows no HLO).
#pragma once

#include "hlo/hlo_instruction.h"
#include "kernels/onednn_matmul.h"

namespace lazytrain::backend::cpu {

// `dot` is a kDot whose lhs has shape `lhs_shape` (shape inference's forms:
// batch dims first, one contracting dim each side).
inline kernels::MatmulDims matmul_dims(const Shape& lhs_shape, const hlo::HloInstruction& dot) {
  kernels::MatmulDims d;
  const auto nb = static_cast<int64_t>(dot.dot.lhs_batch_dimensions.size());
  d.lhs_shape = lhs_shape;
  d.out_shape = dot.shape;
  d.batch_dims = nb;
  d.lhs_transposed = dot.dot.lhs_contracting_dimensions[0] == nb;
  d.rhs_transposed = dot.dot.rhs_contracting_dimensions[0] == nb + 1;
  d.dtype = dot.dtype;
  d.name = dot.name();
  return d;
}

}  // namespace lazytrain::backend::cpu
