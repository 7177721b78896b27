#include "runtime/execution_queue.h"

#include "runtime/metrics.h"

namespace lazytrain::runtime {

ExecutionQueue::ExecutionQueue() : worker_([this] { run(); }) {}

ExecutionQueue::~ExecutionQueue() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return !busy_; });
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void ExecutionQueue::enqueue(std::function<void()> execution) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (busy_) {
    ScopedTimer timer("DeviceLockWait");
    cv_.wait(lock, [&] { return !busy_; });
  }
  pending_ = std::move(execution);
  busy_ = true;
  lock.unlock();
  cv_.notify_all();
}

void ExecutionQueue::wait_idle() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!busy_) return;
  ScopedTimer timer("DeviceLockWait");
  cv_.wait(lock, [&] { return !busy_; });
}

void ExecutionQueue::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || pending_ != nullptr; });
    if (pending_ == nullptr) return;  // stop_ and nothing left
    std::function<void()> execution = std::move(pending_);
    pending_ = nullptr;
    lock.unlock();
    execution();
    execution = nullptr;  // release what it captured before the device counts as free
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

ExecutionQueue& device_execution_queue() {
  static ExecutionQueue* queue = new ExecutionQueue();  // never destroyed: executions may outlive statics
  return *queue;
}

}  // namespace lazytrain::runtime
