// torch.nn.functional ops: softmax, log_softmax, layer_norm, dropout,
// cross_entropy, linear, embedding.
#include <cmath>

#include "core/error.h"
#include "core/op_location.h"
#include "tensor/autocast.h"
#include "tensor/lowering.h"

namespace lazytrain {

using namespace detail;
using autograd::record;

namespace {

// Broadcasts a value reduced over `dim` back to `shape`.
XlaOp broadcast_back(XlaOp reduced, const Shape& shape, int64_t dim) {
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) if (i != dim) keep.push_back(i);
  return broadcast(reduced, shape, keep);
}

// x - logsumexp(x, dim): log_softmax, and the exponent of softmax, as torch
// computes them: z = x - max(x) first (exact where it matters), then
// z - log(sum(exp(z))) through a logaddexp reduce. Shifting after a combined
// logsumexp would round m + log(s) to f32 first: wrong by ulp(max) for large
// logits, and a row of huge negative values (a fully masked attention row)
// would give all ones instead of a uniform row.
XlaOp minus_logsumexp(XlaOp x, const Shape& s, int64_t dim) {
  XlaOp z = x - broadcast_back(hlo::reduce_max(x, {dim}), s, dim);
  XlaOp lse = hlo::reduce(z, {dim}, hlo::ReduceKind::kLogAddExp);
  return z - broadcast_back(lse, s, dim);
}

void check_float(const Tensor& x, const char* op, Loc loc) {
  if (!is_floating_point(x.dtype())) throw_error(op, "expects a floating-point tensor, got " + torch_name(x.dtype()), loc);
}

// torch.gather(x, 1, index.unsqueeze(1)).squeeze(1) for x [N, C], index int [N]:
// forward reads N values through a gather over the flattened x; the backward is
// a one-hot select (iota == index), which the CPU backend fuses into the
// consumer instead of materialising an N x C scatter.
Tensor pick_along_dim1(const Tensor& x, const Tensor& index) {
  const int64_t n = x.shape()[0];
  Tensor out = make_op("aten::gather", {x, index}, {n}, x.dtype(), {{"dim", int64_t{1}}}, +[](LoweringContext& c, const Node& nd) {
    auto& b = c.builder();
    const Shape& xs = nd.operand(0)->shape();
    DType it = nd.operand(1)->dtype();
    XlaOp x = operand(c, nd, 0), index = operand(c, nd, 1);
    // The index read through a gather of iota(C): the same value, but a value
    // outside [0, C) fails the gather's check when the graph runs (torch raises
    // "Target ... is out of bounds"); unchecked, row*C + index would silently
    // pick another row's element.
    XlaOp checked = reshape(gather(iota(b, {xs[1], 1}, it, 0), index), {xs[0]});
    if (c.partitioned()) {
      // One-hot instead (the form of the backward): with x split along C (a
      // vocabulary-parallel loss) each device sums its own columns and an
      // all-reduce of N values combines them; the flat gather would gather x whole.
      XlaOp hit = eq(iota(b, xs, it, 1), broadcast(checked, xs, {0}));
      return hlo::reduce_sum(select(hit, x, 0.0), {1}).id();
    }
    XlaOp flat = iota(b, {xs[0]}, it, 0) * static_cast<double>(xs[1]) + checked;
    return reshape(gather(reshape(x, {xs[0] * xs[1], 1}), flat), nd.shape()).id();
  });
  return record(out, "GatherBackward0", {x, index}, [idx = index.detach(), xs = x.shape()](const Tensor& g) {
    Tensor gx = make_op("aten::gather_backward", {g, idx}, xs, g.dtype(), {{"dim", int64_t{1}}}, +[](LoweringContext& c, const Node& nd) {
      const Shape& s = nd.shape();
      XlaOp hit = eq(iota(c.builder(), s, nd.operand(1)->dtype(), 1), broadcast(operand(c, nd, 1), s, {0}));
      return select(hit, broadcast(operand(c, nd, 0), s, {0}), 0.0).id();
    });
    return std::vector<Tensor>{gx, Tensor()};
  });
}

}  // namespace

Tensor softmax(const Tensor& x_in, int64_t dim, Loc loc) {
  OpLocationScope at(loc);
  const Tensor x = autocast_to_float(x_in);
  check_float(x, "aten::softmax", loc);
  int64_t d = normalize_dim(dim, x.dim(), "aten::softmax");
  if (x.dim() == 0) return reshape(softmax(reshape(x, {1}, loc), 0, loc), {}, loc);  // a scalar: over itself, as torch
  Tensor out = make_op("aten::softmax", {x}, x.shape(), x.dtype(), {{"dim", d}}, +[](LoweringContext& c, const Node& n) {
    return exp(minus_logsumexp(operand(c, n, 0), n.shape(), n.int_attr("dim"))).id();
  });
  return record(out, "SoftmaxBackward0", {x}, [y = out.detach(), d](const Tensor& g) {
    return std::vector<Tensor>{mul(y, sub(g, sum(mul(g, y), {d}, true)))};
  });
}

