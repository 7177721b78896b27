// XlaOp: a value being built in an HloBuilder (the builder and the instruction
// id), with arithmetic operators and free functions, as XLA's xla::XlaOp (and
// the operators torch_xla's lowerings use), so a lowering reads like its
// formula: silu's gradient is `g * s * (1 + x * (1 - s))`, not nested
// builder.binary(...) calls.
//
// Every function appends instructions to the operands' builder and returns the
// new value; shapes and dtypes are inferred (hlo/shape_inference.h), and
// operands that do not fit the opcode raise Error. Operands of one expression
// must come from the same builder.
//
// - Arithmetic: + - * / and unary -. Both operands have one shape and dtype (no
//   implicit broadcasting or promotion, as in HLO); a number on either side
//   (`1 - s`) becomes a constant of the other operand's shape and dtype.
// - Comparisons are the free functions eq, ne, lt, le, gt, ge (XLA's Eq ... Ge),
//   giving pred; they are not operators, because == on handles reads as "the
//   same value" in C++.
// - Logical and bitwise on pred: & | ~ (XLA's And, Or, Not).
// - Constants: full(builder, value, shape, dtype), scalar(builder, value, dtype),
//   and x.full_like(value) (x's shape and dtype).
//
// Lowerings still hand int ids across the lazy/ boundary (LowerFn returns int):
// XlaOp(builder, id) wraps one, x.id() unwraps it.
#pragma once

#include <vector>

#include "hlo/hlo_builder.h"

namespace lazytrain::hlo {

class XlaOp {
 public:
  XlaOp(HloBuilder& builder, int id) : builder_(&builder), id_(id) {}

  int id() const { return id_; }
  HloBuilder& builder() const { return *builder_; }
  // A copy: a reference into the builder would dangle once it appends.
  Shape shape() const { return builder_->shape(id_); }
  DType dtype() const { return builder_->dtype(id_); }

  // `value` broadcast to this value's shape, in its dtype (torch's full_like).
  XlaOp full_like(double value) const {
    const Shape s = shape();
    return XlaOp(*builder_, builder_->full(value, s, dtype()));
  }

