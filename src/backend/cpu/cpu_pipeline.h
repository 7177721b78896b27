// The optimization pipeline the CPU backend runs before code generation
// (XLA's CpuCompiler::RunHloPasses): the generic passes of hlo/passes, then the
// CPU's own fusion decisions.
#pragma once

#include <memory>
#include <vector>

#include "hlo/passes/hlo_pass.h"

namespace lazytrain::backend::cpu {

// algebraic simplification, constant folding, CSE, DCE, then dot-epilogue
// fusion (oneDNN post-ops) and loop/reduction fusion with the CPU's rules,
// then (unless `multi_output_fusion` is false) multi-output fusion of the loop
// fusions, and the memory scheduler; last (unless `async_collectives` is
// false) collectives become start/done pairs placed to overlap compute.
std::vector<std::unique_ptr<hlo::HloPass>> cpu_pass_pipeline(bool multi_output_fusion = true, bool async_collectives = true);
// For one op of the eager modes (Compiler::compile_quick): algebraic
// simplification and DCE only; nothing is fused, so no kernel is generated.
std::vector<std::unique_ptr<hlo::HloPass>> cpu_quick_pass_pipeline();

}  // namespace lazytrain::backend::cpu
