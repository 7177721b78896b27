#include "lazy/graph_executor.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <unordered_map>

#include "core/error.h"
#include "lazy/lowering_context.h"
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
    donated.push_back(it != references.end() && it->second.first == it->second.second && p->data().unique());
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
}  // namespace

GraphExecutor::GraphExecutor() : compiler_(default_compiler()) {}

void GraphExecutor::set_compiler(std::unique_ptr<backend::Compiler> compiler) {
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
  std::shared_ptr<backend::Executable> executable = compile_or_lookup(sig);
  std::vector<bool> donated = donatable_parameters(sig);
  std::vector<runtime::Buffer> arguments;
  arguments.reserve(sig.parameters.size());
  for (const Node* p : sig.parameters) arguments.push_back(p->data());
  std::vector<runtime::Buffer> results;
  {
    runtime::ScopedTimer timer("ExecuteTime");
    results = executable->execute(arguments, donated);
  }
  std::vector<NodePtr> data_nodes;
  for (auto& r : results) data_nodes.push_back(make_device_data(std::move(r)));
  for (size_t i = 0; i < pending.size(); ++i) pending[i]->set_ir_value(data_nodes[tensor_output[i]]);
}

void GraphExecutor::mark_step() {
  runtime::counter("MarkStep").add(1);
  std::vector<std::shared_ptr<LazyTensor>> live = live_tensors_with_pending_ir();
  std::vector<LazyTensor*> raw;
  for (auto& t : live) raw.push_back(t.get());
  sync(raw);
}

}  // namespace lazytrain::lazy
