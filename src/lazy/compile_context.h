// CompileContext: the lazy runtime's compile part (DESIGN.md, "The execution
// model"). It holds the process's backend (backend::Compiler), the computation
// cache that backend fills (lazy/computation_cache.h) and the HLO text of the
// last graph it compiled; compile_or_lookup() finds a graph in the cache or
// lowers it (lazy/graph_lowering.h), runs the SPMD passes on a module that
// carries sharding annotations, and compiles it. One per process: every
// device of the backend shares it, and a graph compiles once for all of them.
//
// Metrics (PyTorch/XLA's names): CompileTime, counters CachedCompile,
// UncachedCompile, CreateCompileHandles.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/compiler.h"
#include "lazy/computation_cache.h"
#include "lazy/graph_lowering.h"
#include "lazy/lazy_api.h"

namespace lazytrain::lazy {

class CompileContext {
 public:
  // The disk tier's folder is $LAZYTRAIN_CACHE_DIR's (core/env_vars.h).
  CompileContext();

  // lazy_api.h's compile_or_lookup(): the memory tier, then the disk tier,
  // then a compile (an eager op's graph with Compiler::compile_quick, never
  // stored on disk). Throws Error when an input's layout spans another device
  // count than the job's, or when the graph cannot be lowered or compiled.
  std::shared_ptr<backend::Executable> compile_or_lookup(const GraphSignature& signature, const SyncCause& cause, bool* compiled);

  // The backend in use: the one set, else the default ($LAZYTRAIN_BACKEND or
  // cpu), made at the first call (Error naming LAZYTRAIN_BACKEND when unknown).
  const backend::Compiler& compiler();
  // Replaces the backend: waits for every device, clears the memory tier.
  void set_compiler(std::unique_ptr<backend::Compiler> compiler);
  // Moves the disk tier to `directory` (empty: none), once every device is idle.
  void set_cache_directory(const std::string& directory);

  // How many graphs the memory tier holds (compiled or compiling).
  size_t cache_size() const { return cache_.size(); }
  // The memory tier's executables whose compile has finished.
  std::vector<std::shared_ptr<backend::Executable>> cached_executables() const { return cache_.ready(); }
  // The HLO text of the most recently compiled graph ("" before the first).
  std::string last_compiled_hlo() const;

 private:
  // The backend in use, with mutex_ held.
  backend::Compiler& compiler_locked();

  mutable std::mutex mutex_;  // guards the fields below (the cache has its own lock)
  std::unique_ptr<backend::Compiler> compiler_;  // made at first use unless set
  // The compiler's name, the memory tier's key with the graph hash (the tier
  // is cleared when the compiler changes). The disk tier asks the compiler
  // for its fingerprint at each use instead: its flags may depend on the job
  // (cpu: async collectives when it spans processes).
  CompileTarget target_;
  // One computation cache for every device of the backend; the disk tier's
  // folder is LAZYTRAIN_CACHE_DIR's unless set (set_cache_directory).
  ComputationCache cache_;
  std::string last_compiled_hlo_;
};

// The process's compile context, made at its first use.
CompileContext& compile_context();

}  // namespace lazytrain::lazy
