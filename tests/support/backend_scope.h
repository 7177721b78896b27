// Sets a backend (by its registered name) for the scope of a test, then
// restores the one that was set.
#pragma once

#include <string>

#include "backend/registry.h"
#include "lazy/lazy_api.h"

namespace lazytrain::testing {

class BackendScope {
 public:
  explicit BackendScope(const std::string& name) : previous_(lazy::compiler().name()) { use(name); }
  ~BackendScope() { use(previous_); }
  BackendScope(const BackendScope&) = delete;
  BackendScope& operator=(const BackendScope&) = delete;

 private:
  static void use(const std::string& name) { lazy::set_compiler(backend::make_compiler(name)); }
  std::string previous_;
};

struct InterpreterScope : BackendScope {
  InterpreterScope() : BackendScope("interpreter") {}
};
struct CpuBackendScope : BackendScope {
  CpuBackendScope() : BackendScope("cpu") {}
};

}  // namespace lazytrain::testing
