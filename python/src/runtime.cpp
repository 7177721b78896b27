// init_runtime: mark_step / sync, devices, execution modes, compile(fn), the
// grad-mode and autocast guards, and the debugging switches (recompile
// reasons, per-step analysis, IR and HLO text). Waits release the GIL.
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "bindings.h"
#include "core/error.h"
#include "lazy/graph_lowering.h"
#include "lazy/lazy_api.h"
#include "lazy/recompile_reasons.h"
#include "lazy/step_analysis.h"
#include "runtime/device.h"
#include "tensor/autocast.h"
#include "tensor/compile.h"

namespace lazytrain::python {
namespace {

using namespace nb::literals;

// A scope guard Python enters and leaves (`with lazytrain.no_grad():`). The
// guard is thread-local state: enter and exit on one thread, as `with` does.
template <typename Guard, typename... Args>
class PyGuard {
 public:
  explicit PyGuard(Args... args) : args_(args...) {}
  void enter() {
    std::apply([this](auto... a) { guard_.emplace(a...); }, args_);
  }
  void exit(nb::args) { guard_.reset(); }

 private:
  std::tuple<Args...> args_;
  std::optional<Guard> guard_;
};

template <typename Guard, typename... Args>
void def_guard(nb::module_& m, const char* name, const char* doc) {
  using Py = PyGuard<Guard, Args...>;
  nb::class_<Py>(m, name, doc).def(nb::init<Args...>()).def("__enter__", &Py::enter).def("__exit__", &Py::exit);
}

// A Python callable that takes the GIL back before it is dropped: the C++
// compile cache may release it on any thread.
struct PyCallable {
  explicit PyCallable(nb::object fn) : fn(new nb::object(std::move(fn))) {}
  ~PyCallable() {
    if (fn == nullptr) return;
    if (!Py_IsInitialized()) return;  // interpreter gone: nothing to drop
    GilAcquire gil;
    delete fn;
  }
  PyCallable(const PyCallable&) = delete;
  PyCallable& operator=(const PyCallable&) = delete;
  nb::object* fn;
};

// lazytrain.compile's engine: fn(list[Tensor], tuple[int]) -> list[Tensor],
// traced once per input signature by the C++ CompiledFunction.
class PyCompiledFunction {
 public:
  PyCompiledFunction(nb::object fn, const std::string& name, size_t max_different_graphs)
      : callable_(std::make_shared<PyCallable>(std::move(fn))),
        compiled_(make(callable_, name, max_different_graphs)) {}

  // Without the GIL (the execution may wait); the trace takes it back, and
  // its ops name their own lines, so no location scope is opened here.
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, const std::vector<int64_t>& static_args) {
    GilRelease release;
    return compiled_(inputs, static_args);
  }
  size_t graph_count() const { return compiled_.graph_count(); }
  int64_t trace_count() const { return compiled_.trace_count(); }

