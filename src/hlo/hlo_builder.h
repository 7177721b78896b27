// HloBuilder: appends instructions to an HloModule with their shapes inferred,
// so lowering code never computes a shape by hand.
//
// Every method returns the new instruction's id and throws Error (from shape
// inference) when the operands do not fit the opcode.
#pragma once

#include "hlo/hlo_instruction.h"

namespace lazytrain::hlo {

class HloBuilder {
 public:
  explicit HloBuilder(std::string name = "SyncTensorsGraph");

  const HloInstruction& at(int id) const { return module_.at(id); }
  const Shape& shape(int id) const { return module_.at(id).shape; }
  DType dtype(int id) const { return module_.at(id).dtype; }

  int parameter(const Shape& shape, DType dtype);
  // A constant holding `literal` (its shape and dtype).
  int constant(Literal literal);
  // A scalar constant of `dtype` holding `value` (converted).
  int scalar(double value, DType dtype);
  // A scalar constant broadcast to `shape`.
  int full(double value, const Shape& shape, DType dtype);
  int iota(const Shape& shape, DType dtype, int64_t dimension);
  int rng_bit_generator(int seed, const Shape& shape);
  // opt-barrier(x, after): x's value, computed after `after` and never merged
  // with an equal computation (XLA's opt-barrier, with one value passed through).
  int optimization_barrier(int x, int after);

  int unary(HloOpcode opcode, int x);
  int convert(int x, DType dtype);
  int binary(HloOpcode opcode, int a, int b);
  int compare(int a, int b, ComparisonDirection direction);
  int select(int pred, int on_true, int on_false);

  int broadcast(int x, const Shape& shape, std::vector<int64_t> dimensions);
  // NumPy-style: right-aligns x's dims against `shape` (size-1 dims are expanded).
  int broadcast_to(int x, const Shape& shape);
  int reshape(int x, const Shape& shape);
  int transpose(int x, std::vector<int64_t> permutation);
  int slice(int x, std::vector<int64_t> starts, std::vector<int64_t> limits, std::vector<int64_t> strides);
  // The window of sizes `sizes` of x at the scalar integer `starts` (one per
  // dimension, of one dtype), each clamped so the window lies inside x (XLA's dynamic-slice).
  int dynamic_slice(int x, const std::vector<int>& starts, std::vector<int64_t> sizes);
  // s32[]: the partition (global device ordinal) running the module (XLA's
  // partition-id); the SPMD partitioner's per-device offsets start from it.
  int partition_id();
  int concatenate(const std::vector<int>& xs, int64_t dimension);
  int gather(int operand, int indices);
  int scatter_add(int operand, int indices, int updates);

  // Batched matmul: a [batch..., m, k] @ b [batch..., k, n]. When an operand is a
  // transpose of its last two dims, the transpose is folded into the dot's
  // contracting dimensions instead of being materialised.
  int matmul(int a, int b);
  int dot(int lhs, int rhs, DotDimensionNumbers dims);
  int reduce(int x, std::vector<int64_t> dimensions, ReduceKind kind);

  // Collectives across replicas (hlo_instruction.h: replica_groups). Each gets
  // the next channel_id. all-reduce: the reduction of x over each group, shape
  // unchanged (empty groups: all replicas). all-gather: the group's x
  // concatenated along `dimension` in group order. reduce-scatter: the
  // reduction split along `dimension` into one shard per group member, shard
  // k to the k-th member (the size must divide by the group size).
  int all_reduce(int x, ReduceKind kind, std::vector<std::vector<int64_t>> replica_groups);
  int all_gather(int x, int64_t dimension, std::vector<std::vector<int64_t>> replica_groups);
  int reduce_scatter(int x, ReduceKind kind, int64_t dimension, std::vector<std::vector<int64_t>> replica_groups);

  // custom-call(operands) of `target` with `backend_config` (hlo/custom_call.h):
  // its result shape and dtype are inferred from the target's rule.
  int custom_call(std::vector<int> operands, std::string target, std::string backend_config);

  // A fusion calling `computation` (whose parameters match `operands`).
  int fusion(std::shared_ptr<const HloModule> computation, std::vector<int> operands, FusionKind kind);
  // get-tuple-element(fusion), index=`index`: element `index` of a multi-output fusion.
  int get_tuple_element(int fusion, int64_t index);
  // Appends a copy of `instruction` (from another module) with new operand ids;
  // a parameter keeps its parameter number only if it is the next one.
  int copy(const HloInstruction& instruction, std::vector<int> operands);

  // Annotates instruction `id` with how its value is laid out over the devices
  // (HloInstruction::sharding; the lazy lowering's mark_sharding).
  void set_sharding(int id, HloSharding sharding);

  // Finishes the module with ROOT tuple(outputs) and verifies it.
  HloModule build(const std::vector<int>& outputs);

  // The metadata given to every instruction added from now on that has none of
  // its own (a copy keeps its own), as XLA's XlaBuilder::SetOpMetadata: the
  // lowering sets each IR node's, a pass the replaced instruction's.
  void set_metadata(OpMetadata metadata) { metadata_ = std::move(metadata); }

 private:
  int add(HloInstruction instruction);
  int collective(HloOpcode opcode, int x, ReduceKind kind, std::vector<int64_t> dimensions,
                 std::vector<std::vector<int64_t>> replica_groups);
  void remove_dead_instructions();
  HloModule module_;
  int64_t channels_ = 0;  // collectives added so far
  OpMetadata metadata_;
};

}  // namespace lazytrain::hlo
