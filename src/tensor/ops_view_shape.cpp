// Shape and data-movement ops: reshape, permute, expand, slice, cat, index_select.
#include <algorithm>

#include "core/error.h"
#include "core/op_location.h"
#include "tensor/lowering.h"

namespace lazytrain {

using namespace detail;
using autograd::record;
using autograd::sum_to;

Tensor reshape(const Tensor& x, Shape shape, Loc loc) {
  OpLocationScope at(loc);
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) throw_error("aten::view", "only one dimension can be inferred", loc);
      infer = static_cast<int64_t>(i);
    } else {
      if (shape[i] < 0) throw_error("aten::view", "invalid shape dimension " + std::to_string(shape[i]), loc);
      known *= shape[i];
    }
  }
  if (infer >= 0 && known > 0) shape[infer] = x.numel() / known;
  if (numel(shape) != x.numel() || (infer >= 0 && known == 0)) {
    throw_error("aten::view", "shape " + shape_str(shape) + " is invalid for input of size " + std::to_string(x.numel()) +
                                  " (input shape " + shape_str(x.shape()) + ")", loc);
  }
  if (shape == x.shape()) return x;
  Tensor out = make_op("aten::view", {x}, shape, x.dtype(), {{"output_size", shape}},
                       +[](LoweringContext& c, const Node& n) { return hlo::reshape(operand(c, n, 0), n.shape()).id(); });
  return record(out, "ViewBackward0", {x}, [s = x.shape()](const Tensor& g) { return std::vector<Tensor>{reshape(g, s)}; });
}

Tensor view(const Tensor& x, Shape shape, Loc loc) {
  OpLocationScope at(loc);
  return reshape(x, std::move(shape), loc);
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims, Loc loc) {
  OpLocationScope at(loc);
  const int64_t r = x.dim();
  if (static_cast<int64_t>(dims.size()) != r) {
    throw_error("aten::permute", "number of dims don't match: input has " + std::to_string(r) + " dims, got " + std::to_string(dims.size()), loc);
  }
  std::vector<int64_t> perm;
  Shape shape;
  for (int64_t d : dims) {
    int64_t nd = normalize_dim(d, r, "aten::permute");
    if (std::find(perm.begin(), perm.end(), nd) != perm.end()) throw_error("aten::permute", "repeated dim " + std::to_string(d), loc);
    perm.push_back(nd);
    shape.push_back(x.shape()[nd]);
  }
  bool identity = true;
  for (int64_t i = 0; i < r; ++i) identity = identity && perm[i] == i;
  if (identity) return x;
  Tensor out = make_op("aten::permute", {x}, shape, x.dtype(), {{"dims", perm}},
                       +[](LoweringContext& c, const Node& n) { return hlo::transpose(operand(c, n, 0), n.ints_attr("dims")).id(); });
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  return record(out, "PermuteBackward0", {x}, [inverse](const Tensor& g) { return std::vector<Tensor>{permute(g, inverse)}; });
}

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1, Loc loc) {
  OpLocationScope at(loc);
  const int64_t r = x.dim();
  if (r < 2 && dim0 == 0 && dim1 == 1) return x;  // Tensor.t() of a vector
  const int64_t d0 = normalize_dim(dim0, r, "aten::transpose"), d1 = normalize_dim(dim1, r, "aten::transpose");
  if (r == 0) return x;  // torch: a scalar transposes to itself (dims 0 and -1 only)
  std::vector<int64_t> perm(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) perm[i] = i;
  std::swap(perm[d0], perm[d1]);
  return permute(x, perm, loc);
}

Tensor unsqueeze(const Tensor& x, int64_t dim, Loc loc) {
  OpLocationScope at(loc);
  int64_t d = normalize_dim(dim, x.dim() + 1, "aten::unsqueeze");
  Shape s = x.shape();
  s.insert(s.begin() + d, 1);
  return reshape(x, s, loc);
}

