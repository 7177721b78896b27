// LoweringContext: what a Node's lowering function sees: the HLO builder and the
// HLO ids of the node's (already lowered) operands.
#pragma once

#include <unordered_map>

#include "hlo/hlo_builder.h"
#include "lazy/ir.h"

namespace lazytrain::lazy {

class LoweringContext {
 public:
  explicit LoweringContext(hlo::HloBuilder& builder) : builder_(builder) {}
  hlo::HloBuilder& builder() { return builder_; }
  // HLO id of operand i of `node`.
  int operand(const Node& node, size_t i) const { return lowered_.at(node.operand(i).get()); }
  void set(const Node* node, int hlo_id) { lowered_[node] = hlo_id; }
  int get(const Node* node) const { return lowered_.at(node); }
  // Whether the graph lays values out over devices (a sharded input or a
  // mark_sharding annotation; issue 34): the SPMD partitioner will split it,
  // so a lowering may choose the form that splits without exchanges (part of
  // the graph's hash already: a layout is an attribute).
  bool partitioned() const { return partitioned_; }
  void set_partitioned(bool partitioned) { partitioned_ = partitioned; }

 private:
  hlo::HloBuilder& builder_;
  bool partitioned_ = false;
  std::unordered_map<const Node*, int> lowered_;
};

}  // namespace lazytrain::lazy
