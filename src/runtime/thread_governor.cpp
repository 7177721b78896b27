#include "runtime/thread_governor.h"

#include <sched.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

#include "core/env_vars.h"
#include "runtime/metrics.h"
#include "runtime/profiler.h"

namespace lazytrain::runtime {
namespace {

double clock_seconds(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace

CpuTimes read_cpu_times(bool with_cpus) {
  CpuTimes t;
  t.wall = clock_seconds(CLOCK_MONOTONIC);
  if (!with_cpus) return t;
  // Ours includes finished child processes: the kernels' compiler, run by the JIT.
  rusage children{};
  getrusage(RUSAGE_CHILDREN, &children);
  t.own = clock_seconds(CLOCK_PROCESS_CPUTIME_ID) + static_cast<double>(children.ru_utime.tv_sec + children.ru_stime.tv_sec) +
          static_cast<double>(children.ru_utime.tv_usec + children.ru_stime.tv_usec) * 1e-6;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0) return t;
  t.cpus = std::max(1, CPU_COUNT(&mask));
  FILE* f = std::fopen("/proc/stat", "r");
  if (!f) return t;
  static const double ticks_per_second = static_cast<double>(sysconf(_SC_CLK_TCK));
  char line[512];
  unsigned long long busy_ticks = 0;
  while (std::fgets(line, sizeof(line), f)) {
    // "cpuN user nice system idle iowait irq softirq steal guest guest_nice"
    int cpu = -1;
    unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    if (std::strncmp(line, "cpu", 3) != 0 || line[3] < '0' || line[3] > '9') continue;
    if (std::sscanf(line + 3, "%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &user, &nice, &system, &idle, &iowait, &irq,
                    &softirq, &steal) < 5) {
      continue;
    }
    // Not `nice`: niced work yields to ours anyway (our own nice +10 data threads are in it, and in `own`).
    if (cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &mask)) busy_ticks += user + system + irq + softirq + steal;
  }
  std::fclose(f);
  t.cpus_busy = static_cast<double>(busy_ticks) / ticks_per_second;
  return t;
}

ThreadGovernor::ThreadGovernor(ReadFn read) : read_(std::move(read)) {}

int ThreadGovernor::threads(int max_threads) {
  max_threads = std::max(1, max_threads);
  if (max_threads != max_) {
    max_ = current_ = max_threads;
    window_open_ = false;
  }
  if (max_ > 1 && !window_open_) {
    start_ = read_(true);
    window_open_ = true;
  }
  return current_;
}

void ThreadGovernor::observe() {
  if (!window_open_) return;
  if ((read_(false).wall - start_.wall) * 1e9 < static_cast<double>(kWindowNs)) return;
  TraceMe trace("governor", "ThreadGovernor window");
  const CpuTimes now = read_(true);
  const double wall = now.wall - start_.wall;
  window_open_ = false;
  if (now.cpus_busy <= 0) return;  // no /proc/stat: nothing to go by
  others_ = std::max(0.0, ((now.cpus_busy - start_.cpus_busy) - (now.own - start_.own)) / wall);
  const int target = std::clamp(static_cast<int>(std::floor(now.cpus - others_ + 0.5)), 1, max_);
  if (target < current_) {
    static Counter& reduced = counter("ExecutionThreadsReduced");
    reduced.add(1);
  } else if (target > current_) {
    static Counter& raised = counter("ExecutionThreadsRaised");
    raised.add(1);
  }
  if (trace) trace.arg("others_cpus", others_).arg("window_s", wall).arg("threads", static_cast<int64_t>(target)).arg("threads_before", static_cast<int64_t>(current_));
  if (environment().profile_stderr && target != current_) {
    std::fprintf(stderr, "[profile] other processes used %.2f of %d CPUs over %.2f s: compute threads %d, were %d\n", others_,
                 now.cpus, wall, target, current_);
  }
  current_ = target;
}

}  // namespace lazytrain::runtime
