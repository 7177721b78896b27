#include "hlo/passes/pipeline.h"

#include "hlo/passes/dot_epilogue_fusion.h"
#include "hlo/passes/fusion.h"

#include "hlo/passes/algebraic_simplifier.h"
#include "hlo/passes/constant_folding.h"
#include "hlo/passes/cse.h"
#include "hlo/passes/dce.h"

namespace lazytrain::hlo {

std::vector<std::unique_ptr<HloPass>> default_pipeline() {
  std::vector<std::unique_ptr<HloPass>> passes;
  // Simplification first: it exposes constants to fold and duplicates to merge;
  // DCE then drops what the others left unused. Fusion comes after DCE.
  passes.push_back(std::make_unique<AlgebraicSimplifier>());
  passes.push_back(std::make_unique<ConstantFolding>());
  passes.push_back(std::make_unique<Cse>());
  passes.push_back(std::make_unique<Dce>());
  passes.push_back(std::make_unique<DotEpilogueFusion>());  // before loop fusion takes the bias adds
  passes.push_back(std::make_unique<InstructionFusion>());  // last: it consumes the simplified graph
  return passes;
}

}  // namespace lazytrain::hlo
