// GilRelease / GilAcquire's wait: the metric GilWaitTime (bindings.h).
#include "bindings.h"
#include "runtime/metrics.h"

namespace lazytrain::python {

int64_t GilRelease::gil_clock_ns() { return runtime::now_ns(); }

void record_gil_wait(int64_t since_ns) {
  static runtime::Metric& wait = runtime::metric("GilWaitTime");
  wait.add_sample(static_cast<double>(runtime::now_ns() - since_ns));
}

}  // namespace lazytrain::python
