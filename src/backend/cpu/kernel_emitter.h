// Emits the C++ source of one generated kernel per fusion (loop or reduction),
// for the CPU backend to compile into a shared object.
//
// A kernel has the signature
//   extern "C" void <name>(const void* const* args, void* out);
// where args[i] is fusion operand i and out the result buffer (row-major).
// Loops are split into rows and an inner contiguous range so that the inner
// loop is a vectorizable `#pragma omp simd` loop; rows run in parallel.
// Transcendentals call lt_* functions whose 8-lane variants are SLEEF's AVX2
// kernels (kernel_prelude()).
#pragma once

#include <optional>
#include <string>

#include "hlo/hlo_instruction.h"

namespace lazytrain::backend::cpu {

// The source of a kernel computing `fusion` (a kFusion instruction), or nullopt
// when the emitter does not handle its pattern (the backend then interprets it).
std::optional<std::string> emit_fusion_kernel(const hlo::HloInstruction& fusion, const std::string& name);

// Definitions every generated library needs (the SLEEF wrappers), compiled as a
// separate translation unit; and the declarations the kernels include.
std::string kernel_prelude_source();
std::string kernel_header_source();

}  // namespace lazytrain::backend::cpu
