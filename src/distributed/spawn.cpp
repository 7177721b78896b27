#include "distributed/spawn.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/thread_name.h"
#include "lazy/lazy_api.h"
#include "runtime/collectives.h"
#include "runtime/device.h"
#include "runtime/execution_queue.h"

namespace lazytrain::distributed {

void spawn(const std::function<void(int index)>& fn, int num_replicas, const SpawnOptions& options) {
  check(num_replicas >= 1, "spawn", "num_replicas must be >= 1, got " + std::to_string(num_replicas));
  check(options.threads_per_replica >= 0, "spawn", "threads_per_replica must be >= 0, got " + std::to_string(options.threads_per_replica));
  const int threads = options.threads_per_replica > 0 ? options.threads_per_replica : std::max(1, runtime::threads_per_execution() / num_replicas);
  const int previous_threads = runtime::threads_are_governed() ? 0 : runtime::threads_per_execution();  // 0: the default again
  const double previous_timeout = runtime::collective_timeout();
  runtime::set_collective_timeout(options.collective_timeout);
  runtime::set_local_replicas(num_replicas);
  runtime::set_threads_per_execution(threads);

  // Shared with the replica threads by ownership: a thread left behind (below)
  // may outlive this call.
  struct Shared {
    std::function<void(int)> fn;
    std::mutex mutex;
    std::condition_variable ended;
    int running = 0;
    std::exception_ptr first_error;
  };
  auto shared = std::make_shared<Shared>();
  shared->fn = fn;
  shared->running = num_replicas;
  std::vector<std::thread> replicas;
  for (int i = 0; i < num_replicas; ++i) {
    replicas.emplace_back([shared, threads, i] {
      const runtime::Device device{"cpu", i};
      set_thread_name("replica " + device.to_string() + " (trace)");
      runtime::DeviceGuard guard(device);
      omp_set_num_threads(threads);
      try {
        shared->fn(i);
        lazy::wait_device_ops(device);
      } catch (const std::exception& e) {
        {
          std::lock_guard<std::mutex> lock(shared->mutex);
          if (!shared->first_error) shared->first_error = std::current_exception();
          shared->ended.notify_all();
        }
        runtime::abort_collectives("replica " + std::to_string(runtime::global_ordinal(device)) + " raised: " + e.what());
        try {
          lazy::wait_device_ops(device);  // its executions end (the abort fails their collectives)
        } catch (const std::exception&) {
        }
      }
      std::lock_guard<std::mutex> lock(shared->mutex);
      --shared->running;
      shared->ended.notify_all();
    });
  }
  auto restore = [&] {
    try {  // back to one replica (unless a thread left behind is inside a collective still)
      runtime::set_local_replicas(1);
    } catch (const Error&) {
    }
    runtime::set_threads_per_execution(previous_threads);
    runtime::set_collective_timeout(previous_timeout);
  };
  {
    // After a failure the others get collective_timeout to notice it (the abort
    // fails their next collective); a replica stuck outside collectives is left
    // behind (detached) rather than hanging the caller.
    std::unique_lock<std::mutex> lock(shared->mutex);
    shared->ended.wait(lock, [&] { return shared->running == 0 || shared->first_error != nullptr; });
    if (shared->running > 0) {
      shared->ended.wait_for(lock, std::chrono::duration<double>(options.collective_timeout), [&] { return shared->running == 0; });
    }
    if (shared->running > 0) {
      const int left_behind = shared->running;
      const std::exception_ptr error = shared->first_error;
      lock.unlock();
      for (auto& t : replicas) t.detach();
      std::fprintf(stderr, "[spawn] %d replica thread(s) did not end within collective_timeout after a replica failed; left behind\n",
                   left_behind);
      restore();
      std::rethrow_exception(error);
    }
  }
  for (auto& t : replicas) t.join();
  restore();
  if (shared->first_error) std::rethrow_exception(shared->first_error);
}

}  // namespace lazytrain::distributed
