// Sets a backend for the scope of a test, then restores the one that was set.
#pragma once

#include <memory>

#include "backend/compiler.h"
#include "lazy/graph_executor.h"

namespace lazytrain::testing {

template <bool kCpu>
class BackendScope {
 public:
  BackendScope() : was_cpu_(lazy::GraphExecutor::get().compiler().name() == "cpu") {
    lazy::GraphExecutor::get().set_compiler(kCpu ? backend::make_cpu_compiler() : backend::make_interpreter_compiler());
  }
  ~BackendScope() {
    lazy::GraphExecutor::get().set_compiler(was_cpu_ ? backend::make_cpu_compiler() : backend::make_interpreter_compiler());
  }
  BackendScope(const BackendScope&) = delete;
  BackendScope& operator=(const BackendScope&) = delete;

 private:
  bool was_cpu_;
};

using InterpreterScope = BackendScope<false>;
using CpuBackendScope = BackendScope<true>;

}  // namespace lazytrain::testing
