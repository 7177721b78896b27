// Index ops along a dim: index_select, gather, scatter_add, topk.
//
// gather and scatter_add address x flattened: the position of index element
// (i0, .., id, ..) is sum_k i_k stride_k with i_dim replaced by its value,
// which turns torch's per-dim gather into lazytrain's row gather (HLO gather of
// rows of a [numel, 1] operand, hlo_instruction.h) and scatter_add into its
// scatter. An index value outside [0, size(dim)) becomes position -1, which the
// gather/scatter kernels reject with an Error when the graph runs.
#include "core/error.h"
#include "core/op_location.h"
#include "hlo/custom_call.h"
#include "tensor/lowering.h"

namespace lazytrain {

using namespace detail;
using autograd::record;

namespace {

// The flat positions into x (shape xs) of every element of `index` (shape is).
XlaOp flat_positions(XlaOp index_in, const Shape& xs, int64_t dim) {
  const Shape is = index_in.shape();
  const DType t = DType::kInt64;
  const std::vector<int64_t> strides = contiguous_strides(xs);
  XlaOp index = convert(index_in, t);
  XlaOp flat = index * static_cast<double>(strides[dim]);
  for (int64_t d = 0; d < static_cast<int64_t>(is.size()); ++d) {
    if (d == dim || is[d] == 1) continue;
    flat = flat + iota(index.builder(), is, t, d) * static_cast<double>(strides[d]);
  }
  XlaOp outside = lt(index, 0.0) | ge(index, static_cast<double>(xs[dim]));
  return select(outside, -1.0, flat);
}

void check_index(const char* op, const Tensor& x, int64_t d, const Tensor& index, Loc loc) {
  // torch takes int32 indices too (the lowering converts them to int64).
  if (index.dtype() != DType::kInt64 && index.dtype() != DType::kInt32) {
    throw_error(op, "Expected dtype int32/int64 for index, got " + torch_name(index.dtype()), loc);
  }
  if (index.dim() != x.dim()) {
    throw_error(op, "Index tensor must have the same number of dimensions as input tensor: index " + shape_str(index.shape()) + ", input " +
                        shape_str(x.shape()), loc);
  }
  for (int64_t k = 0; k < x.dim(); ++k) {
    if (k != d && index.shape()[k] > x.shape()[k]) {
      throw_error(op, "Size does not match at dimension " + std::to_string(k) + " expected index " + shape_str(index.shape()) +
                          " to be no larger than self " + shape_str(x.shape()) + " apart from dimension " + std::to_string(d), loc);
    }
  }
}

// zeros of `shape` with g added at the positions of index along d (gather's gradient).
Tensor scatter_into_zeros(const Tensor& g, int64_t d, const Tensor& index, const Shape& shape) {
  return make_op("aten::gather_backward", {g, index}, shape, g.dtype(), {{"dim", d}}, +[](LoweringContext& c, const Node& n) {
    const Shape& xs = n.shape();
    const int64_t count = numel(n.operand(1)->shape());
    XlaOp flat = reshape(flat_positions(operand(c, n, 1), xs, n.int_attr("dim")), {count});
    XlaOp updates = reshape(operand(c, n, 0), {count, 1});
    XlaOp out = scatter_add(hlo::full(c.builder(), 0.0, {numel(xs), 1}, n.dtype()), flat, updates);
    return reshape(out, xs).id();
  });
}

}  // namespace

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index, Loc loc) {
  OpLocationScope at(loc);
  const int64_t d = normalize_dim(dim, std::max<int64_t>(x.dim(), 1), "aten::gather");
  // A scalar input takes a 0-d or 1-element 1-D index (torch), as a 1-D input of size 1.
  if (x.dim() == 0 && index.dim() <= 1) {
    const Tensor out = gather(reshape(x, {1}), 0, reshape(index, {index.numel()}), loc);
    return index.dim() == 0 ? reshape(out, {}) : out;
  }
  check_index("aten::gather", x, d, index, loc);
  Tensor out = make_op("aten::gather", {x, index}, index.shape(), x.dtype(), {{"dim", d}}, +[](LoweringContext& c, const Node& n) {
    const Shape& xs = n.operand(0)->shape();
    XlaOp flat = flat_positions(operand(c, n, 1), xs, n.int_attr("dim"));
    XlaOp rows = hlo::gather(reshape(operand(c, n, 0), {numel(xs), 1}), flat);
    return reshape(rows, n.shape()).id();
  });
  return record(out, "GatherBackward0", {x, index}, [idx = index.detach(), xs = x.shape(), d](const Tensor& g) {
    return std::vector<Tensor>{scatter_into_zeros(g, d, idx, xs), Tensor()};
  });
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, Loc loc) {
  OpLocationScope at(loc);
  const int64_t d = normalize_dim(dim, std::max<int64_t>(x.dim(), 1), "aten::scatter_add");
  check_index("aten::scatter_add", x, d, index, loc);
  if (src.dtype() != x.dtype()) {
    throw_error("aten::scatter_add", "Expected self.dtype to be equal to src.dtype, got " + torch_name(x.dtype()) + " and " +
                                         torch_name(src.dtype()), loc);
  }
  bool fits = src.dim() == index.dim();
  for (int64_t k = 0; fits && k < index.dim(); ++k) fits = index.shape()[k] <= src.shape()[k];
  if (!fits) {
    throw_error("aten::scatter_add", "Expected index " + shape_str(index.shape()) + " to be no larger than src " + shape_str(src.shape()) +
                                         " in every dimension", loc);
  }
  if (x.dim() == 0) return scatter_add(reshape(x, {1}), 0, reshape(index, {1}), reshape(src, {1}), loc).reshape({});
  // Only src[:index.shape] is added (torch's rule).
  Tensor used = src;
  for (int64_t k = 0; k < src.dim(); ++k) used = slice(used, k, 0, index.shape()[k]);
  Tensor out = make_op("aten::scatter_add", {x, index, used}, x.shape(), x.dtype(), {{"dim", d}}, +[](LoweringContext& c, const Node& n) {
    const Shape& xs = n.shape();
    const int64_t count = numel(n.operand(1)->shape());
    XlaOp flat = reshape(flat_positions(operand(c, n, 1), xs, n.int_attr("dim")), {count});
    XlaOp updates = reshape(operand(c, n, 2), {count, 1});
    return reshape(hlo::scatter_add(reshape(operand(c, n, 0), {numel(xs), 1}), flat, updates), xs).id();
  });
  return record(out, "ScatterAddBackward0", {x, index, used}, [idx = index.detach(), d](const Tensor& g) {
    return std::vector<Tensor>{g, Tensor(), gather(g, d, idx)};
  });
}

