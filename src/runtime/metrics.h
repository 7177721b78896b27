// Metrics and counters: PyTorch/XLA's debug metrics, with its report format.
//
// A process-wide, thread-safe registry of named `Metric`s (sample series, e.g.
// CompileTime in nanoseconds, OutboundData in bytes) and named `Counter`s
// (int64 values, e.g. CachedCompile). `metrics_report()` prints them the way
// torch_xla.debug.metrics.metrics_report() does (source: pytorch/xla
// torch_xla/csrc/runtime/metrics.cc, formerly third_party/xla_client/metrics.cc):
//
//   Metric: CompileTime
//     TotalSamples: 2
//     Accumulator: 02s658ms550.535us
//     ValueRate: 664ms637.634us / second
//     Rate: 0.5 / second
//     Percentiles: 1%=007ms346.271us; 5%=007ms346.271us; ...; 99%=02s651ms204.264us
//   Counter: CachedCompile
//     Value: 14
//
// Each metric also keeps its count and sum per device (the thread's current
// device when the sample was taken: a replica's). When samples came from more
// than one device, the report follows the aggregated entry with one per
// device, "Metric: ExecuteTime (cpu:1)", holding TotalSamples and Accumulator.
//
// Registered objects live until the process ends, so a `Metric&` or
// `Counter&` may be cached (e.g. in a function-local static) on hot paths.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>
#include <map>

#include "runtime/device.h"

namespace lazytrain::runtime {

// How a metric's values are printed: kTime = nanoseconds ("02s658ms550.535us"),
// kBytes = bytes ("1.23GB"), kValue = a plain number ("12.50").
enum class MetricKind { kTime, kBytes, kValue };

// One sample: when it was taken (steady clock, ns) and its value.
struct MetricSample {
  int64_t timestamp_ns = 0;
  double value = 0.0;
};

// A snapshot of one metric, for tests and tools.
struct MetricData {
  std::string name;
  MetricKind kind = MetricKind::kTime;
  int64_t total_samples = 0;           // every sample ever added since the last reset
  double accumulator = 0.0;            // sum of every sample's value
  std::vector<MetricSample> samples;   // the recent window, oldest first
  // Count and sum per device ("cpu:0"), in device order.
  struct DeviceTotals {
    std::string device;
    int64_t total_samples = 0;
    double accumulator = 0.0;
  };
  std::vector<DeviceTotals> per_device;
};

// A named series of samples. Keeps the total count and sum of all samples and
// a ring buffer of the most recent `max_samples` (PyTorch/XLA: 1024), from
// which the report's Rate, ValueRate and Percentiles are computed.
class Metric {
 public:
  static constexpr size_t kDefaultMaxSamples = 1024;

  // `max_samples` = window size (0 means kDefaultMaxSamples).
  Metric(std::string name, MetricKind kind, size_t max_samples = kDefaultMaxSamples);

  // Adds a sample taken now: nanoseconds for kTime, bytes for kBytes.
  void add_sample(double value);
  // Adds a sample with an explicit steady-clock timestamp in nanoseconds.
  void add_sample(int64_t timestamp_ns, double value);

  const std::string& name() const { return name_; }
  MetricKind kind() const { return kind_; }
  int64_t total_samples() const;
  double accumulator() const;
  // A consistent snapshot of count, sum and window (oldest first).
  MetricData data() const;
  // Drops all samples (count and sum back to 0).
  void clear();
  // Formats `value` with this metric's kind (metric_fn_time/bytes/value).
  std::string repr(double value) const;

 private:
  const std::string name_;
  const MetricKind kind_;
  mutable std::mutex mutex_;
  std::vector<MetricSample> window_;  // ring buffer, size max_samples
  int64_t count_ = 0;
  double accumulator_ = 0.0;
  std::map<Device, std::pair<int64_t, double>> per_device_;  // count and sum
};

// A named int64 value, lock-free.
class Counter {
 public:
  explicit Counter(std::string name) : name_(std::move(name)) {}
  // Adds `n` (may be negative).
  void add(int64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }
  const std::string& name() const { return name_; }
  // Sets the value (a gauge such as ExecutionThreads).
  void set(int64_t n) { value_.store(n, std::memory_order_relaxed); }
  // Sets the value back to 0.
  void clear() { value_.store(0, std::memory_order_relaxed); }

 private:
  const std::string name_;
  std::atomic<int64_t> value_{0};
};

// Returns the metric `name`, registering it with `kind` on first use.
// Throws lazytrain::Error if it already exists with a different kind.
Metric& metric(const std::string& name, MetricKind kind = MetricKind::kTime);

// Returns the counter `name`, registering it (value 0) on first use.
Counter& counter(const std::string& name);

// The value of counter `name`; 0 if it was never registered.
int64_t counter_value(const std::string& name);

// A snapshot of metric `name`; nullopt if it is unregistered or has no samples
// (as PyTorch/XLA's GetMetric).
std::optional<MetricData> metric_data(const std::string& name);

// Names of metrics with samples / counters with a non-zero value, sorted
// (PyTorch/XLA's GetMetricNames / GetCounterNames).
std::vector<std::string> metric_names();
std::vector<std::string> counter_names();

// Clears every metric's samples and sets every counter to 0 (PyTorch/XLA's
// ClearMetrics + ClearCounters). Registered objects stay valid.
void reset_metrics();

// PyTorch/XLA's CreateMetricReport(): every metric with samples, sorted by
// name, then every counter with a non-zero value, sorted by name.
std::string metrics_report();

// PyTorch/XLA's short_metrics_report / CreateMetricReport(counters, metrics):
// the named metrics and counters (in the order given, skipping empty ones),
// then every non-zero fallback counter: names starting with "aten::" (as
// PyTorch/XLA's) or "InterpreterFallback" (fusions the CPU backend could not
// generate and ran on the interpreter, backend/cpu/cpu_executable.h).
std::string short_metrics_report(const std::vector<std::string>& metric_names,
                                 const std::vector<std::string>& counter_names);

// PyTorch/XLA's MetricFnTime: nanoseconds as "DDdHHhMMmSSsMMMmsUUU.UUUus",
// starting at the largest unit the value reaches (d, h, m, s, ms, always us);
// d/h/m/s are 2 digits, ms 3 digits, us 3 integer digits and 3 decimals, all
// zero-padded. Parts are truncated, not rounded: 2658550535 -> "02s658ms550.535us",
// 1500 -> "001.500us".
std::string metric_fn_time(double nanoseconds);
// PyTorch/XLA's MetricFnBytes: divides by 1024 while >= 1024 (B, KB, MB, GB,
// TB, PB), 2 decimals: 1536 -> "1.50KB", 100 -> "100.00B".
std::string metric_fn_bytes(double bytes);
// PyTorch/XLA's MetricFnValue: 2 decimals, 12.5 -> "12.50".
std::string metric_fn_value(double value);

// Steady-clock time in nanoseconds (the timestamp add_sample(value) uses).
int64_t now_ns();

// Adds the nanoseconds between construction and destruction to a time metric.
class ScopedTimer {
 public:
  explicit ScopedTimer(Metric& metric) : metric_(metric), start_ns_(now_ns()) {}
  // Looks up (or registers) the kTime metric `name`.
  explicit ScopedTimer(const std::string& name) : ScopedTimer(metric(name, MetricKind::kTime)) {}
  ~ScopedTimer();
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  Metric& metric_;
  int64_t start_ns_;
};

}  // namespace lazytrain::runtime
