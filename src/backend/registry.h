// The backend registry (PJRT's plugins, by name): each backend registers a
// factory once; callers ask for a compiler by name with CompilerOptions.
// The built-in backends ("interpreter", "cpu") are registered in registry.cpp,
// one line each; another backend is one folder plus one register_backend call.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/compiler.h"

namespace lazytrain::backend {

using CompilerFactory = std::function<std::unique_ptr<Compiler>(const CompilerOptions& options)>;

// Registers `factory` under `name` (e.g. from a static initializer of the
// backend's own file). Throws Error when `name` is empty or already registered.
void register_backend(const std::string& name, CompilerFactory factory);

// A new compiler of the backend `name` with `options`. Throws Error
// ("[backend] unknown backend 'x'; registered: cpu, interpreter") for a name
// nobody registered.
std::unique_ptr<Compiler> make_compiler(const std::string& name, const CompilerOptions& options = CompilerOptions::from_environment());

// The registered names, sorted.
std::vector<std::string> backend_names();

// The backend used when none is named: $LAZYTRAIN_BACKEND, else "cpu".
std::string default_backend_name();

}  // namespace lazytrain::backend
