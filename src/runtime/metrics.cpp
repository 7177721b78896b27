#include "runtime/metrics.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <map>
#include <memory>
#include <sstream>

#include "core/error.h"

namespace lazytrain::runtime {
namespace {

// PyTorch/XLA's default XLA_METRICS_PERCENTILES.
constexpr double kPercentiles[] = {0.01, 0.05, 0.1, 0.2, 0.5, 0.8, 0.9, 0.95, 0.99};

const char* kind_name(MetricKind kind) {
  switch (kind) {
    case MetricKind::kTime: return "time";
    case MetricKind::kBytes: return "bytes";
    case MetricKind::kValue: return "value";
  }
  return "?";
}

// The registry: std::map keeps names sorted, as PyTorch/XLA's MetricsArena.
struct Registry {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<Metric>> metrics;
  std::map<std::string, std::unique_ptr<Counter>> counters;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: references outlive static destructors
  return *r;
}

// PyTorch/XLA's EmitMetricInfo.
void emit_metric(const MetricData& data, std::ostream& os) {
  auto repr = [&](double v) {
    switch (data.kind) {
      case MetricKind::kTime: return metric_fn_time(v);
      case MetricKind::kBytes: return metric_fn_bytes(v);
      case MetricKind::kValue: return metric_fn_value(v);
    }
    return std::string();
  };
  std::vector<MetricSample> samples = data.samples;
  os << "Metric: " << data.name << "\n";
  os << "  TotalSamples: " << data.total_samples << "\n";
  os << "  Accumulator: " << repr(data.accumulator) << "\n";
  if (!samples.empty()) {
    double total = 0.0;
    for (const MetricSample& s : samples) total += s.value;
    int64_t delta_time = samples.back().timestamp_ns - samples.front().timestamp_ns;
    if (delta_time > 0) {
      double value_sec = 1e6 * (total / (delta_time / 1000.0));
      os << "  ValueRate: " << repr(value_sec) << " / second\n";
      double count_sec = 1e6 * (static_cast<double>(samples.size()) / (delta_time / 1000.0));
      os << "  Rate: " << count_sec << " / second\n";
    }
  }
  std::stable_sort(samples.begin(), samples.end(),
                   [](const MetricSample& a, const MetricSample& b) { return a.value < b.value; });
  os << "  Percentiles: ";
  for (size_t i = 0; i < std::size(kPercentiles); ++i) {
    size_t index = static_cast<size_t>(kPercentiles[i] * samples.size());
    if (i > 0) os << "; ";
    os << (kPercentiles[i] * 100.0) << "%=" << (samples.empty() ? repr(0.0) : repr(samples[index].value));
  }
  os << "\n";
  if (data.per_device.size() > 1) {  // replicas: each device's share of the aggregate above
    for (const MetricData::DeviceTotals& d : data.per_device) {
      os << "Metric: " << data.name << " (" << d.device << ")\n";
      os << "  TotalSamples: " << d.total_samples << "\n";
      os << "  Accumulator: " << repr(d.accumulator) << "\n";
    }
  }
}

void emit_counter(const std::string& name, int64_t value, std::ostream& os) {
  os << "Counter: " << name << "\n";
  os << "  Value: " << value << "\n";
}

}  // namespace

Metric::Metric(std::string name, MetricKind kind, size_t max_samples)
    : name_(std::move(name)), kind_(kind), window_(max_samples == 0 ? kDefaultMaxSamples : max_samples) {}

void Metric::add_sample(double value) { add_sample(now_ns(), value); }

void Metric::add_sample(int64_t timestamp_ns, double value) {
  std::lock_guard<std::mutex> lock(mutex_);
  window_[static_cast<size_t>(count_) % window_.size()] = MetricSample{timestamp_ns, value};
  ++count_;
  accumulator_ += value;
  auto& device = per_device_[current_device()];
  ++device.first;
  device.second += value;
}

int64_t Metric::total_samples() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return count_;
}

double Metric::accumulator() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return accumulator_;
}

MetricData Metric::data() const {
  MetricData out;
  out.name = name_;
  out.kind = kind_;
  std::lock_guard<std::mutex> lock(mutex_);
  out.total_samples = count_;
  out.accumulator = accumulator_;
  for (const auto& [device, totals] : per_device_) out.per_device.push_back({device.to_string(), totals.first, totals.second});
  const size_t size = window_.size();
  const size_t count = static_cast<size_t>(count_);
  if (count <= size) {
    out.samples.assign(window_.begin(), window_.begin() + count);
  } else {  // oldest sample sits at the next write position
    size_t position = count % size;
    out.samples.assign(window_.begin() + position, window_.end());
    out.samples.insert(out.samples.end(), window_.begin(), window_.begin() + position);
  }
  return out;
}

