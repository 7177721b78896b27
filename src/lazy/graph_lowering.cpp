// Graph lowering (graph_lowering.h): post-order, structural hash, HLO, IR dump.
#include "lazy/graph_lowering.h"

#include <algorithm>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "hlo/hlo_builder.h"
#include "lazy/lowering_context.h"
#include "lazy/sharded_data.h"

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
  // The device kind, never its ordinal: cpu:0 and cpu:1 share executables.
  if (!outputs.empty()) h = hash_combine(h, std::hash<std::string>{}(outputs[0]->device().kind));
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
  context.set_partitioned(std::any_of(sig.post_order.begin(), sig.post_order.end(),
                                      [](const Node* n) { return n->sharded_data() != nullptr || custom_sharding_of(*n).has_value(); }));
  for (size_t position = 0; position < sig.post_order.size(); ++position) {
    const Node* node = sig.post_order[position];
    int id;
    if (node->is_device_data()) {
      builder.set_metadata({});
      id = builder.parameter(node->shape(), node->dtype());
      if (node->sharded_data()) builder.set_sharding(id, node->sharded_data()->sharding());
    } else {
      check(node->lower() != nullptr, node->op(), "has no lowering");
      builder.set_metadata({node->op(), node->location().file_name(), node->location().line, static_cast<int64_t>(position)});
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

}  // namespace lazytrain::lazy
