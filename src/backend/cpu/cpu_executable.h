// The CPU backend's executable: runs an optimized module instruction by
// instruction: each fusion the emitter generated as its kernel from the
// shared object, each dot (and dot epilogue fusion) as a oneDNN matmul, and
// attention and rng bits on the host kernels of kernels/ (host_kernels.h),
// everything else on the HLO evaluator's kernels.
//
// Interpreter fallbacks: a fusion the kernel emitter cannot generate
// (kernel_emitter.h; or every fusion when no C++ compiler runs) is evaluated
// by the interpreter instead, element by element and far slower. Each run of
// one adds 1 to the metrics report's counters InterpreterFallback and
// InterpreterFallback.<fusion name> (e.g. InterpreterFallback.fusion.57), as
// torch_xla counts its aten:: CPU fallbacks; the first executable holding a
// kind of such fusion (its fused ops, shape and reason) says so on stderr,
// once per process:
//   warning: [cpu backend] fusion.57 of SyncTensorsGraph.812 (kLoop, s64[8]:
//   parameter parameter divide) runs on the interpreter: divide.2 is an
//   integer division (...); counted as InterpreterFallback.fusion.57
//
// A trace (runtime/profiler.h) gets one event per instruction that does work:
// "kernel", "dot" (with oneDNN's implementation) or "interpreter" (with
// "fallback": the reason, for a fallback fusion).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "backend/compiler.h"
#include "backend/cpu/jit.h"
#include "backend/cpu/kernel_isa.h"

namespace lazytrain::backend::cpu {

// A generated kernel: args[i] is fusion operand i, out the result buffer (for a
// multi-output fusion, a `void* const*` array: out[k] is element k's buffer).
using KernelFn = void (*)(const void* const* args, void* out);

// `kernels` maps fusion instruction ids to their symbols in `library` (which
// the executable keeps loaded); `profile` prints each run's time by kind of
// instruction on stderr (CompilerOptions::profile); `isa` picks the host
// kernels' paths (kernels/: attention, rng bits; unset: resolve_kernel_isa of
// LAZYTRAIN_KERNEL_ISA). Creates the oneDNN primitives of every dot (Error
// when oneDNN has none).
std::unique_ptr<Executable> make_cpu_executable(hlo::HloModule module, std::shared_ptr<SharedLibrary> library,
                                                std::map<int, KernelFn> kernels, bool profile,
                                                std::optional<KernelIsa> isa = std::nullopt);

}  // namespace lazytrain::backend::cpu
