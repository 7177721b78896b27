// The reference backend ("interpreter" in backend/registry.h): evaluates HLO
// instructions one by one with the HLO evaluator alone (dot and attention as plain loops, elementwise functions from core/scalar_ops.h).
#pragma once

#include <memory>

#include "backend/compiler.h"

namespace lazytrain::backend::interpreter {

std::unique_ptr<Compiler> make_interpreter_compiler(const CompilerOptions& options);

}  // namespace lazytrain::backend::interpreter
