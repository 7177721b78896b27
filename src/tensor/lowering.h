// Helpers shared by the op files: making IR nodes from tensors, and lowering
// building blocks. Internal to src/tensor.
#pragma once

#include <string>
#include <vector>

#include "hlo/hlo_builder.h"
#include "lazy/lowering_context.h"
#include "tensor/autograd.h"
#include "tensor/tensor.h"

namespace lazytrain::detail {

using lazy::Attr;
using lazy::LoweringContext;
using lazy::Node;

// A new tensor whose value is node `op` over the inputs' IR values.
Tensor make_op(std::string op, const std::vector<Tensor>& inputs, Shape shape, DType dtype, std::vector<Attr> attrs,
               lazy::LowerFn lower);
// A 0-d "prim::Constant" tensor: its value is part of the graph hash.
Tensor constant(double value, DType dtype);
// Result dtype of `x op scalar`: x's dtype, or float32 for an integer tensor and
// a non-integral scalar (PyTorch's rule for Python scalars).
DType scalar_result_dtype(const Tensor& x, double value);

// Operand i of node lowered, converted to `dtype` and broadcast to `shape`.
int operand_as(LoweringContext& c, const Node& n, size_t i, DType dtype, const Shape& shape);

}  // namespace lazytrain::detail
