// Views and in-place writes over a functional lazy IR (torch's aliasing
// semantics, the way PyTorch's functionalization and torch_xla's views give them).
//
// The IR has no storage to share, so a view is its base plus the chain of view
// steps that derives it (ViewInfo). Two rules make writes reach every alias:
//  - A write to a view is a write to its base: the new value is scattered back
//    through the chain (the inverse of each step: slice_scatter for a slice, the
//    inverse reshape or permutation) and becomes the base's new value, recorded
//    with autograd like any op, so gradients flow through the write.
//  - Every write bumps the family's version counter (the base's). A view whose
//    base moved on re-derives its value (and its autograd history) from the base
//    the next time it is used (Tensor::ir_value()).
// An in-place op computes its result out of place from a clone of the tensor
// (so ops recorded earlier keep the value they saw), then hands it to
// inplace_update(), which checks torch's rules (dtype can be cast back, shape
// broadcasts, no leaf that requires grad) and rebinds the tensor (and its base)
// to the result. Backward checks the version of each op's inputs against the
// one recorded with it and raises torch's "modified by an inplace operation"
// error instead of using a changed value. docs/design/views.md tells the whole story.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/shape.h"

namespace lazytrain {

class Tensor;
struct TensorImpl;

// One step from a tensor to its view. Each kind has an inverse for writes,
// except kExpand (several elements of the view share one of the base, so torch
// refuses writes to it).
struct ViewStep {
  enum class Kind { kSlice, kReshape, kPermute, kExpand };
  Kind kind = Kind::kReshape;
  // kSlice: {dim, start, end, step} (normalised); kPermute: the permutation.
  std::vector<int64_t> ints;
  // kReshape and kExpand: the view's shape.
  Shape shape;

  // The view of `x` this step takes (recorded with autograd, as the op itself).
  Tensor apply(const Tensor& x) const;
  // `x` with the part this step views replaced by `src` (of the view's shape).
  Tensor scatter(const Tensor& x, const Tensor& src) const;
};

// What makes a tensor a view: its root base (never itself a view) and the steps
// from the base to it. A detached view (x.detach(), x.data) shares values but not
// autograd history and holds its base weakly, as torch's detach() shares storage
// and nothing else.
struct ViewInfo {
  std::shared_ptr<TensorImpl> base;     // null for a detached view
  std::weak_ptr<TensorImpl> weak_base;  // always set
  std::vector<ViewStep> steps;
  bool detached = false;
  uint64_t seen_version = 0;  // the base's version this view's value was derived at
  // The strides torch would give this view over its base's storage (in elements):
  // what decides whether reshape can stay a view and whether the view is contiguous.
  std::vector<int64_t> strides;
};

// Makes `view` (the result of step `step` applied to `source`) a view of
// `source`'s root base. Returns the tensor to hand out: `view` itself, or a new
// handle when the op returned `source` unchanged (x[:] is a new tensor in torch).
// For a kReshape step that torch could not express over the source's strides
// (a reshape of a transposed tensor), `view` is returned unmarked, as the copy
// torch's reshape makes; view() raises torch's error instead when `strict`.
Tensor make_view(const Tensor& source, const Tensor& view, ViewStep step, bool strict = false);

// Whether torch would call the tensor contiguous (a view's strides are row-major).
bool is_contiguous(const Tensor& x);

// torch's x.detach() / x.data: the same values, no history, writes reach `x`.
Tensor detach_alias(const Tensor& x);

// torch.clone: a new tensor with x's value (CloneBackward0 passes gradients through).
Tensor clone(const Tensor& x);

// The version counter torch keeps per storage (x._version): a view reports its base's.
uint64_t version(const TensorImpl& impl);

// Re-derives a view's value from its base when the base was written since (called
// by Tensor::ir_value() and before reads; cheap when up to date).
void refresh_view(TensorImpl& impl);

// How inplace_update may convert the result to the tensor's dtype.
enum class InplaceCast {
  kSameKind,  // add_, mul_, ...: the result type must be castable (torch's canCast: no float -> int, no number -> bool)
  kAny,       // copy_, fill_, x[i] = v: any dtype is converted
};

// Makes `value` (computed from a clone of `self`, broadcastable to its shape) the
// new value of `self`, and of its base when `self` is a view; `op` names the
// in-place op in errors. Raises (torch's messages) when the result dtype cannot be
// cast back, the shape does not broadcast to self's, or autograd forbids it (a
// leaf that requires grad, or a view of one, while grad mode is on).
void inplace_update(const Tensor& self, const Tensor& value, const char* op, InplaceCast cast = InplaceCast::kSameKind);

// torch.slice_scatter: `x` with x[..., start:end:step, ...] (along dim) replaced by `src`.
Tensor slice_scatter(const Tensor& x, const Tensor& src, int64_t dim, int64_t start, int64_t end, int64_t step = 1);

}  // namespace lazytrain
