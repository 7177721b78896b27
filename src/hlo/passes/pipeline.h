// The standard optimization pipeline the CPU backend runs before code generation.
#pragma once

#include "hlo/passes/hlo_pass.h"

namespace lazytrain::hlo {

// algebraic simplification, constant folding, CSE, DCE, then fusion.
std::vector<std::unique_ptr<HloPass>> default_pipeline();

}  // namespace lazytrain::hlo
