#include "hlo/cost_analysis.h"

namespace lazytrain::hlo {

int64_t dot_flop_count(const HloModule& module) {
  int64_t flops = 0;
  for (const HloInstruction& in : module.instructions) {
    if (in.fused_computation) flops += dot_flop_count(*in.fused_computation);
    if (in.opcode != HloOpcode::kDot) continue;
    const Shape& lhs = module.at(in.operands[0]).shape;
    int64_t contracted = 1;
    for (int64_t d : in.dot.lhs_contracting_dimensions) contracted *= lhs[static_cast<size_t>(d)];
    flops += 2 * numel(in.shape) * contracted;
  }
  return flops;
}

}  // namespace lazytrain::hlo
