// Graph cutting: lazy/graph_cutting.h.
#include "lazy/graph_cutting.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/env_vars.h"
#include "core/error.h"
#include "core/op_location.h"
#include "hlo/cost_analysis.h"
#include "lazy/compile_context.h"
#include "lazy/computation_cache.h"
#include "lazy/device_context.h"
#include "lazy/execution_mode.h"
#include "lazy/graph_lowering.h"
#include "lazy/launch.h"
#include "lazy/lowering_context.h"
#include "lazy/sharded_data.h"
#include "lazy/step_analysis.h"
#include "runtime/collectives.h"
#include "runtime/metrics.h"
#include "runtime/profiler.h"

namespace lazytrain::lazy {

namespace {

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

// sync_tensors() with the device's sync mutex held.
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
    trace.arg("graph", graph_key(sig.hash)).arg("ir_nodes", static_cast<int64_t>(sig.post_order.size()));
    trace.arg("outputs", static_cast<int64_t>(outputs.size())).arg("parameters", static_cast<int64_t>(sig.parameters.size()));
    trace.arg("device", device.to_string());
  }
  bool compiled = false;
  std::shared_ptr<backend::Executable> executable = compile_context().compile_or_lookup(sig, cause, &compiled);
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
  std::string what = "graph " + graph_key(sig.hash) + ", " + executable->module().name;
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
                           {{"graph", graph_key(sig.hash)}, {"ir_nodes", static_cast<int64_t>(sig.post_order.size())}});
    }
    trace.end();
    last_mark_step_end_ns = runtime::now_ns();
  }
  // An earlier execution's failure, reported once this step is on its way (it
  // is not dropped, nor merged into the next step's graph).
  if (earlier) std::rethrow_exception(earlier);
}

}  // namespace

void sync_tensors(const std::vector<LazyTensor*>& tensors, const SyncCause& cause) {
  if (tensors.empty()) return;
  std::lock_guard<std::mutex> one_sync(device_context(tensors[0]->device()).sync_mutex());
  sync_locked(tensors, cause);
}

void sync_live_tensors(const runtime::Device& device, const SyncCause& cause, LazyTensor* also) {
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

void set_graph_size_warning_bound(size_t nodes) {
  graph_size_bound() = nodes;
  warned_graph_size = false;
}

size_t graph_size_warning_bound() { return graph_size_bound(); }

}  // namespace lazytrain::lazy
