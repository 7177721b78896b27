#include "lazy/graph_executor.h"

#include <algorithm>
#include <cstdio>
#include <future>
#include <cstdlib>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "backend/registry.h"
#include "core/env_vars.h"
#include "core/error.h"
#include "core/op_location.h"
#include "hlo/cost_analysis.h"
#include "hlo/op_metadata.h"
#include "hlo/passes/all_reduce_reassociate.h"
#include "hlo/passes/collective_combiner.h"
#include "hlo/passes/sharding_propagation.h"
#include "hlo/passes/spmd_partitioner.h"
#include "lazy/computation_cache.h"
#include "lazy/device_context.h"
#include "lazy/execution_mode.h"
#include "lazy/launch.h"
#include "lazy/lowering_context.h"
#include "lazy/recompile_reasons.h"
#include "lazy/sharded_data.h"
#include "lazy/step_analysis.h"
#include "runtime/collectives.h"
#include "runtime/execution_queue.h"
#include "runtime/metrics.h"
#include "runtime/profiler.h"
#include "runtime/transfer.h"

namespace lazytrain::lazy {

namespace {

std::string hash_text(uint64_t hash) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

// The trace's name for a sync of this cause.
const char* sync_event_name(SyncCause::Kind kind) {
  switch (kind) {
    case SyncCause::Kind::kMarkStep: return "mark_step";
    case SyncCause::Kind::kRead: return "sync (read)";
    case SyncCause::Kind::kEagerOp: return "sync (eager op)";
    case SyncCause::Kind::kFusedChunk: return "sync (fused chunk)";
    case SyncCause::Kind::kGraphBreak: return "sync (graph break)";
    case SyncCause::Kind::kCompiledFunction: return "sync (compiled function)";
    case SyncCause::Kind::kOther: break;
  }
  return "sync";
}

// A thread's tracing between its mark_steps, for the trace: when its last
// mark_step ended (0: none while tracing) and how many it made.
thread_local int64_t last_mark_step_end_ns = 0;
thread_local int64_t mark_steps_traced = 0;

// The backend and the computation cache it fills (the facade holds no state).
struct CompileState {
  std::mutex mutex;  // guards the fields below (the cache has its own lock)
  std::unique_ptr<backend::Compiler> compiler;  // made at first use unless set
  // The compiler's name, the memory tier's key with the graph hash (the tier
  // is cleared when the compiler changes). The disk tier asks the compiler
  // for its fingerprint at each use instead: its flags may depend on the job
  // (cpu: async collectives when it spans processes).
  CompileTarget target;
  // One computation cache for every device of the backend; the disk tier's
  // folder is LAZYTRAIN_CACHE_DIR's unless set (set_compile_cache_dir).
  ComputationCache cache{environment().cache_dir};
  std::string last_compiled_hlo;
};

CompileState& compile_state() {
  static CompileState state;
  return state;
}

// The graph-size warning's bound (the environment's, read once) and whether it fired.
std::atomic<size_t>& graph_size_bound() {
  static std::atomic<size_t> bound{environment().graph_size_warning.value_or(kDefaultGraphSizeWarning)};
  return bound;
}
std::atomic<bool> warned_graph_size{false};

void warn_if_large(const GraphSignature& sig) {
  const size_t bound = graph_size_bound();
  if (bound == 0 || sig.post_order.size() <= bound || warned_graph_size.exchange(true)) return;
  std::fprintf(stderr,
               "warning: [mark_step] one graph has %zu IR nodes (more than %zu): mark_step() is probably missing from a loop, "
               "so every iteration adds to one graph (LAZYTRAIN_GRAPH_SIZE_WARNING sets the bound)\n",
               sig.post_order.size(), bound);
}

// The backend in use, with compile_state().mutex held.
backend::Compiler& compiler_locked() {
  CompileState& state = compile_state();
  // The default backend is made at its first use, so that a flag choosing
  // another one (set_compiler) is never preceded by a failing default.
  if (!state.compiler) {
    const std::string name = backend::default_backend_name();
    const std::vector<std::string> known = backend::backend_names();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string list;
      for (const std::string& n : known) list += (list.empty() ? "" : ", ") + n;
      throw Error("[GraphExecutor] LAZYTRAIN_BACKEND='" + name + "' names no backend; registered: " + list);
    }
    state.compiler = backend::make_compiler(name);
    state.target = CompileTarget::of(*state.compiler, false);
  }
  return *state.compiler;
}

// sync() with the device's sync mutex held.
void sync_locked(const std::vector<LazyTensor*>& tensors, const SyncCause& cause);

// Rethrows (once) the error of an execution of `device` that failed since the last call.
void rethrow_execution_failure(const runtime::Device& device) {
  if (std::exception_ptr failure = device_context(device).take_failure()) std::rethrow_exception(failure);
}

}  // namespace

