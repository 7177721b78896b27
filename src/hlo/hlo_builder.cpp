#include "hlo/hlo_builder.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "hlo/shape_inference.h"

namespace lazytrain::hlo {

HloBuilder::HloBuilder(std::string name) { module_.name = std::move(name); }

int HloBuilder::add(HloInstruction in) {
  in.id = static_cast<int>(module_.instructions.size());
  if (in.metadata.empty()) in.metadata = metadata_;
  ShapeAndType st = infer_shape(module_, in);
  if (!is_tuple_shaped(in)) {
    in.shape = st.shape;
    in.dtype = st.dtype;
  }
  module_.instructions.push_back(std::move(in));
  return module_.instructions.back().id;
}

int HloBuilder::parameter(const Shape& shape, DType dtype) {
  HloInstruction in;
  in.opcode = HloOpcode::kParameter;
  in.shape = shape;
  in.dtype = dtype;
  in.parameter_number = module_.num_parameters++;
  return add(std::move(in));
}

int HloBuilder::constant(Literal literal) {
  HloInstruction in;
  in.opcode = HloOpcode::kConstant;
  in.shape = literal.shape();
  in.dtype = literal.dtype();
  in.literal = std::move(literal);
  return add(std::move(in));
}

int HloBuilder::scalar(double value, DType dtype) { return constant(Literal::scalar(value, dtype)); }

int HloBuilder::full(double value, const Shape& shape, DType dtype) {
  int s = scalar(value, dtype);
  return shape.empty() ? s : broadcast(s, shape, {});
}

int HloBuilder::iota(const Shape& shape, DType dtype, int64_t dimension) {
  HloInstruction in;
  in.opcode = HloOpcode::kIota;
  in.shape = shape;
  in.dtype = dtype;
  in.dimensions = {dimension};
  return add(std::move(in));
}

int HloBuilder::rng_bit_generator(int seed, const Shape& shape) {
  HloInstruction in;
  in.opcode = HloOpcode::kRngBitGenerator;
  in.shape = shape;
  in.dtype = DType::kInt32;
  in.operands = {seed};
  return add(std::move(in));
}

int HloBuilder::optimization_barrier(int x, int after) {
  HloInstruction in;
  in.opcode = HloOpcode::kOptimizationBarrier;
  in.shape = at(x).shape;
  in.dtype = at(x).dtype;
  in.operands = {x, after};
  return add(std::move(in));
}

int HloBuilder::unary(HloOpcode opcode, int x) {
  HloInstruction in;
  in.opcode = opcode;
  in.operands = {x};
  return add(std::move(in));
}

int HloBuilder::convert(int x, DType dtype) {
  if (module_.at(x).dtype == dtype) return x;
  HloInstruction in;
  in.opcode = HloOpcode::kConvert;
  in.dtype = dtype;
  in.operands = {x};
  return add(std::move(in));
}

int HloBuilder::binary(HloOpcode opcode, int a, int b) {
  HloInstruction in;
  in.opcode = opcode;
  in.operands = {a, b};
  return add(std::move(in));
}

int HloBuilder::compare(int a, int b, ComparisonDirection direction) {
  HloInstruction in;
  in.opcode = HloOpcode::kCompare;
  in.direction = direction;
  in.operands = {a, b};
  return add(std::move(in));
}

int HloBuilder::select(int pred, int on_true, int on_false) {
  HloInstruction in;
  in.opcode = HloOpcode::kSelect;
  in.operands = {pred, on_true, on_false};
  return add(std::move(in));
}

int HloBuilder::broadcast(int x, const Shape& shape, std::vector<int64_t> dimensions) {
  if (module_.at(x).shape == shape && dimensions.size() == shape.size()) return x;
  HloInstruction in;
  in.opcode = HloOpcode::kBroadcast;
  in.shape = shape;
  in.dimensions = std::move(dimensions);
  in.operands = {x};
  return add(std::move(in));
}

int HloBuilder::broadcast_to(int x, const Shape& shape) {
  const Shape& from = module_.at(x).shape;
  if (from == shape) return x;
  check(from.size() <= shape.size(), "hlo broadcast", "cannot broadcast " + shape_str(from) + " to " + shape_str(shape));
  size_t offset = shape.size() - from.size();
  // Drop size-1 dims that expand, then broadcast the rest into place.
  Shape kept;
  std::vector<int64_t> dims;
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] == shape[offset + i]) {
      kept.push_back(from[i]);
      dims.push_back(static_cast<int64_t>(offset + i));
    } else {
      check(from[i] == 1, "hlo broadcast", "cannot broadcast " + shape_str(from) + " to " + shape_str(shape));
    }
  }
  int y = kept.size() == from.size() ? x : reshape(x, kept);
  return broadcast(y, shape, dims);
}

int HloBuilder::reshape(int x, const Shape& shape) {
  if (module_.at(x).shape == shape) return x;
  HloInstruction in;
  in.opcode = HloOpcode::kReshape;
  in.shape = shape;
  in.operands = {x};
  return add(std::move(in));
}

