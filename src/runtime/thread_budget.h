// How many compute threads lazytrain uses, and how they wait.
//
// The default is the number of CPUs this process may actually run on: the
// affinity mask (sched_getaffinity: `taskset -c 0` gives one) capped by the
// cgroup CPU quota (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us` /
// `cpu.cfs_period_us`, the smallest along the process's cgroup path, rounded
// up as Go's GOMAXPROCS does: a quota of 1.5 CPUs gives 2). The machine's core
// count is not used: a container limited to one CPU on a 64-core host must not
// start 64 spinning threads. OMP_NUM_THREADS, when set, is the user's choice
// and wins; `--num_threads` (TrainingArguments::num_threads) wins over both.
//
// Compute threads are OpenMP's: generated kernels and oneDNN share libgomp's
// pool. At a barrier they spin 30,000 times, then sleep (GOMP_SPINCOUNT=30000,
// set before libgomp starts by liblazytrain_omp_defaults.so, which says why)
// unless the user set OMP_WAIT_POLICY or GOMP_SPINCOUNT. With the default count, executions drop to fewer threads
// while other work holds the CPUs (runtime/thread_governor.h). Threads that
// prepare data are bounded and yield to the compute threads (below).
#pragma once

#include <optional>
#include <string>

namespace lazytrain::runtime {

// CPUs in this thread's affinity mask (at least 1).
int affinity_cpu_count();

// The CPU quota of this process's cgroup in CPUs (e.g. 1.5), the smallest of
// every cgroup v1 `cpu` and v2 hierarchy level from its own cgroup up to the
// mount's root; nullopt when there is none ("max", -1) or the files cannot be
// read. `root` prefixes every path read (/proc/self/cgroup,
// /proc/self/mountinfo and the cgroup files): tests point it at a fake tree.
std::optional<double> cgroup_cpu_limit(const std::string& root = "");

// The CPUs this process may use: min(affinity_cpu_count(), ceil(cgroup_cpu_limit())),
// at least 1. Computed once per process.
int available_cpus();

// The default compute thread count and why, e.g. {2, "2 CPUs in the affinity
// mask, no cgroup CPU quota"}.
struct ThreadBudget {
  int threads = 1;
  std::string reason;
};
// From OMP_NUM_THREADS when set, else available_cpus(). Computed once per process.
const ThreadBudget& default_thread_budget();

// How OpenMP threads wait, for reports: "GOMP_SPINCOUNT=30000 (lazytrain's default)" or
// the user's "OMP_WAIT_POLICY=active" / "GOMP_SPINCOUNT=10000".
std::string omp_wait_policy();

// Threads a data-preparation pool (DataLoader workers) may use beside
// `compute_threads`: `requested` bounded by the CPUs left over
// (available_cpus() - compute_threads), at least 1 when requested >= 1; 0 stays 0.
int bounded_data_workers(int requested, int compute_threads);

// Lowers the calling thread's scheduling priority (nice +10, Linux threads
// have their own) so that data preparation yields the CPU to compute threads
// when both want it; a no-op where not permitted.
void yield_to_compute_threads();

}  // namespace lazytrain::runtime
