// init_autograd_api: tensor hooks, retain_grad, grad_fn, autograd.grad and
// backward with retain_graph (tensor/autograd_hooks.h), behind
// lazytrain/_autograd_api.py, which installs torch's spellings.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "bindings.h"
#include "core/error.h"
#include "tensor/autograd_hooks.h"

namespace lazytrain::python {

using namespace nb::literals;

namespace {

// A Python hook kept by C++: dropped with the GIL, called with it.
struct PyHook {
  explicit PyHook(nb::object fn) : fn(new nb::object(std::move(fn))) {}
  ~PyHook() {
    if (!Py_IsInitialized()) return;
    GilAcquire gil;
    delete fn;
  }
  PyHook(const PyHook&) = delete;
  PyHook& operator=(const PyHook&) = delete;
  nb::object* fn;
};

std::vector<Tensor> defined(const std::vector<std::optional<Tensor>>& tensors) {
  std::vector<Tensor> out;
  for (const auto& t : tensors) out.push_back(t ? *t : Tensor());
  return out;
}

nb::object tensor_or_none(const Tensor& t) { return t.defined() ? nb::cast(t) : nb::none(); }

}  // namespace

void init_autograd_api(nb::module_& m) {
  nb::class_<autograd::GradFn>(m, "_GradFn", "The backward node that made a tensor (torch's grad_fn).")
      .def("name", [](const autograd::GradFn& fn) { return fn.name; }, "PyTorch's name of the node: 'MulBackward0', ...")
      .def_prop_ro(
          "_next",
          [](const autograd::GradFn& fn) {
            // One entry per input: ("fn", node), ("leaf", tensor) or ("none", None).
            nb::list out;
            for (const autograd::Edge& e : fn.next) {
              if (e.fn) out.append(nb::make_tuple("fn", nb::cast(e.fn)));
              else if (e.leaf) out.append(nb::make_tuple("leaf", nb::cast(Tensor(e.leaf))));
              else out.append(nb::make_tuple("none", nb::none()));
            }
            return out;
          },
          "The inputs' nodes (empty once backward freed the graph).");
  m.def(
      "_grad_fn",
      [](const Tensor& t) -> std::shared_ptr<autograd::GradFn> { return t.impl()->grad_fn; }, "t"_a,
      "The tensor's backward node, or None for a leaf.");
  m.def(
      "_register_hook",
      [](const Tensor& t, nb::object fn) {
        PyOp op;
        auto hook = std::make_shared<PyHook>(std::move(fn));
        return autograd::register_hook(t, [hook](const Tensor& grad) -> Tensor {
          GilAcquire gil;
          nb::object result = (*hook->fn)(grad);
          if (result.is_none()) return Tensor();
          if (!nb::isinstance<Tensor>(result)) {
            throw nb::type_error(("a tensor hook must return None or a Tensor, got " +
                                  std::string(nb::type_name(result.type()).c_str()))
                                     .c_str());
          }
          return nb::cast<Tensor>(result);
        });
      },
      "t"_a, "fn"_a, "Registers fn(grad) -> Tensor or None on t; returns the handle id.");
  m.def("_remove_hook", &autograd::remove_hook, "handle"_a);
  m.def(
      "_retain_grad",
      [](const Tensor& t) {
        PyOp op;
        autograd::retain_grad(t);
      },
      "t"_a);
  m.def("_retains_grad", &autograd::retains_grad, "t"_a);
  m.def(
      "_autograd_grad",
      [](const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs, const std::vector<std::optional<Tensor>>& grad_outputs,
         bool retain_graph, bool allow_unused) {
        PyOp op;
        std::vector<Tensor> grads = autograd::grad(outputs, inputs, defined(grad_outputs), retain_graph, allow_unused);
        nb::list out;
        for (const Tensor& g : grads) out.append(tensor_or_none(g));
        return out;
      },
      "outputs"_a, "inputs"_a, "grad_outputs"_a, "retain_graph"_a, "allow_unused"_a,
      "torch.autograd.grad: the gradients of the outputs' sum (weighted by grad_outputs) with respect to inputs.");
  m.def(
      "_backward",
      [](const std::vector<Tensor>& tensors, const std::vector<Tensor>& grads, bool retain_graph) {
        PyOp op;
        autograd::EngineOptions options;
        options.retain_graph = retain_graph;
        autograd::run_engine(tensors, grads, options);
      },
      "tensors"_a, "grads"_a, "retain_graph"_a, "Accumulates gradients into the leaves; keeps the graph with retain_graph.");
}

}  // namespace lazytrain::python
