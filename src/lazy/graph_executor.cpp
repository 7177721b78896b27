#include "lazy/graph_executor.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "lazy/lowering_context.h"
#include "runtime/execution_queue.h"
#include "runtime/metrics.h"

namespace lazytrain::lazy {

GraphSignature graph_signature(const std::vector<const Node*>& outputs) {
  GraphSignature sig;
  std::unordered_map<const Node*, size_t> position;
  // Iterative DFS: (node, next operand to visit).
  std::vector<std::pair<const Node*, size_t>> stack;
  for (const Node* root : outputs) {
    if (position.count(root)) continue;
    stack.push_back({root, 0});
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < node->operands().size()) {
        const Node* child = node->operand(next++).get();
        if (!position.count(child)) stack.push_back({child, 0});
        continue;
      }
      if (!position.count(node)) {
        position[node] = sig.post_order.size();
        sig.post_order.push_back(node);
        if (node->is_device_data()) sig.parameters.push_back(node);
      }
      stack.pop_back();
    }
  }
  uint64_t h = hash_combine(0x6c617a79ull, outputs.size());
  for (const Node* node : sig.post_order) {
    h = hash_combine(h, node->local_hash());
    for (const NodePtr& o : node->operands()) h = hash_combine(h, position.at(o.get()));
  }
  for (const Node* root : outputs) {
    sig.output_positions.push_back(position.at(root));
    h = hash_combine(h, position.at(root));
  }
  sig.hash = h;
  return sig;
}

hlo::HloModule lower_graph(const GraphSignature& sig, const std::string& name) {
  hlo::HloBuilder builder(name);
  LoweringContext context(builder);
  for (const Node* node : sig.post_order) {
    int id;
    if (node->is_device_data()) {
      id = builder.parameter(node->shape(), node->dtype());
    } else {
      check(node->lower() != nullptr, node->op(), "has no lowering");
      id = node->lower()(context, *node);
      check(builder.shape(id) == node->shape() && builder.dtype(id) == node->dtype(), node->op(),
            "lowered to " + xla_name(builder.dtype(id)) + shape_str(builder.shape(id)) + " but the IR says " +
                xla_name(node->dtype()) + shape_str(node->shape()));
    }
    context.set(node, id);
  }
  std::vector<int> outputs;
  for (size_t p : sig.output_positions) outputs.push_back(context.get(sig.post_order[p]));
  return builder.build(outputs);
}

std::string dump_ir(const std::vector<const Node*>& outputs) {
  GraphSignature sig = graph_signature(outputs);
  std::unordered_map<const Node*, int64_t> number;
  std::ostringstream os;
  os << "IR {\n";
  for (const Node* node : sig.post_order) {
    std::vector<int64_t> operand_numbers;
    for (const NodePtr& o : node->operands()) operand_numbers.push_back(number.at(o.get()));
    int64_t n = static_cast<int64_t>(number.size());
    number[node] = n;
    os << "  %" << n << " = " << node->to_string(operand_numbers) << "\n";
  }
  for (size_t i = 0; i < outputs.size(); ++i) os << "  %" << number.at(outputs[i]) << " = ROOT.output(" << i << ")\n";
  os << "}\n";
  return os.str();
}

std::vector<bool> donatable_parameters(const GraphSignature& sig) {
  // References to each device-data leaf from the graph's own nodes, and the
  // leaf's total reference count as seen through one of them.
  std::unordered_map<const Node*, std::pair<long, long>> references;
  for (const Node* node : sig.post_order) {
    for (const NodePtr& o : node->operands()) {
      if (!o->is_device_data()) continue;
      auto& [in_graph, total] = references[o.get()];
      ++in_graph;
      total = o.use_count();
    }
  }
  std::vector<bool> donated;
  donated.reserve(sig.parameters.size());
  for (const Node* p : sig.parameters) {
    auto it = references.find(p);
    // (Whether another Buffer shares the storage is checked when the execution runs.)
    donated.push_back(it != references.end() && it->second.first == it->second.second);
  }
  return donated;
}

GraphExecutor& GraphExecutor::get() {
  static GraphExecutor executor;
  return executor;
}

