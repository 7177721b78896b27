// LazyTensor: the device-side state of a tensor: one IR value. A materialised
// tensor's value is an "xla::device_data" node holding its Buffer; a pending
// tensor's value is the node that will compute it at the next sync.
//
// Every LazyTensor made through create() is in the live-tensor registry, which
// mark_step() walks to find the graph's outputs.
//
// Threads: the value may be read and replaced by several threads at once (two
// Python threads on one device: one traces while the other's read syncs every
// pending tensor of the device), so it is guarded by a small lock and read as
// a copy; a sync replaces a value only if it is still the one it computed
// (replace_ir_value), so an update made meanwhile is never lost.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "hlo/hlo_sharding.h"
#include "lazy/ir.h"

namespace lazytrain::lazy {

class LazyTensor {
 public:
  explicit LazyTensor(NodePtr value);
  virtual ~LazyTensor() = default;

  // Fixed at construction (set_ir_value keeps it): a reference to it stays
  // valid when a sync replaces the value, as a cut inside an op may.
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  // Fixed at construction (an in-place update stays on it), so other threads
  // may read it while this tensor's own thread updates the value.
  const runtime::Device& device() const { return device_; }
  // The current value (a copy: another thread may replace it meanwhile).
  NodePtr ir_value() const;
  // Replaces the value (functional in-place update: x.add_(y), optimizer steps).
  // The kUpdatesWarning-th update in a row of a pending value by a pending
  // value (a loop of updates without mark_step) prints a one-line warning
  // (once a process) naming the tensor and the update's line.
  void set_ir_value(NodePtr value);
  // set_ir_value only while the value is still `expected` (a sync giving a
  // pending value its result: an in-place update another thread made since
  // wins). Returns whether it replaced it.
  bool replace_ir_value(const Node* expected, NodePtr value);
  static constexpr int kUpdatesWarning = 64;
  // How many growth warnings were due (printed or not), for tests.
  static std::atomic<int64_t>& growth_warnings();
  // True when the value still has to be computed.
  bool has_pending_ir() const { return pending_.load(std::memory_order_acquire); }
  // While the value is pending: the device data it held before its first
  // pending update, if something (the pending graph) still holds it; null
  // otherwise. Held weakly, so it costs nothing and does not stop the graph
  // from donating it. A failed execution gives it back to the tensor
  // (GraphExecutor::sync): a step that fails keeps its parameters.
  std::shared_ptr<runtime::AsyncBuffer> committed_data() const;
  // Launches the pending graph, if any (returns without waiting): as a value
  // read, it runs every pending value of the device (GraphExecutor::sync_live)
  // when the device is this thread's current one, else this value's graph only.
  void sync();
  // The materialised buffer: syncs, then waits for the execution.
  runtime::Buffer buffer();
  // The layout a user gave this tensor (distributed/spmd.h mark_sharding),
  // kept across updates: a sync annotates the tensor's pending value with it,
  // so a parameter updated in place keeps its layout from step to step (as
  // PyTorch/XLA keeps a tensor's sharding spec). None: the compiler decides.
  const std::optional<hlo::HloSharding>& sharding_spec() const { return sharding_spec_; }
  void set_sharding_spec(std::optional<hlo::HloSharding> sharding) { sharding_spec_ = std::move(sharding); }
  // Registry order: creation order, so graph outputs are ordered deterministically.
  int64_t unique_id() const { return unique_id_; }

 private:
  // Guards value_, committed_ and pending_updates_: held for a few
  // instructions only, so a spin costs less than a mutex on the tracing path.
  class ValueLock {
   public:
    void lock() {
      while (flag_.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
    }
    void unlock() { flag_.clear(std::memory_order_release); }

   private:
    std::atomic_flag flag_ = ATOMIC_FLAG_INIT;
  };
  // set_ir_value with lock_ held.
  void set_locked(NodePtr value);
  void warn_growth(const Node& value) const;
  mutable ValueLock lock_;
  NodePtr value_;
  std::atomic<bool> pending_{false};
  DType dtype_;
  std::weak_ptr<runtime::AsyncBuffer> committed_;
  Shape shape_;
  runtime::Device device_;
  int64_t unique_id_;
  int pending_updates_ = 0;
  std::optional<hlo::HloSharding> sharding_spec_;
};

// Adds `tensor` to the live-tensor registry (held weakly).
void register_live_tensor(const std::shared_ptr<LazyTensor>& tensor);
// The live tensors of `device` with a pending value, in creation order.
std::vector<std::shared_ptr<LazyTensor>> live_tensors_with_pending_ir(const runtime::Device& device);
// Every live tensor of `device`, pending or not, in creation order.
std::vector<std::shared_ptr<LazyTensor>> live_tensors(const runtime::Device& device);
// Number of registered tensors still alive (for tests).
size_t live_tensor_count();

}  // namespace lazytrain::lazy
