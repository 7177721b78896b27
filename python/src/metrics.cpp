// init_metrics: runtime/metrics.h under torch_xla.debug.metrics' functions
// (python/lazytrain/debug/metrics.py wraps them).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "runtime/metrics.h"

namespace lazytrain::python {

using namespace nb::literals;

namespace {

runtime::MetricKind metric_kind(const std::string& kind) {
  if (kind == "time") return runtime::MetricKind::kTime;
  if (kind == "bytes") return runtime::MetricKind::kBytes;
  if (kind == "value") return runtime::MetricKind::kValue;
  throw nb::value_error(("metric kind '" + kind + "': expected 'time', 'bytes' or 'value'").c_str());
}

}  // namespace

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
  // For lazytrain's own Python code (the torch.compile backend counts DynamoGraphs, DynamoFallbackNodes, ...).
  m.def(
      "_counter_add", [](const std::string& name, int64_t value) { runtime::counter(name).add(value); }, "name"_a, "value"_a = 1,
      "Adds `value` to counter `name` (registered at 0 on first use).");
  m.def(
      "_metric_add", [](const std::string& name, double value, const std::string& kind) { runtime::metric(name, metric_kind(kind)).add_sample(value); },
      "name"_a, "value"_a, "kind"_a = "time",
      "Adds a sample to metric `name`: kind 'time' (nanoseconds), 'bytes' or 'value'. LazytrainError when the metric "
      "exists with another kind; ValueError for another kind name.");
}

}  // namespace lazytrain::python