 private:
  HloBuilder* builder_;
  int id_;
};

// ---- Constants and generators ----

// A scalar constant of `dtype` holding `value` (converted).
inline XlaOp scalar(HloBuilder& b, double value, DType dtype) { return XlaOp(b, b.scalar(value, dtype)); }
// `value` broadcast to `shape`.
inline XlaOp full(HloBuilder& b, double value, const Shape& shape, DType dtype) { return XlaOp(b, b.full(value, shape, dtype)); }
// 0, 1, 2, ... along `dimension` of `shape`.
inline XlaOp iota(HloBuilder& b, const Shape& shape, DType dtype, int64_t dimension) {
  return XlaOp(b, b.iota(shape, dtype, dimension));
}
// s32 random bits of `shape` from an s64[] seed.
inline XlaOp rng_bit_generator(XlaOp seed, const Shape& shape) {
  return XlaOp(seed.builder(), seed.builder().rng_bit_generator(seed.id(), shape));
}
// s32[]: the partition running the module (XLA's partition-id).
inline XlaOp partition_id(HloBuilder& b) { return XlaOp(b, b.partition_id()); }

// ---- Elementwise ----

inline XlaOp unary(HloOpcode opcode, XlaOp x) { return XlaOp(x.builder(), x.builder().unary(opcode, x.id())); }
inline XlaOp binary(HloOpcode opcode, XlaOp a, XlaOp b) { return XlaOp(a.builder(), a.builder().binary(opcode, a.id(), b.id())); }
// binary with a number as one side: a constant of the other side's shape and dtype.
inline XlaOp binary(HloOpcode opcode, XlaOp a, double b) { return binary(opcode, a, a.full_like(b)); }
inline XlaOp binary(HloOpcode opcode, double a, XlaOp b) { return binary(opcode, b.full_like(a), b); }

inline XlaOp operator+(XlaOp a, XlaOp b) { return binary(HloOpcode::kAdd, a, b); }
inline XlaOp operator+(XlaOp a, double b) { return binary(HloOpcode::kAdd, a, b); }
inline XlaOp operator+(double a, XlaOp b) { return binary(HloOpcode::kAdd, a, b); }
inline XlaOp operator-(XlaOp a, XlaOp b) { return binary(HloOpcode::kSubtract, a, b); }
inline XlaOp operator-(XlaOp a, double b) { return binary(HloOpcode::kSubtract, a, b); }
inline XlaOp operator-(double a, XlaOp b) { return binary(HloOpcode::kSubtract, a, b); }
inline XlaOp operator*(XlaOp a, XlaOp b) { return binary(HloOpcode::kMultiply, a, b); }
inline XlaOp operator*(XlaOp a, double b) { return binary(HloOpcode::kMultiply, a, b); }
inline XlaOp operator*(double a, XlaOp b) { return binary(HloOpcode::kMultiply, a, b); }
inline XlaOp operator/(XlaOp a, XlaOp b) { return binary(HloOpcode::kDivide, a, b); }
inline XlaOp operator/(XlaOp a, double b) { return binary(HloOpcode::kDivide, a, b); }
inline XlaOp operator/(double a, XlaOp b) { return binary(HloOpcode::kDivide, a, b); }
inline XlaOp operator-(XlaOp x) { return unary(HloOpcode::kNegate, x); }
// On pred: logical and, or, not (XLA's And, Or, Not; bitwise on integers).
inline XlaOp operator&(XlaOp a, XlaOp b) { return binary(HloOpcode::kAnd, a, b); }
inline XlaOp operator|(XlaOp a, XlaOp b) { return binary(HloOpcode::kOr, a, b); }
inline XlaOp operator~(XlaOp x) { return unary(HloOpcode::kNot, x); }

inline XlaOp max(XlaOp a, XlaOp b) { return binary(HloOpcode::kMaximum, a, b); }
inline XlaOp max(XlaOp a, double b) { return binary(HloOpcode::kMaximum, a, b); }
inline XlaOp min(XlaOp a, XlaOp b) { return binary(HloOpcode::kMinimum, a, b); }
inline XlaOp min(XlaOp a, double b) { return binary(HloOpcode::kMinimum, a, b); }
inline XlaOp pow(XlaOp a, XlaOp b) { return binary(HloOpcode::kPower, a, b); }
inline XlaOp shift_right_logical(XlaOp a, double bits) { return binary(HloOpcode::kShiftRightLogical, a, bits); }

inline XlaOp exp(XlaOp x) { return unary(HloOpcode::kExp, x); }
inline XlaOp log(XlaOp x) { return unary(HloOpcode::kLog, x); }
inline XlaOp sqrt(XlaOp x) { return unary(HloOpcode::kSqrt, x); }
inline XlaOp rsqrt(XlaOp x) { return unary(HloOpcode::kRsqrt, x); }
inline XlaOp tanh(XlaOp x) { return unary(HloOpcode::kTanh, x); }
inline XlaOp erf(XlaOp x) { return unary(HloOpcode::kErf, x); }
inline XlaOp abs(XlaOp x) { return unary(HloOpcode::kAbs, x); }
inline XlaOp sin(XlaOp x) { return unary(HloOpcode::kSine, x); }
inline XlaOp cos(XlaOp x) { return unary(HloOpcode::kCosine, x); }

// x in `dtype` (x itself when it has that dtype already).
inline XlaOp convert(XlaOp x, DType dtype) { return XlaOp(x.builder(), x.builder().convert(x.id(), dtype)); }

// pred of a's shape: a <direction> b elementwise. Operands of one shape and dtype.
inline XlaOp compare(XlaOp a, XlaOp b, ComparisonDirection direction) {
  return XlaOp(a.builder(), a.builder().compare(a.id(), b.id(), direction));
}
inline XlaOp eq(XlaOp a, XlaOp b) { return compare(a, b, ComparisonDirection::kEq); }
inline XlaOp ne(XlaOp a, XlaOp b) { return compare(a, b, ComparisonDirection::kNe); }
inline XlaOp lt(XlaOp a, XlaOp b) { return compare(a, b, ComparisonDirection::kLt); }
inline XlaOp le(XlaOp a, XlaOp b) { return compare(a, b, ComparisonDirection::kLe); }
inline XlaOp gt(XlaOp a, XlaOp b) { return compare(a, b, ComparisonDirection::kGt); }
inline XlaOp ge(XlaOp a, XlaOp b) { return compare(a, b, ComparisonDirection::kGe); }
inline XlaOp eq(XlaOp a, double b) { return eq(a, a.full_like(b)); }
inline XlaOp ne(XlaOp a, double b) { return ne(a, a.full_like(b)); }
inline XlaOp lt(XlaOp a, double b) { return lt(a, a.full_like(b)); }
inline XlaOp le(XlaOp a, double b) { return le(a, a.full_like(b)); }
inline XlaOp gt(XlaOp a, double b) { return gt(a, a.full_like(b)); }
inline XlaOp ge(XlaOp a, double b) { return ge(a, a.full_like(b)); }

// on_true where pred, else on_false (all one shape; the values one dtype).
inline XlaOp select(XlaOp pred, XlaOp on_true, XlaOp on_false) {
  return XlaOp(pred.builder(), pred.builder().select(pred.id(), on_true.id(), on_false.id()));
}
inline XlaOp select(XlaOp pred, XlaOp on_true, double on_false) { return select(pred, on_true, on_true.full_like(on_false)); }
inline XlaOp select(XlaOp pred, double on_true, XlaOp on_false) { return select(pred, on_false.full_like(on_true), on_false); }

// ---- Shapes and data movement ----

// x placed in `shape`, x's dimension i at `dimensions[i]` (XLA's broadcast-in-dim).
inline XlaOp broadcast(XlaOp x, const Shape& shape, std::vector<int64_t> dimensions) {
  return XlaOp(x.builder(), x.builder().broadcast(x.id(), shape, std::move(dimensions)));
}
// NumPy-style: x's dims right-aligned against `shape`, size-1 dims expanded.
inline XlaOp broadcast_to(XlaOp x, const Shape& shape) { return XlaOp(x.builder(), x.builder().broadcast_to(x.id(), shape)); }
inline XlaOp reshape(XlaOp x, const Shape& shape) { return XlaOp(x.builder(), x.builder().reshape(x.id(), shape)); }
inline XlaOp transpose(XlaOp x, std::vector<int64_t> permutation) {
  return XlaOp(x.builder(), x.builder().transpose(x.id(), std::move(permutation)));
}
inline XlaOp slice(XlaOp x, std::vector<int64_t> starts, std::vector<int64_t> limits, std::vector<int64_t> strides) {
  return XlaOp(x.builder(), x.builder().slice(x.id(), std::move(starts), std::move(limits), std::move(strides)));
}
// The window of `sizes` at the scalar integer `starts`, clamped inside x (XLA's dynamic-slice).
inline XlaOp dynamic_slice(XlaOp x, const std::vector<XlaOp>& starts, std::vector<int64_t> sizes) {
  std::vector<int> ids;
  for (const XlaOp& s : starts) ids.push_back(s.id());
  return XlaOp(x.builder(), x.builder().dynamic_slice(x.id(), ids, std::move(sizes)));
}
// xs (at least one, one builder) joined along `dimension`.
inline XlaOp concatenate(const std::vector<XlaOp>& xs, int64_t dimension) {
  std::vector<int> ids;
  for (const XlaOp& x : xs) ids.push_back(x.id());
  return XlaOp(xs.at(0).builder(), xs.at(0).builder().concatenate(ids, dimension));
}
// Rows of operand [N, R...] at integer indices [I...]: [I..., R...] (hlo_instruction.h's gather).
inline XlaOp gather(XlaOp operand, XlaOp indices) { return XlaOp(operand.builder(), operand.builder().gather(operand.id(), indices.id())); }
// operand [N, R...] with updates [I..., R...] added at rows indices [I...] (the inverse of gather).
inline XlaOp scatter_add(XlaOp operand, XlaOp indices, XlaOp updates) {
  return XlaOp(operand.builder(), operand.builder().scatter_add(operand.id(), indices.id(), updates.id()));
}

// ---- Reductions, contractions, calls ----

// x reduced over `dimensions` (removed from the shape) by `kind`.
inline XlaOp reduce(XlaOp x, std::vector<int64_t> dimensions, ReduceKind kind) {
  return XlaOp(x.builder(), x.builder().reduce(x.id(), std::move(dimensions), kind));
}
inline XlaOp reduce_sum(XlaOp x, std::vector<int64_t> dimensions) { return reduce(x, std::move(dimensions), ReduceKind::kAdd); }
inline XlaOp reduce_max(XlaOp x, std::vector<int64_t> dimensions) { return reduce(x, std::move(dimensions), ReduceKind::kMax); }
inline XlaOp reduce_min(XlaOp x, std::vector<int64_t> dimensions) { return reduce(x, std::move(dimensions), ReduceKind::kMin); }

// Batched matmul a [batch..., m, k] @ b [batch..., k, n] (hlo_builder.h's matmul).
inline XlaOp matmul(XlaOp a, XlaOp b) { return XlaOp(a.builder(), a.builder().matmul(a.id(), b.id())); }

// custom-call of `target` (hlo/custom_call.h) on operands (at least one, one builder).
inline XlaOp custom_call(const std::vector<XlaOp>& operands, std::string target, std::string backend_config) {
  std::vector<int> ids;
  for (const XlaOp& x : operands) ids.push_back(x.id());
  return XlaOp(operands.at(0).builder(), operands.at(0).builder().custom_call(ids, std::move(target), std::move(backend_config)));
}

// x's value, computed after `after` and never merged (XLA's opt-barrier).
inline XlaOp optimization_barrier(XlaOp x, XlaOp after) {
  return XlaOp(x.builder(), x.builder().optimization_barrier(x.id(), after.id()));
}

// Collectives across replicas (hlo_builder.h: groups, shapes, channel ids).
inline XlaOp all_reduce(XlaOp x, ReduceKind kind, std::vector<std::vector<int64_t>> replica_groups) {
  return XlaOp(x.builder(), x.builder().all_reduce(x.id(), kind, std::move(replica_groups)));
}
inline XlaOp all_gather(XlaOp x, int64_t dimension, std::vector<std::vector<int64_t>> replica_groups) {
  return XlaOp(x.builder(), x.builder().all_gather(x.id(), dimension, std::move(replica_groups)));
}
inline XlaOp reduce_scatter(XlaOp x, ReduceKind kind, int64_t dimension, std::vector<std::vector<int64_t>> replica_groups) {
  return XlaOp(x.builder(), x.builder().reduce_scatter(x.id(), kind, dimension, std::move(replica_groups)));
}

}  // namespace lazytrain::hlo
