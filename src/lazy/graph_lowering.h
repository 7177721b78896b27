// Graph lowering: the pure functions that turn a lazy graph (the IR nodes that
// compute a sync's outputs) into its post-order, its structural hash and a
// verified HloModule. They hold no state: the GraphExecutor calls them, and so
// do tools that hash or dump a graph (DESIGN.md, "The execution model").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hlo/hlo_instruction.h"
#include "lazy/ir.h"

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

// Lowers a graph to a verified HloModule named `name`. Throws Error when a
// node has no lowering or lowers to another shape or dtype than its IR says.
hlo::HloModule lower_graph(const GraphSignature& signature, const std::string& name);

// PyTorch/XLA-style text dump of the graph that computes `outputs`:
// "IR {\n  %0 = f32[2]{0} xla::device_data(), device=cpu:0\n ...\n}\n".
std::string dump_ir(const std::vector<const Node*>& outputs);

}  // namespace lazytrain::lazy
