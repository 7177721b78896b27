// Shape and data-movement ops (torch's TensorShape.cpp): reshape/view, permute,
// transpose, unsqueeze/squeeze, expand, slice, cat, stack, split, chunk,
// repeat_interleave; tril/triu; optimization_barrier.
#include <algorithm>

#include "core/error.h"
#include "core/op_location.h"
#include "tensor/lowering.h"

namespace lazytrain {

using namespace detail;
using autograd::record;
using autograd::sum_to;

namespace {

// x with the elements off the band set to 0: col - row <= diagonal (lower) or >= diagonal (upper).
Tensor triangle(const char* op, const Tensor& x, int64_t diagonal, bool lower, Loc loc) {
  if (x.dim() < 2) throw_error(op, "input tensor must have at least 2 dimensions, got " + shape_str(x.shape()), loc);
  auto lower_fn = +[](LoweringContext& c, const Node& n) {
    const Shape& s = n.shape();
    const int64_t r = static_cast<int64_t>(s.size());
    XlaOp offset = iota(c.builder(), s, DType::kInt64, r - 1) - iota(c.builder(), s, DType::kInt64, r - 2);
    const double diagonal = static_cast<double>(n.int_attr("diagonal"));
    XlaOp keep = n.int_attr("lower") ? le(offset, diagonal) : ge(offset, diagonal);
    return select(keep, operand(c, n, 0), 0.0).id();
  };
  Tensor out = make_op(op, {x}, x.shape(), x.dtype(), {{"diagonal", diagonal}, {"lower", int64_t{lower}}}, lower_fn);
  return record(out, lower ? "TrilBackward0" : "TriuBackward0", {x}, [diagonal, lower](const Tensor& g) {
    return std::vector<Tensor>{lower ? tril(g, diagonal) : triu(g, diagonal)};
  });
}

// x cut along d into consecutive slices of the given sizes (split's pieces, cat's gradient).
std::vector<Tensor> split_sizes(const Tensor& x, const std::vector<int64_t>& sizes, int64_t d) {
  std::vector<Tensor> out;
  int64_t offset = 0;
  for (int64_t s : sizes) {
    out.push_back(slice(x, d, offset, offset + s));
    offset += s;
  }
  return out;
}

}  // namespace

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
  return record(out, "CatBackward0", xs, [sizes, d](const Tensor& g) { return split_sizes(g, sizes, d); });
}

Tensor optimization_barrier(const Tensor& x, const Tensor& after, Loc loc) {
  OpLocationScope at(loc);
  Tensor out = make_op("xla::optimization_barrier", {x, after}, x.shape(), x.dtype(), {}, +[](LoweringContext& c, const Node& n) {
    return hlo::optimization_barrier(operand(c, n, 0), operand(c, n, 1)).id();
  });
  return record(out, "OptimizationBarrierBackward", {x}, [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

Tensor tril(const Tensor& x, int64_t diagonal, Loc loc) {
  OpLocationScope at(loc);
  return triangle("aten::tril", x, diagonal, true, loc);
}

Tensor triu(const Tensor& x, int64_t diagonal, Loc loc) {
  OpLocationScope at(loc);
  return triangle("aten::triu", x, diagonal, false, loc);
}

Tensor stack(const std::vector<Tensor>& xs, int64_t dim, Loc loc) {
  OpLocationScope at(loc);
  if (xs.empty()) throw_error("aten::stack", "expects a non-empty TensorList", loc);
  const int64_t d = normalize_dim(dim, xs[0].dim() + 1, "aten::stack");
  std::vector<Tensor> parts;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i].shape() != xs[0].shape()) {
      throw_error("aten::stack", "stack expects each tensor to be equal size, but got " + shape_str(xs[0].shape()) + " at entry 0 and " +
                                     shape_str(xs[i].shape()) + " at entry " + std::to_string(i), loc);
    }
    parts.push_back(unsqueeze(xs[i], d, loc));
  }
  return cat(parts, d, loc);
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim, Loc loc) {
  OpLocationScope at(loc);
  if (x.dim() == 0) throw_error("aten::split", "split expects at least a 1-dimensional tensor", loc);
  const int64_t d = normalize_dim(dim, x.dim(), "aten::split");
  const int64_t size = x.shape()[d];
  if (split_size < 0 || (split_size == 0 && size != 0)) {
    throw_error("aten::split", "split_size can only be 0 if dimension size is 0, but got split_size=" + std::to_string(split_size), loc);
  }
  // torch: max(ceil(size / split_size), 1) pieces, the last one smaller.
  const int64_t pieces = split_size == 0 ? 1 : std::max<int64_t>((size + split_size - 1) / split_size, 1);
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < pieces; ++i) sizes.push_back(std::min(split_size, size - i * split_size));
  return split_sizes(x, sizes, d);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sections, int64_t dim, Loc loc) {
  OpLocationScope at(loc);
  if (x.dim() == 0) throw_error("aten::split_with_sizes", "split expects at least a 1-dimensional tensor", loc);
  const int64_t d = normalize_dim(dim, x.dim(), "aten::split_with_sizes");
  int64_t total = 0;
  for (int64_t s : sections) {
    if (s < 0) throw_error("aten::split_with_sizes", "split_sizes must be non-negative, got " + shape_str(sections), loc);
    total += s;
  }
  if (total != x.shape()[d]) {
    throw_error("aten::split_with_sizes", "split_with_sizes expects split_sizes to sum exactly to " + std::to_string(x.shape()[d]) +
                                              " (input tensor's size at dimension " + std::to_string(d) + "), but got split_sizes=" +
                                              shape_str(sections), loc);
  }
  return split_sizes(x, sections, d);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim, Loc loc) {
  OpLocationScope at(loc);
  if (x.dim() == 0) throw_error("aten::chunk", "chunk expects at least a 1-dimensional tensor", loc);
  if (chunks <= 0) throw_error("aten::chunk", "chunk expects `chunks` to be greater than 0, got: " + std::to_string(chunks), loc);
  const int64_t d = normalize_dim(dim, x.dim(), "aten::chunk");
  const int64_t size = x.shape()[d];
  if (size == 0) return split_sizes(x, std::vector<int64_t>(static_cast<size_t>(chunks), 0), d);
  return split(x, (size + chunks - 1) / chunks, d, loc);
}

Tensor repeat_interleave(const Tensor& x_in, int64_t repeats, std::optional<int64_t> dim, Loc loc) {
  OpLocationScope at(loc);
  if (repeats < 0) throw_error("aten::repeat_interleave", "repeats can not be negative, got " + std::to_string(repeats), loc);
  const Tensor x = dim ? x_in : reshape(x_in, {-1}, loc);
  if (x.dim() == 0) return repeat_interleave(reshape(x, {1}, loc), repeats, 0, loc);
  const int64_t d = normalize_dim(dim.value_or(0), x.dim(), "aten::repeat_interleave");
  // [.., n, ..] -> [.., n, 1, ..] -> [.., n, repeats, ..] -> [.., n * repeats, ..]
  Tensor y = unsqueeze(x, d + 1, loc);
  Shape expanded = y.shape();
  expanded[d + 1] = repeats;
  Shape merged = x.shape();
  merged[d] *= repeats;
  return reshape(expand(y, expanded, loc), merged, loc);
}

}  // namespace lazytrain