namespace {
// LAZYTRAIN_BACKEND=interpreter|cpu picks the backend (default: cpu, which
// itself falls back to interpreting when no C++ compiler is found).
std::unique_ptr<backend::Compiler> default_compiler() {
  const char* name = std::getenv("LAZYTRAIN_BACKEND");
  std::string backend = name && *name ? name : "cpu";
  if (backend == "cpu") return backend::make_cpu_compiler();
  if (backend != "interpreter") throw Error("[GraphExecutor] unknown LAZYTRAIN_BACKEND '" + backend + "'; expected 'cpu' or 'interpreter'");
  return backend::make_interpreter_compiler();
}

// LAZYTRAIN_GRAPH_SIZE_WARNING=N: warn about graphs of more than N IR nodes (0: never).
size_t default_graph_size_warning() {
  const char* value = std::getenv("LAZYTRAIN_GRAPH_SIZE_WARNING");
  if (!value || !*value) return GraphExecutor::kDefaultGraphSizeWarning;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(value, &end, 10);
  if (*end != '\0' || value[0] == '-') {
    throw Error(std::string("[GraphExecutor] LAZYTRAIN_GRAPH_SIZE_WARNING='") + value + "': expected a number of IR nodes (0 disables)");
  }
  return static_cast<size_t>(n);
}
}  // namespace

GraphExecutor::GraphExecutor() : compiler_(default_compiler()), graph_size_warning_(default_graph_size_warning()) {}

void GraphExecutor::set_graph_size_warning(size_t nodes) {
  graph_size_warning_ = nodes;
  warned_graph_size_ = false;
}

void GraphExecutor::warn_if_large(const GraphSignature& sig) {
  const size_t bound = graph_size_warning_;
  if (bound == 0 || sig.post_order.size() <= bound || warned_graph_size_.exchange(true)) return;
  std::fprintf(stderr,
               "warning: [mark_step] one graph has %zu IR nodes (more than %zu): mark_step() is probably missing from a loop, "
               "so every iteration adds to one graph (LAZYTRAIN_GRAPH_SIZE_WARNING sets the bound)\n",
               sig.post_order.size(), bound);
}

void GraphExecutor::set_compiler(std::unique_ptr<backend::Compiler> compiler) {
  runtime::device_execution_queue().wait_idle();
  std::lock_guard<std::mutex> lock(mutex_);
  compiler_ = std::move(compiler);
  cache_.clear();
}

size_t GraphExecutor::cache_size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cache_.size();
}

std::string GraphExecutor::last_compiled_hlo() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_compiled_hlo_;
}

std::shared_ptr<backend::Executable> GraphExecutor::compile_or_lookup(const GraphSignature& sig) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache_.find(sig.hash);
    if (it != cache_.end()) {
      runtime::counter("CachedCompile").add(1);
      return it->second;
    }
  }
  char key[17];
  std::snprintf(key, sizeof(key), "%016llx", static_cast<unsigned long long>(sig.hash));
  std::shared_ptr<backend::Executable> executable = compiler_->load_cached(key);
  if (executable) {  // from the persistent compile cache: nothing compiles
    std::lock_guard<std::mutex> lock(mutex_);
    cache_[sig.hash] = executable;
    return executable;
  }
  {
    runtime::ScopedTimer timer("CompileTime");
    std::ostringstream name;
    name << "SyncTensorsGraph." << sig.post_order.size();
    hlo::HloModule module = lower_graph(sig, name.str());
    std::string text = module.to_string();
    executable = compiler_->compile(std::move(module), key);
    std::lock_guard<std::mutex> lock(mutex_);
    last_compiled_hlo_ = std::move(text);
    cache_[sig.hash] = executable;  // an entry counts only once it compiled
  }
  runtime::counter("UncachedCompile").add(1);
  runtime::counter("CreateCompileHandles").add(1);
  return executable;
}

