// The lazy runtime's entry points for the rest of the library (PyTorch/XLA's
// xm.mark_step(), xm.wait_device_ops(), torch_xla._XLAC._xla_sync_multi): sync
// pending tensors, end a step, wait for the devices, look into the compile
// cache, choose the backend. Everything outside lazy/ calls these, never the
// GraphExecutor behind them (lazy/graph_executor.h), so the executor's parts
// (lowering, the computation cache, launch, per-device state) can change
// without touching their callers (DESIGN.md, "The execution model").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backend/compiler.h"
#include "core/error.h"
#include "core/op_location.h"
#include "runtime/device.h"

namespace lazytrain::runtime {
class AsyncBuffer;
}

namespace lazytrain::lazy {

class LazyTensor;
struct GraphSignature;  // lazy/graph_lowering.h

// The error of an execution that failed on the device (or could not run because
// an input came from one): "[mark_step] execution N (graph H, ...) failed: ...".
class ExecutionError : public Error {
 public:
  using Error::Error;
};

// Why a graph runs: the step analysis (lazy/step_analysis.h) and error
// messages say it; an eager op's graph compiles quickly (Compiler::compile_quick).
struct SyncCause {
  enum class Kind { kOther, kMarkStep, kRead, kEagerOp, kFusedChunk, kGraphBreak, kCompiledFunction };
  Kind kind = Kind::kOther;
  OpLocation where;  // the user's line: the read, the op; empty when unknown
};

// PyTorch/XLA's xm.mark_step(): syncs every live tensor of `device` (by default
// this thread's current device, runtime::DeviceGuard) with a pending value, in
// one graph, and ends the device's step. Throws an earlier execution's
// ExecutionError once, after launching its own graph.
void mark_step(const runtime::Device& device = runtime::current_device());

// Syncs the pending values of `tensors` (and nothing else) in one graph; they
// must be on one device (Error otherwise). Asynchronous: compiles (or finds)
// the graph, gives each tensor a pending device value and enqueues the
// execution; reading a value waits for it. Throws Error for graphs that
// cannot be lowered or compiled, and an earlier execution's ExecutionError once.
void sync(const std::vector<LazyTensor*>& tensors, const SyncCause& cause = {});

// Syncs every live tensor of `device` with a pending value (mark_step's graph,
// without ending the step), and `also` when it is not registered.
void sync_live(const runtime::Device& device, const SyncCause& cause, LazyTensor* also = nullptr);

// PyTorch/XLA's xm.wait_device_ops(): waits until no device has an execution
// in flight, then throws the ExecutionError of a failed one not reported yet.
void wait_device_ops();
// The same for one device (a replica thread waits for its own device only).
void wait_device_ops(const runtime::Device& device);
// Forgets a failed execution of `device` not reported yet.
void clear_execution_failure(const runtime::Device& device);

// Adds the hash of every graph `device` runs from now on (not single eager
// ops) to `*into` (nullptr stops), for the calling thread only; returns the
// set recorded into before. The Trainer counts its training graphs this way.
std::set<uint64_t>* record_graphs(const runtime::Device& device, std::set<uint64_t>* into);
// How many executions `device` has launched (numbered from 1).
int64_t execution_count(const runtime::Device& device);
// The hash of the last graph (not a single eager op) `device` executed; 0 before the first.
uint64_t last_graph_hash(const runtime::Device& device);

// Compiles `signature`'s graph or finds it in the computation cache (memory,
// then disk). `compiled` (optional) tells whether this call compiled it.
// Throws Error when the graph cannot be lowered or compiled.
std::shared_ptr<backend::Executable> compile_or_lookup(const GraphSignature& signature, const SyncCause& cause = {},
                                                       bool* compiled = nullptr);
// Runs `executable` on `arguments` on `device`'s queue, as sync() does
// (asynchronously, one execution in flight), and returns its pending results,
// one per element of the module's ROOT tuple. `what` names it in errors
// ("compiled function f"). Nothing is donated.
std::vector<std::shared_ptr<runtime::AsyncBuffer>> execute(const std::shared_ptr<backend::Executable>& executable,
                                                           std::vector<std::shared_ptr<runtime::AsyncBuffer>> arguments,
                                                           const runtime::Device& device, const std::string& what);

// The HLO text of the most recently compiled graph ("" before the first).
std::string last_compiled_hlo();
// How many graphs the memory tier of the computation cache holds (compiled or compiling).
size_t cache_size();
// Every executable in the memory tier whose compile has finished (for tools
// that read the optimized modules: bench/roofline.h).
std::vector<std::shared_ptr<backend::Executable>> cached_executables();

// A graph of more IR nodes than this gets a one-line warning on stderr, once
// per process: a training loop without mark_step() grows one graph forever.
// Default kDefaultGraphSizeWarning, or $LAZYTRAIN_GRAPH_SIZE_WARNING; 0
// disables the warning. Setting the bound re-arms the warning.
inline constexpr size_t kDefaultGraphSizeWarning = 50000;
void set_graph_size_warning(size_t nodes);
size_t graph_size_warning();

// The backend in use: the one set, else the default ($LAZYTRAIN_BACKEND or
// cpu), made at the first call (Error naming LAZYTRAIN_BACKEND when unknown).
const backend::Compiler& compiler();
// Replaces the backend (waits for every device, clears the computation cache's memory tier).
void set_compiler(std::unique_ptr<backend::Compiler> compiler);
// The folder of the computation cache's disk tier (lazy/computation_cache.h),
// shared by processes and runs; empty: none. Default $LAZYTRAIN_CACHE_DIR;
// the CLI's --compile_cache_dir sets it (configure_backend). The folder is
// made at the first compile (Error then if it cannot be written).
void set_compile_cache_dir(const std::string& directory);

}  // namespace lazytrain::lazy
