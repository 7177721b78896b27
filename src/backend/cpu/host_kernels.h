// The CPU backend's precompiled host kernels (kernels/) for instructions that
// are neither a generated fusion nor a dot: attention's custom-calls, the
// rng-bit-generator's bits, and an unfused exp, log, tanh or erf. Everything
// else that runs outside a generated kernel (gather, scatter, transposes,
// reductions that were not fused...) runs on the HLO evaluator's kernels.
#pragma once

#include <vector>

#include "backend/cpu/kernel_isa.h"
#include "hlo/evaluator/array_ref.h"
#include "hlo/hlo_instruction.h"

namespace lazytrain::backend::cpu {

// Writes `in`'s value into `out` with a kernel of kernels/ and returns true
// when one computes it; false (nothing written) otherwise. `isa` picks the
// kernels' AVX-512 paths (kAvx512) or AVX2 ones. `args` and `out` have the
// shapes and dtypes the verifier checked for `in`; attention on operands other
// than f32, bf16 or f16 raises Error (kernels/attention.cpp).
bool run_host_kernel(const hlo::HloInstruction& in, const std::vector<hlo::ArrayRef>& args, const hlo::MutableArrayRef& out,
                     KernelIsa isa);

}  // namespace lazytrain::backend::cpu