Tensor log_softmax(const Tensor& x_in, int64_t dim, Loc loc) {
  OpLocationScope at(loc);
  const Tensor x = autocast_to_float(x_in);
  check_float(x, "aten::_log_softmax", loc);
  int64_t d = normalize_dim(dim, x.dim(), "aten::_log_softmax");
  if (x.dim() == 0) return reshape(log_softmax(reshape(x, {1}, loc), 0, loc), {}, loc);  // a scalar: over itself, as torch
  Tensor out = make_op("aten::_log_softmax", {x}, x.shape(), x.dtype(), {{"dim", d}}, +[](LoweringContext& c, const Node& n) {
    return minus_logsumexp(operand(c, n, 0), n.shape(), n.int_attr("dim")).id();
  });
  return record(out, "LogSoftmaxBackward0", {x}, [y = out.detach(), d](const Tensor& g) {
    return std::vector<Tensor>{sub(g, mul(exp(y), sum(g, {d}, true)))};
  });
}

Tensor layer_norm(const Tensor& x_in, const Shape& normalized_shape, const Tensor& weight_in, const Tensor& bias_in, double eps, Loc loc) {
  OpLocationScope at(loc);
  const Tensor x = autocast_to_float(x_in), weight = autocast_to_float(weight_in), bias = autocast_to_float(bias_in);
  check_float(x, "aten::layer_norm", loc);
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  bool ok = k <= x.dim();
  for (int64_t i = 0; ok && i < k; ++i) ok = x.shape()[x.dim() - k + i] == normalized_shape[i];
  if (!ok) {
    throw_error("aten::layer_norm", "given normalized_shape=" + shape_str(normalized_shape) + ", expected input with shape [*, " +
                                        shape_str(normalized_shape).substr(1) + ", but got input of size " + shape_str(x.shape()), loc);
  }
  if ((weight.defined() && weight.shape() != normalized_shape) || (bias.defined() && bias.shape() != normalized_shape)) {
    throw_error("aten::layer_norm", "weight and bias must have shape " + shape_str(normalized_shape), loc);
  }
  std::vector<int64_t> dims;
  for (int64_t i = x.dim() - k; i < x.dim(); ++i) dims.push_back(i);
  Tensor centered = sub(x, mean(x, dims, true));
  Tensor var = mean(mul(centered, centered), dims, true);
  Tensor y = mul(centered, rsqrt(add(var, eps)));
  if (weight.defined()) y = mul(y, weight);
  if (bias.defined()) y = add(y, bias);
  return y;
}

Tensor rms_norm(const Tensor& x_in, const Shape& normalized_shape, const Tensor& weight_in, std::optional<double> eps, Loc loc) {
  OpLocationScope at(loc);
  const Tensor x = autocast_to_float(x_in), weight = autocast_to_float(weight_in);
  check_float(x, "aten::rms_norm", loc);
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  bool ok = k <= x.dim();
  for (int64_t i = 0; ok && i < k; ++i) ok = x.shape()[x.dim() - k + i] == normalized_shape[i];
  if (!ok) {
    throw_error("aten::rms_norm", "given normalized_shape=" + shape_str(normalized_shape) + ", expected input with shape [*, " +
                                      shape_str(normalized_shape).substr(1) + ", but got input of size " + shape_str(x.shape()), loc);
  }
  if (weight.defined() && weight.shape() != normalized_shape) {
    throw_error("aten::rms_norm", "weight must have shape " + shape_str(normalized_shape) + ", got " + shape_str(weight.shape()), loc);
  }
  // torch.finfo(x.dtype).eps when eps is None.
  const double e = eps ? *eps : x.dtype() == DType::kBFloat16 ? 0.0078125 : x.dtype() == DType::kFloat16 ? 0.0009765625 : 1.1920928955078125e-07;
  std::vector<int64_t> dims;
  for (int64_t i = x.dim() - k; i < x.dim(); ++i) dims.push_back(i);
  // bf16/f16: computed in float32 and cast back, as torch's upcast.
  const Tensor xf = to_dtype(x, DType::kFloat32);
  Tensor y = mul(xf, rsqrt(add(mean(mul(xf, xf), dims, true), e)));
  if (weight.defined()) y = mul(y, to_dtype(weight, DType::kFloat32));
  return to_dtype(y, x.dtype());
}

