// ThreadGovernor: fewer compute threads while other work holds the CPUs.
//
// A parallel region ends when its slowest thread does. When another process
// keeps one of our CPUs busy, the thread that shares that CPU runs at a
// fraction of its speed and every region waits for it, so 2 threads run no
// faster than 1, and with spinning waits far slower (bert-mini beside a busy
// loop: 0.81x of one thread with passive waiting, 0.12x spinning; README, "On
// a shared machine"). OpenMP's own OMP_DYNAMIC follows the load average, which
// counts our own threads and lags by a minute. So lazytrain measures what
// other processes use of the CPUs it may run on, over windows of at least
// kWindowNs:
//
//   others = (busy time of those CPUs in /proc/stat, steal included, niced
//            work not: it yields to ours) - (this process's CPU time and its
//            finished children's, the JIT's compiler), per second of the window
//   threads = clamp(floor(cpus - others + 0.5), 1, maximum)
//
// One CPU-bound neighbour on 2 CPUs takes about 2/3 of a CPU beside our 2
// threads (3 runnable threads share 2 CPUs) and a whole one beside our single
// thread: 1 thread either way, which is then as fast as 1 thread can be. When
// the neighbour stops, the next window gives every thread back. Our own other
// threads (tracing, data loading) count as ours, not as others'.
//
// Only lazytrain's default thread count is governed: a count the user gave
// (--num_threads, OMP_NUM_THREADS, replicas' shares) is used as given.
// Counters: ExecutionThreadsReduced, ExecutionThreadsRaised (windows that
// changed the count), ExecutionThreadsInUse (the last execution's);
// LAZYTRAIN_PROFILE_STDERR prints each change; a trace (runtime/profiler.h)
// shows each window's end as a "governor" event.
#pragma once

#include <cstdint>
#include <functional>

namespace lazytrain::runtime {

// Cumulative CPU times at one moment, in seconds.
struct CpuTimes {
  double wall = 0;      // a monotonic clock
  double cpus_busy = 0; // summed over the CPUs this process may use: not idle, not niced, not waiting for I/O
  double own = 0;       // this process's threads, all CPUs, and its finished child processes
  int cpus = 1;         // how many CPUs cpus_busy covers
};

// Reads CpuTimes now: /proc/stat's lines of the CPUs in this thread's affinity
// mask, CLOCK_PROCESS_CPUTIME_ID, CLOCK_MONOTONIC; only `wall` when
// `with_cpus` is false (cheap: once per execution). cpus_busy stays 0 where
// /proc/stat cannot be read (the governor then keeps every thread).
CpuTimes read_cpu_times(bool with_cpus = true);

class ThreadGovernor {
 public:
  static constexpr int64_t kWindowNs = 500'000'000;  // /proc/stat counts in 10 ms ticks

  using ReadFn = std::function<CpuTimes(bool with_cpus)>;
  explicit ThreadGovernor(ReadFn read = read_cpu_times);

  // Threads for the next execution, between 1 and `max_threads` (the count
  // allowed now; a change of it starts over at the maximum).
  int threads(int max_threads);
  // Called after each execution: ends the window when it is long enough.
  void observe();
  // Other processes' CPUs in the last window (for tests and reports).
  double others() const { return others_; }

 private:
  ReadFn read_;
  int max_ = 0;
  int current_ = 0;
  bool window_open_ = false;
  CpuTimes start_;
  double others_ = 0;
};

}  // namespace lazytrain::runtime