GraphExecutor& GraphExecutor::get() {
  static GraphExecutor executor;
  return executor;
}

GraphExecutor::GraphExecutor() = default;

void GraphExecutor::set_graph_size_warning(size_t nodes) {
  graph_size_bound() = nodes;
  warned_graph_size = false;
}

size_t GraphExecutor::graph_size_warning() const { return graph_size_bound(); }

const backend::Compiler& GraphExecutor::compiler() const {
  std::lock_guard<std::mutex> lock(compile_state().mutex);
  return compiler_locked();
}

void GraphExecutor::set_compiler(std::unique_ptr<backend::Compiler> compiler) {
  runtime::wait_all_idle();
  CompileState& state = compile_state();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.compiler = std::move(compiler);
  if (state.compiler) state.target = CompileTarget::of(*state.compiler, false);
  state.cache.clear();
}

void GraphExecutor::set_compile_cache_dir(const std::string& directory) {
  runtime::wait_all_idle();
  CompileState& state = compile_state();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.cache.set_directory(directory);
}

size_t GraphExecutor::cache_size() const {
  return compile_state().cache.size();
}

std::vector<std::shared_ptr<backend::Executable>> GraphExecutor::cached_executables() const { return compile_state().cache.ready(); }

std::string GraphExecutor::last_compiled_hlo() const {
  CompileState& state = compile_state();
  std::lock_guard<std::mutex> lock(state.mutex);
  return state.last_compiled_hlo;
}

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

std::shared_ptr<backend::Executable> GraphExecutor::compile_or_lookup(const GraphSignature& sig, const SyncCause& cause, bool* compiled) {
  if (compiled) *compiled = false;
  check_layouts_span_the_job(sig);
  // One compile per graph, whichever devices (threads) ask at the same time:
  // the first asker compiles, the others wait for its result.
  std::promise<std::shared_ptr<backend::Executable>> promise;
  backend::Compiler* compiler = nullptr;
  const CompileTarget* target = nullptr;
  CompileState& state = compile_state();
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    compiler = &compiler_locked();  // (may throw: before an entry is promised)
    target = &state.target;
  }
  const auto [entry, compiles_here] = state.cache.find_or_insert(sig.hash, *target, promise.get_future().share());
  runtime::TraceMe trace("compile", "compile");
  if (trace) trace.arg("graph", hash_text(sig.hash)).arg("ir_nodes", static_cast<int64_t>(sig.post_order.size()));
  if (!compiles_here) {
    if (trace) trace.arg("cache", "memory hit");
    std::shared_ptr<backend::Executable> cached = entry.get();  // rethrows the compile's error
    runtime::counter("CachedCompile").add(1);
    return cached;
  }
  try {
    // An eager op is one instruction: nothing to gain from the disk cache or generated kernels.
    const bool eager_op = cause.kind == SyncCause::Kind::kEagerOp;
    // oneDNN primitives are made for the threads that will run them; the
    // caller's own OpenMP count is restored after the compile.
    runtime::ScopedExecutionThreads compile_threads;
    const CompileTarget disk_target = eager_op || !state.cache.has_disk() ? CompileTarget() : CompileTarget::of(*compiler, true);
    std::shared_ptr<backend::Executable> executable = disk_target.fingerprint() ? state.cache.load(*compiler, disk_target, sig.hash) : nullptr;
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
        if (to_disk) state.cache.store(disk_target, sig.hash, serialized);
        std::lock_guard<std::mutex> lock(state.mutex);
        if (!eager_op) state.last_compiled_hlo = std::move(text);
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
    state.cache.erase_pending(sig.hash, *target);
    promise.set_exception(std::current_exception());
    throw;
  }
}

void GraphExecutor::sync(const std::vector<LazyTensor*>& tensors, const SyncCause& cause) {
  if (tensors.empty()) return;
  std::lock_guard<std::mutex> one_sync(device_context(tensors[0]->device()).sync_mutex());
  sync_locked(tensors, cause);
}

