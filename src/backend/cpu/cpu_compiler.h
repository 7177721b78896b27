// The native CPU backend ("cpu" in backend/registry.h): optimizes the module
// (src/hlo/passes), fuses elementwise work into generated C++ kernels compiled
// by the system compiler (CompilerOptions::cxx) and loaded with dlopen; dot
// through oneDNN. Falls back to the interpreter's kernels for what it does not
// generate, and to the interpreter altogether when no C++ compiler is found.
#pragma once

#include <memory>

#include "backend/compiler.h"

namespace lazytrain::backend::cpu {

std::unique_ptr<Compiler> make_cpu_compiler(const CompilerOptions& options);

}  // namespace lazytrain::backend::cpu
