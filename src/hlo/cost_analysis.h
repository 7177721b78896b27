// Floating-point work of a module, as XLA's HloCostAnalysis counts a dot's
// flops: 2 · (elements of the result) · (size of the contracted dims) per dot,
// including dots inside fusions. Other instructions are not counted: in a
// transformer step the dots are nearly all of the arithmetic, and this is the
// number that tells whether a step ran its forward once or twice.
#pragma once

#include <cstdint>

#include "hlo/hlo_instruction.h"

namespace lazytrain::hlo {

// The flops of every dot of `module` (and of its fused computations), each run once.
int64_t dot_flop_count(const HloModule& module);

}  // namespace lazytrain::hlo