namespace {

// Whether a node of `sig`'s graph is held from outside it: by a tensor or an
// op another thread traced from a tensor before this sync gave the tensor its
// result. Such a holder computes from the graph's parameters later, so none
// may be donated. `outputs`: the sync's own reference to each output node.
bool held_outside(const GraphSignature& sig, const std::vector<NodePtr>& outputs) {
  std::unordered_map<const Node*, std::pair<long, long>> references;  // (in the graph, in all)
  for (const Node* node : sig.post_order) {
    for (const NodePtr& o : node->operands()) {
      if (o->is_device_data()) continue;
      auto& [in_graph, total] = references[o.get()];
      ++in_graph;
      total = o.use_count();
    }
  }
  for (const NodePtr& o : outputs) {
    auto& [in_graph, total] = references[o.get()];
    ++in_graph;
    total = o.use_count();
  }
  return std::any_of(references.begin(), references.end(), [](const auto& r) { return r.second.second > r.second.first; });
}

void sync_locked(const std::vector<LazyTensor*>& tensors, const SyncCause& cause) {
  for (LazyTensor* t : tensors) {
    // A tensor the user laid out keeps its layout: its new value is annotated
    // with it (a whole one only in SPMD mode, where the compiler would otherwise choose).
    if (!t->has_pending_ir() || !t->sharding_spec() || (!t->sharding_spec()->is_tiled() && !runtime::spmd_mode())) continue;
    const NodePtr value = t->ir_value();
    const std::optional<hlo::HloSharding> annotated = custom_sharding_of(*value);
    // (== ignores the op_name, which the graph hashes and FSDP's units need.)
    const hlo::HloSharding& spec = *t->sharding_spec();
    if (!annotated || !(*annotated == spec) || annotated->op_name() != spec.op_name()) t->replace_ir_value(value.get(), make_custom_sharding(value, spec));
  }
  std::vector<LazyTensor*> pending;
  std::vector<NodePtr> pending_values;  // each pending tensor's value as this sync read it
  std::vector<NodePtr> output_values;   // held, so another thread's update cannot free them meanwhile
  std::vector<const Node*> outputs;
  std::unordered_map<const Node*, size_t> output_index;
  std::vector<size_t> tensor_output;
  for (LazyTensor* t : tensors) {
    NodePtr value = t->ir_value();
    if (value->is_device_data()) continue;
    const Node* node = value.get();
    auto [it, inserted] = output_index.emplace(node, outputs.size());
    if (inserted) {
      outputs.push_back(node);
      output_values.push_back(value);
    }
    pending.push_back(t);
    pending_values.push_back(std::move(value));
    tensor_output.push_back(it->second);
  }
  if (outputs.empty()) return;
  const int64_t sync_start_ns = runtime::now_ns();
  runtime::TraceMe trace("trace", sync_event_name(cause.kind));
  const runtime::Device device = outputs[0]->device();
  for (const Node* o : outputs) {
    check(o->device() == device, "mark_step",
          "one graph cannot compute tensors of two devices (" + device.to_string() + " and " + o->device().to_string() + "): sync each device's tensors apart");
  }
  GraphSignature sig = graph_signature(outputs);
  warn_if_large(sig);
  if (trace) {
    trace.arg("graph", hash_text(sig.hash)).arg("ir_nodes", static_cast<int64_t>(sig.post_order.size()));
    trace.arg("outputs", static_cast<int64_t>(outputs.size())).arg("parameters", static_cast<int64_t>(sig.parameters.size()));
    trace.arg("device", device.to_string());
  }
  bool compiled = false;
  std::shared_ptr<backend::Executable> executable = GraphExecutor::get().compile_or_lookup(sig, cause, &compiled);
  const bool eager_op = cause.kind == SyncCause::Kind::kEagerOp;
  note_execution(device, compiled, eager_op, static_cast<int64_t>(sig.post_order.size()));
  runtime::counter("ExecutedDotFlops").add(hlo::dot_flop_count(executable->module()));
  const bool spmd = executable->module().num_partitions > 1;
  std::vector<std::shared_ptr<runtime::AsyncBuffer>> arguments;
  arguments.reserve(sig.parameters.size());
  for (const Node* p : sig.parameters) arguments.push_back(p->async_data());
  std::vector<std::shared_ptr<runtime::AsyncBuffer>> results;
  std::vector<NodePtr> data_nodes;
  for (const Node* o : outputs) {
    if (spmd) break;
    results.push_back(std::make_shared<runtime::AsyncBuffer>(o->shape(), o->dtype(), device));
    data_nodes.push_back(make_device_data(results.back()));
  }
  std::vector<int> keep_on_failure = spmd ? std::vector<int>() : committed_arguments(pending, tensor_output, outputs.size(), arguments);
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016llx", static_cast<unsigned long long>(sig.hash));
  std::string what = std::string("graph ") + hash + ", " + executable->module().name;
  // An eager op names the user's line: strict eager reports its failure later, elsewhere.
  if (eager_op) {
    const std::string where = location_text(outputs[0]->location());
    what += ", " + outputs[0]->op() + (where.empty() ? "" : " called from " + where);
  }
  if (!eager_op) {
    device_context(device).set_last_graph(sig.hash);
    if (std::set<uint64_t>* recorder = graph_recorder(device)) recorder->insert(sig.hash);
  }
  // The lines of this trace: the cached module may hold another trace's (an
  // execution error names the op's line through the instruction's ir_position).
  auto locations = std::make_shared<std::vector<OpLocation>>();
  locations->reserve(sig.post_order.size());
  for (const Node* node : sig.post_order) locations->push_back(node->location());
  std::exception_ptr earlier;
  if (spmd) {
    earlier = launch_spmd(executable, sig, outputs, device, what, std::move(locations), data_nodes);
    for (size_t i = 0; i < pending.size(); ++i) pending[i]->replace_ir_value(pending_values[i].get(), data_nodes[tensor_output[i]]);
  } else {
    // The tensors take their results first: what still holds a node of the
    // graph then is held from outside it (another thread's trace), and the
    // parameters are donated only when nothing is.
    for (size_t i = 0; i < pending.size(); ++i) pending[i]->replace_ir_value(pending_values[i].get(), data_nodes[tensor_output[i]]);
    pending_values.clear();
    std::vector<bool> donated = donatable_parameters(sig);
    if (std::find(donated.begin(), donated.end(), true) != donated.end() && held_outside(sig, output_values)) {
      donated.assign(donated.size(), false);
    }
    earlier = launch(executable, std::move(arguments), std::move(donated), results, device, what, std::move(locations), std::move(keep_on_failure));
  }
  if (cause.kind == SyncCause::Kind::kMarkStep && trace) {
    // The host's tracing since this thread's previous mark_step: the ops that built this graph.
    ++mark_steps_traced;
    if (last_mark_step_end_ns > 0) {
      runtime::record_span("trace", "trace (step " + std::to_string(mark_steps_traced) + ")", last_mark_step_end_ns, sync_start_ns,
                           {{"graph", hash_text(sig.hash)}, {"ir_nodes", static_cast<int64_t>(sig.post_order.size())}});
    }
    trace.end();
    last_mark_step_end_ns = runtime::now_ns();
  }
  // An earlier execution's failure, reported once this step is on its way (it
  // is not dropped, nor merged into the next step's graph).
  if (earlier) std::rethrow_exception(earlier);
}

}  // namespace

