// init_profiler: runtime/profiler.h under torch_xla.debug.profiler's names
// (python/lazytrain/debug/profiler.py wraps them).
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "runtime/metrics.h"
#include "runtime/profiler.h"

namespace lazytrain::python {

using namespace nb::literals;

void init_profiler(nb::module_& m) {
  m.def("_start_trace", &runtime::start_trace, "log_dir"_a);
  m.def("_stop_trace", [] {
    GilRelease release;  // other Python threads run while the file is written
    return runtime::stop_trace();
  });
  m.def("_trace_path", &runtime::trace_path);
  m.def("_is_tracing", [] { return runtime::is_tracing(); });
  m.def("_now_ns", &runtime::now_ns);
  // A "python" event from begin_ns to now on the calling thread (lazytrain.debug.profiler.Trace).
  m.def(
      "_record_trace_span", [](const std::string& name, int64_t begin_ns) { runtime::record_span("python", name, begin_ns, runtime::now_ns()); },
      "name"_a, "begin_ns"_a);
}

}  // namespace lazytrain::python