int HloBuilder::transpose(int x, std::vector<int64_t> permutation) {
  bool identity = true;
  for (size_t i = 0; i < permutation.size(); ++i) identity = identity && permutation[i] == static_cast<int64_t>(i);
  if (identity) return x;
  HloInstruction in;
  in.opcode = HloOpcode::kTranspose;
  in.dimensions = std::move(permutation);
  in.operands = {x};
  return add(std::move(in));
}

int HloBuilder::slice(int x, std::vector<int64_t> starts, std::vector<int64_t> limits, std::vector<int64_t> strides) {
  HloInstruction in;
  in.opcode = HloOpcode::kSlice;
  in.slice_starts = std::move(starts);
  in.slice_limits = std::move(limits);
  in.slice_strides = std::move(strides);
  in.operands = {x};
  return add(std::move(in));
}

int HloBuilder::dynamic_slice(int x, const std::vector<int>& starts, std::vector<int64_t> sizes) {
  HloInstruction in;
  in.opcode = HloOpcode::kDynamicSlice;
  in.dimensions = std::move(sizes);
  in.operands = {x};
  in.operands.insert(in.operands.end(), starts.begin(), starts.end());
  return add(std::move(in));
}

int HloBuilder::partition_id() {
  HloInstruction in;
  in.opcode = HloOpcode::kPartitionId;
  return add(std::move(in));
}

int HloBuilder::concatenate(const std::vector<int>& xs, int64_t dimension) {
  HloInstruction in;
  in.opcode = HloOpcode::kConcatenate;
  in.dimensions = {dimension};
  in.operands = xs;
  return add(std::move(in));
}

int HloBuilder::custom_call(std::vector<int> operands, std::string target, std::string backend_config) {
  HloInstruction in;
  in.opcode = HloOpcode::kCustomCall;
  in.operands = std::move(operands);
  in.custom_call_target = std::move(target);
  in.backend_config = std::move(backend_config);
  return add(std::move(in));
}

int HloBuilder::gather(int operand, int indices) {
  HloInstruction in;
  in.opcode = HloOpcode::kGather;
  in.operands = {operand, indices};
  return add(std::move(in));
}

int HloBuilder::scatter_add(int operand, int indices, int updates) {
  HloInstruction in;
  in.opcode = HloOpcode::kScatter;
  in.reduce_kind = ReduceKind::kAdd;
  in.operands = {operand, indices, updates};
  return add(std::move(in));
}

namespace {
// True when instruction `in` swaps exactly its operand's last two dims.
bool is_minor_transpose(const HloInstruction& in) {
  if (in.opcode != HloOpcode::kTranspose) return false;
  size_t r = in.dimensions.size();
  if (r < 2) return false;
  for (size_t i = 0; i + 2 < r; ++i) {
    if (in.dimensions[i] != static_cast<int64_t>(i)) return false;
  }
  return in.dimensions[r - 2] == static_cast<int64_t>(r - 1) && in.dimensions[r - 1] == static_cast<int64_t>(r - 2);
}
}  // namespace

int HloBuilder::matmul(int a, int b) {
  int64_t r = static_cast<int64_t>(module_.at(a).shape.size());
  DotDimensionNumbers d;
  for (int64_t i = 0; i < r - 2; ++i) {
    d.lhs_batch_dimensions.push_back(i);
    d.rhs_batch_dimensions.push_back(i);
  }
  // Each transpose of the last two dims folded away flips the contracting dim
  // (a transpose of a transpose folds twice, back to the original).
  int64_t lc = r - 1, rc = r - 2;
  while (is_minor_transpose(module_.at(a))) {
    a = module_.at(a).operands[0];
    lc = lc == r - 1 ? r - 2 : r - 1;
  }
  while (is_minor_transpose(module_.at(b))) {
    b = module_.at(b).operands[0];
    rc = rc == r - 2 ? r - 1 : r - 2;
  }
  d.lhs_contracting_dimensions = {lc};
  d.rhs_contracting_dimensions = {rc};
  return dot(a, b, std::move(d));
}

int HloBuilder::dot(int lhs, int rhs, DotDimensionNumbers dims) {
  HloInstruction in;
  in.opcode = HloOpcode::kDot;
  in.dot = std::move(dims);
  in.operands = {lhs, rhs};
  return add(std::move(in));
}

