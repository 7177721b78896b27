// Helpers shared by the op files: making IR nodes from tensors, and lowering
// building blocks. Internal to src/tensor.
//
// A lowering is written with hlo::XlaOp (hlo/xla_op.h): it takes its operands
// as values (operand, operand_as), writes the formula with operators and free
// functions, and returns the result's id:
//   XlaOp g = operand(c, n, 0), x = operand(c, n, 1);
//   XlaOp s = 0.5 * tanh(0.5 * x) + 0.5;
//   return (g * (s * (1 + x * (1 - s)))).id();
#pragma once

#include <string>
#include <vector>

#include "hlo/hlo_builder.h"
#include "hlo/xla_op.h"
#include "lazy/lowering_context.h"
#include "tensor/autograd.h"
#include "tensor/tensor.h"

namespace lazytrain::detail {

using hlo::XlaOp;
using lazy::Attr;
using lazy::LoweringContext;
using lazy::Node;

// A new tensor whose value is node `op` over the inputs' IR values.
Tensor make_op(std::string op, const std::vector<Tensor>& inputs, Shape shape, DType dtype, std::vector<Attr> attrs,
               lazy::LowerFn lower);
// A 0-d "prim::Constant" tensor: its value is part of the graph hash.
Tensor constant(double value, DType dtype);
// The operand for a number passed to an op (a `double` argument of tensor/ops.h),
// by PyTorch/XLA's rule (GetIrValueForScalar, IsSpecialScalar): 0 and ±1 stay
// constants, so the algebraic simplifier still sees x*1, x+0, ...; every other
// value is 0-d device data on `device` (the op's input's), so a number that changes between steps (a
// hand-written schedule) never changes the graph hash. Device data of equal
// (value, dtype) is shared through a small cache (torch_xla's DataCache), so a
// value used many times is transferred once and is one graph parameter.
Tensor scalar_operand(double value, DType dtype, const runtime::Device& device);
// Whether `value` is one of PyTorch/XLA's special scalars (0, 1, -1).
bool is_special_scalar(double value);
// clamp's dtype for a `double` bound (whose kind is unknown): x's dtype, or
// float32 for an integer tensor and a non-integral bound. Every other op with a
// number takes a Scalar and promotes by torch's result_type (tensor/type_promotion.h).
DType scalar_result_dtype(const Tensor& x, double value);

// A fresh per-op random seed (s64[] device data from the current device's
// generator, tensor/ops.h manual_seed): random ops take it as an operand, so
// reseeding never recompiles.
Tensor next_seed();

// x itself if floating, else x as float32 (torch's rule for sigmoid, silu, sin,
// cos on integer and bool tensors). Defined in ops_pointwise.cpp.
Tensor floating(const Tensor& x);
// Scatter-add of g's rows into zeros of `input_shape` ([num, rest...]) at the
// row indices `index`: the backward of index_select and embedding (node
// aten::embedding_dense_backward). Defined in ops_indexing.cpp.
Tensor index_add_into_zeros(const Tensor& g, const Tensor& index, const Shape& input_shape);

// Operand i of the node being lowered, as a value of c's builder.
inline XlaOp operand(LoweringContext& c, const Node& n, size_t i) { return XlaOp(c.builder(), c.operand(n, i)); }
// Operand i, converted to `dtype` and broadcast to `shape`.
XlaOp operand_as(LoweringContext& c, const Node& n, size_t i, DType dtype, const Shape& shape);

}  // namespace lazytrain::detail
