// Several threads tracing and reading on one device at once (lazy/lazy_tensor.h,
// lazy/graph_executor.h): a read in one thread syncs the others' pending
// tensors, which they keep tracing on and updating in place meanwhile. Every
// thread's values stay right, no update is lost, and nothing crashes.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "lazy/lazy_api.h"
#include "tensor/ops.h"
#include "tensor/tensor.h"

namespace lazytrain {
namespace {

constexpr int kThreads = 4;
constexpr int kIterations = 25;

// Runs body(i) on kThreads threads (all on cpu:0); returns their errors.
std::vector<std::string> on_threads(const std::function<void(int)>& body) {
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      try {
        body(i);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(i)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

TEST(ThreadsOnOneDevice, OpsReadsAndInPlaceUpdatesInEveryThreadKeepTheirValues) {
  std::vector<std::vector<float>> finals(kThreads);
  std::vector<std::vector<double>> items(kThreads);
  auto errors = on_threads([&](int i) {
    Tensor w = full({3}, 1.0 + i);
    for (int k = 0; k < kIterations; ++k) {
      Tensor y = add(mul(w, 0.5), 1.0);           // pending; another thread's read may cut it now
      w.set_data(add(mul(y, 2.0), -2.0));        // w = w (in place), through a pending chain
      items[static_cast<size_t>(i)].push_back(sum(y).item());
      if (k % 5 == 0) lazy::mark_step();
    }
    finals[static_cast<size_t>(i)] = w.to_vector<float>();
  });
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_EQ(errors[static_cast<size_t>(i)], "") << i;
    const float w = 1.0f + static_cast<float>(i);
    EXPECT_EQ(finals[static_cast<size_t>(i)], (std::vector<float>{w, w, w})) << i;
    for (double item : items[static_cast<size_t>(i)]) EXPECT_DOUBLE_EQ(item, 3.0 * (0.5 * w + 1.0)) << i;
  }
}

TEST(ThreadsOnOneDevice, AnUpdateMadeWhileAnotherThreadSyncsIsNotLost) {
  // Thread 0 adds 1 to a shared total many times (each update a pending
  // value); the others read it and sync meanwhile, cutting its chain at any point.
  Tensor total = zeros({4});
  lazy::mark_step();
  std::atomic<bool> bad_read{false};
  auto errors = on_threads([&](int i) {
    for (int k = 0; k < 4 * kIterations; ++k) {
      if (i == 0) {
        total.set_data(add(total.detach(), 1.0));
      } else {
        const std::vector<float> seen = total.to_vector<float>();
        for (float v : seen) bad_read = bad_read || v != seen[0] || v != std::floor(v) || v < 0 || v > 4 * kIterations;
        if (k % 3 == 0) lazy::mark_step();
      }
    }
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  EXPECT_FALSE(bad_read.load());
  EXPECT_EQ(total.to_vector<float>(), std::vector<float>(4, 4.0f * kIterations));
}

}  // namespace
}  // namespace lazytrain
