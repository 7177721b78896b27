// init_ops: the functions of tensor/ops.h under torch's names, and the
// Tensor methods and operators that spell them (x @ w, x + 1, x.sum(dim=-1)).
// Each opens PyOp first, so the op's IR nodes and errors name the user's line.
#include <algorithm>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "core/error.h"
#include "tensor/tensor.h"

namespace lazytrain::python {
namespace {

using namespace nb::literals;

// dim=None (every dim), an int, or a sequence of ints.
std::vector<int64_t> dims_of(nb::handle dim) {
  if (dim.is_none()) return {};
  if (nb::isinstance<nb::int_>(dim)) return {nb::cast<int64_t>(dim)};
  return nb::cast<std::vector<int64_t>>(dim);
}

// view(2, 3), view((2, 3)) and view([2, 3]) alike (torch's *shape).
Shape shape_of(const nb::args& args, const char* what) {
  if (args.size() == 1 && !nb::isinstance<nb::int_>(args[0])) return nb::cast<Shape>(args[0]);
  Shape shape;
  for (nb::handle a : args) {
    if (!nb::isinstance<nb::int_>(a)) throw nb::type_error((std::string(what) + ": sizes must be ints").c_str());
    shape.push_back(nb::cast<int64_t>(a));
  }
  return shape;
}

// torch's squeeze: dim None squeezes every size-1 dim; an int or a tuple
// those of them that have size 1 (others stay, as torch).
Tensor squeeze_dims(const Tensor& x, nb::handle dim) {
  std::vector<int64_t> dims;
  if (dim.is_none()) {
    for (int64_t d = 0; d < x.dim(); ++d) dims.push_back(d);
  } else {
    for (int64_t d : dims_of(dim)) dims.push_back(normalize_dim(d, std::max<int64_t>(x.dim(), 1), "aten::squeeze"));
    if (nb::isinstance<nb::int_>(dim) && x.dim() > 0) return squeeze(x, dims[0]);
  }
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  Tensor out = x;
  for (auto d = dims.rbegin(); d != dims.rend(); ++d) {
    if (*d < out.dim() && out.shape()[*d] == 1) out = squeeze(out, *d);
  }
  return out;
}

// x cast to dtype first (softmax(dtype=), cumsum(dtype=): torch casts the input).
Tensor cast_first(const Tensor& x, std::optional<DType> dtype) { return dtype ? to_dtype(x, *dtype) : x; }
// cumsum(dtype=int32) stays int32 (the op alone accumulates integers in int64).
Tensor cumsum_as(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  Tensor out = cumsum(cast_first(x, dtype), dim);
  return dtype ? to_dtype(out, *dtype) : out;
}

// torch.clamp's two forms: number bounds (clamp), or tensor bounds that broadcast and
// promote as minimum(maximum(x, min), max) does (NaN in any of them gives NaN).
Tensor clamp_bounds(const Tensor& x, nb::handle lo, nb::handle hi) {
  PyOp op;
  const bool tensors = nb::isinstance<Tensor>(lo) || nb::isinstance<Tensor>(hi);
  if (!tensors) {
    auto number = [](nb::handle v) { return v.is_none() ? std::optional<double>() : std::optional<double>(nb::cast<double>(v)); };
    return clamp(x, number(lo), number(hi));
  }
  if ((!lo.is_none() && !nb::isinstance<Tensor>(lo)) || (!hi.is_none() && !nb::isinstance<Tensor>(hi))) {
    throw nb::type_error("clamp(): min and max must both be tensors or both be numbers");
  }
  Tensor out = x;
  if (!lo.is_none()) out = maximum(out, nb::cast<const Tensor&>(lo));
  if (!hi.is_none()) out = minimum(out, nb::cast<const Tensor&>(hi));
  return out;
}

// torch.nonzero(input, as_tuple=): the [n, ndim] indices, or one 1-D column per dim (a
// 0-d input counts as 1-D there, as in torch).
nb::object nonzero_as(const Tensor& x, bool as_tuple) {
  PyOp op;
  if (!as_tuple) return nb::cast(nonzero(x));
  const Tensor nz = nonzero(x.dim() == 0 ? reshape(x, {1}) : x);
  const int64_t n = nz.shape()[0];
  nb::list columns;
  for (int64_t i = 0; i < nz.shape()[1]; ++i) columns.append(reshape(slice(nz, 1, i, i + 1), {n}));
  return nb::tuple(columns);
}

template <typename Class>
void def_methods(Class& c) {
  c.def("to", [](const Tensor& x, DType d) { PyOp op; return x.to(d); }, "dtype"_a)
      .def("to", [](const Tensor& x, const runtime::Device& d) { PyOp op; return x.to(d); }, "device"_a)
      .def("float", [](const Tensor& x, nb::handle) { PyOp op; return x.to(DType::kFloat32); }, nb::kw_only(), "memory_format"_a = nb::none())
      .def("bfloat16", [](const Tensor& x, nb::handle) { PyOp op; return x.to(DType::kBFloat16); }, nb::kw_only(), "memory_format"_a = nb::none())
      .def("half", [](const Tensor& x, nb::handle) { PyOp op; return x.to(DType::kFloat16); }, nb::kw_only(), "memory_format"_a = nb::none())
      .def("long", [](const Tensor& x, nb::handle) { PyOp op; return x.to(DType::kInt64); }, nb::kw_only(), "memory_format"_a = nb::none())
      .def("int", [](const Tensor& x, nb::handle) { PyOp op; return x.to(DType::kInt32); }, nb::kw_only(), "memory_format"_a = nb::none())
      .def("bool", [](const Tensor& x, nb::handle) { PyOp op; return x.to(DType::kBool); }, nb::kw_only(), "memory_format"_a = nb::none())
      .def("view", [](const Tensor& x, nb::args shape) { PyOp op; return view(x, shape_of(shape, "view")); })
      .def("reshape", [](const Tensor& x, nb::args shape) { PyOp op; return reshape(x, shape_of(shape, "reshape")); })
      .def("expand", [](const Tensor& x, nb::args shape) { PyOp op; return expand(x, shape_of(shape, "expand")); })
      .def("permute", [](const Tensor& x, nb::args dims) { PyOp op; return permute(x, shape_of(dims, "permute")); })
      .def("transpose", [](const Tensor& x, int64_t d0, int64_t d1) { PyOp op; return transpose(x, d0, d1); }, "dim0"_a, "dim1"_a)
      .def("t", [](const Tensor& x) { PyOp op; return transpose(x, 0, 1); })
      .def("unsqueeze", [](const Tensor& x, int64_t d) { PyOp op; return unsqueeze(x, d); }, "dim"_a)
      .def("squeeze", [](const Tensor& x, nb::handle d) { PyOp op; return squeeze_dims(x, d); }, "dim"_a = nb::none())
      .def("sum", [](const Tensor& x, nb::handle dim, bool keepdim) { PyOp op; return sum(x, dims_of(dim), keepdim); },
           "dim"_a = nb::none(), "keepdim"_a = false)
      .def("mean", [](const Tensor& x, nb::handle dim, bool keepdim) { PyOp op; return mean(x, dims_of(dim), keepdim); },
           "dim"_a = nb::none(), "keepdim"_a = false)
      .def("amax", [](const Tensor& x, nb::handle dim, bool keepdim) { PyOp op; return amax(x, dims_of(dim), keepdim); },
           "dim"_a = nb::none(), "keepdim"_a = false)
      .def("logsumexp", [](const Tensor& x, nb::handle dim, bool keepdim) { PyOp op; return logsumexp(x, dims_of(dim), keepdim); },
           "dim"_a, "keepdim"_a = false)
      .def("argmax", [](const Tensor& x, int64_t dim, bool keepdim) { PyOp op; return argmax(x, dim, keepdim); }, "dim"_a,
           "keepdim"_a = false)
      .def("softmax", [](const Tensor& x, int64_t dim, std::optional<DType> dtype) { PyOp op; return softmax(cast_first(x, dtype), dim); },
           "dim"_a, "dtype"_a = nb::none())
      .def("log_softmax", [](const Tensor& x, int64_t dim, std::optional<DType> dtype) {
        PyOp op;
        return log_softmax(cast_first(x, dtype), dim);
      }, "dim"_a, "dtype"_a = nb::none())
      .def("matmul", [](const Tensor& a, const Tensor& b) { PyOp op; return matmul(a, b); }, "other"_a)
      .def("masked_fill", [](const Tensor& x, const Tensor& mask, double v) { PyOp op; return masked_fill(x, mask, v); }, "mask"_a,
           "value"_a)
      .def("index_select", [](const Tensor& x, int64_t dim, const Tensor& i) { PyOp op; return index_select(x, dim, i); }, "dim"_a,
           "index"_a)
      .def("_slice", [](const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
        PyOp op;
        return slice(x, dim, start, end, step);
      });
#define LAZYTRAIN_UNARY_METHOD(name) .def(#name, [](const Tensor& x) { PyOp op; return name(x); })
  c LAZYTRAIN_UNARY_METHOD(exp) LAZYTRAIN_UNARY_METHOD(log) LAZYTRAIN_UNARY_METHOD(sqrt) LAZYTRAIN_UNARY_METHOD(rsqrt)
      LAZYTRAIN_UNARY_METHOD(tanh) LAZYTRAIN_UNARY_METHOD(erf) LAZYTRAIN_UNARY_METHOD(abs) LAZYTRAIN_UNARY_METHOD(relu)
          LAZYTRAIN_UNARY_METHOD(neg) LAZYTRAIN_UNARY_METHOD(logical_not) LAZYTRAIN_UNARY_METHOD(sigmoid)
              LAZYTRAIN_UNARY_METHOD(sin) LAZYTRAIN_UNARY_METHOD(cos);
  c.def("clamp", &clamp_bounds, "min"_a = nb::none(), "max"_a = nb::none())
      .def("nonzero", &nonzero_as, nb::kw_only(), "as_tuple"_a = false)
      .def("cumsum", [](const Tensor& x, int64_t dim, std::optional<DType> dtype) { PyOp op; return cumsum_as(x, dim, dtype); },
           "dim"_a, "dtype"_a = nb::none())
      .def("tril", [](const Tensor& x, int64_t d) { PyOp op; return tril(x, d); }, "diagonal"_a = 0)
      .def("triu", [](const Tensor& x, int64_t d) { PyOp op; return triu(x, d); }, "diagonal"_a = 0)
      .def("gather", [](const Tensor& x, int64_t dim, const Tensor& i) { PyOp op; return gather(x, dim, i); }, "dim"_a, "index"_a)
      .def("split", [](const Tensor& x, int64_t size, int64_t dim) { PyOp op; return split(x, size, dim); },
           "split_size_or_sections"_a, "dim"_a = 0)
      .def("split", [](const Tensor& x, const std::vector<int64_t>& s, int64_t dim) { PyOp op; return split(x, s, dim); },
           "split_size_or_sections"_a, "dim"_a = 0)
      .def("chunk", [](const Tensor& x, int64_t n, int64_t dim) { PyOp op; return chunk(x, n, dim); }, "chunks"_a, "dim"_a = 0)
      .def("repeat_interleave", [](const Tensor& x, int64_t r, std::optional<int64_t> dim) {
        PyOp op;
        return repeat_interleave(x, r, dim);
      }, "repeats"_a, "dim"_a = nb::none())
      .def("topk", [](const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
        PyOp op;
        auto [values, indices] = topk(x, k, dim, largest, sorted);
        return nb::make_tuple(values, indices);
      }, "k"_a, "dim"_a = -1, "largest"_a = true, "sorted"_a = true);
#undef LAZYTRAIN_UNARY_METHOD
}

void def_functions(nb::module_& m) {
#define LAZYTRAIN_UNARY(name) m.def(#name, [](const Tensor& x) { PyOp op; return name(x); }, "input"_a)
  LAZYTRAIN_UNARY(neg);
  LAZYTRAIN_UNARY(exp);
  LAZYTRAIN_UNARY(log);
  LAZYTRAIN_UNARY(sqrt);
  LAZYTRAIN_UNARY(rsqrt);
  LAZYTRAIN_UNARY(tanh);
  LAZYTRAIN_UNARY(erf);
  LAZYTRAIN_UNARY(abs);
  LAZYTRAIN_UNARY(relu);
  LAZYTRAIN_UNARY(logical_not);
  LAZYTRAIN_UNARY(sigmoid);
  LAZYTRAIN_UNARY(silu);
  LAZYTRAIN_UNARY(sin);
  LAZYTRAIN_UNARY(cos);
#undef LAZYTRAIN_UNARY
  m.def("gelu", [](const Tensor& x, const std::string& approximate) { PyOp op; return gelu(x, approximate); }, "input"_a,
        "approximate"_a = "none");
  m.def("masked_fill", [](const Tensor& x, const Tensor& mask, double v) { PyOp op; return masked_fill(x, mask, v); },
        "input"_a, "mask"_a, "value"_a);
  m.def("masked_select", [](const Tensor& x, const Tensor& mask) { PyOp op; return masked_select(x, mask); }, "input"_a,
        "mask"_a);
  m.def("matmul", [](const Tensor& a, const Tensor& b) { PyOp op; return matmul(a, b); }, "input"_a, "other"_a);
  m.def("sum", [](const Tensor& x, nb::handle dim, bool keepdim) { PyOp op; return sum(x, dims_of(dim), keepdim); }, "input"_a,
        "dim"_a = nb::none(), "keepdim"_a = false);
  m.def("mean", [](const Tensor& x, nb::handle dim, bool keepdim) { PyOp op; return mean(x, dims_of(dim), keepdim); },
        "input"_a, "dim"_a = nb::none(), "keepdim"_a = false);
  m.def("amax", [](const Tensor& x, nb::handle dim, bool keepdim) { PyOp op; return amax(x, dims_of(dim), keepdim); },
        "input"_a, "dim"_a = nb::none(), "keepdim"_a = false);
  m.def("logsumexp", [](const Tensor& x, nb::handle dim, bool keepdim) { PyOp op; return logsumexp(x, dims_of(dim), keepdim); },
        "input"_a, "dim"_a, "keepdim"_a = false);
  m.def("argmax", [](const Tensor& x, int64_t dim, bool keepdim) { PyOp op; return argmax(x, dim, keepdim); }, "input"_a,
        "dim"_a, "keepdim"_a = false);
  // Reductions that python/lazytrain/_reductions.py spells with torch's signatures.
  m.def("_amin", [](const Tensor& x, nb::handle dim, bool keepdim) { PyOp op; return amin(x, dims_of(dim), keepdim); }, "input"_a, "dim"_a.none(), "keepdim"_a);
  m.def("_argmin", [](const Tensor& x, int64_t dim, bool keepdim) { PyOp op; return argmin(x, dim, keepdim); }, "input"_a, "dim"_a, "keepdim"_a);
  m.def("_prod", [](const Tensor& x, nb::handle dim, bool keepdim) { PyOp op; return prod(x, dims_of(dim), keepdim); }, "input"_a, "dim"_a.none(), "keepdim"_a);
  m.def("_any", [](const Tensor& x, nb::handle dim, bool keepdim) { PyOp op; return any(x, dims_of(dim), keepdim); }, "input"_a, "dim"_a.none(), "keepdim"_a);
  m.def("_all", [](const Tensor& x, nb::handle dim, bool keepdim) { PyOp op; return all(x, dims_of(dim), keepdim); }, "input"_a, "dim"_a.none(), "keepdim"_a);
  m.def("reshape", [](const Tensor& x, const Shape& s) { PyOp op; return reshape(x, s); }, "input"_a, "shape"_a);
  m.def("transpose", [](const Tensor& x, int64_t d0, int64_t d1) { PyOp op; return transpose(x, d0, d1); }, "input"_a,
        "dim0"_a, "dim1"_a);
  m.def("permute", [](const Tensor& x, const std::vector<int64_t>& d) { PyOp op; return permute(x, d); }, "input"_a, "dims"_a);
  m.def("unsqueeze", [](const Tensor& x, int64_t d) { PyOp op; return unsqueeze(x, d); }, "input"_a, "dim"_a);
  m.def("squeeze", [](const Tensor& x, nb::handle d) { PyOp op; return squeeze_dims(x, d); }, "input"_a, "dim"_a = nb::none());
  m.def("cat", [](const std::vector<Tensor>& xs, int64_t dim) { PyOp op; return cat(xs, dim); }, "tensors"_a, "dim"_a = 0);
  m.def("index_select", [](const Tensor& x, int64_t dim, const Tensor& i) { PyOp op; return index_select(x, dim, i); },
        "input"_a, "dim"_a, "index"_a);
  m.def("optimization_barrier", [](const Tensor& x, const Tensor& after) { PyOp op; return optimization_barrier(x, after); },
        "input"_a, "after"_a);
  m.def("softmax", [](const Tensor& x, int64_t dim, std::optional<DType> dtype) { PyOp op; return softmax(cast_first(x, dtype), dim); },
        "input"_a, "dim"_a, "dtype"_a = nb::none());
  m.def("log_softmax", [](const Tensor& x, int64_t dim, std::optional<DType> dtype) {
    PyOp op;
    return log_softmax(cast_first(x, dtype), dim);
  }, "input"_a, "dim"_a, "dtype"_a = nb::none());
  m.def("embedding", [](const Tensor& w, const Tensor& i, int64_t pad) { PyOp op; return embedding(w, i, pad); }, "weight"_a,
        "input"_a, "padding_idx"_a = -1);
  m.def(
      "layer_norm",
      [](const Tensor& x, const Shape& normalized_shape, const Tensor& w, const Tensor& b, double eps) {
        PyOp op;
        return layer_norm(x, normalized_shape, w, b, eps);
      },
      "input"_a, "normalized_shape"_a, "weight"_a, "bias"_a, "eps"_a = 1e-5);
  m.def("dropout", [](const Tensor& x, double p, bool training) { PyOp op; return dropout(x, p, training); }, "input"_a,
        "p"_a = 0.5, "training"_a = true);
  m.def(
      "cross_entropy",
      [](const Tensor& logits, const Tensor& target, int64_t ignore_index) {
        PyOp op;
        return cross_entropy(logits, target, ignore_index);
      },
      "input"_a, "target"_a, "ignore_index"_a = -100);
  m.def(
      "linear", [](const Tensor& x, const Tensor& w, std::optional<Tensor> b) {
        PyOp op;
        return linear(x, w, b ? *b : Tensor());
      },
      "input"_a, "weight"_a, "bias"_a = nb::none());
  m.def("clamp", &clamp_bounds, "input"_a, "min"_a = nb::none(), "max"_a = nb::none(),
        "torch.clamp: numbers or tensors as bounds (tensors broadcast: minimum(maximum(input, min), max)).");
  m.def("cumsum", [](const Tensor& x, int64_t dim, std::optional<DType> dtype) { PyOp op; return cumsum_as(x, dim, dtype); },
        "input"_a, "dim"_a, "dtype"_a = nb::none());
  m.def("tril", [](const Tensor& x, int64_t d) { PyOp op; return tril(x, d); }, "input"_a, "diagonal"_a = 0);
  m.def("triu", [](const Tensor& x, int64_t d) { PyOp op; return triu(x, d); }, "input"_a, "diagonal"_a = 0);
  m.def("stack", [](const std::vector<Tensor>& xs, int64_t dim) { PyOp op; return stack(xs, dim); }, "tensors"_a, "dim"_a = 0);
  m.def("split", [](const Tensor& x, int64_t size, int64_t dim) { PyOp op; return split(x, size, dim); }, "tensor"_a,
        "split_size_or_sections"_a, "dim"_a = 0);
  m.def("split", [](const Tensor& x, const std::vector<int64_t>& sections, int64_t dim) { PyOp op; return split(x, sections, dim); },
        "tensor"_a, "split_size_or_sections"_a, "dim"_a = 0);
  m.def("chunk", [](const Tensor& x, int64_t chunks, int64_t dim) { PyOp op; return chunk(x, chunks, dim); }, "input"_a,
        "chunks"_a, "dim"_a = 0);
  m.def("gather", [](const Tensor& x, int64_t dim, const Tensor& index) { PyOp op; return gather(x, dim, index); }, "input"_a,
        "dim"_a, "index"_a);
  m.def(
      "scatter_add", [](const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
        PyOp op;
        return scatter_add(x, dim, index, src);
      },
      "input"_a, "dim"_a, "index"_a, "src"_a);
  m.def(
      "repeat_interleave", [](const Tensor& x, int64_t repeats, std::optional<int64_t> dim) {
        PyOp op;
        return repeat_interleave(x, repeats, dim);
      },
      "input"_a, "repeats"_a, "dim"_a = nb::none());
  m.def(
      "topk", [](const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
        PyOp op;
        auto [values, indices] = topk(x, k, dim, largest, sorted);
        return nb::make_tuple(values, indices);
      },
      "input"_a, "k"_a, "dim"_a = -1, "largest"_a = true, "sorted"_a = true, "(values, indices int64) of the k largest along dim.");
  m.def(
      "rms_norm", [](const Tensor& x, const Shape& shape, std::optional<Tensor> w, std::optional<double> eps) {
        PyOp op;
        return rms_norm(x, shape, w ? *w : Tensor(), eps);
      },
      "input"_a, "normalized_shape"_a, "weight"_a = nb::none(), "eps"_a = nb::none());
  m.def(
      "scaled_dot_product_attention",
      [](const Tensor& q, const Tensor& k, const Tensor& v, std::optional<Tensor> mask, double dropout_p, bool is_causal,
         std::optional<double> scale) {
        PyOp op;
        return scaled_dot_product_attention(q, k, v, mask ? *mask : Tensor(), dropout_p, is_causal, scale);
      },
      "query"_a, "key"_a, "value"_a, "attn_mask"_a = nb::none(), "dropout_p"_a = 0.0, "is_causal"_a = false,
      "scale"_a = nb::none(), "One fused op (a custom-call to a FlashAttention-2 style kernel on the cpu backend).");
  m.def("nonzero", &nonzero_as, "input"_a, nb::kw_only(), "as_tuple"_a = false,
        "torch.nonzero: int64 [n, ndim] indices of the nonzero elements; as_tuple: one 1-D tensor per dim.");
  m.def("to_dtype", [](const Tensor& x, DType d) { PyOp op; return to_dtype(x, d); }, "input"_a, "dtype"_a);

  // ---- creation (the Python layer parses *size, dtype and device) ----
  m.def("_zeros", [](const Shape& s, DType d) { PyOp op; return zeros(s, d); });
  m.def(
      "_zeros_data",
      [](const Shape& s, DType d) {
        PyOp op;
        std::vector<uint8_t> bytes(static_cast<size_t>(numel(s) * itemsize(d)), 0);
        return from_buffer(bytes.data(), s, d);
      },
      "Zeros held as device data (copied from the host now), not a pending op: optimizer state that a step "
      "updates in place, which a failed step gives back.");
  m.def("_ones", [](const Shape& s, DType d) { PyOp op; return ones(s, d); });
  m.def("_full", [](const Shape& s, double v, DType d) { PyOp op; return full(s, v, d); });
  m.def("_arange", [](int64_t start, int64_t end, int64_t step, DType d) { PyOp op; return arange(start, end, step, d); });
  m.def("_rand", [](const Shape& s, DType d) { PyOp op; return rand(s, d); });
  m.def("_randn", [](const Shape& s, DType d) { PyOp op; return randn(s, d); });
  m.def("scalar_tensor", [](double v, DType d, nb::handle device, bool requires_grad) {
    std::optional<runtime::DeviceGuard> on;  // torch's device= ('cpu:1' or a device)
    if (!device.is_none()) {
      on.emplace(nb::cast<runtime::Device>(nb::isinstance<runtime::Device>(device) ? nb::borrow(device)
                                           : nb::module_::import_("lazytrain._C").attr("device")(device)));
    }
    PyOp op;
    Tensor t = scalar_tensor(v, d);
    if (requires_grad) t.requires_grad_(true);
    return t;
  }, "value"_a, "dtype"_a = DType::kFloat32, nb::kw_only(), "device"_a = nb::none(), "requires_grad"_a = false,
        "A 0-d tensor that is device data, not a constant: changing it between steps never recompiles.");
  m.def("manual_seed", [](uint64_t seed) { manual_seed(seed); }, "seed"_a,
        "torch.manual_seed: resets the current device's generator (and the host one that initialises parameters).");
}

}  // namespace

void init_ops(nb::module_& m) {
  def_functions(m);
  init_arith_ops(m);
}

void def_tensor_ops(nb::class_<Tensor>& tensor) {
  def_arith_operators(tensor);
  def_methods(tensor);
}

}  // namespace lazytrain::python
