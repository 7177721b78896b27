// GraphExecutor: the facade over the lazy runtime's parts (DESIGN.md, "The
// execution model"). Each method forwards to the part that does the work:
//   graph cutting      lazy/graph_cutting.h: a sync collects the pending
//                      values, cuts the graph and launches it (mark_step, sync)
//   compile context    lazy/compile_context.h: the process's backend, its
//                      computation cache (lazy/computation_cache.h) and
//                      compile_or_lookup with the SPMD passes
//   graph lowering     lazy/graph_lowering.h: hash and HLO of a graph
//   launch             lazy/launch.h: an execution on the device's queue
//   device context     lazy/device_context.h: each device's execution state
// It holds no state itself. Code outside lazy/ calls the free functions of
// lazy/lazy_api.h, never this class.
//
// Metrics (PyTorch/XLA's names): CompileTime, counters CachedCompile,
// UncachedCompile, CreateCompileHandles (the compile context); ExecuteTime,
// ExecutedDotFlops (launch, graph cutting); TransferToDeviceTime and
// TransferFromDeviceTime (the tensor layer); counter MarkStep (here).
#pragma once

#include <atomic>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/compiler.h"
#include "core/error.h"
#include "core/op_location.h"
#include "lazy/graph_lowering.h"
#include "lazy/lazy_api.h"
#include "lazy/lazy_tensor.h"
#include "runtime/device.h"

namespace lazytrain::lazy {

class GraphExecutor {
 public:
  static GraphExecutor& get();

  // mark_step(): syncs every live tensor of `device` (by default this thread's
  // current device, runtime::DeviceGuard) with a pending value, in one graph.
  void mark_step(const runtime::Device& device = runtime::current_device());
  // Syncs the pending values of `tensors` (and nothing else) in one graph; they
  // must be on one device (Error otherwise). Devices run concurrently; a graph
  // compiles once for all devices of a kind.
  // Asynchronous: compiles (or finds) the graph, gives each tensor a pending
  // device value, enqueues the execution on the device's queue and returns
  // (after the previous execution finished: one in flight, DeviceLockWait).
  // Reading a value waits for it. When an execution fails, its outputs (and
  // what later executions compute from them) rethrow the error when read, and
  // the next sync/mark_step throws it once, after launching its own graph (so
  // that step is not lost); values from earlier executions stay
  // good. Throws Error for graphs that cannot be lowered or compiled.
  void sync(const std::vector<LazyTensor*>& tensors, const SyncCause& cause = {});
  // Syncs every live tensor of `device` with a pending value (mark_step's
  // graph, without ending the step), and `also` when it is not registered.
  // A value read does this (LazyTensor::sync), so the activations a pending
  // backward needs are computed once, by the read's graph, and kept as device
  // data: a loss.item() before mark_step() costs no second forward.
  void sync_live(const runtime::Device& device, const SyncCause& cause, LazyTensor* also = nullptr);
  // Compiles `signature`'s graph or finds it in the cache (the memory cache,
  // then the backend's disk cache). An eager op's graph compiles quickly.
  // `compiled` (optional) tells whether this call compiled it. Throws Error
  // when the graph cannot be lowered or compiled.
  std::shared_ptr<backend::Executable> compile_or_lookup(const GraphSignature& signature, const SyncCause& cause = {},
                                                         bool* compiled = nullptr);
  // Runs `executable` on `arguments` on `device`'s queue, as sync() does
  // (asynchronously, one execution in flight), and returns its pending results.
  // `what` names it in errors ("compiled function f"). Nothing is donated.
  std::vector<std::shared_ptr<runtime::AsyncBuffer>> execute(const std::shared_ptr<backend::Executable>& executable,
                                                             std::vector<std::shared_ptr<runtime::AsyncBuffer>> arguments,
                                                             const runtime::Device& device, const std::string& what);
  // Adds the hash of every graph `device` runs from now on (not single eager
  // ops) to `*into` (nullptr stops); returns the set recorded into before.
  // The Trainer counts its training graphs this way. The recording belongs to
  // the calling thread (the one that cuts the graphs): replica threads that
  // share a device never see, restore or write into another thread's set,
  // which may be gone by then.
  std::set<uint64_t>* record_graphs(const runtime::Device& device, std::set<uint64_t>* into);
  // How many executions `device` has launched (numbered from 1).
  int64_t execution_count(const runtime::Device& device) const;
  // The hash of the last graph (not a single eager op) `device` executed; 0 before the first.
  uint64_t last_graph_hash(const runtime::Device& device) const;
  // Waits until no device has an execution in flight, then throws the error of
  // a failed execution not reported yet (torch_xla's xm.wait_device_ops()).
  void wait_device_ops();
  // The same for one device: waits for its execution in flight and throws its
  // unreported failure (a replica thread waits for its own device only).
  void wait_device_ops(const runtime::Device& device);
  // Forgets a failed execution of `device` not reported yet (a read has just thrown its error).
  void clear_execution_failure(const runtime::Device& device);

  // A graph of more IR nodes than this gets a one-line warning on stderr, once
  // per process: a training loop without mark_step() grows one graph forever.
  // Default lazy::kDefaultGraphSizeWarning, or $LAZYTRAIN_GRAPH_SIZE_WARNING
  // (core/env_vars.h); 0 disables the warning. Setting the bound re-arms the warning.
  void set_graph_size_warning(size_t nodes);
  size_t graph_size_warning() const;

  // Replaces the backend (clears the computation cache's memory tier).
  void set_compiler(std::unique_ptr<backend::Compiler> compiler);
  // lazy_api.h's set_compile_cache_dir.
  void set_compile_cache_dir(const std::string& directory);
  // The backend in use: the one set, else the default ($LAZYTRAIN_BACKEND or
  // cpu), made at the first call (Error naming LAZYTRAIN_BACKEND when unknown).
  const backend::Compiler& compiler() const;
  size_t cache_size() const;
  // The HLO text of the most recently compiled graph ("" before the first).
  std::string last_compiled_hlo() const;
  // Every executable in the compile cache whose compile has finished (for
  // tools that read the optimized modules: bench/roofline.h).
  std::vector<std::shared_ptr<backend::Executable>> cached_executables() const;

 private:
  // Its state lives in its parts (the compile context, the device contexts,
  // graph cutting's graph-size bound): the facade holds none.
  GraphExecutor();
};

}  // namespace lazytrain::lazy