Tensor squeeze(const Tensor& x, int64_t dim, Loc loc) {
  OpLocationScope at(loc);
  int64_t d = normalize_dim(dim, x.dim(), "aten::squeeze");
  if (x.dim() == 0 || x.shape()[d] != 1) return x;
  Shape s = x.shape();
  s.erase(s.begin() + d);
  return reshape(x, s, loc);
}

Tensor expand(const Tensor& x, const Shape& shape, Loc loc) {
  OpLocationScope at(loc);
  if (shape.size() < x.shape().size()) {
    throw_error("aten::expand", "the number of sizes provided (" + std::to_string(shape.size()) +
                                    ") must be greater or equal to the number of dimensions in the tensor (" + std::to_string(x.dim()) + ")", loc);
  }
  Shape target = shape;
  size_t lead = shape.size() - x.shape().size();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i >= lead) {
      int64_t have = x.shape()[i - lead];
      if (target[i] == -1) target[i] = have;
      if (have != target[i] && have != 1) {
        throw_error("aten::expand", "the expanded size of the tensor (" + std::to_string(target[i]) + ") must match the existing size (" +
                                        std::to_string(have) + ") at non-singleton dimension " + std::to_string(i) + ". Target sizes: " + shape_str(shape) +
                                        ". Tensor sizes: " + shape_str(x.shape()), loc);
      }
    } else if (target[i] < 0) {
      throw_error("aten::expand", "-1 is not allowed in a leading, non-existing dimension", loc);
    }
  }
  if (target == x.shape()) return x;
  Tensor out = make_op("aten::expand", {x}, target, x.dtype(), {{"size", target}},
                       +[](LoweringContext& c, const Node& n) { return hlo::broadcast_to(operand(c, n, 0), n.shape()).id(); });
  return record(out, "ExpandBackward0", {x}, [s = x.shape()](const Tensor& g) { return std::vector<Tensor>{sum_to(g, s)}; });
}

Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step, Loc loc) {
  OpLocationScope at(loc);
  if (step <= 0) throw_error("aten::slice", "slice step must be positive, got " + std::to_string(step), loc);
  int64_t d = normalize_dim(dim, x.dim(), "aten::slice");
  int64_t size = x.shape()[d];
  auto clamp = [size](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + size : v, 0, size); };
  start = clamp(start);
  end = std::max(start, clamp(end));
  if (start == 0 && end == size && step == 1) return x;
  Shape s = x.shape();
  s[d] = (end - start + step - 1) / step;
  Tensor out = make_op("aten::slice", {x}, s, x.dtype(), {{"dim", d}, {"start", start}, {"end", end}, {"step", step}},
                       +[](LoweringContext& c, const Node& n) {
                         const Shape& in = n.operand(0)->shape();
                         std::vector<int64_t> starts(in.size(), 0), limits = in, strides(in.size(), 1);
                         int64_t dd = n.int_attr("dim");
                         starts[dd] = n.int_attr("start");
                         limits[dd] = n.int_attr("end");
                         strides[dd] = n.int_attr("step");
                         return hlo::slice(operand(c, n, 0), starts, limits, strides).id();
                       });
  return record(out, "SliceBackward0", {x}, [xs = x.shape(), d, start, end, step](const Tensor& g) {
    // Place g back into zeros of the input's shape: rows of g go to start + i*step.
    Tensor gg = g;
    if (step != 1) {
      // Interleave with zeros: [.., n, ..] -> [.., n, step, ..] -> [.., n*step, ..], then trim.
      Shape with_step = g.shape();
      with_step.insert(with_step.begin() + d + 1, 1);
      Tensor col = reshape(g, with_step);
      Shape zshape = with_step;
      zshape[d + 1] = step - 1;
      col = cat({col, zeros(zshape, g.dtype())}, d + 1);
      Shape merged = g.shape();
      merged[d] *= step;
      gg = slice(reshape(col, merged), d, 0, std::min<int64_t>(merged[d], xs[d] - start));
    }
    std::vector<Tensor> parts;
    Shape before = xs, after = xs;
    before[d] = start;
    after[d] = xs[d] - start - gg.shape()[d];
    if (before[d] > 0) parts.push_back(zeros(before, g.dtype()));
    parts.push_back(gg);
    if (after[d] > 0) parts.push_back(zeros(after, g.dtype()));
    (void)end;
    return std::vector<Tensor>{parts.size() == 1 ? parts[0] : cat(parts, d)};
  });
}