 private:
  static CompiledFunction make(const std::shared_ptr<PyCallable>& callable, const std::string& name, size_t max_graphs) {
    std::weak_ptr<PyCallable> weak = callable;
    TracedFunction traced = [weak](const std::vector<Tensor>& inputs, const std::vector<int64_t>& static_args) {
      GilAcquire gil;
      std::shared_ptr<PyCallable> fn = weak.lock();
      if (!fn) throw Error("[compile] the compiled Python function no longer exists");
      nb::object result = (*fn->fn)(nb::cast(inputs), nb::cast(static_args));
      return nb::cast<std::vector<Tensor>>(result);
    };
    CompileOptions options;
    options.name = name;
    options.max_different_graphs = max_graphs;
    return compile(std::move(traced), options);
  }
  std::shared_ptr<PyCallable> callable_;
  CompiledFunction compiled_;
};

void def_sync(nb::module_& m) {
  m.def(
      "_mark_step", [](std::optional<runtime::Device> device) {
        PyWait wait;
        lazy::mark_step(device ? *device : runtime::current_device());
      },
      "device"_a = nb::none(),
      "Cuts the graph: every live tensor of the device with a pending value runs in one graph (asynchronously).");
  m.def(
      "_sync_tensors", [](const std::vector<Tensor>& tensors) {
        PyWait wait;
        std::vector<lazy::LazyTensor*> lazy;
        for (const Tensor& t : tensors) lazy.push_back(t.impl().get());
        lazy::sync(lazy);
      },
      "tensors"_a, "Runs the pending values of `tensors` only (one graph; they must share a device).");
  m.def(
      "wait_device_ops", [] {
        PyWait wait;
        lazy::wait_device_ops();
      },
      "Waits until no device has an execution in flight (torch_xla's xm.wait_device_ops); raises a failed execution's error.");
  m.def("current_device", &runtime::current_device, "This thread's device (where tensors made from nothing go).");
  nb::class_<runtime::DeviceGuard>(m, "_DeviceGuard").def(nb::init<runtime::Device>());
  m.def("_last_compiled_hlo", [] { return lazy::last_compiled_hlo(); });
  m.def("_cache_size", [] { return lazy::cache_size(); });
  m.def(
      "_ir_text", [](const std::vector<Tensor>& tensors) {
        std::vector<const lazy::Node*> nodes;
        for (const Tensor& t : tensors) nodes.push_back(t.ir_value().get());
        return lazy::dump_ir(nodes);
      },
      "tensors"_a, "The IR graph that computes `tensors` (torch_xla's _get_xla_tensors_text).");
}

void def_modes(nb::module_& m) {
  m.def("_set_execution_mode", [](const std::string& name) {
    lazy::set_execution_mode(lazy::parse_execution_mode(name, "lazytrain.execution_mode"));
  });
  m.def("_execution_mode", [] { return lazy::execution_mode_name(lazy::execution_mode()); });
  m.def("set_detect_anomaly", &lazy::set_detect_anomaly, "enabled"_a);
  m.def("is_anomaly_enabled", &lazy::detect_anomaly);
  m.def("_set_fused_eager_chunk_size", &lazy::set_fused_eager_chunk_size);
  m.def("graph_break", [] {
    PyWait wait;
    lazy::graph_break();
  });
  m.def("is_grad_enabled", &is_grad_enabled);
  m.def("is_autocast_enabled", &is_autocast_enabled);
  def_guard<NoGradGuard>(m, "_NoGradGuard", "torch.no_grad()'s scope");
  def_guard<EnableGradGuard>(m, "_EnableGradGuard", "torch.enable_grad()'s scope");
  def_guard<AutocastGuard, bool, DType>(m, "_AutocastGuard", "torch.autocast's scope (bf16 or f16)");
}

void def_compile(nb::module_& m) {
  nb::class_<PyCompiledFunction>(m, "_CompiledFunction")
      .def(nb::init<nb::object, const std::string&, size_t>(), "fn"_a, "name"_a, "max_different_graphs"_a)
      .def("__call__", &PyCompiledFunction::call, "inputs"_a, "static_args"_a)
      .def_prop_ro("graph_count", &PyCompiledFunction::graph_count)
      .def_prop_ro("trace_count", &PyCompiledFunction::trace_count);
}

void def_debug(nb::module_& m) {
  m.def("_set_recompile_debug", [](bool on) { lazy::RecompileTracker::get().set_debug(on); });
  m.def("_recompile_debug", [] { return lazy::RecompileTracker::get().debug(); });
  m.def("_recompile_reasons", [] { return lazy::RecompileTracker::get().reasons(); });
  m.def("_clear_recompile_reasons", [] { lazy::RecompileTracker::get().clear(); });
  m.def("_set_recompile_warning_threshold", [](size_t n) { lazy::RecompileTracker::get().set_warning_threshold(n); });
  m.def("_set_step_analysis", &lazy::set_step_analysis);
  m.def("_step_analysis", &lazy::step_analysis);
  m.def("_recent_steps", [](std::optional<runtime::Device> device) {
    const runtime::Device d = device ? *device : runtime::current_device();
    std::vector<std::string> lines;
    for (const lazy::StepRecord& r : lazy::recent_steps(d)) lines.push_back(lazy::describe(r, d));
    return lines;
  }, "device"_a = nb::none(), "The last finished steps of the device, one line each (what step analysis prints).");
  m.def("_set_graph_size_warning", [](size_t nodes) { lazy::set_graph_size_warning(nodes); });
}

}  // namespace

void init_runtime(nb::module_& m) {
  def_sync(m);
  def_modes(m);
  def_compile(m);
  def_debug(m);
}

}  // namespace lazytrain::python
