// ExecutionQueue: the device's in-order execution stream. One worker thread
// runs the enqueued executions one after another, so an execution always sees
// the outputs of the ones enqueued before it. As PyTorch/XLA's device lock, at
// most one execution is in flight: enqueue() first waits (DeviceLockWait) for
// the previous one to finish, so the host traces step n+1 while step n runs
// and never runs further ahead (bounded memory). The worker thread is named
// "device cpu:N execution" (its row in a trace, runtime/profiler.h).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "runtime/device.h"

namespace lazytrain::runtime {

class ExecutionQueue {
 public:
  // The worker runs with `device` as its current device (buffers it allocates live there).
  explicit ExecutionQueue(Device device);
  ~ExecutionQueue();  // waits for the execution in flight
  ExecutionQueue(const ExecutionQueue&) = delete;
  ExecutionQueue& operator=(const ExecutionQueue&) = delete;

  // Waits until the device is free, then hands `execution` to the worker and
  // returns. `execution` must not throw (it reports failures through its outputs).
  void enqueue(std::function<void()> execution);
  // Waits until nothing is in flight (DeviceLockWait).
  void wait_idle();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::function<void()> pending_;
  bool busy_ = false;  // an execution is pending or running
  bool stop_ = false;
  std::thread worker_;
};

// The queue of `device` (one per device, process-wide, made at first use).
ExecutionQueue& execution_queue(const Device& device);
// Waits until no device has an execution in flight.
void wait_all_idle();

// The OpenMP threads each execution may use (the worker calls
// omp_set_num_threads before it runs one; oneDNN and the kernels follow):
// replicas of one process divide the cores (distributed::spawn), so they do
// not oversubscribe them. 0 (default): default_thread_budget() (the CPUs this
// process may use; runtime/thread_budget.h). Error for < 0. The count allowed
// is the metrics report's counter ExecutionThreads; the count the last
// execution ran on (fewer while a ThreadGovernor gives way) ExecutionThreadsInUse.
void set_threads_per_execution(int threads);
int threads_per_execution();
// Gives the calling thread's OpenMP parallel regions threads_per_execution()
// threads. For threads that create oneDNN primitives (the compiling thread):
// oneDNN sizes its work split at creation and asks for as many threads when
// it runs, so creation and execution must agree.
void use_execution_threads();
// use_execution_threads() for a scope: the calling thread's OpenMP thread
// count is put back on exit, so a framework in the same process that shares
// libgomp keeps the count it set (torch's get_num_threads(), which Dynamo
// guards on: a changed count recompiles every torch.compile'd function).
class ScopedExecutionThreads {
 public:
  ScopedExecutionThreads();
  ~ScopedExecutionThreads();
  ScopedExecutionThreads(const ScopedExecutionThreads&) = delete;
  ScopedExecutionThreads& operator=(const ScopedExecutionThreads&) = delete;

 private:
  int previous_;
};
// True when the count is lazytrain's default (no set_threads_per_execution,
// no OMP_NUM_THREADS): each queue's ThreadGovernor may then run executions on
// fewer threads while other work holds the CPUs (runtime/thread_governor.h).
bool threads_are_governed();

}  // namespace lazytrain::runtime
