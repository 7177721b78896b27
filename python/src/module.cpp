// lazytrain._C: the extension behind the Python package. Each C++ area has its
// own init_* (one file each); the public API is written in Python over them
// (python/lazytrain/), as torch_xla's _XLAC and MLX's core are.
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "core/error.h"
#include "lazy/lazy_api.h"

namespace lazytrain::python {
namespace {

void init_errors(nb::module_& m) {
  // lazytrain::Error (bad input, misuse, failed executions) is a RuntimeError,
  // as torch raises RuntimeError for shape and device errors.
  nb::exception<Error>(m, "LazytrainError", PyExc_RuntimeError);
}

}  // namespace
}  // namespace lazytrain::python

NB_MODULE(_C, m) {
  using namespace nanobind::literals;
  namespace py = lazytrain::python;
  m.doc() = "lazytrain's native core (use the lazytrain package, not this module)";
  // Tensors alive in module globals at exit are no leak worth a warning.
  nanobind::set_leak_warnings(false);
  py::init_errors(m);
  py::init_error_locations(m);
  py::init_tensor(m);
  py::init_ops(m);
  py::init_views(m);
  py::init_runtime(m);
  py::init_metrics(m);
  py::init_profiler(m);
  py::init_nn(m);
  py::init_optim(m);
  py::init_autograd_api(m);
  py::init_distributed(m);
  py::init_spmd(m);
  py::init_models(m);
  py::init_trainer(m);
  py::init_data(m);
  py::init_parallel_loader(m);
  py::init_tokenizers(m);
  m.def("_set_package_dir", &py::set_package_dir, "dir"_a,
        "Files under `dir` are lazytrain's own: op locations name the first frame outside them.");
  m.def("_add_internal_dir", &py::add_internal_dir, "dir"_a,
        "Op locations skip the frames of files under `dir` too (torch's, for torch tensors on the lazy device).");
  m.def("_set_fallback_location", &py::set_fallback_location, "file"_a, "function"_a, "line"_a,
        "The op location of ops called with no frame outside lazytrain and torch (a backward on torch's autograd "
        "thread: the line that called backward()); an empty file clears it.");
}
