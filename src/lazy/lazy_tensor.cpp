#include "lazy/lazy_tensor.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>

#include "core/error.h"
#include "core/op_location.h"
#include "lazy/graph_executor.h"

namespace lazytrain::lazy {

namespace {
std::atomic<int64_t> next_unique_id{0};

struct Registry {
  std::mutex mutex;
  std::vector<std::weak_ptr<LazyTensor>> tensors;
  size_t compact_at = 1024;
};

Registry& registry() {
  static Registry r;
  return r;
}
}  // namespace

LazyTensor::LazyTensor(NodePtr value) : value_(std::move(value)), unique_id_(next_unique_id++) {
  check(value_ != nullptr, "LazyTensor", "a tensor needs an IR value");
  shape_ = value_->shape();
  dtype_ = value_->dtype();
  device_ = value_->device();
  pending_ = !value_->is_device_data();
}

NodePtr LazyTensor::ir_value() const {
  std::lock_guard<ValueLock> hold(lock_);
  return value_;
}

std::shared_ptr<runtime::AsyncBuffer> LazyTensor::committed_data() const {
  std::lock_guard<ValueLock> hold(lock_);
  return committed_.lock();
}

void LazyTensor::set_ir_value(NodePtr value) {
  check(value && value->shape() == shape_ && value->dtype() == dtype_, "LazyTensor",
        "in-place update must keep shape " + shape_str(shape()) + " and dtype " + torch_name(dtype()));
  check(value->device() == device() || value->device_neutral(), "LazyTensor",
        "in-place update must stay on " + device().to_string() + ", got a value on " + value->device().to_string());
  NodePtr old;  // released after the lock: freeing a graph may take a while
  {
    std::lock_guard<ValueLock> hold(lock_);
    old = value_;
    set_locked(std::move(value));
  }
}

bool LazyTensor::replace_ir_value(const Node* expected, NodePtr value) {
  check(value && value->shape() == shape_ && value->dtype() == dtype_, "LazyTensor",
        "a sync must keep shape " + shape_str(shape()) + " and dtype " + torch_name(dtype()));
  NodePtr old;
  std::lock_guard<ValueLock> hold(lock_);
  if (value_.get() != expected) return false;
  old = value_;
  set_locked(std::move(value));
  return true;
}

void LazyTensor::set_locked(NodePtr value) {
  // An update of a pending value by a pending value makes the graph deeper.
  pending_updates_ = has_pending_ir() && !value->is_device_data() ? pending_updates_ + 1 : 0;
  if (pending_updates_ == kUpdatesWarning) warn_growth(*value);
  if (value->is_device_data()) {
    committed_.reset();
  } else if (!has_pending_ir()) {
    committed_ = value_->async_data();
  }
  pending_.store(!value->is_device_data(), std::memory_order_release);
  value_ = std::move(value);
}

void LazyTensor::warn_growth(const Node& value) const {
  static std::atomic<bool> warned{false};
  const std::string where = location_text(value.location());
  if (!warned.exchange(true)) {
    std::fprintf(stderr,
                 "warning: [mark_step] a tensor (%s%s on %s) was updated in place %d times with no mark_step() between%s: its "
                 "graph grows with every update (every step's ops are traced into one graph that never runs); call "
                 "mark_step() once per step\n",
                 xla_name(dtype()).c_str(), shape_str(shape()).c_str(), device_.to_string().c_str(), pending_updates_,
                 where.empty() ? "" : (" (the latest update from " + where + ")").c_str());
  }
  growth_warnings().fetch_add(1);
}

std::atomic<int64_t>& LazyTensor::growth_warnings() {
  static std::atomic<int64_t> count{0};
  return count;
}

void LazyTensor::sync() {
  if (!has_pending_ir()) return;
  const OpLocation* where = current_op_location();
  const SyncCause cause{SyncCause::Kind::kRead, where ? *where : OpLocation{}};
  // A read runs everything pending on the device (lazy/graph_executor.h,
  // sync_live), but only from the thread the device is current on: another
  // thread's tensors of that device may be changing under it.
  if (runtime::current_device() == device_) {
    GraphExecutor::get().sync_live(device_, cause, this);
  } else {
    GraphExecutor::get().sync({this}, cause);
  }
}

runtime::Buffer LazyTensor::buffer() {
  // Another thread may give this tensor a new pending value between the sync
  // and the read: sync again until the value read is materialised (each sync
  // runs what is pending, so this ends once that thread stops updating).
  sync();
  NodePtr value = ir_value();
  while (!value->is_device_data()) {
    sync();
    value = ir_value();
  }
  try {
    return value->data();
  } catch (...) {
    // The user now has the failed execution's error: it is not reported again.
    GraphExecutor::get().clear_execution_failure(device());
    throw;
  }
}

void register_live_tensor(const std::shared_ptr<LazyTensor>& tensor) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.tensors.push_back(tensor);
  if (r.tensors.size() >= r.compact_at) {
    std::erase_if(r.tensors, [](const std::weak_ptr<LazyTensor>& w) { return w.expired(); });
    r.compact_at = std::max<size_t>(1024, r.tensors.size() * 2);
  }
}

namespace {
std::vector<std::shared_ptr<LazyTensor>> live_tensors_of(const runtime::Device& device, bool pending_only) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::shared_ptr<LazyTensor>> out;
  for (const auto& w : r.tensors) {
    // The device first: another device's tensors are being updated by their own threads.
    if (auto t = w.lock(); t && t->device() == device && (!pending_only || t->has_pending_ir())) out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a->unique_id() < b->unique_id(); });
  return out;
}
}  // namespace

std::vector<std::shared_ptr<LazyTensor>> live_tensors_with_pending_ir(const runtime::Device& device) {
  return live_tensors_of(device, true);
}

std::vector<std::shared_ptr<LazyTensor>> live_tensors(const runtime::Device& device) { return live_tensors_of(device, false); }

size_t live_tensor_count() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return static_cast<size_t>(std::count_if(r.tensors.begin(), r.tensors.end(), [](const auto& w) { return !w.expired(); }));
}

}  // namespace lazytrain::lazy
