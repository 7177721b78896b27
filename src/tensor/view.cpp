#include "tensor/view.h"

#include <algorithm>
#include <optional>

#include "core/error.h"
#include "tensor/autograd.h"
#include "tensor/tensor.h"

namespace lazytrain {
namespace {

// The root base of a view, when it is still alive.
std::shared_ptr<TensorImpl> base_of(const TensorImpl& impl) {
  return impl.view ? impl.view->weak_base.lock() : nullptr;
}

Tensor derive(const ViewInfo& info, const std::shared_ptr<TensorImpl>& base) {
  Tensor v(base);
  for (const ViewStep& s : info.steps) v = s.apply(v);
  return v;
}

// Takes `value`'s IR value (and, when `track`, its autograd history) into `t`;
// set_data keeps a laid-out tensor's layout.
void rebind(const Tensor& t, const Tensor& value, bool track) {
  t.set_data(value);
  if (track) {
    t.impl()->grad_fn = value.impl()->grad_fn;
    t.impl()->requires_grad = t.impl()->requires_grad || value.requires_grad();
  }
}

// ATen's computeStride: the strides of `shape` viewing memory laid out as
// (old_shape, old_strides), or none when a dimension would span two
// non-contiguous runs (torch: "view size is not compatible with input tensor's size and stride").
std::optional<std::vector<int64_t>> view_strides(const Shape& old_shape, const std::vector<int64_t>& old_strides,
                                                 const Shape& shape) {
  if (old_shape.empty()) return std::vector<int64_t>(shape.size(), 1);
  if (numel(old_shape) == 0) return contiguous_strides(shape);
  std::vector<int64_t> strides(shape.size(), 1);
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_shape[static_cast<size_t>(d)];
    if (d == 0 || (old_shape[static_cast<size_t>(d - 1)] != 1 &&
                   old_strides[static_cast<size_t>(d - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[static_cast<size_t>(view_d)] == 1)) {
        strides[static_cast<size_t>(view_d)] = view_numel * chunk_base_stride;
        view_numel *= shape[static_cast<size_t>(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = old_strides[static_cast<size_t>(d - 1)];
        tensor_numel = view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

std::vector<int64_t> strides_of(const Tensor& x) {
  const auto& v = x.impl()->view;
  return v && !v->strides.empty() ? v->strides : contiguous_strides(x.shape());
}

}  // namespace

bool is_contiguous(const Tensor& x) {
  const std::vector<int64_t> strides = strides_of(x);
  int64_t expected = 1;
  for (size_t i = x.shape().size(); i-- > 0;) {
    if (x.shape()[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= x.shape()[i];
  }
  return true;
}

Tensor ViewStep::apply(const Tensor& x) const {
  switch (kind) {
    case Kind::kSlice: return slice(x, ints[0], ints[1], ints[2], ints[3]);
    case Kind::kReshape: return reshape(x, shape);
    case Kind::kPermute: return permute(x, ints);
    case Kind::kExpand: return expand(x, shape);
  }
  return x;
}

Tensor ViewStep::scatter(const Tensor& x, const Tensor& src) const {
  switch (kind) {
    case Kind::kSlice: return slice_scatter(x, src, ints[0], ints[1], ints[2], ints[3]);
    case Kind::kReshape: return reshape(src, x.shape());
    case Kind::kPermute: {
      std::vector<int64_t> inverse(ints.size());
      for (size_t i = 0; i < ints.size(); ++i) inverse[static_cast<size_t>(ints[i])] = static_cast<int64_t>(i);
      return permute(src, inverse);
    }
    case Kind::kExpand:
      throw_error("inplace",
                  "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                  "location. Please clone() the tensor before performing the operation.");
  }
  return src;
}

Tensor make_view(const Tensor& source, const Tensor& view, ViewStep step, bool strict) {
  std::vector<int64_t> strides = strides_of(source);
  switch (step.kind) {
    case ViewStep::Kind::kSlice: strides[static_cast<size_t>(step.ints[0])] *= step.ints[3]; break;
    case ViewStep::Kind::kPermute: {
      std::vector<int64_t> permuted(strides.size());
      for (size_t i = 0; i < step.ints.size(); ++i) permuted[i] = strides[static_cast<size_t>(step.ints[i])];
      strides = permuted;
      break;
    }
    case ViewStep::Kind::kExpand: {
      std::vector<int64_t> expanded(step.shape.size(), 0);
      const size_t lead = step.shape.size() - source.shape().size();
      for (size_t i = 0; i < source.shape().size(); ++i) {
        expanded[lead + i] = source.shape()[i] == step.shape[lead + i] ? strides[i] : 0;
      }
      strides = expanded;
      break;
    }
    case ViewStep::Kind::kReshape: {
      auto reshaped = view_strides(source.shape(), strides, step.shape);
      if (!reshaped) {
        if (strict) {
          throw_error("aten::view", "view size is not compatible with input tensor's size and stride (at least one "
                                    "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
        }
        return view.is_same(source) ? clone(source) : view;  // reshape copies, as torch's does here
      }
      strides = *reshaped;
      break;
    }
  }
  // x[:] and friends return their input: the view is still a new tensor.
  Tensor out = view.is_same(source) ? clone(source) : view;
  auto info = std::make_shared<ViewInfo>();
  if (const auto& parent = source.impl()->view; parent && !parent->weak_base.expired()) {
    *info = *parent;
    info->steps.push_back(std::move(step));
  } else {
    info->base = source.impl();
    info->weak_base = source.impl();
    info->steps = {std::move(step)};
  }
  if (auto base = info->weak_base.lock()) info->seen_version = base->version;
  info->strides = std::move(strides);
  out.impl()->view = std::move(info);
  return out;
}

Tensor detach_alias(const Tensor& x) {
  Tensor out = x.detach();
  auto info = std::make_shared<ViewInfo>();
  if (const auto& parent = x.impl()->view; parent && !parent->weak_base.expired()) {
    info->weak_base = parent->weak_base;
    info->steps = parent->steps;
  } else {
    info->weak_base = x.impl();
  }
  info->detached = true;
  info->strides = strides_of(x);
  if (auto base = info->weak_base.lock()) {
    info->seen_version = base->version;
    auto& aliases = base->detached_aliases;
    std::erase_if(aliases, [](const std::weak_ptr<TensorImpl>& a) { return a.expired(); });
    aliases.push_back(out.impl());
  }
  out.impl()->view = std::move(info);
  return out;
}

Tensor clone(const Tensor& x) {
  Tensor out(x.ir_value());
  return autograd::record(out, "CloneBackward0", {x}, [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

uint64_t version(const TensorImpl& impl) {
  auto base = base_of(impl);
  return base ? base->version : impl.version;
}

void refresh_view(TensorImpl& impl) {
  ViewInfo& info = *impl.view;
  auto base = info.weak_base.lock();
  if (!base || base->version == info.seen_version) return;
  info.seen_version = base->version;  // first: deriving reads the view's inputs, not the view
  if (info.detached) {
    NoGradGuard no_grad;
    impl.set_ir_value(derive(info, base).ir_value());
    return;
  }
  Tensor v = derive(info, base);
  impl.set_ir_value(v.ir_value());
  impl.grad_fn = v.impl()->grad_fn;
  impl.requires_grad = v.requires_grad();
}

namespace {

// A base was written: its detached aliases take the new value now (they cannot
// keep the base alive to read it later).
void push_to_detached_aliases(TensorImpl& base) {
  for (const auto& weak : base.detached_aliases) {
    if (auto alias = weak.lock()) refresh_view(*alias);
  }
}

}  // namespace

void inplace_update(const Tensor& self, const Tensor& value_in, const char* op, InplaceCast cast) {
  TensorImpl& impl = *self.impl();
  Tensor value = value_in;
  if (value.dtype() != self.dtype()) {
    if (cast == InplaceCast::kSameKind && !can_cast(value.dtype(), self.dtype())) {
      throw_error(op, "result type " + scalar_type_name(value.dtype()) +
                          " can't be cast to the desired output type " + scalar_type_name(self.dtype()));
    }
    value = to_dtype(value, self.dtype());
  }
  if (value.shape() != self.shape()) {
    const Shape& s = self.shape();
    const Shape& v = value.shape();
    bool fits = v.size() <= s.size();
    for (size_t i = 0; fits && i < v.size(); ++i) {
      const int64_t vd = v[v.size() - 1 - i], sd = s[s.size() - 1 - i];
      fits = vd == sd || vd == 1;
    }
    if (!fits) {
      Shape joint = s;
      try {
        joint = broadcast_shapes(s, v, op);
      } catch (const Error&) {
        throw_error(op, "the size of tensor a (" + shape_str(s) + ") must match the size of tensor b (" + shape_str(v) +
                            ") at a non-singleton dimension");
      }
      throw_error(op, "output with shape " + shape_str(s) + " doesn't match the broadcast shape " + shape_str(joint));
    }
    value = expand(value, s);
  }
  const bool grad_mode = is_grad_enabled();
  std::shared_ptr<TensorImpl> base = base_of(impl);
  const bool detached = impl.view && impl.view->detached;
  if (grad_mode) {
    if (base && !detached && base->requires_grad && !base->grad_fn) {
      throw_error(op, "a view of a leaf Variable that requires grad is being used in an in-place operation.");
    }
    // Includes a Parameter, which holds a detached alias of the tensor it was made from.
    if (impl.requires_grad && !impl.grad_fn) {
      throw_error(op, "a leaf Variable that requires grad is being used in an in-place operation.");
    }
  }
  const bool track = grad_mode && !detached && value.requires_grad();
  if (base) {
    // The write reaches the base through the chain: each level's value with the
    // level below scattered in, innermost first.
    const ViewInfo& info = *impl.view;
    Tensor new_base;
    {
      std::optional<NoGradGuard> no_grad;
      if (!track) no_grad.emplace();
      std::vector<Tensor> levels = {Tensor(base)};
      for (size_t i = 0; i + 1 < info.steps.size(); ++i) levels.push_back(info.steps[i].apply(levels.back()));
      new_base = value;
      for (size_t i = info.steps.size(); i-- > 0;) new_base = info.steps[i].scatter(levels[i], new_base);
    }
    rebind(Tensor(base), new_base, track);
    ++base->version;
    push_to_detached_aliases(*base);
    rebind(self, value, track);
    impl.view->seen_version = base->version;
    return;
  }
  rebind(self, value, track);
  ++impl.version;
  push_to_detached_aliases(impl);
}

Tensor slice_scatter(const Tensor& x, const Tensor& src, int64_t dim, int64_t start, int64_t end, int64_t step) {
  const int64_t d = normalize_dim(dim, x.dim(), "aten::slice_scatter");
  const int64_t size = x.shape()[static_cast<size_t>(d)];
  auto clamp = [size](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + size : v, 0, size); };
  start = clamp(start);
  end = std::max(start, clamp(end));
  if (step <= 0) throw_error("aten::slice_scatter", "slice step must be positive, got " + std::to_string(step));
  Shape expected = x.shape();
  const int64_t count = (end - start + step - 1) / step;
  expected[static_cast<size_t>(d)] = count;
  check(src.shape() == expected, "aten::slice_scatter",
        "expected src to have a size equal to the slice of self: src is " + shape_str(src.shape()) + ", the slice " +
            shape_str(expected));
  Tensor s = src.dtype() == x.dtype() ? src : to_dtype(src, x.dtype());
  if (count == 0) return x;
  std::vector<Tensor> parts;
  if (start > 0) parts.push_back(slice(x, d, 0, start));
  if (step == 1) {
    parts.push_back(s);
  } else {
    // The span [start, start + count*step) as [count, step] rows: column 0 takes src,
    // the other columns keep x (padded past the end, then trimmed).
    const int64_t span = std::min(count * step, size - start);
    Tensor region = slice(x, d, start, start + span);
    if (span < count * step) {
      Shape pad = x.shape();
      pad[static_cast<size_t>(d)] = count * step - span;
      region = cat({region, zeros(pad, x.dtype())}, d);
    }
    Shape rows = x.shape();
    rows[static_cast<size_t>(d)] = count;
    rows.insert(rows.begin() + d + 1, step);
    Tensor grid = reshape(region, rows);
    Shape col = src.shape();
    col.insert(col.begin() + d + 1, 1);
    Tensor filled = cat({reshape(s, col), slice(grid, d + 1, 1, step)}, d + 1);
    Shape merged = x.shape();
    merged[static_cast<size_t>(d)] = count * step;
    parts.push_back(slice(reshape(filled, merged), d, 0, span));
  }
  const int64_t after = start + std::min(count * step, size - start);
  if (after < size) parts.push_back(slice(x, d, after, size));
  return parts.size() == 1 ? parts[0] : cat(parts, d);
}

}  // namespace lazytrain
