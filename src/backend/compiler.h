// Compiler and Executable: the backend interface. A Compiler turns a verified
// HloModule into an Executable; an Executable runs it on argument buffers.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "hlo/hlo_instruction.h"
#include "runtime/buffer.h"

namespace lazytrain::backend {

class Executable {
 public:
  virtual ~Executable() = default;
  // Runs the module: `arguments[i]` feeds parameter(i) and must match its shape and
  // dtype (Error otherwise). Returns one buffer per element of the ROOT tuple.
  // Buffers are never written in place: arguments stay valid.
  virtual std::vector<runtime::Buffer> execute(const std::vector<runtime::Buffer>& arguments) = 0;
  // The same, where `donated[i]` (one flag per argument, or empty for none) gives
  // argument i's storage to the executable, as XLA's donated buffers: it may be
  // overwritten with an intermediate or an output once parameter(i) is last read
  // (parameters, Adam moments updated in place), so the caller must not read a
  // donated argument afterwards, unless execute throws and `overwritten` (when
  // not null; resized to one flag per argument) leaves its flag false: a failure
  // before parameter(i)'s last read leaves the argument's values as they were,
  // which lets the lazy runtime keep a failed step's parameters. Backends
  // without in-place updates ignore the flags and never overwrite.
  virtual std::vector<runtime::Buffer> execute(const std::vector<runtime::Buffer>& arguments, const std::vector<bool>& donated,
                                               std::vector<bool>* overwritten) {
    (void)donated;
    if (overwritten) overwritten->assign(arguments.size(), false);
    return execute(arguments);
  }
  std::vector<runtime::Buffer> execute(const std::vector<runtime::Buffer>& arguments, const std::vector<bool>& donated) {
    return execute(arguments, donated, nullptr);
  }
  virtual const hlo::HloModule& module() const = 0;
};

// What a backend's compiler is told when it is made (backend/registry.h).
struct CompilerOptions {
  // The computation cache's disk tier (lazy/computation_cache.h), which the
  // lazy runtime opens (lazy::configure_backend); backends never read it.
  // Empty: none.
  std::string cache_dir;
  std::string dump_dir;   // writes each graph's HLO (and generated code) here; empty: none
  bool profile = false;   // prints each execution's time by instruction kind on stderr (LAZYTRAIN_PROFILE_STDERR)
  std::string cxx;        // the C++ compiler for generated kernels; empty: "c++" on PATH
  std::string kernel_isa; // generated kernels' ISA: "avx2", "avx512"; empty or "auto": this CPU's widest (cpu/kernel_isa.h)
  // cpu: run the multi-output-fusion pass (hlo/passes/multi_output_fusion.h);
  // false measures the pipeline without it (LAZYTRAIN_MULTI_OUTPUT_FUSION=0).
  bool multi_output_fusion = true;
  // cpu: true makes collectives start/done pairs that run on each device's
  // collective thread while compute goes on (hlo/passes/async_collective_creator.h,
  // latency_hiding_scheduler.h); false runs each where it stands, the
  // execution waiting. Unset (LAZYTRAIN_ASYNC_COLLECTIVES unset): true when
  // the job spans processes, where an exchange waits on the network; between
  // the devices of one process an exchange is copies made by the same cores
  // that compute, and overlapping them measured no faster (README, Sharding).
  std::optional<bool> async_collectives;
  // The defaults from the environment (core/env_vars.h): LAZYTRAIN_CACHE_DIR,
  // LAZYTRAIN_DUMP_HLO, LAZYTRAIN_PROFILE_STDERR, CXX, LAZYTRAIN_KERNEL_ISA,
  // LAZYTRAIN_MULTI_OUTPUT_FUSION, LAZYTRAIN_ASYNC_COLLECTIVES.
  static CompilerOptions from_environment();
};

class Compiler {
 public:
  virtual ~Compiler() = default;
  // "interpreter", "cpu", ...: part of the computation cache's key.
  virtual std::string name() const = 0;
  // Compiles a verified module. Throws Error when the backend cannot run an instruction.
  virtual std::unique_ptr<Executable> compile(hlo::HloModule module) = 0;
  // The same for the lazy runtime's graph `graph_key` (its hash, 16 hex
  // digits, which names the backend's dumps). When `serialized` is not null,
  // it receives the bytes deserialize() turns back into this executable, for
  // the computation cache's disk tier (lazy/computation_cache.h); left empty
  // when this executable cannot be stored.
  virtual std::unique_ptr<Executable> compile(hlo::HloModule module, const std::string& graph_key, std::string* serialized) {
    (void)graph_key;
    if (serialized) serialized->clear();
    return compile(std::move(module));
  }
  // Compiles a graph of one op for the eager modes (lazy/execution_mode.h),
  // where compiling must cost far less than the op runs: no generated code, no
  // disk cache. Same results as compile() within floating-point rounding.
  virtual std::unique_ptr<Executable> compile_quick(hlo::HloModule module) { return compile(std::move(module)); }
  // What, besides the graph, decides the code this compiler makes (its flags,
  // the toolchain's version, this build of the backend): part of the disk
  // tier's key, so an entry is never loaded by a compiler that would make
  // other code. nullopt (the default): executables cannot be stored now.
  virtual std::optional<std::string> cache_fingerprint() const { return std::nullopt; }
  // The executable whose bytes compile(..., serialized) gave. Throws Error for
  // bytes it cannot use (truncated, another format).
  virtual std::unique_ptr<Executable> deserialize(std::string_view bytes) {
    (void)bytes;
    throw Error("[" + name() + " backend] cannot load a stored executable");
  }
};

}  // namespace lazytrain::backend
