// DeviceLoader: PyTorch/XLA's MpDeviceLoader (torch_xla.distributed.parallel_loader:
// ParallelLoader + PerDeviceLoader).
// A loader thread pulls host batches from `source` (a DataLoader epoch, whose
// own workers tokenize and collate) into a queue of loader_prefetch_size; a
// transfer thread turns them into device batches with `to_device` (tensors made
// from host memory: the host-to-device copy, timed as TransferToDeviceTime) into
// a queue of device_prefetch_size. next() calls mark_step() (from the second
// call on: the step traced since the previous batch is cut and launched) and
// returns the next device batch, so batch n+1 is prepared and copied while
// step n executes.
//
// An exception in `source` or `to_device` is rethrown by next() at that batch's
// turn. Destroying the loader early (the training loop stopped) stops both
// threads cleanly; an empty source gives nullopt on the first next().
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "core/error.h"
#include "core/thread_name.h"
#include "lazy/lazy_api.h"
#include "runtime/device.h"
#include "runtime/metrics.h"
#include "runtime/profiler.h"
#include "runtime/thread_budget.h"

namespace lazytrain::distributed {

struct DeviceLoaderOptions {
  int loader_prefetch_size = 8;  // host batches ready ahead
  int device_prefetch_size = 4;  // device batches ready ahead
};

template <typename HostBatch, typename DeviceBatch>
class DeviceLoader {
 public:
  using Source = std::function<std::optional<HostBatch>()>;
  using ToDevice = std::function<DeviceBatch(HostBatch&&)>;

  // Throws Error for prefetch sizes below 1.
  // Batches go to the device current on the calling thread (a replica's).
  DeviceLoader(Source source, ToDevice to_device, DeviceLoaderOptions options = {})
      : source_(std::move(source)), to_device_(std::move(to_device)), options_(options), target_device_(runtime::current_device()) {
    check(options_.loader_prefetch_size >= 1 && options_.device_prefetch_size >= 1, "DeviceLoader",
          "loader_prefetch_size and device_prefetch_size must be at least 1");
    // Both threads wait on cv_ (passively) and yield the CPU to the compute
    // threads when both want it (runtime/thread_budget.h).
    loader_ = std::thread([this] {
      set_thread_name("loader");
      runtime::DeviceGuard guard(target_device_);
      runtime::yield_to_compute_threads();
      load();
    });
    transfer_ = std::thread([this] {
      set_thread_name("loader (to device)");
      runtime::DeviceGuard guard(target_device_);
      runtime::yield_to_compute_threads();
      transfer();
    });
  }

  ~DeviceLoader() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    loader_.join();
    transfer_.join();
  }
  DeviceLoader(const DeviceLoader&) = delete;
  DeviceLoader& operator=(const DeviceLoader&) = delete;

  // mark_step() (except before the first batch), then the next device batch;
  // nullopt once the source is exhausted. Rethrows a failure of either thread.
  std::optional<DeviceBatch> next() {
    if (batches_returned_ > 0) lazy::mark_step();
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return !device_.empty() || transfer_done_; });
    if (device_.empty()) {
      if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
      return std::nullopt;
    }
    DeviceBatch batch = std::move(device_.front());
    device_.pop_front();
    ++batches_returned_;
    cv_.notify_all();
    return batch;
  }

 private:
  void load() {
    while (true) {
      std::optional<HostBatch> batch;
      try {
        runtime::TraceMe trace("loader", "next host batch");
        batch = source_();
      } catch (...) {
        finish_loading(std::current_exception());
        return;
      }
      std::unique_lock<std::mutex> lock(mutex_);
      if (!batch || stop_) {
        lock.unlock();
        finish_loading(nullptr);
        return;
      }
      cv_.wait(lock, [&] { return stop_ || host_.size() < static_cast<size_t>(options_.loader_prefetch_size); });
      if (stop_) return;
      host_.push_back(std::move(*batch));
      cv_.notify_all();
    }
  }

  void finish_loading(std::exception_ptr error) {
    std::lock_guard<std::mutex> lock(mutex_);
    loading_done_ = true;
    if (error) error_ = error;
    cv_.notify_all();
  }

  void transfer() {
    while (true) {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || !host_.empty() || loading_done_; });
      if (stop_ || host_.empty()) {  // stopped, or everything loaded and moved
        transfer_done_ = true;
        cv_.notify_all();
        return;
      }
      HostBatch host = std::move(host_.front());
      host_.pop_front();
      cv_.notify_all();
      lock.unlock();
      std::optional<DeviceBatch> device;
      try {
        runtime::TraceMe trace("loader", "batch to device");
        runtime::ScopedTimer timer("TransferToDeviceTime");
        device.emplace(to_device_(std::move(host)));
      } catch (...) {
        lock.lock();
        error_ = std::current_exception();
        transfer_done_ = true;
        cv_.notify_all();
        return;
      }
      lock.lock();
      cv_.wait(lock, [&] { return stop_ || device_.size() < static_cast<size_t>(options_.device_prefetch_size); });
      if (stop_) {
        transfer_done_ = true;
        cv_.notify_all();
        return;
      }
      device_.push_back(std::move(*device));
      cv_.notify_all();
    }
  }

  Source source_;
  ToDevice to_device_;
  DeviceLoaderOptions options_;
  runtime::Device target_device_;  // where the batches go
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<HostBatch> host_;
  std::deque<DeviceBatch> device_;
  bool loading_done_ = false;
  bool transfer_done_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  int64_t batches_returned_ = 0;
  std::thread loader_, transfer_;
};

}  // namespace lazytrain::distributed
