// init_metrics: runtime/metrics.h under torch_xla.debug.metrics' functions
// (python/lazytrain/debug/metrics.py wraps them).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "runtime/metrics.h"

namespace lazytrain::python {

using namespace nb::literals;

void init_metrics(nb::module_& m) {
  m.def("_metrics_report", &runtime::metrics_report);
  m.def("_short_metrics_report", &runtime::short_metrics_report, "metric_names"_a, "counter_names"_a);
  m.def("_counter_names", &runtime::counter_names);
  m.def("_counter_value", &runtime::counter_value, "name"_a);
  m.def("_metric_names", &runtime::metric_names);
  // torch_xla's metric_data: (TotalSamples, Accumulator, [(timestamp_ns, value), ...]) or None.
  m.def(
      "_metric_data", [](const std::string& name) -> nb::object {
        std::optional<runtime::MetricData> data = runtime::metric_data(name);
        if (!data) return nb::none();
        nb::list samples;
        for (const runtime::MetricSample& s : data->samples) samples.append(nb::make_tuple(s.timestamp_ns, s.value));
        return nb::make_tuple(data->total_samples, data->accumulator, samples);
      },
      "name"_a);
  m.def("_clear_all", &runtime::reset_metrics);
}

}  // namespace lazytrain::python
