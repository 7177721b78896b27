// The compile part of the lazy runtime: lazy/compile_context.h.
#include "lazy/compile_context.h"

#include <algorithm>
#include <future>
#include <sstream>
#include <utility>

#include "backend/registry.h"
#include "core/env_vars.h"
#include "core/error.h"
#include "hlo/passes/all_reduce_reassociate.h"
#include "hlo/passes/collective_combiner.h"
#include "hlo/passes/sharding_propagation.h"
#include "hlo/passes/spmd_partitioner.h"
#include "lazy/recompile_reasons.h"
#include "lazy/sharded_data.h"
#include "lazy/step_analysis.h"
#include "runtime/collectives.h"
#include "runtime/execution_queue.h"
#include "runtime/metrics.h"
#include "runtime/profiler.h"

namespace lazytrain::lazy {

namespace {

// A mesh spans every device of the job: a value laid out before the device
// count changed (use_spmd, set_local_replicas) cannot be an input now.
void check_layouts_span_the_job(const GraphSignature& sig) {
  const int64_t devices = runtime::replica_world().world_size();
  for (const Node* p : sig.parameters) {
    if (!p->sharded_data()) continue;
    const hlo::HloSharding& layout = p->sharded_data()->sharding();
    const auto& ids = layout.devices();
    if (static_cast<int64_t>(ids.size()) == devices && std::all_of(ids.begin(), ids.end(), [&](int64_t d) { return d < devices; })) continue;
    throw Error("[mark_step] an input of this step, " + xla_name(p->dtype()) + shape_str(p->shape()) + ", is laid out over " +
                std::to_string(ids.size()) + " devices (" + layout.to_string() + "), but the job now has " + std::to_string(devices) +
                " (use_spmd or set_local_replicas changed the count after it was laid out): lay it out again on a mesh of this "
                "job (mark_sharding) or make it whole (clear_sharding); an optimizer made before the change keeps its state in "
                "the old layout: make it again");
  }
}

}  // namespace

CompileContext& compile_context() {
  static CompileContext context;
  return context;
}

CompileContext::CompileContext() : cache_(environment().cache_dir) {}

backend::Compiler& CompileContext::compiler_locked() {
  // The default backend is made at its first use, so that a flag choosing
  // another one (set_compiler) is never preceded by a failing default.
  if (!compiler_) {
    const std::string name = backend::default_backend_name();
    const std::vector<std::string> known = backend::backend_names();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string list;
      for (const std::string& n : known) list += (list.empty() ? "" : ", ") + n;
      throw Error("[GraphExecutor] LAZYTRAIN_BACKEND='" + name + "' names no backend; registered: " + list);
    }
    compiler_ = backend::make_compiler(name);
    target_ = CompileTarget::of(*compiler_, false);
  }
  return *compiler_;
}

const backend::Compiler& CompileContext::compiler() {
  std::lock_guard<std::mutex> lock(mutex_);
  return compiler_locked();
}

void CompileContext::set_compiler(std::unique_ptr<backend::Compiler> compiler) {
  runtime::wait_all_idle();
  std::lock_guard<std::mutex> lock(mutex_);
  compiler_ = std::move(compiler);
  if (compiler_) target_ = CompileTarget::of(*compiler_, false);
  cache_.clear();
}

void CompileContext::set_cache_directory(const std::string& directory) {
  runtime::wait_all_idle();
  std::lock_guard<std::mutex> lock(mutex_);
  cache_.set_directory(directory);
}

std::string CompileContext::last_compiled_hlo() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_compiled_hlo_;
}

std::shared_ptr<backend::Executable> CompileContext::compile_or_lookup(const GraphSignature& sig, const SyncCause& cause, bool* compiled) {
  if (compiled) *compiled = false;
  check_layouts_span_the_job(sig);
  // One compile per graph, whichever devices (threads) ask at the same time:
  // the first asker compiles, the others wait for its result.
  std::promise<std::shared_ptr<backend::Executable>> promise;
  backend::Compiler* compiler = nullptr;
  const CompileTarget* target = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    compiler = &compiler_locked();  // (may throw: before an entry is promised)
    target = &target_;
  }
  const auto [entry, compiles_here] = cache_.find_or_insert(sig.hash, *target, promise.get_future().share());
  runtime::TraceMe trace("compile", "compile");
  if (trace) trace.arg("graph", graph_key(sig.hash)).arg("ir_nodes", static_cast<int64_t>(sig.post_order.size()));
  if (!compiles_here) {
    if (trace) trace.arg("cache", "memory hit");
    std::shared_ptr<backend::Executable> cached = entry.get();  // rethrows the compile's error
    runtime::counter("CachedCompile").add(1);
    return cached;
  }
  try {
    // An eager op is one instruction: nothing to gain from the disk cache or generated kernels.
    const bool eager_op = cause.kind == SyncCause::Kind::kEagerOp;
    // The cpu backend makes its oneDNN primitives while it compiles or loads an
    // executable, for the threads that will run them; the caller's own OpenMP
    // count is restored after. (Its place is the cpu backend's compile and
    // deserialize, backend/cpu/; it is harmless for the other backends.)
    runtime::ScopedExecutionThreads compile_threads;
    const CompileTarget disk_target = eager_op || !cache_.has_disk() ? CompileTarget() : CompileTarget::of(*compiler, true);
    std::shared_ptr<backend::Executable> executable = disk_target.fingerprint() ? cache_.load(*compiler, disk_target, sig.hash) : nullptr;
    if (trace) trace.arg("cache", executable ? "disk hit" : "miss");
    if (!executable) {  // not in the persistent compile cache either: compile
      {
        runtime::ScopedTimer timer("CompileTime");
        std::ostringstream name;
        name << "SyncTensorsGraph." << sig.post_order.size();
        runtime::TraceMe lowering("compile", "lower to HLO");
        hlo::HloModule module = lower_graph(sig, name.str());
        lowering.end();
        if (hlo::has_sharding(module)) {
          // SPMD (issue 34): one program for every device of the mesh, before the backend's passes.
          runtime::TraceMe partitioning("compile", "sharding propagation and SPMD partitioning");
          hlo::ShardingPropagation().run(module);
          hlo::SpmdPartitioner().run(module);
          hlo::AllReduceReassociate().run(module);
          hlo::CollectiveCombiner().run(module);
          hlo::verify(module);
        }
        std::string text = eager_op ? std::string() : module.to_string();
        std::string serialized;
        const bool to_disk = disk_target.fingerprint().has_value();
        executable = eager_op ? compiler->compile_quick(std::move(module))
                              : compiler->compile(std::move(module), graph_key(sig.hash), to_disk ? &serialized : nullptr);
        if (to_disk) cache_.store(disk_target, sig.hash, serialized);
        std::lock_guard<std::mutex> lock(mutex_);
        if (!eager_op) last_compiled_hlo_ = std::move(text);
      }
      runtime::counter("UncachedCompile").add(1);
      runtime::counter("CreateCompileHandles").add(1);
      if (compiled) *compiled = true;
    }
    if (!eager_op) {
      // Past the device's first step, a new graph is a recompile: say why.
      const runtime::Device device = sig.post_order.empty() ? runtime::current_device() : sig.post_order.back()->device();
      RecompileTracker::get().on_compile(sig, !recent_steps(device).empty());
    }
    promise.set_value(executable);  // an entry counts only once it compiled
    return executable;
  } catch (...) {
    // Ours is the entry still pending under this hash (a set_compiler may have cleared it).
    cache_.erase_pending(sig.hash, *target);
    promise.set_exception(std::current_exception());
    throw;
  }
}

}  // namespace lazytrain::lazy
