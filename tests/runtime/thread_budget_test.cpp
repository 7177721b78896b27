// The default thread count (affinity mask and cgroup quota), the data workers'
// bound and priority, and the count executions report.
#include "runtime/thread_budget.h"

#include <gtest/gtest.h>
#include <omp.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "core/error.h"
#include "runtime/execution_queue.h"
#include "runtime/metrics.h"
#include "tensor/ops.h"
#include "tensor/tensor.h"

namespace lazytrain::runtime {
namespace {

namespace fs = std::filesystem;

// A fake root with /proc/self/{cgroup,mountinfo} and cgroup files under it.
class FakeCgroupRoot {
 public:
  FakeCgroupRoot() : root_(fs::temp_directory_path() / ("lazytrain_cgroup_" + std::to_string(getpid()) + "_" + std::to_string(counter_++))) {
    fs::create_directories(root_ / "proc/self");
  }
  ~FakeCgroupRoot() { fs::remove_all(root_); }
  void write(const std::string& relative, const std::string& text) const {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << text;
  }
  std::string path() const { return root_.string(); }

 private:
  static inline int counter_ = 0;
  fs::path root_;
};

const char* kV2Mount = "30 24 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
const char* kV1CpuMount = "31 24 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:5 - cgroup cgroup rw,cpu,cpuacct\n";

TEST(CgroupCpuLimit, CgroupV2CpuMaxOfTheProcessCgroup) {
  FakeCgroupRoot fake;
  fake.write("proc/self/cgroup", "0::/job/step\n");
  fake.write("proc/self/mountinfo", kV2Mount);
  fake.write("sys/fs/cgroup/job/step/cpu.max", "150000 100000\n");
  fake.write("sys/fs/cgroup/job/cpu.max", "max 100000\n");
  ASSERT_TRUE(cgroup_cpu_limit(fake.path()).has_value());
  EXPECT_DOUBLE_EQ(*cgroup_cpu_limit(fake.path()), 1.5);
}

TEST(CgroupCpuLimit, AParentsSmallerQuotaLimitsItsChildren) {
  FakeCgroupRoot fake;
  fake.write("proc/self/cgroup", "0::/job/step\n");
  fake.write("proc/self/mountinfo", kV2Mount);
  fake.write("sys/fs/cgroup/job/step/cpu.max", "400000 100000\n");
  fake.write("sys/fs/cgroup/job/cpu.max", "50000 100000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_limit(fake.path()).value_or(-1), 0.5);
}

TEST(CgroupCpuLimit, CgroupV1CfsQuotaAndPeriod) {
  FakeCgroupRoot fake;
  fake.write("proc/self/cgroup", "5:memory:/x\n4:cpu,cpuacct:/docker/abc\n0::/\n");
  fake.write("proc/self/mountinfo", std::string(kV1CpuMount) + kV2Mount);
  fake.write("sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "100000\n");
  fake.write("sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  fake.write("sys/fs/cgroup/cpu,cpuacct/docker/cpu.cfs_quota_us", "-1\n");
  fake.write("sys/fs/cgroup/cpu,cpuacct/docker/cpu.cfs_period_us", "100000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_limit(fake.path()).value_or(-1), 1.0);
}

TEST(CgroupCpuLimit, InsideAContainerTheMountRootIsTheOwnCgroup) {
  // The container sees its cgroup mounted at /sys/fs/cgroup/cpu with root /docker/abc.
  FakeCgroupRoot fake;
  fake.write("proc/self/cgroup", "4:cpu:/docker/abc\n");
  fake.write("proc/self/mountinfo", "40 30 0:27 /docker/abc /sys/fs/cgroup/cpu ro,nosuid - cgroup cgroup rw,cpu\n");
  fake.write("sys/fs/cgroup/cpu/cpu.cfs_quota_us", "250000\n");
  fake.write("sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_limit(fake.path()).value_or(-1), 2.5);
}

TEST(CgroupCpuLimit, NoQuotaOrNoCgroupFilesIsNoLimit) {
  FakeCgroupRoot unlimited;
  unlimited.write("proc/self/cgroup", "0::/job\n");
  unlimited.write("proc/self/mountinfo", kV2Mount);
  unlimited.write("sys/fs/cgroup/job/cpu.max", "max 100000\n");
  EXPECT_FALSE(cgroup_cpu_limit(unlimited.path()).has_value());
  FakeCgroupRoot empty;  // no /proc/self files at all (not Linux, or hidden)
  EXPECT_FALSE(cgroup_cpu_limit(empty.path()).has_value());
  FakeCgroupRoot not_mounted;  // the process is in a cpu cgroup whose hierarchy is not mounted
  not_mounted.write("proc/self/cgroup", "4:cpu:/a\n");
  not_mounted.write("proc/self/mountinfo", kV2Mount);
  EXPECT_FALSE(cgroup_cpu_limit(not_mounted.path()).has_value());
}

TEST(ThreadBudget, TheAffinityMaskIsCounted) {
  int seen = 0;
  std::thread t([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    seen = affinity_cpu_count();
  });
  t.join();
  EXPECT_EQ(seen, 1);
  EXPECT_LE(affinity_cpu_count(), static_cast<int>(std::thread::hardware_concurrency()));
  EXPECT_GE(default_thread_budget().threads, 1);
  EXPECT_FALSE(default_thread_budget().reason.empty());
}

TEST(ThreadBudget, DataWorkersAreBoundedByTheCpusTheComputeThreadsLeave) {
  const int cpus = available_cpus();  // not OMP_NUM_THREADS: workers are bounded by CPUs
  EXPECT_LE(cpus, affinity_cpu_count());
  EXPECT_EQ(bounded_data_workers(0, cpus), 0);
  EXPECT_EQ(bounded_data_workers(8, cpus), 1);  // nothing left: one worker still
  EXPECT_EQ(bounded_data_workers(64, 0), std::min(64, cpus));
  EXPECT_EQ(bounded_data_workers(1, 0), 1);
}

TEST(ThreadBudget, DataThreadsYieldToComputeThreads) {
  int before = 0, after = 0;
  std::thread t([&] {
    const id_t tid = static_cast<id_t>(syscall(SYS_gettid));
    before = getpriority(PRIO_PROCESS, tid);
    yield_to_compute_threads();
    after = getpriority(PRIO_PROCESS, tid);
  });
  t.join();
  EXPECT_EQ(after, std::max(before, 10));
  // Only that thread: the caller's priority is unchanged.
  EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid))), before);
}

TEST(ThreadBudget, ExecutionsUseAndReportTheDefaultUnlessTold) {
  const int previous = threads_are_governed() ? 0 : threads_per_execution();
  set_threads_per_execution(0);
  EXPECT_EQ(threads_per_execution(), default_thread_budget().threads);
  EXPECT_DOUBLE_EQ(sum(add(ones({4, 4}), ones({4, 4}))).item(), 32.0);
  EXPECT_EQ(counter_value("ExecutionThreads"), default_thread_budget().threads);
  set_threads_per_execution(1);
  EXPECT_DOUBLE_EQ(sum(mul(ones({4, 4}), full({4, 4}, 3.0))).item(), 48.0);
  EXPECT_EQ(counter_value("ExecutionThreads"), 1);
  EXPECT_THROW(set_threads_per_execution(-1), Error);
  set_threads_per_execution(previous);
}

// A compile sets oneDNN's thread count on the calling thread and puts the
// caller's back: torch shares libgomp, and Dynamo recompiles when its count changes.
TEST(ThreadBudget, ACompileLeavesTheCallersOpenMpThreadCount) {
  const int previous = threads_are_governed() ? 0 : threads_per_execution();
  const int caller = omp_get_max_threads();
  set_threads_per_execution(2);
  omp_set_num_threads(1);
  {
    ScopedExecutionThreads compile_threads;
    EXPECT_EQ(omp_get_max_threads(), 2);
  }
  EXPECT_EQ(omp_get_max_threads(), 1);
  EXPECT_DOUBLE_EQ(sum(add(ones({3, 5}), full({3, 5}, 2.0))).item(), 45.0);  // a graph compiled here
  EXPECT_EQ(omp_get_max_threads(), 1);
  omp_set_num_threads(caller);
  set_threads_per_execution(previous);
}

}  // namespace
}  // namespace lazytrain::runtime
