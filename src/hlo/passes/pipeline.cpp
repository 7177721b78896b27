#include "hlo/passes/pipeline.h"

namespace lazytrain::hlo {

std::vector<std::unique_ptr<HloPass>> default_pipeline() {
  std::vector<std::unique_ptr<HloPass>> passes;
  // Passes are added here as they land (issue 3).
  return passes;
}

}  // namespace lazytrain::hlo
