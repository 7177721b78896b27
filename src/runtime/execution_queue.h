// ExecutionQueue: the device's in-order execution stream. One worker thread
// runs the enqueued executions one after another, so an execution always sees
// the outputs of the ones enqueued before it. As PyTorch/XLA's device lock, at
// most one execution is in flight: enqueue() first waits (DeviceLockWait) for
// the previous one to finish, so the host traces step n+1 while step n runs
// and never runs further ahead (bounded memory).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace lazytrain::runtime {

class ExecutionQueue {
 public:
  ExecutionQueue();
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

// The CPU device's queue (process-wide).
ExecutionQueue& device_execution_queue();

}  // namespace lazytrain::runtime
