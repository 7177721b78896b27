// The replicas' transport (runtime/collectives.h) on replica threads of one
// process: values of every collective and dtype, bit-identical results on all
// replicas, replica groups, the host-side exchange, and failures: a replica
// that never arrives is named within the timeout, an abort reaches every waiter.
#include "runtime/collectives.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <thread>

#include "core/error.h"
#include "core/half.h"

namespace lazytrain::runtime {
namespace {

// Runs body(i) on n replica threads (cpu:i current); returns each one's error text ("" when none).
std::vector<std::string> on_replicas(int n, const std::function<void(int)>& body, double timeout = 30) {
  set_local_replicas(n);
  set_collective_timeout(timeout);
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      DeviceGuard guard(Device{"cpu", i});
      try {
        body(i);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(i)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  set_local_replicas(1);
  set_collective_timeout(300);
  return errors;
}

Buffer filled(const Shape& shape, const std::function<float(int64_t)>& value) {
  Buffer b(shape, DType::kFloat32);
  for (int64_t k = 0; k < b.numel(); ++k) b.data<float>()[k] = value(k);
  return b;
}

TEST(Collectives, AllReduceSumsEveryElementAndEveryReplicaHoldsTheSameBits) {
  // 1001 elements do not split evenly into 3 chunks; the values are not exact in f32.
  const int n = 3;
  std::vector<Buffer> results(n);
  auto errors = on_replicas(n, [&](int i) {
    Buffer x = filled({7, 143}, [&](int64_t k) { return 0.1f * static_cast<float>(k) + 1.0f / static_cast<float>(i + 3); });
    results[static_cast<size_t>(i)] = all_reduce(x, ReduceOp::kSum, {});
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  for (int64_t k = 0; k < 1001; ++k) {
    const float base = 0.1f * static_cast<float>(k);
    const float expected = ((base + 1.0f / 3.0f) + (base + 1.0f / 4.0f)) + (base + 1.0f / 5.0f);  // ordinal order
    ASSERT_EQ(results[0].data<float>()[k], expected) << k;
  }
  for (int i = 1; i < n; ++i) EXPECT_EQ(std::memcmp(results[0].raw(), results[static_cast<size_t>(i)].raw(), 1001 * sizeof(float)), 0);
  EXPECT_EQ(results[1].device(), (Device{"cpu", 1}));
}

TEST(Collectives, MaxMinProductAndIntegerAndBf16Reductions) {
  const int n = 2;
  std::vector<std::vector<int64_t>> ints(n);
  std::vector<float> maxima(n), bf16_sum(n);
  auto errors = on_replicas(n, [&](int i) {
    Buffer x({3}, DType::kInt64);
    for (int k = 0; k < 3; ++k) x.data<int64_t>()[k] = (i + 2) * (k + 1);
    Buffer p = all_reduce(x, ReduceOp::kProduct, {});
    ints[static_cast<size_t>(i)].assign(p.data<int64_t>(), p.data<int64_t>() + 3);
    Buffer f = filled({1}, [&](int64_t) { return i == 0 ? -2.0f : 5.0f; });
    maxima[static_cast<size_t>(i)] = all_reduce(f, ReduceOp::kMax, {}).data<float>()[0] + all_reduce(f, ReduceOp::kMin, {}).data<float>()[0];
    Buffer h({1}, DType::kBFloat16);
    h.data<BFloat16>()[0] = BFloat16(i == 0 ? 1.0f : 0.00390625f);  // 1 + 2^-8: rounds to 1 in bf16
    bf16_sum[static_cast<size_t>(i)] = static_cast<float>(all_reduce(h, ReduceOp::kSum, {}).data<BFloat16>()[0]);
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  EXPECT_EQ(ints[0], (std::vector<int64_t>{6, 24, 54}));
  EXPECT_EQ(ints[1], ints[0]);
  EXPECT_EQ(maxima[0], 3.0f);
  EXPECT_EQ(bf16_sum[1], 1.0f);
}

TEST(Collectives, GroupsReduceApartAndAllGatherAndReduceScatterKeepGroupOrder) {
  const int n = 4;
  std::vector<float> grouped(n);
  std::vector<std::vector<float>> gathered(n), scattered(n);
  auto errors = on_replicas(n, [&](int i) {
    Buffer x = filled({1}, [&](int64_t) { return static_cast<float>(1 << i); });
    grouped[static_cast<size_t>(i)] = all_reduce(x, ReduceOp::kSum, {{0, 3}, {2, 1}}).data<float>()[0];
    // [2, 1] per replica gathered along dim 1 in group order {3, 0} / {1, 2}.
    Buffer y = filled({2, 1}, [&](int64_t k) { return static_cast<float>(10 * i + k); });
    Buffer g = all_gather(y, 1, {{3, 0}, {1, 2}});
    EXPECT_EQ(g.shape(), (Shape{2, 2}));
    gathered[static_cast<size_t>(i)].assign(g.data<float>(), g.data<float>() + 4);
    // [4, 2] summed over all four, shard k of dim 0 to the k-th member.
    Buffer z = filled({4, 2}, [&](int64_t k) { return static_cast<float>(k * (i + 1)); });
    Buffer s = reduce_scatter(z, ReduceOp::kSum, 0, {{0, 1, 2, 3}});
    EXPECT_EQ(s.shape(), (Shape{1, 2}));
    scattered[static_cast<size_t>(i)].assign(s.data<float>(), s.data<float>() + 2);
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  EXPECT_EQ(grouped, (std::vector<float>{9, 6, 6, 9}));
  EXPECT_EQ(gathered[0], (std::vector<float>{30, 0, 31, 1}));
  EXPECT_EQ(gathered[3], gathered[0]);
  EXPECT_EQ(gathered[1], (std::vector<float>{10, 20, 11, 21}));
  for (int i = 0; i < n; ++i) {
    const float k0 = static_cast<float>(2 * i), k1 = static_cast<float>(2 * i + 1);
    EXPECT_EQ(scattered[static_cast<size_t>(i)], (std::vector<float>{k0 * 10, k1 * 10})) << i;  // (1+2+3+4) * k
  }
}

TEST(Collectives, HostAllGatherReturnsEveryReplicasValuesAndChecksTheTag) {
  const int n = 3;
  std::vector<std::vector<double>> got(n);
  auto errors = on_replicas(n, [&](int i) { got[static_cast<size_t>(i)] = host_all_gather("metrics", {1.0 * i, -1.0 * i}); });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  EXPECT_EQ(got[2], (std::vector<double>{0, -0.0, 1, -1, 2, -2}));
  errors = on_replicas(2, [&](int i) { host_rendezvous(i == 0 ? "save" : "print"); });
  EXPECT_NE(errors[0].find("replicas reached a different rendezvous"), std::string::npos) << errors[0] << " | " << errors[1];
  EXPECT_NE(errors[0].find("1 at 'print'"), std::string::npos) << errors[0] << " | " << errors[1];
}

TEST(Collectives, ReplicasPassingDifferentShapesOrDtypesFailNamingEach) {
  // A rank-dependent shape would read past the smaller input: every replica raises, naming each one's input.
  auto errors = on_replicas(2, [&](int i) { all_reduce(filled({2 + i}, [](int64_t) { return 1.0f; }), ReduceOp::kSum, {}); });
  for (const auto& e : errors) {
    EXPECT_NE(e.find("[all-reduce] the replicas passed tensors of different shapes or dtypes: replica 0 f32[2], replica 1 f32[3]"),
              std::string::npos) << e;
  }
  errors = on_replicas(2, [&](int i) { all_gather(i == 0 ? filled({2}, [](int64_t) { return 1.0f; }) : Buffer({2}, DType::kInt32), 0, {}); });
  for (const auto& e : errors) EXPECT_NE(e.find("replica 0 f32[2], replica 1 s32[2]"), std::string::npos) << e;
  // The next run with matching inputs works.
  errors = on_replicas(2, [&](int) { all_reduce(filled({2}, [](int64_t) { return 1.0f; }), ReduceOp::kSum, {}); });
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

TEST(Collectives, AReplicaThatNeverArrivesIsNamedWithinTheTimeout) {
  const auto start = std::chrono::steady_clock::now();
  auto errors = on_replicas(3, [&](int i) {
    if (i == 2) return;  // never arrives
    all_reduce(filled({4}, [](int64_t) { return 1.0f; }), ReduceOp::kSum, {});
  }, 0.5);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);
  for (int i = 0; i < 2; ++i) {
    EXPECT_NE(errors[static_cast<size_t>(i)].find("[all-reduce]"), std::string::npos) << errors[static_cast<size_t>(i)];
    EXPECT_NE(errors[static_cast<size_t>(i)].find("for replica 2 of 3"), std::string::npos) << errors[static_cast<size_t>(i)];
  }
  EXPECT_EQ(errors[2], "");
}

TEST(Collectives, AnAbortReachesEveryWaitingReplicaAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  auto errors = on_replicas(3, [&](int i) {
    if (i == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      abort_collectives("replica 1 raised: out of data");
      return;
    }
    host_rendezvous("step");
  }, 60);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  EXPECT_NE(errors[0].find("replica 1 raised: out of data"), std::string::npos) << errors[0];
  EXPECT_NE(errors[2].find("replica 1 raised: out of data"), std::string::npos) << errors[2];
  // set_local_replicas clears the abort: the next run works.
  errors = on_replicas(2, [&](int) { host_rendezvous("again"); });
  EXPECT_EQ(errors[0], "");
}

TEST(Collectives, ADeviceThatIsNotAReplicaIsAnError) {
  set_local_replicas(2);
  DeviceGuard guard(Device{"cpu", 5});
  try {
    all_reduce(filled({1}, [](int64_t) { return 1.0f; }), ReduceOp::kSum, {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cpu:5 is not a replica"), std::string::npos) << e.what();
  }
  set_local_replicas(1);
}

}  // namespace
}  // namespace lazytrain::runtime
