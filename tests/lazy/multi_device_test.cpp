// Several devices in one process (cpu:0, cpu:1): each has its own execution
// queue, live tensors and failures; a graph compiles once for all devices of a
// kind; tensors say where they are, an op mixing devices is an error, and
// Tensor::to(device) moves values (and gradients back).
#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <thread>

#include "../support/backend_scope.h"
#include "core/error.h"
#include "lazy/lazy_api.h"
#include "runtime/device.h"
#include "runtime/metrics.h"
#include "tensor/tensor.h"

namespace lazytrain {
namespace {

using runtime::Device;

const Device kCpu0{"cpu", 0};
const Device kCpu1{"cpu", 1};

int64_t compile_samples() {
  auto data = runtime::metric_data("CompileTime");
  return data ? data->total_samples : 0;
}

// y = tanh(x * 0.5 + sum(x)), three steps of x = y.
std::vector<float> expected_after_steps(std::vector<float> x, int steps) {
  for (int s = 0; s < steps; ++s) {
    float total = 0;
    for (float v : x) total += v;
    for (float& v : x) v = std::tanh(v * 0.5f + total);
  }
  return x;
}

TEST(MultiDevice, TwoDevicesRunTheSameGraphFromTwoThreadsWithOneCompile) {
  testing::CpuBackendScope cpu;
  const int64_t compiles = compile_samples();
  const int64_t uncached = runtime::counter_value("UncachedCompile");
  std::barrier start(2);
  std::vector<float> results[2];
  Device seen[2];
  auto run = [&](int ordinal, std::vector<float> init) {
    runtime::DeviceGuard guard(Device{"cpu", ordinal});
    Tensor x = from_vector(init, {2, 3});
    start.arrive_and_wait();  // both trace and compile at the same time
    for (int step = 0; step < 3; ++step) {
      x = tanh(x * 0.5 + sum(x));
      lazy::mark_step();
    }
    seen[ordinal] = x.device();
    results[ordinal] = x.to_vector<float>();
  };
  const std::vector<float> a = {0.1f, -0.2f, 0.3f, -0.4f, 0.5f, -0.6f};
  const std::vector<float> b = {-0.05f, 0.15f, -0.25f, 0.35f, -0.45f, 0.55f};
  std::thread t0(run, 0, a), t1(run, 1, b);
  t0.join();
  t1.join();
  EXPECT_EQ(seen[0], kCpu0);
  EXPECT_EQ(seen[1], kCpu1);
  const std::vector<float> want[2] = {expected_after_steps(a, 3), expected_after_steps(b, 3)};
  for (int d = 0; d < 2; ++d) {
    ASSERT_EQ(results[d].size(), 6u);
    for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(results[d][i], want[d][i], 1e-5) << "cpu:" << d << " element " << i;
  }
  // The first step of each device (x fresh from the host) and the later ones
  // (x the output of the previous step) are the same graph: one compile in all.
  EXPECT_EQ(compile_samples(), compiles + 1);
  EXPECT_EQ(runtime::counter_value("UncachedCompile"), uncached + 1);
}

TEST(MultiDevice, TensorsKnowTheirDeviceAndMixingDevicesIsAnError) {
  Tensor a = from_vector(std::vector<float>{1, 2}, {2});
  Tensor b;
  {
    runtime::DeviceGuard guard(kCpu1);
    b = from_vector(std::vector<float>{3, 4}, {2});
    EXPECT_EQ(zeros({2}).device(), kCpu1);
  }
  EXPECT_EQ(a.device(), kCpu0);
  EXPECT_EQ(b.device(), kCpu1);
  EXPECT_EQ((b * 2.0 + 1.0).device(), kCpu1);  // numbers follow the tensor they meet
  try {
    Tensor c = a + b;
    FAIL() << "expected an error for an op mixing devices";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[aten::add] expected all tensors to be on the same device, but found at least two devices, "
                                         "cpu:0 and cpu:1!"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ((b * 2.0 + 1.0).to_vector<float>(), (std::vector<float>{7, 9}));
}

TEST(MultiDevice, ToMovesValuesAndGradientsFlowBack) {
  Tensor w = from_vector(std::vector<float>{1, -2, 3}, {3});
  w.requires_grad_();
  Tensor moved = w.to(kCpu1);
  EXPECT_EQ(moved.device(), kCpu1);
  EXPECT_TRUE(w.to(kCpu0).is_same(w));
  Tensor loss;
  {
    runtime::DeviceGuard guard(kCpu1);
    loss = sum(moved * moved * 0.5);
  }
  EXPECT_EQ(loss.device(), kCpu1);
  EXPECT_FLOAT_EQ(loss.item(), 7.0f);
  loss.backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().device(), kCpu0);
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{1, -2, 3}));
}

TEST(MultiDevice, MarkStepSyncsTheCurrentDeviceOnly) {
  Tensor on0 = from_vector(std::vector<float>{1, 2}, {2}) * 3.0;
  Tensor on1;
  {
    runtime::DeviceGuard guard(kCpu1);
    on1 = from_vector(std::vector<float>{1, 2}, {2}) * 5.0;
    lazy::mark_step();
  }
  EXPECT_FALSE(on1.impl()->has_pending_ir());
  EXPECT_TRUE(on0.impl()->has_pending_ir());
  lazy::mark_step();
  EXPECT_FALSE(on0.impl()->has_pending_ir());
  EXPECT_EQ(on0.to_vector<float>(), (std::vector<float>{3, 6}));
  EXPECT_EQ(on1.to_vector<float>(), (std::vector<float>{5, 10}));
}

TEST(MultiDevice, ParsesDeviceNames) {
  EXPECT_EQ(runtime::parse_device("cpu"), kCpu0);
  EXPECT_EQ(runtime::parse_device("cpu:0"), kCpu0);
  EXPECT_EQ(runtime::parse_device("cpu:1"), kCpu1);
  EXPECT_EQ(runtime::parse_device("cpu:12").ordinal, 12);
  for (const char* bad : {"gpu:0", "cpu:", "cpu:-1", "cpu:x", "cpu1"}) EXPECT_THROW(runtime::parse_device(bad), Error) << bad;
}

}  // namespace
}  // namespace lazytrain
