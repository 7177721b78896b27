// Linear algebra: matmul (torch.matmul's broadcasting and 1-D rules) over
// batched mm, or sums of products for integer operands.
#include "core/error.h"
#include "core/op_location.h"
#include "tensor/autocast.h"
#include "tensor/lowering.h"

namespace lazytrain {

using namespace detail;
using autograd::record;

namespace {

// Same-rank batched matmul [batch..., m, k] @ [batch..., k, n].
Tensor batched_mm(const Tensor& a, const Tensor& b) {
  Shape s = a.shape();
  s.back() = b.shape().back();
  Tensor out = make_op(a.dim() == 2 ? "aten::mm" : "aten::bmm", {a, b}, s, a.dtype(), {},
                       +[](LoweringContext& c, const Node& n) { return hlo::matmul(operand(c, n, 0), operand(c, n, 1)).id(); });
  return record(out, a.dim() == 2 ? "MmBackward0" : "BmmBackward0", {a, b},
                [a = a.detach(), b = b.detach(), ra = a.requires_grad(), rb = b.requires_grad()](const Tensor& g) {
                  return std::vector<Tensor>{ra ? batched_mm(g, transpose(b, -1, -2)) : Tensor(),
                                             rb ? batched_mm(transpose(a, -1, -2), g) : Tensor()};
                });
}

// Integer matmul of [..., m, k] and [..., k, n] (torch's is exact and wraps on
// overflow, as here): the products summed over k, back in the operands' dtype.
Tensor integer_mm(const Tensor& x, const Tensor& y) {
  const Tensor out = sum(mul(unsqueeze(x, -1), unsqueeze(y, -3)), {-2});
  return out.dtype() == x.dtype() ? out : to_dtype(out, x.dtype());
}

Tensor any_mm(const Tensor& x, const Tensor& y) { return is_floating_point(x.dtype()) ? batched_mm(x, y) : integer_mm(x, y); }

}  // namespace

Tensor matmul(const Tensor& a_in, const Tensor& b_in, Loc loc) {
  OpLocationScope at(loc);
  const Tensor a = autocast_to_lower(a_in), b = autocast_to_lower(b_in);
  if (a.dim() == 0 || b.dim() == 0) throw_error("aten::matmul", "both arguments to matmul need to be at least 1D, got " + shape_str(a.shape()) + " and " + shape_str(b.shape()), loc);
  if (a.dtype() != b.dtype() || a.dtype() == DType::kBool) {
    throw_error("aten::matmul", "expected both operands to have the same (non-bool) dtype, got " + torch_name(a.dtype()) + " and " + torch_name(b.dtype()), loc);
  }
  int64_t k_a = a.shape().back();
  int64_t k_b = b.dim() == 1 ? b.shape()[0] : b.shape()[b.dim() - 2];
  if (k_a != k_b) {
    throw_error("aten::matmul", "mat1 and mat2 shapes cannot be multiplied (" + shape_str(a.shape()) + " and " + shape_str(b.shape()) +
                                    "): expected a.size(-1) == b.size(-2)", loc);
  }
  if (a.dim() == 1 && b.dim() == 1) {
    const Tensor dot = sum(mul(a, b));
    return dot.dtype() == a.dtype() ? dot : to_dtype(dot, a.dtype());
  }
  if (a.dim() == 1) return squeeze(matmul(unsqueeze(a, 0), b, loc), -2);
  if (b.dim() == 1) return squeeze(matmul(a, unsqueeze(b, 1), loc), -1);
  if (b.dim() == 2) {
    if (a.dim() == 2) return any_mm(a, b);
    Shape out = a.shape();
    out.back() = b.shape()[1];
    const int64_t rows = numel(Shape(a.shape().begin(), a.shape().end() - 1));  // not -1: k_a may be 0
    return reshape(any_mm(reshape(a, {rows, k_a}), b), out);
  }
  // Broadcast the batch dims of both.
  Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes(ba, bb, "aten::matmul");
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), a.shape().end() - 2, a.shape().end());
  sb.insert(sb.end(), b.shape().end() - 2, b.shape().end());
  return any_mm(expand(a, sa), expand(b, sb));
}

}  // namespace lazytrain
