// DeviceContext: what the lazy runtime keeps per device between executions
// (DESIGN.md, "The execution model"): how many executions it launched, a
// failure not reported yet, the last graph it ran, the lock that orders its
// syncs, and the calling thread's graph recording. The GraphExecutor reads and
// writes it; its launch path (execution thread included) sets the failure.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <set>
#include <vector>

#include "runtime/device.h"

namespace lazytrain::lazy {

class DeviceContext {
 public:
  // Held by a sync from collecting its tensors to launching their graph (and
  // by execute's launch): syncs of one device from several threads run one at
  // a time, in order with their launches.
  std::mutex& sync_mutex() { return sync_; }

  // Numbers the next execution of the device (from 1) and returns its number.
  int64_t begin_execution() { return executions_.fetch_add(1) + 1; }
  // How many executions the device has launched.
  int64_t executions() const { return executions_.load(); }

  // The hash of the last graph (not a single eager op) the device ran; 0 before the first.
  void set_last_graph(uint64_t hash) { last_graph_.store(hash); }
  uint64_t last_graph() const { return last_graph_.load(); }

  // A failed execution's error, set by the device's execution thread and
  // reported once: take_failure() returns it (nullptr when none) and forgets it.
  void set_failure(std::exception_ptr error);
  std::exception_ptr take_failure();

 private:
  std::mutex sync_;
  // Atomics: read and written on every sync, without a lock.
  std::atomic<int64_t> executions_{0};
  std::atomic<uint64_t> last_graph_{0};
  std::mutex failure_mutex_;  // guards failure_ (set by the execution thread)
  std::exception_ptr failure_;
};

// The context of `device`, made at its first use; it lives as long as the
// process (its address never changes), so callers may keep the reference.
DeviceContext& device_context(const runtime::Device& device);
// Every device that has a context, in Device order.
std::vector<runtime::Device> devices_with_context();

// The set the calling thread records `device`'s graph hashes into (nullptr:
// none); lazy_api.h's record_graphs(). Per thread: replica threads that share
// a device never see another thread's set, which may be gone by then.
std::set<uint64_t>*& graph_recorder(const runtime::Device& device);

}  // namespace lazytrain::lazy