void GraphExecutor::sync(const std::vector<LazyTensor*>& tensors) {
  std::vector<LazyTensor*> pending;
  std::vector<const Node*> outputs;
  std::unordered_map<const Node*, size_t> output_index;
  std::vector<size_t> tensor_output;
  for (LazyTensor* t : tensors) {
    if (!t->has_pending_ir()) continue;
    const Node* node = t->ir_value().get();
    auto [it, inserted] = output_index.emplace(node, outputs.size());
    if (inserted) outputs.push_back(node);
    pending.push_back(t);
    tensor_output.push_back(it->second);
  }
  if (outputs.empty()) return;
  GraphSignature sig = graph_signature(outputs);
  warn_if_large(sig);
  std::shared_ptr<backend::Executable> executable = compile_or_lookup(sig);
  std::vector<bool> donated = donatable_parameters(sig);
  std::vector<std::shared_ptr<runtime::AsyncBuffer>> arguments;
  arguments.reserve(sig.parameters.size());
  for (const Node* p : sig.parameters) arguments.push_back(p->async_data());
  std::vector<std::shared_ptr<runtime::AsyncBuffer>> results;
  std::vector<NodePtr> data_nodes;
  for (const Node* o : outputs) {
    results.push_back(std::make_shared<runtime::AsyncBuffer>(o->shape(), o->dtype()));
    data_nodes.push_back(make_device_data(results.back()));
  }
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016llx", static_cast<unsigned long long>(sig.hash));
  const std::string what = "execution " + std::to_string(++executions_) + " (graph " + hash + ", " + executable->module().name + ")";
  // The device is free once the previous execution ended; report its failure first.
  runtime::device_execution_queue().wait_idle();
  rethrow_execution_failure();
  runtime::device_execution_queue().enqueue([this, executable, arguments, donated, results, what]() mutable {
    std::vector<runtime::Buffer> buffers;
    buffers.reserve(arguments.size());
    try {
      for (const auto& a : arguments) buffers.push_back(a->get());
    } catch (const std::exception& e) {
      // An input is the output of a failed execution, whose error was already reported.
      auto error = std::make_exception_ptr(ExecutionError("[mark_step] " + what + " did not run: an input comes from a failed execution: " + e.what()));
      for (auto& r : results) r->set_error(error);
      return;
    }
    try {
      // A donated buffer must be held by its AsyncBuffer and this list only (its
      // storage may have become another value's too, e.g. an output that is an input).
      for (size_t i = 0; i < donated.size(); ++i) donated[i] = donated[i] && buffers[i].use_count() == 2;
      arguments.clear();
      std::vector<runtime::Buffer> values;
      {
        runtime::ScopedTimer timer("ExecuteTime");
        values = executable->execute(buffers, donated);
      }
      buffers.clear();
      for (size_t i = 0; i < results.size(); ++i) results[i]->set(std::move(values[i]));
    } catch (const std::exception& e) {
      auto error = std::make_exception_ptr(ExecutionError("[mark_step] " + what + " failed: " + e.what()));
      {
        // Recorded before the outputs fail: a reader woken by them clears it.
        std::lock_guard<std::mutex> lock(mutex_);
        execution_failure_ = error;
      }
      for (auto& r : results) r->set_error(error);
    }
  });
  for (size_t i = 0; i < pending.size(); ++i) pending[i]->set_ir_value(data_nodes[tensor_output[i]]);
}

void GraphExecutor::wait_device_ops() {
  runtime::device_execution_queue().wait_idle();
  rethrow_execution_failure();
}

void GraphExecutor::clear_execution_failure() {
  std::lock_guard<std::mutex> lock(mutex_);
  execution_failure_ = nullptr;
}

void GraphExecutor::rethrow_execution_failure() {
  std::exception_ptr failure;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failure = std::exchange(execution_failure_, nullptr);
  }
  if (failure) std::rethrow_exception(failure);
}

void GraphExecutor::mark_step() {
  runtime::counter("MarkStep").add(1);
  std::vector<std::shared_ptr<LazyTensor>> live = live_tensors_with_pending_ir();
  std::vector<LazyTensor*> raw;
  for (auto& t : live) raw.push_back(t.get());
  sync(raw);
}

}  // namespace lazytrain::lazy