void Metric::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  count_ = 0;
  accumulator_ = 0.0;
  per_device_.clear();
  std::fill(window_.begin(), window_.end(), MetricSample{});
}

std::string Metric::repr(double value) const {
  switch (kind_) {
    case MetricKind::kTime: return metric_fn_time(value);
    case MetricKind::kBytes: return metric_fn_bytes(value);
    case MetricKind::kValue: return metric_fn_value(value);
  }
  return metric_fn_value(value);
}

Metric& metric(const std::string& name, MetricKind kind) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.metrics.find(name);
  if (it == r.metrics.end()) {
    it = r.metrics.emplace(name, std::make_unique<Metric>(name, kind)).first;
  } else if (it->second->kind() != kind) {
    throw Error("[metrics] metric '" + name + "' is registered as a " + kind_name(it->second->kind()) +
                " metric; requested as a " + kind_name(kind) + " metric");
  }
  return *it->second;
}

Counter& counter(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.counters.find(name);
  if (it == r.counters.end()) it = r.counters.emplace(name, std::make_unique<Counter>(name)).first;
  return *it->second;
}

int64_t counter_value(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.counters.find(name);
  return it == r.counters.end() ? 0 : it->second->value();
}

std::optional<MetricData> metric_data(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.metrics.find(name);
  if (it == r.metrics.end()) return std::nullopt;
  MetricData data = it->second->data();
  if (data.total_samples == 0) return std::nullopt;
  return data;
}

std::vector<std::string> metric_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& [name, m] : r.metrics)
    if (m->total_samples() > 0) names.push_back(name);
  return names;
}

std::vector<std::string> counter_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& [name, c] : r.counters)
    if (c->value() != 0) names.push_back(name);
  return names;
}

void reset_metrics() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (auto& [name, m] : r.metrics) m->clear();
  for (auto& [name, c] : r.counters) c->clear();
}

// PyTorch/XLA emits counters only when Value() > 0; so do we.
std::string metrics_report() {
  Registry& r = registry();
  std::ostringstream os;
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto& [name, m] : r.metrics) {
    MetricData data = m->data();
    if (data.total_samples > 0) emit_metric(data, os);
  }
  for (const auto& [name, c] : r.counters) {
    int64_t value = c->value();
    if (value > 0) emit_counter(name, value, os);
  }
  return os.str();
}

std::string short_metrics_report(const std::vector<std::string>& metric_names,
                                 const std::vector<std::string>& counter_names) {
  Registry& r = registry();
  std::ostringstream os;
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const std::string& name : metric_names) {
    auto it = r.metrics.find(name);
    if (it == r.metrics.end()) continue;
    MetricData data = it->second->data();
    if (data.total_samples > 0) emit_metric(data, os);
  }
  for (const std::string& name : counter_names) {
    auto it = r.counters.find(name);
    if (it != r.counters.end() && it->second->value() > 0) emit_counter(name, it->second->value(), os);
  }
  for (const auto& [name, c] : r.counters) {
    const bool fallback = name.rfind("aten::", 0) == 0 || name.rfind("InterpreterFallback", 0) == 0;
    if (fallback && c->value() > 0) emit_counter(name, c->value(), os);
  }
  return os.str();
}

std::string metric_fn_time(double value) {
  struct Part {
    const char* suffix;
    double scaler;
    int width;
  };
  static constexpr Part kParts[] = {
      {"d", 86400.0 * 1e9, 2}, {"h", 3600.0 * 1e9, 2}, {"m", 60.0 * 1e9, 2}, {"s", 1e9, 2}, {"ms", 1e6, 3},
  };
  std::ostringstream os;
  os.fill('0');
  bool started = false;
  for (const Part& part : kParts) {
    double ctime = value / part.scaler;
    if (ctime >= 1.0 || started) {
      double whole = std::floor(ctime);
      os << std::setw(part.width) << static_cast<int64_t>(whole) << part.suffix;
      value -= whole * part.scaler;
      started = true;
    }
  }
  os << std::fixed << std::setprecision(3) << std::setw(7) << value / 1e3 << "us";
  return os.str();
}

std::string metric_fn_bytes(double value) {
  static const char* const kSuffixes[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  constexpr int kNumSuffixes = 6;
  int sfix = 0;
  for (; sfix + 1 < kNumSuffixes && value >= 1024.0; ++sfix) value /= 1024.0;
  std::ostringstream os;
  os << std::fixed << std::setprecision(2) << value << kSuffixes[sfix];
  return os.str();
}

std::string metric_fn_value(double value) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(2) << value;
  return os.str();
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

ScopedTimer::~ScopedTimer() { metric_.add_sample(static_cast<double>(now_ns() - start_ns_)); }

}  // namespace lazytrain::runtime
