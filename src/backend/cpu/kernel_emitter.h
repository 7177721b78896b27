// Emits the C++ source of one generated kernel per fusion (loop or reduction),
// for the CPU backend to compile into a shared object.
//
// A kernel has the signature
//   extern "C" void <name>(const void* const* args, void* out);
// where args[i] is fusion operand i and out the result buffer (row-major); a
// multi-output fusion's kernel gets `out` as a `void* const*` array, out[k]
// the buffer of element k, and writes every element in its one loop.
// Loops are split into rows and an inner contiguous range so that the inner
// loop is a vectorizable `#pragma omp simd` loop; rows run in parallel.
// Every elementwise op is a call of its functor from core/scalar_ops.h (the
// interpreter's own), e.g. `Maximum()(v1, v2)`; transcendentals end in lt_*
// functions whose vector variants are SLEEF's AVX2 (8 lanes) or AVX-512 (16
// lanes) kernels, as the kernel ISA (kernel_isa.h) decides.
#pragma once

#include <optional>
#include <string>

#include "hlo/hlo_instruction.h"

namespace lazytrain::backend::cpu {

// The source of a kernel computing `fusion` (a kFusion instruction), or nullopt
// when the emitter does not handle its pattern (the backend then interprets
// it: an interpreter fallback, counted by the metrics report). Then `why_not`,
// when given, gets the reason, naming the instruction of the fused computation
// that stopped it: "divide.3 is an integer division (...)".
std::optional<std::string> emit_fusion_kernel(const hlo::HloInstruction& fusion, const std::string& name, std::string* why_not = nullptr);

// Whether the emitter computes the elementwise instruction `in` itself: a
// dtype kernels compute in, a functor for its opcode, and not an integer
// division or power (which must raise on zero as the interpreter's do). The
// CPU's fusion rules ask it before making a lone op a fusion of its own.
bool emits_elementwise(const hlo::HloInstruction& in);

// The text of core/scalar_functions.cpp (the SLEEF wrappers), compiled as a
// separate translation unit of every generated library; and the text of
// core/scalar_ops.h with `using namespace lazytrain::scalar_ops`, which opens
// every kernel source. Both are embedded at build time (cmake/kernel_prelude.cpp.in).
std::string kernel_prelude_source();
std::string kernel_header_source();

}  // namespace lazytrain::backend::cpu
