// Reductions (sum, mean, amax, argmax) and matmul.
#include <algorithm>

#include "core/error.h"
#include "core/op_location.h"
#include "tensor/autocast.h"
#include "tensor/lowering.h"

namespace lazytrain {

using namespace detail;
using autograd::record;
using autograd::sum_to;
using hlo::HloOpcode;

namespace {

std::vector<int64_t> normalize_dims(const std::vector<int64_t>& dims, int64_t rank, const char* op) {
  std::vector<int64_t> out;
  if (dims.empty()) {
    for (int64_t i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  for (int64_t d : dims) out.push_back(normalize_dim(d, rank, op));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (rank == 0) out.clear();
  return out;
}

Shape reduced_shape(const Shape& s, const std::vector<int64_t>& dims, bool keepdim) {
  Shape out;
  for (size_t i = 0; i < s.size(); ++i) {
    bool r = std::find(dims.begin(), dims.end(), static_cast<int64_t>(i)) != dims.end();
    if (!r) out.push_back(s[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

// Lowers reduce(kind) of operand 0 over attr "dims" into the node's shape.
template <hlo::ReduceKind K>
int lower_reduce(LoweringContext& c, const Node& n) {
  auto& b = c.builder();
  int x = b.convert(c.operand(n, 0), n.dtype());
  int r = b.reduce(x, n.ints_attr("dims"), K);
  return b.reshape(r, n.shape());
}

}  // namespace

Tensor sum(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  OpLocationScope at(loc);
  (void)loc;
  std::vector<int64_t> d = normalize_dims(dims, x.dim(), "aten::sum");
  DType t = is_floating_point(x.dtype()) ? x.dtype() : DType::kInt64;
  Tensor out = make_op("aten::sum", {x}, reduced_shape(x.shape(), d, keepdim), t, {{"dims", d}, {"keepdim", int64_t{keepdim}}},
                       lower_reduce<hlo::ReduceKind::kAdd>);
  return record(out, "SumBackward1", {x}, [xs = x.shape(), kept = reduced_shape(x.shape(), d, true)](const Tensor& g) {
    return std::vector<Tensor>{expand(reshape(g, kept), xs)};
  });
}

Tensor mean(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  OpLocationScope at(loc);
  if (!is_floating_point(x.dtype())) {
    throw_error("aten::mean", "could not infer output dtype: input dtype should be floating point, got " + torch_name(x.dtype()), loc);
  }
  std::vector<int64_t> d = normalize_dims(dims, x.dim(), "aten::mean");
  int64_t count = 1;
  for (int64_t i : d) count *= x.shape()[i];
  return div(sum(x, d, keepdim, loc), static_cast<double>(count));
}

Tensor amax(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  OpLocationScope at(loc);
  (void)loc;
  std::vector<int64_t> d = normalize_dims(dims, x.dim(), "aten::amax");
  Tensor out = make_op("aten::amax", {x}, reduced_shape(x.shape(), d, keepdim), x.dtype(), {{"dims", d}, {"keepdim", int64_t{keepdim}}},
                       lower_reduce<hlo::ReduceKind::kMax>);
  return record(out, "AmaxBackward0", {x}, [x = x.detach(), y = out.detach(), kept = reduced_shape(x.shape(), d, true), d](const Tensor& g) {
    // The gradient is shared evenly between tied maxima, as PyTorch does.
    Tensor mask = to_dtype(eq(x, reshape(y, kept)), g.dtype());
    Tensor count = sum(mask, d, true);
    return std::vector<Tensor>{div(mul(expand(reshape(g, kept), x.shape()), mask), count)};
  });
}

Tensor logsumexp(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  OpLocationScope at(loc);
  if (!is_floating_point(x.dtype())) throw_error("aten::logsumexp", "expects a floating-point tensor, got " + torch_name(x.dtype()), loc);
  std::vector<int64_t> d = normalize_dims(dims, x.dim(), "aten::logsumexp");
  Tensor out = make_op("aten::logsumexp", {x}, reduced_shape(x.shape(), d, keepdim), x.dtype(), {{"dims", d}, {"keepdim", int64_t{keepdim}}},
                       lower_reduce<hlo::ReduceKind::kLogAddExp>);
  return record(out, "LogsumexpBackward0", {x}, [x = x.detach(), y = out.detach(), kept = reduced_shape(x.shape(), d, true)](const Tensor& g) {
    return std::vector<Tensor>{mul(expand(reshape(g, kept), x.shape()), exp(sub(x, reshape(y, kept))))};
  });
}

Tensor argmax(const Tensor& x, int64_t dim, bool keepdim, Loc loc) {
  OpLocationScope at(loc);
  (void)loc;
  int64_t d = normalize_dim(dim, x.dim(), "aten::argmax");
  return make_op("aten::argmax", {x}, reduced_shape(x.shape(), {d}, keepdim), DType::kInt64, {{"dim", d}, {"keepdim", int64_t{keepdim}}},
                 +[](LoweringContext& c, const Node& n) {
                   auto& b = c.builder();
                   int x = c.operand(n, 0);
                   const Shape& s = n.operand(0)->shape();
                   int64_t dd = n.int_attr("dim");
                   int mx = b.reduce(x, {dd}, hlo::ReduceKind::kMax);
                   std::vector<int64_t> keep;
                   for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) if (i != dd) keep.push_back(i);
                   int is_max = b.compare(x, b.broadcast(mx, s, keep), hlo::ComparisonDirection::kEq);
                   int idx = b.iota(s, DType::kInt64, dd);
                   int big = b.full(static_cast<double>(s[dd]), s, DType::kInt64);
                   int first = b.reduce(b.select(is_max, idx, big), {dd}, hlo::ReduceKind::kMin);
                   return b.reshape(first, n.shape());
                 });
}

namespace {

// Same-rank batched matmul [batch..., m, k] @ [batch..., k, n].
Tensor batched_mm(const Tensor& a, const Tensor& b) {
  Shape s = a.shape();
  s.back() = b.shape().back();
  Tensor out = make_op(a.dim() == 2 ? "aten::mm" : "aten::bmm", {a, b}, s, a.dtype(), {},
                       +[](LoweringContext& c, const Node& n) { return c.builder().matmul(c.operand(n, 0), c.operand(n, 1)); });
  return record(out, a.dim() == 2 ? "MmBackward0" : "BmmBackward0", {a, b},
                [a = a.detach(), b = b.detach(), ra = a.requires_grad(), rb = b.requires_grad()](const Tensor& g) {
                  return std::vector<Tensor>{ra ? batched_mm(g, transpose(b, -1, -2)) : Tensor(),
                                             rb ? batched_mm(transpose(a, -1, -2), g) : Tensor()};
                });
}

}  // namespace

Tensor matmul(const Tensor& a_in, const Tensor& b_in, Loc loc) {
  OpLocationScope at(loc);
  const Tensor a = autocast_to_lower(a_in), b = autocast_to_lower(b_in);
  if (a.dim() == 0 || b.dim() == 0) throw_error("aten::matmul", "both arguments to matmul need to be at least 1D, got " + shape_str(a.shape()) + " and " + shape_str(b.shape()), loc);
  if (a.dtype() != b.dtype() || !is_floating_point(a.dtype())) {
    throw_error("aten::matmul", "expected both operands to have the same floating dtype, got " + torch_name(a.dtype()) + " and " + torch_name(b.dtype()), loc);
  }
  int64_t k_a = a.shape().back();
  int64_t k_b = b.dim() == 1 ? b.shape()[0] : b.shape()[b.dim() - 2];
  if (k_a != k_b) {
    throw_error("aten::matmul", "mat1 and mat2 shapes cannot be multiplied (" + shape_str(a.shape()) + " and " + shape_str(b.shape()) +
                                    "): expected a.size(-1) == b.size(-2)", loc);
  }
  if (a.dim() == 1 && b.dim() == 1) return sum(mul(a, b));
  if (a.dim() == 1) return squeeze(matmul(unsqueeze(a, 0), b, loc), -2);
  if (b.dim() == 1) return squeeze(matmul(a, unsqueeze(b, 1), loc), -1);
  if (b.dim() == 2) {
    if (a.dim() == 2) return batched_mm(a, b);
    Shape out = a.shape();
    out.back() = b.shape()[1];
    return reshape(batched_mm(reshape(a, {-1, k_a}), b), out);
  }
  // Broadcast the batch dims of both.
  Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes(ba, bb, "aten::matmul");
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), a.shape().end() - 2, a.shape().end());
  sb.insert(sb.end(), b.shape().end() - 2, b.shape().end());
  return batched_mm(expand(a, sa), expand(b, sb));
}

}  // namespace lazytrain
