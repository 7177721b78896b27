// ThreadGovernor's decisions on made-up CPU times, and read_cpu_times against
// a real busy thread.
#include "runtime/thread_governor.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "runtime/execution_queue.h"
#include "runtime/metrics.h"
#include "runtime/thread_budget.h"
#include "tensor/ops.h"
#include "tensor/tensor.h"

namespace lazytrain::runtime {
namespace {

// A machine of `cpus` CPUs where other processes want `others(threads)` CPUs
// while we run `threads` compute threads (each busy all the time); when more
// is wanted than there is, everyone gets the same share of what there is.
struct FakeMachine {
  std::function<double(int)> others;
  int cpus = 2;
  CpuTimes now{0, 0, 0, 2};
  ThreadGovernor governor{[this](bool) { return now; }};

  // Runs `executions` of 100 ms each; returns the thread counts used.
  std::vector<int> run(int executions, int max_threads = 2) {
    std::vector<int> used;
    for (int e = 0; e < executions; ++e) {
      const int n = governor.threads(max_threads);
      const double wanted = n + others(n);
      const double share = wanted > cpus ? cpus / wanted : 1.0;
      now.wall += 0.1;
      now.own += 0.1 * n * share;
      now.cpus_busy += 0.1 * wanted * share;
      now.cpus = cpus;
      governor.observe();
      used.push_back(n);
    }
    return used;
  }
};

TEST(ThreadGovernor, AQuietMachineKeepsEveryThread) {
  FakeMachine quiet{[](int) { return 0.05; }};  // kernel threads, a shell
  for (int n : quiet.run(1000)) ASSERT_EQ(n, 2);
}

TEST(ThreadGovernor, ANeighbourOnOneCpuLeavesOneThreadAfterAWindow) {
  // A busy loop: 2/3 of a CPU beside our 2 threads (3 runnable on 2 CPUs), all of one beside 1.
  FakeMachine busy{[](int) { return 1.0; }};
  const int64_t before = counter_value("ExecutionThreadsReduced");
  const std::vector<int> used = busy.run(20);
  for (int e = 0; e < 5; ++e) EXPECT_EQ(used[e], 2) << e;  // the first window: 500 ms
  for (int e = 5; e < 20; ++e) EXPECT_EQ(used[e], 1) << e;  // and it stays: no flapping
  EXPECT_EQ(counter_value("ExecutionThreadsReduced") - before, 1);
}

TEST(ThreadGovernor, EveryThreadComesBackWhenTheNeighbourStops) {
  bool neighbour = true;
  FakeMachine machine{[&](int) { return neighbour ? 1.0 : 0.0; }};
  machine.run(10);
  EXPECT_EQ(machine.governor.threads(2), 1);
  neighbour = false;
  const std::vector<int> used = machine.run(12);
  EXPECT_EQ(used.back(), 2);
  EXPECT_NEAR(machine.governor.others(), 0.0, 1e-9);
}

TEST(ThreadGovernor, AHalfBusyNeighbourKeepsBothThreads) {
  FakeMachine light{[](int) { return 0.3; }};  // about 1.7 CPUs left: 2 threads still win
  for (int n : light.run(100)) ASSERT_EQ(n, 2);
}

TEST(ThreadGovernor, ManyCpusLeaveAsManyThreadsAsAreFree) {
  FakeMachine big{[](int) { return 5.0; }};  // 5 busy threads of other processes on 8 CPUs
  big.cpus = 8;
  big.now.cpus = 8;
  const std::vector<int> used = big.run(40, 8);
  EXPECT_EQ(used.front(), 8);
  // 8 threads: others get 5 x 8/13 = 3.1 CPUs, so 5; then 4 (others 4), where it stays (others 4.4).
  EXPECT_EQ(used.back(), 4);
}

TEST(ThreadGovernor, ANewMaximumStartsOverAndOneThreadIsNotGoverned) {
  FakeMachine busy{[](int) { return 1.0; }};
  busy.run(10);
  EXPECT_EQ(busy.governor.threads(2), 1);
  EXPECT_EQ(busy.governor.threads(3), 3);
  EXPECT_EQ(busy.run(50, 1), std::vector<int>(50, 1));
}

TEST(ThreadGovernor, NoProcStatKeepsEveryThread) {
  CpuTimes t{0, 0, 0, 2};
  ThreadGovernor governor([&](bool) { return t; });  // cpus_busy stays 0
  for (int e = 0; e < 20; ++e) {
    ASSERT_EQ(governor.threads(2), 2);
    t.wall += 0.1;
    t.own += 0.2;
    governor.observe();
  }
}

TEST(ThreadGovernor, ReadCpuTimesSeesAnotherThreadsWorkAsOwn) {
  // A busy thread of this process, until it has used 0.3 s of CPU (however
  // loaded the machine): the CPUs' busy time grows at least as much.
  const CpuTimes a = read_cpu_times();
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  CpuTimes b = read_cpu_times();
  while (b.own - a.own < 0.3 && b.wall - a.wall < 20) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    b = read_cpu_times();
  }
  stop = true;
  busy.join();
  std::printf("in %.3f s: CPUs busy %.3f s, this process %.3f s, %d CPUs\n", b.wall - a.wall, b.cpus_busy - a.cpus_busy,
              b.own - a.own, b.cpus);
  EXPECT_GE(b.own - a.own, 0.3);
  EXPECT_GE(b.cpus_busy - a.cpus_busy, b.own - a.own - 0.05);  // /proc/stat counts it (10 ms ticks)
  EXPECT_EQ(read_cpu_times(false).cpus_busy, 0.0);             // wall only
}

TEST(ThreadGovernor, ExecutionsGiveWayToBusyProcesses) {
  const int cpus = default_thread_budget().threads;
  if (cpus < 2 || !threads_are_governed()) GTEST_SKIP() << "one CPU, or a thread count set by the user: nothing to govern";
  // One busy process per CPU: with ours, twice as many runnable threads as CPUs.
  std::vector<pid_t> hogs;
  for (int i = 0; i < cpus; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (;;) {
      }
    }
    hogs.push_back(pid);
  }
  Tensor x = full({256, 256}, 0.5);
  EXPECT_DOUBLE_EQ(sum(matmul(x, x)).item(), 256.0 * 256 * 256 * 0.25);
  EXPECT_EQ(counter_value("ExecutionThreadsInUse"), cpus);  // the first window has not ended
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (std::chrono::steady_clock::now() < until && counter_value("ExecutionThreadsInUse") == cpus) {
    (void)sum(matmul(x, x)).item();  // executions of a few ms on the default device's queue
  }
  const int64_t in_use = counter_value("ExecutionThreadsInUse");
  for (pid_t pid : hogs) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  EXPECT_LT(in_use, cpus);
  EXPECT_GE(counter_value("ExecutionThreadsReduced"), 1);
}

}  // namespace
}  // namespace lazytrain::runtime