int HloBuilder::reduce(int x, std::vector<int64_t> dimensions, ReduceKind kind) {
  std::sort(dimensions.begin(), dimensions.end());
  DType t = module_.at(x).dtype;
  double init = 0.0;
  if (kind == ReduceKind::kMul) init = 1.0;
  if (kind == ReduceKind::kLogAddExp) init = -INFINITY;  // logaddexp's identity
  if (kind == ReduceKind::kMax) init = -INFINITY;
  if (kind == ReduceKind::kMin) init = INFINITY;
  if (t == DType::kInt32 && (kind == ReduceKind::kMax || kind == ReduceKind::kMin)) init = kind == ReduceKind::kMax ? -2147483648.0 : 2147483647.0;
  // pred: the identities of or (max) and and (min); -inf/+inf would both convert to true.
  if (t == DType::kBool && (kind == ReduceKind::kMax || kind == ReduceKind::kMin)) init = kind == ReduceKind::kMax ? 0.0 : 1.0;
  int init_id;
  if (t == DType::kInt64 && (kind == ReduceKind::kMax || kind == ReduceKind::kMin)) {
    // The exact limits (a double cannot hold INT64_MAX): max([INT64_MIN]) is INT64_MIN.
    Literal limit({}, t);
    *limit.data<int64_t>() = kind == ReduceKind::kMax ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
    init_id = constant(std::move(limit));
  } else {
    init_id = scalar(init, t);
  }
  HloInstruction in;
  in.opcode = HloOpcode::kReduce;
  in.dimensions = std::move(dimensions);
  in.reduce_kind = kind;
  in.operands = {x, init_id};
  return add(std::move(in));
}

int HloBuilder::fusion(std::shared_ptr<const HloModule> computation, std::vector<int> operands, FusionKind kind) {
  HloInstruction in;
  in.opcode = HloOpcode::kFusion;
  in.fused_computation = std::move(computation);
  in.fusion_kind = kind;
  in.operands = std::move(operands);
  return add(std::move(in));
}

int HloBuilder::get_tuple_element(int fusion, int64_t index) {
  HloInstruction in;
  in.opcode = HloOpcode::kGetTupleElement;
  in.tuple_index = index;
  in.operands = {fusion};
  return add(std::move(in));
}

int HloBuilder::collective(HloOpcode opcode, int x, ReduceKind kind, std::vector<int64_t> dimensions,
                           std::vector<std::vector<int64_t>> replica_groups) {
  HloInstruction in;
  in.opcode = opcode;
  in.operands = {x};
  in.reduce_kind = kind;
  in.dimensions = std::move(dimensions);
  in.replica_groups = std::move(replica_groups);
  in.channel_id = ++channels_;
  return add(std::move(in));
}

int HloBuilder::all_reduce(int x, ReduceKind kind, std::vector<std::vector<int64_t>> replica_groups) {
  return collective(HloOpcode::kAllReduce, x, kind, {}, std::move(replica_groups));
}

int HloBuilder::all_gather(int x, int64_t dimension, std::vector<std::vector<int64_t>> replica_groups) {
  return collective(HloOpcode::kAllGather, x, ReduceKind::kAdd, {dimension}, std::move(replica_groups));
}

int HloBuilder::reduce_scatter(int x, ReduceKind kind, int64_t dimension, std::vector<std::vector<int64_t>> replica_groups) {
  return collective(HloOpcode::kReduceScatter, x, kind, {dimension}, std::move(replica_groups));
}

int HloBuilder::copy(const HloInstruction& instruction, std::vector<int> operands) {
  if (instruction.opcode == HloOpcode::kParameter) {
    const int id = parameter(instruction.shape, instruction.dtype);
    module_.instructions[static_cast<size_t>(id)].sharding = instruction.sharding;  // an input's layout (FSDP's shards)
    return id;
  }
  HloInstruction in = instruction;
  in.operands = std::move(operands);
  if (is_collective(in.opcode)) in.channel_id = ++channels_;
  return add(std::move(in));
}

void HloBuilder::set_sharding(int id, HloSharding sharding) { module_.instructions.at(static_cast<size_t>(id)).sharding = std::move(sharding); }

HloModule HloBuilder::build(const std::vector<int>& outputs) {
  metadata_ = OpMetadata{};  // the ROOT tuple is nobody's op
  HloInstruction in;
  in.opcode = HloOpcode::kTuple;
  in.operands = outputs;
  module_.root = add(std::move(in));
  remove_dead_instructions();
  verify(module_);
  return std::move(module_);
}

void HloBuilder::remove_dead_instructions() {
  // Lowering can leave instructions unused (a transpose folded into a dot);
  // parameters always stay so that the argument list does not change.
  std::vector<bool> live(module_.instructions.size(), false);
  live[module_.root] = true;
  for (int i = module_.root; i >= 0; --i) {
    const HloInstruction& in = module_.instructions[i];
    if (in.opcode == HloOpcode::kParameter) live[i] = true;
    if (!live[i]) continue;
    for (int o : in.operands) live[o] = true;
  }
  std::vector<int> new_id(module_.instructions.size(), -1);
  std::vector<HloInstruction> kept;
  for (auto& in : module_.instructions) {
    if (!live[in.id]) continue;
    new_id[in.id] = static_cast<int>(kept.size());
    in.id = new_id[in.id];
    for (int& o : in.operands) o = new_id[o];
    kept.push_back(std::move(in));
  }
  module_.instructions = std::move(kept);
  module_.root = static_cast<int>(module_.instructions.size()) - 1;
}

}  // namespace lazytrain::hlo
