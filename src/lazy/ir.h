// The lazy IR: every tensor op records a Node; nothing runs until the graph is
// synced (mark_step or a read). Nodes are immutable once made.
//
// A Node is an aten-level operation ("aten::mul", "aten::softmax") with its
// operands, result shape/dtype, attributes and a lowering function that emits HLO.
// Two leaf kinds exist: "xla::device_data" (holds a Buffer: a parameter of the
// compiled graph, never part of the hash by value) and "prim::Constant" (a
// scalar whose value is part of the hash). Device data may instead hold a
// ShardedData (lazy/sharded_data.h: a value tiled over a mesh's devices, issue
// 34). A node may carry a typed sharding (sharded device data's layout, or the
// "xla::custom_sharding" annotation's): hashed with the node, printed as
// "sharding={...}", never parsed back from text.
//
// Every node is on one Device: device data on its buffer's; an op on its
// operands' (all must agree: an Error otherwise, as PyTorch's "expected all
// tensors to be on the same device"); an op without operands on the thread's
// current device. A "prim::Constant" is a literal of the HLO, not device
// memory: it fits any device, and its users ignore its device.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "core/op_location.h"
#include "core/shape.h"
#include "hlo/hlo_sharding.h"
#include "runtime/async_buffer.h"
#include "runtime/buffer.h"

namespace lazytrain::lazy {

class ShardedData;

using AttrValue = std::variant<int64_t, double, std::vector<int64_t>, std::string>;
struct Attr {
  std::string name;
  AttrValue value;
};

class Node;
using NodePtr = std::shared_ptr<const Node>;
class LoweringContext;
// Emits the HLO of `node` (its operands are already lowered) and returns its id.
using LowerFn = int (*)(LoweringContext& context, const Node& node);

class Node {
 public:
  Node(std::string op, std::vector<NodePtr> operands, Shape shape, DType dtype, std::vector<Attr> attrs, LowerFn lower,
       std::optional<hlo::HloSharding> sharding = std::nullopt);
  // An "xla::device_data" leaf holding `data`, ready or still being computed.
  explicit Node(std::shared_ptr<runtime::AsyncBuffer> data);
  // An "xla::device_data" leaf over a value tiled across a mesh's devices,
  // recorded on `device` (the tracing thread's: the SPMD program's one device).
  Node(std::shared_ptr<const ShardedData> data, runtime::Device device);
  // Releases the operands without recursing down the chain (core/iterative_release.h):
  // a graph of any depth is freed in constant stack.
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const std::string& op() const { return op_; }
  const std::vector<NodePtr>& operands() const { return operands_; }
  const NodePtr& operand(size_t i) const { return operands_[i]; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  const runtime::Device& device() const { return device_; }
  // True for "prim::Constant": a literal that fits any device.
  bool device_neutral() const { return device_neutral_; }
  const std::vector<Attr>& attrs() const { return attrs_; }
  // The node's sharding (sharded device data's tiling, or a custom_sharding
  // annotation's); null when it has none. Part of local_hash().
  const hlo::HloSharding* sharding() const { return sharding_ ? &*sharding_ : nullptr; }
  LowerFn lower() const { return lower_; }
  bool is_device_data() const { return data_ != nullptr || sharded_ != nullptr; }
  // The device data's buffer, waiting for the execution that computes it;
  // rethrows that execution's error. Sharded data: the tiles assembled.
  const runtime::Buffer& data() const;
  // The buffer of unsharded device data (null for sharded data).
  const std::shared_ptr<runtime::AsyncBuffer>& async_data() const { return data_; }
  // The tiles of sharded device data (null otherwise).
  const std::shared_ptr<const ShardedData>& sharded_data() const { return sharded_; }
  // Hash of op, shape, dtype and attributes (not operands, not data).
  uint64_t local_hash() const { return local_hash_; }
  // Process-unique id, for IR dumps.
  int64_t id() const { return id_; }
  // Where the user called the op that recorded this node (the outermost tensor
  // op, core/op_location.h); an empty file name when unknown. Not hashed.
  const OpLocation& location() const { return location_; }

  // Attribute lookup; throws Error when the attribute is absent or of another type.
  int64_t int_attr(const std::string& name) const;
  double double_attr(const std::string& name) const;
  const std::vector<int64_t>& ints_attr(const std::string& name) const;
  const std::string& string_attr(const std::string& name) const;

  // "f32[2,3]{1,0} aten::mul(%3, %4), alpha=1" with operand numbers from `number_of`.
  std::string to_string(const std::vector<int64_t>& operand_numbers) const;

 private:
  const AttrValue& find(const std::string& name) const;
  std::string op_;
  std::vector<NodePtr> operands_;
  Shape shape_;
  DType dtype_;
  runtime::Device device_;
  bool device_neutral_ = false;
  std::vector<Attr> attrs_;
  std::optional<hlo::HloSharding> sharding_;
  LowerFn lower_ = nullptr;
  std::shared_ptr<runtime::AsyncBuffer> data_;
  std::shared_ptr<const ShardedData> sharded_;
  uint64_t local_hash_ = 0;
  int64_t id_ = 0;
  OpLocation location_;
};

// Throws Error "[op] expected all tensors to be on the same device, but found at
// least two devices, cpu:0 and cpu:1!" when the operands' devices differ.
NodePtr make_node(std::string op, std::vector<NodePtr> operands, Shape shape, DType dtype, std::vector<Attr> attrs,
                  LowerFn lower);
// A node carrying a typed `sharding` (hashed with it), otherwise as make_node.
NodePtr make_sharded_node(std::string op, std::vector<NodePtr> operands, Shape shape, DType dtype, hlo::HloSharding sharding,
                          LowerFn lower);
NodePtr make_device_data(runtime::Buffer data);
// A device-data leaf over a value that may still be pending (a graph's output).
NodePtr make_device_data(std::shared_ptr<runtime::AsyncBuffer> data);
// A device-data leaf over tiles on a mesh's devices, traced on `device`.
NodePtr make_device_data(std::shared_ptr<const ShardedData> data, const runtime::Device& device);

// Mixes `value` into `seed` (64-bit, order-sensitive).
uint64_t hash_combine(uint64_t seed, uint64_t value);

}  // namespace lazytrain::lazy