std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted, Loc loc) {
  OpLocationScope at(loc);
  (void)sorted;  // always sorted (torch leaves the order of sorted=False unspecified)
  if (x.dim() == 0) {
    auto [values, indices] = topk(reshape(x, {1}), k, normalize_dim(dim, 1, "aten::topk"), largest, sorted, loc);
    return {reshape(values, {}), reshape(indices, {})};
  }
  const int64_t d = normalize_dim(dim, x.dim(), "aten::topk");
  if (k < 0 || k > x.shape()[d]) throw_error("aten::topk", "selected index k out of range: k=" + std::to_string(k) + " for size " + std::to_string(x.shape()[d]) + " at dimension " + std::to_string(d), loc);
  Shape s = x.shape();
  s[d] = k;
  Tensor indices = make_op("aten::topk", {x.detach()}, s, DType::kInt64, {{"k", k}, {"dim", d}, {"largest", int64_t{largest}}},
                           +[](LoweringContext& c, const Node& n) {
                             const std::string config = hlo::CustomCallConfig::format(
                                 {{"k", static_cast<double>(n.int_attr("k"))}, {"dim", static_cast<double>(n.int_attr("dim"))},
                                  {"largest", static_cast<double>(n.int_attr("largest"))}});
                             return hlo::custom_call({operand(c, n, 0)}, hlo::kTopKTarget, config).id();
                           });
  return {gather(x, d, indices, loc), indices};
}

namespace detail {
Tensor index_add_into_zeros(const Tensor& g, const Tensor& index, const Shape& input_shape) {
  return make_op("aten::embedding_dense_backward", {g, index}, input_shape, g.dtype(), {}, +[](LoweringContext& c, const Node& n) {
    return hlo::scatter_add(hlo::full(c.builder(), 0.0, n.shape(), n.dtype()), operand(c, n, 1), operand(c, n, 0)).id();
  });
}
}  // namespace detail

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index, Loc loc) {
  OpLocationScope at(loc);
  if (index.dim() > 1) throw_error("aten::index_select", "index must be 0-D or 1-D, got " + shape_str(index.shape()), loc);
  int64_t d = normalize_dim(dim, x.dim(), "aten::index_select");
  if (x.dim() == 0) {  // torch: a scalar takes one index and stays 0-d
    if (index.numel() != 1) {
      throw_error("aten::index_select", "Index to scalar can have only 1 value, got " + std::to_string(index.numel()) + " value(s)", loc);
    }
    return reshape(index_select(reshape(x, {1}, loc), 0, reshape(index, {1}, loc), loc), {}, loc);
  }
  if (index.dim() == 0) return index_select(x, d, reshape(index, {1}, loc), loc);
  if (d != 0) {
    Tensor moved = transpose(x, 0, d);
    return transpose(index_select(moved, 0, index, loc), 0, d);
  }
  if (index.dtype() != DType::kInt64 && index.dtype() != DType::kInt32) {
    throw_error("aten::index_select", "index must be int64 or int32, got " + torch_name(index.dtype()), loc);
  }
  Shape s = x.shape();
  s[0] = index.shape()[0];
  Tensor out = make_op("aten::index_select", {x, index}, s, x.dtype(), {{"dim", int64_t{0}}},
                       +[](LoweringContext& c, const Node& n) { return hlo::gather(operand(c, n, 0), operand(c, n, 1)).id(); });
  return record(out, "IndexSelectBackward0", {x, index}, [idx = index.detach(), xs = x.shape()](const Tensor& g) {
    return std::vector<Tensor>{index_add_into_zeros(g, idx, xs), Tensor()};
  });
}

}  // namespace lazytrain
