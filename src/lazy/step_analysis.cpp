#include "lazy/step_analysis.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <utility>

#include "core/op_location.h"

namespace lazytrain::lazy {

namespace {
struct DeviceSteps {
  StepRecord current;
  std::deque<StepRecord> finished;
};

std::atomic<bool> enabled{false};
std::mutex mutex;
std::map<runtime::Device, DeviceSteps>& devices() {
  static std::map<runtime::Device, DeviceSteps> d;
  return d;
}
constexpr size_t kKeptSteps = 16;
constexpr size_t kKeptTransfers = 64;  // per step: a loop of reads is summarised by its first ones
}  // namespace

void set_step_analysis(bool on) { enabled = on; }
bool step_analysis() { return enabled; }

void note_execution(const runtime::Device& device, bool compiled, bool eager_op, int64_t nodes) {
  std::lock_guard<std::mutex> lock(mutex);
  StepRecord& r = devices()[device].current;
  r.compiles += compiled;
  r.executions += 1;
  r.eager_ops += eager_op;
  r.largest_graph = std::max(r.largest_graph, nodes);
}

void note_host_transfer(const runtime::Device& device, const std::string& read, const OpLocation& where, bool ran_graph) {
  std::lock_guard<std::mutex> lock(mutex);
  StepRecord& r = devices()[device].current;
  if (r.transfers.size() < kKeptTransfers) r.transfers.push_back({read, where, ran_graph});
}

StepRecord end_step(const runtime::Device& device) {
  StepRecord done;
  {
    std::lock_guard<std::mutex> lock(mutex);
    DeviceSteps& d = devices()[device];
    d.current.step = (d.finished.empty() ? 0 : d.finished.back().step) + 1;
    done = std::exchange(d.current, StepRecord{});
    d.finished.push_back(done);
    if (d.finished.size() > kKeptSteps) d.finished.pop_front();
  }
  if (enabled) std::fprintf(stderr, "%s\n", describe(done, device).c_str());
  return done;
}

StepRecord current_step(const runtime::Device& device) {
  std::lock_guard<std::mutex> lock(mutex);
  return devices()[device].current;
}

std::vector<StepRecord> recent_steps(const runtime::Device& device) {
  std::lock_guard<std::mutex> lock(mutex);
  const auto& f = devices()[device].finished;
  return {f.begin(), f.end()};
}

std::string describe(const StepRecord& r, const runtime::Device& device) {
  std::string text = "[mark_step " + std::to_string(r.step) + " on " + device.to_string() + "] " + std::to_string(r.compiles) +
                     (r.compiles == 1 ? " compile, " : " compiles, ") + std::to_string(r.executions) +
                     (r.executions == 1 ? " execution" : " executions");
  if (r.eager_ops > 0) text += " (" + std::to_string(r.eager_ops) + " single ops)";
  if (r.largest_graph > 0) text += ", largest graph " + std::to_string(r.largest_graph) + " nodes";
  text += ", " + std::to_string(r.transfers.size()) + (r.transfers.size() == 1 ? " host transfer" : " host transfers");
  for (size_t i = 0; i < r.transfers.size(); ++i) {
    const HostTransfer& t = r.transfers[i];
    const std::string where = location_text(t.where);
    text += (i == 0 ? ": " : "; ") + t.read + (where.empty() ? "" : " at " + where) + (t.ran_graph ? " (ran a graph before mark_step)" : "");
  }
  return text;
}

}  // namespace lazytrain::lazy
