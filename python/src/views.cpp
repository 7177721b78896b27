// init_views: the view and in-place machinery of tensor/view.h, for
// python/lazytrain/_views.py, which marks torch's view ops and writes every
// in-place op (add_, x[i] = v, copy_, ...) through it.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "core/error.h"
#include "tensor/view.h"

namespace lazytrain::python {
namespace {

using namespace nb::literals;

InplaceCast cast_of(bool any) { return any ? InplaceCast::kAny : InplaceCast::kSameKind; }

}  // namespace

void init_views(nb::module_& m) {
  m.def(
      "_make_view", [](const Tensor& source, const Tensor& view, const std::string& kind, const std::vector<int64_t>& ints, bool strict) {
        PyOp at;
        ViewStep step;
        if (kind == "slice") {
          step.kind = ViewStep::Kind::kSlice;
          step.ints = ints;
        } else if (kind == "permute") {
          step.kind = ViewStep::Kind::kPermute;
          step.ints = ints;
        } else if (kind == "expand") {
          step.kind = ViewStep::Kind::kExpand;
          step.shape = view.shape();
        } else {
          check(kind == "reshape", "_make_view", "unknown view kind '" + kind + "'");
          step.shape = view.shape();
        }
        return make_view(source, view, std::move(step), strict);
      },
      "source"_a, "view"_a, "kind"_a, "ints"_a = std::vector<int64_t>{}, "strict"_a = false,
      "Marks `view` (made from `source` by a view op) as a view of source's base; kind: 'slice' (ints: dim, start, "
      "end, step, normalised), 'reshape', 'permute' (ints: the permutation) or 'expand'.");
  m.def("_detach_alias", [](const Tensor& x) { PyOp op; return detach_alias(x); }, "input"_a,
        "torch's detach(): same values, no history; in-place writes reach the input.");
  m.def("clone", [](const Tensor& x) { PyOp op; return clone(x); }, "input"_a, "torch.clone: a copy with gradients passed through.");
  m.def(
      "_inplace_update", [](const Tensor& self, const Tensor& value, const std::string& op, bool any_cast) {
        PyOp at;
        inplace_update(self, value, op.c_str(), cast_of(any_cast));
      },
      "self"_a, "value"_a, "op"_a, "any_cast"_a = false,
      "Writes `value` into `self` (and its base, when a view) in place; torch's dtype, shape and autograd checks.");
  m.def(
      "_rebind", [](Tensor& self, const Tensor& other) { self = other; }, "self"_a, "other"_a,
      "Makes this Python object hold `other` (in-place ops that change the shape: unsqueeze_, t_).");
  m.def("_is_contiguous", [](const Tensor& x) { return is_contiguous(x); }, "input"_a);
  m.def("_version", [](const Tensor& x) { return version(*x.impl()); }, "input"_a);
  m.def("_is_view", [](const Tensor& x) { return x.impl()->view != nullptr && !x.impl()->view->detached; }, "input"_a);
  m.def(
      "slice_scatter",
      [](const Tensor& x, const Tensor& src, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
         int64_t step) {
        PyOp op;
        return slice_scatter(x, src, dim, start.value_or(0), end.value_or(INT64_MAX), step);
      },
      "input"_a, "src"_a, "dim"_a = 0, "start"_a = nb::none(), "end"_a = nb::none(), "step"_a = 1,
      "torch.slice_scatter: input with input[start:end:step] along dim replaced by src.");
}

}  // namespace lazytrain::python