Tensor dropout(const Tensor& x, double p, bool training, Loc loc) {
  OpLocationScope at(loc);
  check(p >= 0.0 && p <= 1.0, "aten::dropout", "dropout probability has to be between 0 and 1, but got " + std::to_string(p));
  if (!training || p == 0.0) return x;
  if (p == 1.0) return mul(x, 0.0);
  // The uniform draws are f32 whatever x's dtype (the same stream for a bf16 x), on x's device.
  runtime::DeviceGuard on_x(x.device());
  Tensor keep = to_dtype(ge(rand(x.shape(), DType::kFloat32), scalar_operand(p, DType::kFloat32, x.device())), x.dtype());
  return mul(x, mul(keep, 1.0 / (1.0 - p)));
}

Tensor cross_entropy(const Tensor& logits_in, const Tensor& target, int64_t ignore_index, Loc loc) {
  OpLocationScope at(loc);
  const Tensor logits = autocast_to_float(logits_in);
  check_float(logits, "aten::cross_entropy", loc);
  if (logits.dim() == 1) return cross_entropy(unsqueeze(logits, 0), unsqueeze(target, 0), ignore_index, loc);
  if (logits.dim() != 2 || target.dim() != 1 || target.shape()[0] != logits.shape()[0]) {
    throw_error("aten::cross_entropy", "expected logits [N, C] and target [N], got " + shape_str(logits.shape()) + " and " +
                                           shape_str(target.shape()), loc);
  }
  if (target.dtype() != DType::kInt64 && target.dtype() != DType::kInt32) {
    throw_error("aten::cross_entropy", "target must be int64 class indices, got " + torch_name(target.dtype()), loc);
  }
  Tensor valid = ne(target, ignore_index);
  Tensor safe = where(valid, target, constant(0.0, target.dtype()));
  // -log_softmax(logits)[target] = logsumexp(logits - logits[target]): one
  // online pass over the logits, and exact to the loss's own precision (the
  // shift is the target's logit, so the result is the loss itself, never a
  // large logsumexp from which a large logit is subtracted). The shift is
  // detached and its gradient, -one_hot(target), enters through the zero term
  // (shift - picked): autograd would otherwise sum the softmax over the
  // vocabulary again. The gradient, softmax - one_hot(target), is one
  // elementwise pass.
  Tensor picked = pick_along_dim1(logits, safe);
  Tensor shift = picked.detach();
  Tensor nll = add(logsumexp(sub(logits, unsqueeze(shift, 1)), {1}), sub(shift, picked));
  Tensor weight = to_dtype(valid, logits.dtype());
  Tensor total = sum(weight);
  // Every target ignored: PyTorch's loss is NaN (0/0) but its gradient is 0. Divide by 1
  // instead of 0 so that the gradient stays 0, and add a NaN that carries no gradient.
  Tensor has_targets = gt(total, 0.0);
  Tensor zero = constant(0.0, logits.dtype());
  Tensor loss = div(sum(mul(nll, weight)), where(has_targets, total, constant(1.0, logits.dtype())));
  return add(loss, where(has_targets, zero, constant(std::nan(""), logits.dtype())));
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Loc loc) {
  OpLocationScope at(loc);
  // Under autocast all three are cast, as torch's linear: the output is bf16.
  Tensor y = matmul(autocast_to_lower(x), transpose(autocast_to_lower(weight), 0, 1, loc), loc);
  return bias.defined() ? add(y, autocast_to_lower(bias), 1.0, loc) : y;
}

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx, Loc loc) {
  OpLocationScope at(loc);
  if (weight.dim() != 2) throw_error("aten::embedding", "weight must be 2-D [num_embeddings, embedding_dim], got " + shape_str(weight.shape()), loc);
  if (indices.dtype() != DType::kInt64 && indices.dtype() != DType::kInt32) {
    throw_error("aten::embedding", "indices must be int64 or int32, got " + torch_name(indices.dtype()), loc);
  }
  Shape s = indices.shape();
  s.push_back(weight.shape()[1]);
  Tensor out = make_op("aten::embedding", {weight, indices}, s, weight.dtype(), {},
                       +[](LoweringContext& c, const Node& n) { return hlo::gather(operand(c, n, 0), operand(c, n, 1)).id(); });
  return record(out, "EmbeddingBackward0", {weight, indices}, [idx = indices.detach(), ws = weight.shape(), padding_idx](const Tensor& g) {
    Tensor gg = padding_idx < 0 ? g : masked_fill(g, unsqueeze(eq(idx, padding_idx), -1), 0.0);
    return std::vector<Tensor>{index_add_into_zeros(gg, idx, ws), Tensor()};
  });
}

}  // namespace lazytrain
