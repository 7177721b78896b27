// Shape ops built on the data-movement ops: cumsum, tril/triu, stack, split,
// chunk, repeat_interleave.
#include <algorithm>

#include "core/error.h"
#include "core/op_location.h"
#include "tensor/lowering.h"

namespace lazytrain {

using namespace detail;
using autograd::record;

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
