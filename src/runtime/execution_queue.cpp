#include "runtime/execution_queue.h"

#include <omp.h>

#include <atomic>
#include <map>
#include <vector>

#include "core/env_vars.h"
#include "core/error.h"
#include "core/thread_name.h"

#include "runtime/metrics.h"
#include "runtime/profiler.h"
#include "runtime/thread_budget.h"
#include "runtime/thread_governor.h"

namespace lazytrain::runtime {

namespace {
std::atomic<int> execution_threads{0};

// `threads` for this thread's parallel regions; the report's ExecutionThreads
// is the count allowed (a governor's reductions are counted apart).
void use_threads(int threads) {
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
  static Counter& reported = counter("ExecutionThreads");
  reported.set(threads_per_execution());
}

struct Queues {
  std::mutex mutex;
  std::map<Device, ExecutionQueue*> by_device;  // never destroyed: executions may outlive statics
};
Queues& queues() {
  static Queues* q = new Queues();
  return *q;
}
}  // namespace

ExecutionQueue::ExecutionQueue(Device device)
    : worker_([this, device] {
        set_thread_name("device " + device.to_string() + " execution");
        DeviceGuard guard(device);
        run();
      }) {}

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
    TraceMe trace("wait", "DeviceLockWait");
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
  TraceMe trace("wait", "DeviceLockWait");
  ScopedTimer timer("DeviceLockWait");
  cv_.wait(lock, [&] { return !busy_; });
}

void ExecutionQueue::run() {
  ThreadGovernor governor;
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || pending_ != nullptr; });
    if (pending_ == nullptr) return;  // stop_ and nothing left
    std::function<void()> execution = std::move(pending_);
    pending_ = nullptr;
    lock.unlock();
    // lazytrain's default thread count gives way to other work (thread_governor.h); a count the user set is kept.
    const bool governed = threads_are_governed();
    const int threads = governed ? governor.threads(threads_per_execution()) : threads_per_execution();
    use_threads(threads);
    static Counter& in_use = counter("ExecutionThreadsInUse");
    in_use.set(threads);
    execution();
    if (governed) governor.observe();
    execution = nullptr;  // release what it captured before the device counts as free
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

ExecutionQueue& execution_queue(const Device& device) {
  Queues& q = queues();
  std::lock_guard<std::mutex> lock(q.mutex);
  ExecutionQueue*& queue = q.by_device[device];
  if (!queue) queue = new ExecutionQueue(device);
  return *queue;
}

void wait_all_idle() {
  std::vector<ExecutionQueue*> all;
  {
    Queues& q = queues();
    std::lock_guard<std::mutex> lock(q.mutex);
    for (const auto& [device, queue] : q.by_device) all.push_back(queue);
  }
  for (ExecutionQueue* queue : all) queue->wait_idle();
}

void set_threads_per_execution(int threads) {
  check(threads >= 0, "set_threads_per_execution", "threads must be >= 0 (0: OpenMP's default), got " + std::to_string(threads));
  execution_threads.store(threads);
}

int threads_per_execution() {
  const int threads = execution_threads.load();
  return threads > 0 ? threads : default_thread_budget().threads;
}

void use_execution_threads() { use_threads(threads_per_execution()); }

ScopedExecutionThreads::ScopedExecutionThreads() : previous_(omp_get_max_threads()) { use_execution_threads(); }

ScopedExecutionThreads::~ScopedExecutionThreads() {
  if (omp_get_max_threads() != previous_) omp_set_num_threads(previous_);
}

bool threads_are_governed() { return execution_threads.load() == 0 && !environment().omp_num_threads; }

}  // namespace lazytrain::runtime
