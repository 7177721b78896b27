// Reductions (sum, mean, amax, amin, prod, any, all, logsumexp, argmax, argmin)
// and the cumulative sum (torch's ReduceOps.cpp holds cumsum too).
#include <algorithm>

#include "core/error.h"
#include "core/op_location.h"
#include "tensor/lowering.h"

namespace lazytrain {

using namespace detail;
using autograd::record;
using autograd::sum_to;

namespace {

std::vector<int64_t> normalize_dims(const std::vector<int64_t>& dims, int64_t rank, const char* op,
                                    Loc loc = OpLocation()) {
  std::vector<int64_t> out;
  if (dims.empty()) {
    for (int64_t i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  for (int64_t d : dims) {
    const int64_t n = normalize_dim(d, rank, op);
    // torch refuses a dim named twice (sum((0, 0)) would otherwise sum once).
    if (std::find(out.begin(), out.end(), n) != out.end()) throw_error(op, "dim " + std::to_string(n) + " appears multiple times in the list of dims", loc);
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  if (rank == 0) out.clear();
  return out;
}

// max/min-like reductions have no identity: torch refuses an empty reduced dim
// (a reduction over every dim of an empty tensor names no dim).
void check_nonempty(const Tensor& x, const std::vector<int64_t>& given, const std::vector<int64_t>& dims, const char* op, Loc loc) {
  if (given.empty() && x.numel() == 0) {
    throw_error(op, "Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.", loc);
  }
  for (int64_t d : dims) {
    if (x.shape()[d] == 0) throw_error(op, "Expected reduction dim " + std::to_string(d) + " to have non-zero size.", loc);
  }
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
  return reshape(hlo::reduce(convert(operand(c, n, 0), n.dtype()), n.ints_attr("dims"), K), n.shape()).id();
}

}  // namespace

Tensor sum(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  OpLocationScope at(loc);
  (void)loc;
  std::vector<int64_t> d = normalize_dims(dims, x.dim(), "aten::sum", loc);
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
  std::vector<int64_t> d = normalize_dims(dims, x.dim(), "aten::mean", loc);
  int64_t count = 1;
  for (int64_t i : d) count *= x.shape()[i];
  // bf16/f16 accumulate in float32 and round once (torch's mean): a sum of
  // 1000 threes rounded to bf16 first would make the mean 3.015625.
  if (x.dtype() == DType::kBFloat16 || x.dtype() == DType::kFloat16) {
    return to_dtype(div(sum(to_dtype(x, DType::kFloat32), d, keepdim, loc), static_cast<double>(count)), x.dtype());
  }
  return div(sum(x, d, keepdim, loc), static_cast<double>(count));
}

Tensor amax(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  OpLocationScope at(loc);
  (void)loc;
  std::vector<int64_t> d = normalize_dims(dims, x.dim(), "aten::amax", loc);
  check_nonempty(x, dims, d, "aten::amax", loc);
  Tensor out = make_op("aten::amax", {x}, reduced_shape(x.shape(), d, keepdim), x.dtype(), {{"dims", d}, {"keepdim", int64_t{keepdim}}},
                       lower_reduce<hlo::ReduceKind::kMax>);
  return record(out, "AmaxBackward0", {x}, [x = x.detach(), y = out.detach(), kept = reduced_shape(x.shape(), d, true), d](const Tensor& g) {
    // The gradient is shared evenly between tied maxima, as PyTorch does.
    Tensor mask = to_dtype(eq(x, reshape(y, kept)), g.dtype());
    Tensor count = sum(mask, d, true);
    return std::vector<Tensor>{div(mul(expand(reshape(g, kept), x.shape()), mask), count)};
  });
}

Tensor amin(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  OpLocationScope at(loc);
  std::vector<int64_t> d = normalize_dims(dims, x.dim(), "aten::amin", loc);
  check_nonempty(x, dims, d, "aten::amin", loc);
  // A reduce of its own, never -amax(-x): negation is wrong for bool and overflows at INT64_MIN.
  Tensor out = make_op("aten::amin", {x}, reduced_shape(x.shape(), d, keepdim), x.dtype(), {{"dims", d}, {"keepdim", int64_t{keepdim}}},
                       lower_reduce<hlo::ReduceKind::kMin>);
  return record(out, "AminBackward0", {x}, [x = x.detach(), y = out.detach(), kept = reduced_shape(x.shape(), d, true), d](const Tensor& g) {
    Tensor mask = to_dtype(eq(x, reshape(y, kept)), g.dtype());
    Tensor count = sum(mask, d, true);
    return std::vector<Tensor>{div(mul(expand(reshape(g, kept), x.shape()), mask), count)};
  });
}

Tensor prod(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  OpLocationScope at(loc);
  std::vector<int64_t> d = normalize_dims(dims, x.dim(), "aten::prod", loc);
  DType t = is_floating_point(x.dtype()) ? x.dtype() : DType::kInt64;
  Tensor out = make_op("aten::prod", {x}, reduced_shape(x.shape(), d, keepdim), t, {{"dims", d}, {"keepdim", int64_t{keepdim}}},
                       lower_reduce<hlo::ReduceKind::kMul>);
  if (!is_floating_point(t)) return out;
  return record(out, "ProdBackward1", {x}, [x = x.detach(), kept = reduced_shape(x.shape(), d, true), d](const Tensor& g) {
    // d prod / d x_i is the product of the others, also where x_i == 0: with no
    // zero it is prod / x_i; with one zero only that element gets the product
    // of the rest; with two or more every element gets 0 (torch's rule).
    Tensor zero = eq(x, 0.0);
    Tensor zeros_in_row = sum(to_dtype(zero, DType::kInt64), d, true);
    Tensor nonzero_prod = prod(where(zero, ones({}, x.dtype()), x), d, true);
    Tensor gx = expand(reshape(g, kept), x.shape());
    Tensor none_zero = div(nonzero_prod, where(zero, ones({}, x.dtype()), x));
    Tensor one_zero = where(zero, expand(nonzero_prod, x.shape()), zeros({}, x.dtype()));
    Tensor z = expand(zeros_in_row, x.shape());
    Tensor local = where(eq(z, 0.0), none_zero, where(eq(z, 1.0), one_zero, zeros({}, x.dtype())));
    return std::vector<Tensor>{mul(gx, local)};
  });
}

namespace {
// torch.any / torch.all: x != 0 reduced with or (max) / and (min) into bool.
template <hlo::ReduceKind K>
Tensor bool_reduce(const char* op, const Tensor& x, const std::vector<int64_t>& dims, bool keepdim, Loc loc) {
  OpLocationScope at(loc);
  std::vector<int64_t> d = normalize_dims(dims, x.dim(), op, loc);
  Tensor truth = x.dtype() == DType::kBool ? x.detach() : ne(x.detach(), 0.0);
  return make_op(op, {truth}, reduced_shape(x.shape(), d, keepdim), DType::kBool, {{"dims", d}, {"keepdim", int64_t{keepdim}}},
                 lower_reduce<K>);
}
}  // namespace

Tensor any(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  return bool_reduce<hlo::ReduceKind::kMax>("aten::any", x, dims, keepdim, loc);
}

Tensor all(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  return bool_reduce<hlo::ReduceKind::kMin>("aten::all", x, dims, keepdim, loc);
}

Tensor logsumexp(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  OpLocationScope at(loc);
  if (!is_floating_point(x.dtype())) throw_error("aten::logsumexp", "expects a floating-point tensor, got " + torch_name(x.dtype()), loc);
  std::vector<int64_t> d = normalize_dims(dims, x.dim(), "aten::logsumexp", loc);
  Tensor out = make_op("aten::logsumexp", {x}, reduced_shape(x.shape(), d, keepdim), x.dtype(), {{"dims", d}, {"keepdim", int64_t{keepdim}}},
                       lower_reduce<hlo::ReduceKind::kLogAddExp>);
  return record(out, "LogsumexpBackward0", {x}, [x = x.detach(), y = out.detach(), kept = reduced_shape(x.shape(), d, true)](const Tensor& g) {
    return std::vector<Tensor>{mul(expand(reshape(g, kept), x.shape()), exp(sub(x, reshape(y, kept))))};
  });
}

namespace {

// Index of the first maximum (K = kMax) / minimum (kMin) along attr "dim". A
// NaN counts as the extreme, as in torch.max: a row holding one gives its first
// NaN's index (comparing with the row's max alone would match nothing and
// give size(dim), an index out of range).
template <hlo::ReduceKind K>
int lower_arg_extreme(LoweringContext& c, const Node& n) {
  XlaOp x = operand(c, n, 0);
  const Shape& s = n.operand(0)->shape();
  const int64_t dd = n.int_attr("dim");
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) if (i != dd) keep.push_back(i);
  XlaOp hit = eq(x, broadcast(hlo::reduce(x, {dd}, K), s, keep));
  if (is_floating_point(n.operand(0)->dtype())) {
    XlaOp nan = ne(x, x);
    // Reduced as int32, not pred: a split dim makes this reduce an all-reduce, which takes no pred.
    XlaOp nans_in_row = hlo::reduce_max(convert(nan, DType::kInt32), {dd});
    hit = select(gt(broadcast(nans_in_row, s, keep), 0.0), nan, hit);
  }
  XlaOp idx = iota(c.builder(), s, DType::kInt64, dd);
  XlaOp first = hlo::reduce_min(select(hit, idx, static_cast<double>(s[dd])), {dd});
  return reshape(first, n.shape()).id();
}

template <hlo::ReduceKind K>
Tensor arg_extreme(const char* op, const Tensor& x, int64_t dim, bool keepdim, Loc loc) {
  OpLocationScope at(loc);
  if (x.dtype() == DType::kBool) throw_error(op, "does not support bool input", loc);
  if (x.dim() == 0) {
    normalize_dim(dim, 0, op);
    return reshape(arg_extreme<K>(op, reshape(x, {1}), 0, false, loc), {});
  }
  const int64_t d = normalize_dim(dim, x.dim(), op);
  check_nonempty(x, {d}, {d}, op, loc);
  return make_op(op, {x.detach()}, reduced_shape(x.shape(), {d}, keepdim), DType::kInt64, {{"dim", d}, {"keepdim", int64_t{keepdim}}},
                 lower_arg_extreme<K>);
}

}  // namespace

Tensor argmax(const Tensor& x, int64_t dim, bool keepdim, Loc loc) { return arg_extreme<hlo::ReduceKind::kMax>("aten::argmax", x, dim, keepdim, loc); }

Tensor argmin(const Tensor& x, int64_t dim, bool keepdim, Loc loc) { return arg_extreme<hlo::ReduceKind::kMin>("aten::argmin", x, dim, keepdim, loc); }

namespace {

// Inclusive prefix sums of x along dim (reverse: suffix sums): Hillis-Steele,
// ceil(log2 n) steps of x + x shifted by 1, 2, 4, ... (slice + concatenate with
// zeros), each fusible, exact for integers.
XlaOp scan_add(XlaOp x, int64_t dim, bool reverse) {
  const Shape s = x.shape();
  const int64_t n = s[dim];
  for (int64_t shift = 1; shift < n; shift *= 2) {
    std::vector<int64_t> starts(s.size(), 0), limits = s, strides(s.size(), 1);
    Shape zs = s;
    zs[dim] = shift;
    const XlaOp zeros = full(x.builder(), 0.0, zs, x.dtype());
    if (!reverse) {
      limits[dim] = n - shift;
      x = x + hlo::concatenate({zeros, slice(x, starts, limits, strides)}, dim);
    } else {
      starts[dim] = shift;
      x = x + hlo::concatenate({slice(x, starts, limits, strides), zeros}, dim);
    }
  }
  return x;
}

Tensor scan(const Tensor& x, int64_t dim, bool reverse) {
  return make_op(reverse ? "aten::cumsum_backward" : "aten::cumsum", {x}, x.shape(), x.dtype(), {{"dim", dim}},
                 reverse ? +[](LoweringContext& c, const Node& n) { return scan_add(operand(c, n, 0), n.int_attr("dim"), true).id(); }
                         : +[](LoweringContext& c, const Node& n) { return scan_add(operand(c, n, 0), n.int_attr("dim"), false).id(); });
}

}  // namespace

Tensor cumsum(const Tensor& x_in, int64_t dim, Loc loc) {
  OpLocationScope at(loc);
  const int64_t d = normalize_dim(dim, std::max<int64_t>(x_in.dim(), 1), "aten::cumsum");
  // torch: integer and bool inputs accumulate in int64.
  const Tensor x = is_floating_point(x_in.dtype()) ? x_in : to_dtype(x_in, DType::kInt64);
  if (x.dim() == 0) return mul(x, 1);
  Tensor out = scan(x, d, false);
  if (!is_floating_point(x.dtype())) return out;
  return record(out, "CumsumBackward0", {x}, [d](const Tensor& g) { return std::vector<Tensor>{scan(g, d, true)}; });
}

}  // namespace lazytrain