std::vector<std::shared_ptr<runtime::AsyncBuffer>> GraphExecutor::execute(const std::shared_ptr<backend::Executable>& executable,
                                                                          std::vector<std::shared_ptr<runtime::AsyncBuffer>> arguments,
                                                                          const runtime::Device& device, const std::string& what) {
  const hlo::HloModule& module = executable->module();
  const hlo::HloInstruction& root = module.at(module.root);
  std::vector<std::shared_ptr<runtime::AsyncBuffer>> results;
  for (int o : root.operands) results.push_back(std::make_shared<runtime::AsyncBuffer>(module.at(o).shape, module.at(o).dtype, device));
  note_execution(device, false, false, static_cast<int64_t>(module.instructions.size()));
  runtime::counter("ExecutedDotFlops").add(hlo::dot_flop_count(module));
  // (An earlier failure is reported before this runs: the caller gets no results then.)
  std::lock_guard<std::mutex> one_launch(device_context(device).sync_mutex());  // in order with the device's syncs
  runtime::execution_queue(device).wait_idle();
  rethrow_execution_failure(device);
  launch(executable, std::move(arguments), {}, results, device, what);
  return results;
}

std::set<uint64_t>* GraphExecutor::record_graphs(const runtime::Device& device, std::set<uint64_t>* into) {
  return std::exchange(graph_recorder(device), into);
}

int64_t GraphExecutor::execution_count(const runtime::Device& device) const { return device_context(device).executions(); }

uint64_t GraphExecutor::last_graph_hash(const runtime::Device& device) const { return device_context(device).last_graph(); }

void GraphExecutor::sync_live(const runtime::Device& device, const SyncCause& cause, LazyTensor* also) {
  // Collected under the lock: a sync of another thread that ran meanwhile has given its tensors their results.
  std::lock_guard<std::mutex> one_sync(device_context(device).sync_mutex());
  std::vector<std::shared_ptr<LazyTensor>> live = live_tensors_with_pending_ir(device);
  std::vector<LazyTensor*> raw;
  raw.reserve(live.size() + 1);
  for (auto& t : live) raw.push_back(t.get());
  if (also && std::find(raw.begin(), raw.end(), also) == raw.end()) raw.push_back(also);
  note_graph_cut();
  sync_locked(raw, cause);
}

void GraphExecutor::wait_device_ops() {
  runtime::wait_all_idle();
  for (const runtime::Device& device : devices_with_context()) rethrow_execution_failure(device);
}

void GraphExecutor::wait_device_ops(const runtime::Device& device) {
  runtime::execution_queue(device).wait_idle();
  rethrow_execution_failure(device);
}

void GraphExecutor::clear_execution_failure(const runtime::Device& device) { device_context(device).take_failure(); }

void GraphExecutor::mark_step(const runtime::Device& device) {
  runtime::counter("MarkStep").add(1);
  sync_live(device, SyncCause{SyncCause::Kind::kMarkStep, {}});
  end_step(device);
}

}  // namespace lazytrain::lazy