Tensor cat(const std::vector<Tensor>& xs, int64_t dim, Loc loc) {
  OpLocationScope at(loc);
  if (xs.empty()) throw_error("aten::cat", "expected a non-empty list of Tensors", loc);
  // torch skips legacy empty 1-D tensors ([0]) beside others; the result dtype still counts them.
  auto legacy_empty = [](const Tensor& x) { return x.dim() == 1 && x.shape()[0] == 0; };
  if (std::any_of(xs.begin(), xs.end(), legacy_empty) && !std::all_of(xs.begin(), xs.end(), legacy_empty)) {
    std::vector<Tensor> kept;
    DType all = xs[0].dtype();
    for (const Tensor& x : xs) {
      all = promote_types(all, x.dtype());
      if (!legacy_empty(x)) kept.push_back(x);
    }
    Tensor out = cat(kept, dim, loc);
    return out.dtype() == all ? out : to_dtype(out, all);
  }
  int64_t d = normalize_dim(dim, xs[0].dim(), "aten::cat");
  Shape shape = xs[0].shape();
  DType t = xs[0].dtype();
  std::vector<int64_t> sizes = {shape[d]};
  for (size_t i = 1; i < xs.size(); ++i) {
    const Shape& s = xs[i].shape();
    bool ok = s.size() == shape.size();
    for (size_t k = 0; ok && k < s.size(); ++k) ok = static_cast<int64_t>(k) == d || s[k] == shape[k];
    if (!ok) throw_error("aten::cat", "sizes of tensors must match except in dimension " + std::to_string(d) + ": got " +
                                          shape_str(shape) + " and " + shape_str(s) + " (tensor " + std::to_string(i) + ")", loc);
    shape[d] += s[d];
    sizes.push_back(s[d]);
    t = promote_types(t, xs[i].dtype());
  }
  Tensor out = make_op("aten::cat", xs, shape, t, {{"dim", d}}, +[](LoweringContext& c, const Node& n) {
    std::vector<XlaOp> parts;
    for (size_t i = 0; i < n.operands().size(); ++i) parts.push_back(convert(operand(c, n, i), n.dtype()));
    return hlo::concatenate(parts, n.int_attr("dim")).id();
  });
  return record(out, "CatBackward0", xs, [sizes, d](const Tensor& g) {
    std::vector<Tensor> grads;
    int64_t offset = 0;
    for (int64_t s : sizes) {
      grads.push_back(slice(g, d, offset, offset + s));
      offset += s;
    }
    return grads;
  });
}

namespace {
// Scatter-add of g rows into zeros [num, rest...] at `index` (embedding/index_select backward).
Tensor index_add_into_zeros(const Tensor& g, const Tensor& index, const Shape& input_shape) {
  return make_op("aten::embedding_dense_backward", {g, index}, input_shape, g.dtype(), {}, +[](LoweringContext& c, const Node& n) {
    return hlo::scatter_add(hlo::full(c.builder(), 0.0, n.shape(), n.dtype()), operand(c, n, 1), operand(c, n, 0)).id();
  });
}
}  // namespace

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

Tensor optimization_barrier(const Tensor& x, const Tensor& after, Loc loc) {
  OpLocationScope at(loc);
  Tensor out = make_op("xla::optimization_barrier", {x, after}, x.shape(), x.dtype(), {}, +[](LoweringContext& c, const Node& n) {
    return hlo::optimization_barrier(operand(c, n, 0), operand(c, n, 1)).id();
  });
  return record(out, "OptimizationBarrierBackward", {x}, [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

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
