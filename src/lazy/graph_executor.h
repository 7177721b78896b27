// GraphExecutor: cuts the lazy graph into an HLO module, compiles it (or finds it
// in the computation cache by the graph's hash) and runs it (DESIGN.md §1).
//
// Metrics it records (PyTorch/XLA's names): CompileTime, ExecuteTime,
// TransferToDeviceTime/TransferFromDeviceTime (by the tensor layer), counters
// MarkStep, CachedCompile, UncachedCompile, CreateCompileHandles.
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
#include "lazy/lazy_tensor.h"
#include "runtime/device.h"

namespace lazytrain::lazy {

// The post-order of a graph and its structural hash (ops, attributes, shapes,
// dtypes, how nodes connect and which leaves are parameters; never data).
struct GraphSignature {
  std::vector<const Node*> post_order;
  std::vector<const Node*> parameters;  // device-data leaves, in parameter order
  std::vector<size_t> output_positions;  // index into post_order of each output
  uint64_t hash = 0;
};
GraphSignature graph_signature(const std::vector<const Node*>& outputs);

// One flag per parameter of `signature`: true when nothing outside the graph
// can read that device data again: only the graph's own nodes hold its node
// (no tensor's value, no pending value of a tensor outside this sync). This
// is a parameter, an Adam moment or a gradient accumulator whose tensor is
// being updated by this very graph: its buffer is donated to the executable
// (Executable::execute), as PyTorch/XLA donates the buffers of tensors updated
// in place. The execution still keeps a buffer whose storage another Buffer
// shares (checked when it runs).
std::vector<bool> donatable_parameters(const GraphSignature& signature);

// Lowers a graph to a verified HloModule named `name`.
hlo::HloModule lower_graph(const GraphSignature& signature, const std::string& name);

// PyTorch/XLA-style text dump of the graph that computes `outputs`:
// "IR {\n  %0 = f32[2]{0} xla::device_data(), device=cpu:0\n ...\n}\n".
std::string dump_ir(const std::vector<const Node*>& outputs);

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
  // Default kDefaultGraphSizeWarning, or $LAZYTRAIN_GRAPH_SIZE_WARNING
  // (core/env_vars.h); 0 disables the warning. Setting the bound re-arms the warning.
  static constexpr size_t kDefaultGraphSizeWarning = 50000;
  void set_graph_size_warning(size_t nodes);
  size_t graph_size_warning() const { return graph_size_warning_; }

  // Replaces the backend (clears the computation cache).
  void set_compiler(std::unique_ptr<backend::Compiler> compiler);
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
  GraphExecutor();
  // Enqueues one execution; fills `results` (pending) and numbers it for errors.
  // `locations`: the running trace's op locations by IR position, which an
  // execution error names (null: the module's own metadata). When it fails,
  // result i takes argument keep_on_failure[i]'s value, where that is >= 0 and
  // the execution had not overwritten it, and fails otherwise.
  // Returns (taking it) the failure of an earlier execution not reported yet,
  // for the caller to throw once its own results are in place.
  std::exception_ptr launch(const std::shared_ptr<backend::Executable>& executable, std::vector<std::shared_ptr<runtime::AsyncBuffer>> arguments,
              std::vector<bool> donated, const std::vector<std::shared_ptr<runtime::AsyncBuffer>>& results,
              const runtime::Device& device, const std::string& what,
              std::shared_ptr<const std::vector<OpLocation>> locations = nullptr, std::vector<int> keep_on_failure = {});

  // launch() of an SPMD-partitioned executable (module num_partitions > 1) on
  // every device of this process, each with its tiles of the sharded inputs
  // (and the whole of the others); appends to `data_nodes` one device-data
  // node per output: sharded data for a tiled output, this device's copy of
  // a replicated one. Nothing is donated. Returns the earliest unreported
  // failure of those devices, as launch() does.
  std::exception_ptr launch_spmd(const std::shared_ptr<backend::Executable>& executable, const GraphSignature& signature,
                                 const std::vector<const Node*>& outputs, const runtime::Device& device, const std::string& what,
                                 std::shared_ptr<const std::vector<OpLocation>> locations, std::vector<NodePtr>& data_nodes);
  // Rethrows (once) the error of an execution of `device` that failed since the last call.
  void rethrow_execution_failure(const runtime::Device& device);
  void warn_if_large(const GraphSignature& signature);
  // compiler() with mutex_ held.
  backend::Compiler& compiler_locked() const;

  // What each device has run (its executions are numbered from 1) and a
  // failure not reported yet (set by the device's execution thread).
  struct DeviceState {
    int64_t executions = 0;
    std::exception_ptr failure;
    uint64_t last_graph = 0;
    // Held by a sync from collecting its tensors to launching their graph
    // (and by execute's launch): syncs of one device from several threads
    // run one at a time, in order with their launches.
    std::mutex sync;
  };
  std::mutex& sync_mutex(const runtime::Device& device);
  // sync() with sync_mutex(device) held.
  void sync_locked(const std::vector<LazyTensor*>& tensors, const SyncCause& cause);

  mutable std::mutex mutex_;
  std::map<runtime::Device, DeviceState> devices_;
  mutable std::unique_ptr<backend::Compiler> compiler_;  // made at first use unless set
  // One compile cache for every device of the backend; an entry is ready once its compile finished.
  std::unordered_map<uint64_t, std::shared_future<std::shared_ptr<backend::Executable>>> cache_;
  std::string last_compiled_hlo_;
  std::atomic<size_t> graph_size_warning_{kDefaultGraphSizeWarning};
  std::atomic<bool> warned_graph_size_{false};
};

// PyTorch/XLA's torch_xla.core.xla_model.mark_step(): this thread's current device.
inline void mark_step() { GraphExecutor::get().mark_step(); }
// PyTorch/XLA's torch_xla.core.xla_model.wait_device_ops().
inline void wait_device_ops() { GraphExecutor::get().wait_device_ops(); }

}  // namespace lazytrain::lazy
