#include "backend/cpu/cpu_pipeline.h"

#include "backend/cpu/cpu_fusion.h"
#include "backend/cpu/dot_epilogue_fusion.h"
#include "hlo/passes/algebraic_simplifier.h"
#include "hlo/passes/async_collective_creator.h"
#include "hlo/passes/latency_hiding_scheduler.h"
#include "hlo/passes/constant_folding.h"
#include "hlo/passes/cse.h"
#include "hlo/passes/dce.h"
#include "hlo/passes/memory_scheduler.h"

namespace lazytrain::backend::cpu {

std::vector<std::unique_ptr<hlo::HloPass>> cpu_pass_pipeline(bool multi_output_fusion, bool async_collectives) {
  std::vector<std::unique_ptr<hlo::HloPass>> passes;
  // Simplification first: it exposes constants to fold and duplicates to merge;
  // DCE then drops what the others left unused. Fusion comes after DCE.
  passes.push_back(std::make_unique<hlo::AlgebraicSimplifier>());
  passes.push_back(std::make_unique<hlo::ConstantFolding>());
  passes.push_back(std::make_unique<hlo::Cse>());
  passes.push_back(std::make_unique<hlo::Dce>());
  passes.push_back(std::make_unique<DotEpilogueFusion>());     // before loop fusion takes the bias adds
  passes.push_back(std::make_unique<CpuInstructionFusion>());  // it consumes the simplified graph
  if (multi_output_fusion) passes.push_back(std::make_unique<CpuMultiOutputFusion>());  // merges the loop fusions that fusion made
  passes.push_back(std::make_unique<hlo::MemoryScheduler>());  // orders what will run
  if (async_collectives) {  // after the order is chosen: the pairs move only around it
    passes.push_back(std::make_unique<hlo::AsyncCollectiveCreator>());
    passes.push_back(std::make_unique<hlo::LatencyHidingScheduler>());
  }
  return passes;
}

std::vector<std::unique_ptr<hlo::HloPass>> cpu_quick_pass_pipeline() {
  std::vector<std::unique_ptr<hlo::HloPass>> passes;
  passes.push_back(std::make_unique<hlo::AlgebraicSimplifier>());
  passes.push_back(std::make_unique<hlo::Dce>());
  return passes;
}

}  // namespace lazytrain::backend::cpu
