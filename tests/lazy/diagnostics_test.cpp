// Diagnostics that say why (lazy/recompile_reasons.h, lazy/step_analysis.h),
// on cases from public PyTorch/XLA reports.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "lazy/lazy_api.h"
#include "lazy/recompile_reasons.h"
#include "lazy/step_analysis.h"
#include "runtime/metrics.h"
#include "tensor/tensor.h"

namespace lazytrain {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A small model step: linear layers, loss, SGD update in place.
struct TinyMlp {
  Tensor w1 = from_vector(std::vector<float>(128 * 64, 0.01f), {128, 64}).requires_grad_();
  Tensor w2 = from_vector(std::vector<float>(64 * 8, 0.02f), {64, 8}).requires_grad_();

  Tensor loss(const Tensor& x) { return mean(tanh(matmul(tanh(matmul(x, w1)), w2))); }
  void update() {
    NoGradGuard no_grad;
    for (Tensor* w : {&w1, &w2}) {
      w->set_data(*w - w->grad() * 0.1);
      w->set_grad(Tensor());
    }
  }
};

Tensor batch(int64_t rows, float value = 0.5f) { return from_vector(std::vector<float>(static_cast<size_t>(rows) * 128, value), {rows, 128}); }

TEST(RecompileReasons, AShortLastBatchNamesTheBatchDimension) {
  lazy::RecompileTracker::get().clear();
  TinyMlp model;
  for (int64_t rows : {8, 8, 5}) {  // [8,128], [8,128], [5,128]
    model.loss(batch(rows)).backward();
    model.update();
    lazy::mark_step();
  }
  const std::vector<std::string> reasons = lazy::RecompileTracker::get().reasons();
  ASSERT_EQ(reasons.size(), 1u);  // the second [8,128] step hit the cache
  EXPECT_TRUE(contains(reasons[0], "f32[5, 128]")) << reasons[0];
  EXPECT_TRUE(contains(reasons[0], "was f32[8, 128]")) << reasons[0];
  EXPECT_TRUE(contains(reasons[0], "dimension 0 changed from 8 to 5")) << reasons[0];
  EXPECT_TRUE(contains(reasons[0], "batch dimension")) << reasons[0];
  // (the first op reading it is the transpose of mm's backward, recorded at the forward's line)
  EXPECT_TRUE(contains(reasons[0], "read by aten::permute at diagnostics_test.cpp:24)")) << reasons[0];
}

TEST(RecompileReasons, AnOpThatChangedNamesItsLine) {
  lazy::RecompileTracker::get().clear();
  Tensor w = from_vector(std::vector<float>{1, 2, 3, 4}, {4});
  int line = 0;
  for (int step = 0; step < 3; ++step) {
    if (step < 2) {
      w.set_data(w * 0.5);
    } else {
      line = __LINE__ + 1;
      w.set_data(w + 0.5);
    }
    lazy::mark_step();
  }
  const std::vector<std::string> reasons = lazy::RecompileTracker::get().reasons();
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_TRUE(contains(reasons[0], "here aten::add f32[4] at diagnostics_test.cpp:" + std::to_string(line))) << reasons[0];
  EXPECT_TRUE(contains(reasons[0], " aten::mul f32[4] at diagnostics_test.cpp:")) << reasons[0];
}

TEST(RecompileReasons, AnotherKindOfGraphIsNotCalledARecompileOfTheStep) {
  lazy::RecompileTracker::get().clear();
  TinyMlp model;  // (a batch of 11 rows: graphs no other test compiled)
  for (int step = 0; step < 2; ++step) {
    model.loss(batch(11)).backward();
    model.update();
    lazy::mark_step();
  }
  {
    NoGradGuard no_grad;  // an evaluation step: a graph of another kind
    (void)model.loss(batch(11)).item();
  }
  const std::vector<std::string> reasons = lazy::RecompileTracker::get().reasons();
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_TRUE(contains(reasons[0], "a new kind of graph")) << reasons[0];
  EXPECT_TRUE(contains(reasons[0], "not a changed input")) << reasons[0];
}

TEST(RecompileReasons, ARandomTensorDrawnEachStepCompilesOnce) {
  Tensor w = from_vector(std::vector<float>(64, 1.0f), {8, 8});
  const int64_t compiles = runtime::counter_value("UncachedCompile");
  for (int step = 0; step < 5; ++step) {
    w.set_data(w + randn({8, 8}) * 0.01);
    lazy::mark_step();
  }
  EXPECT_EQ(runtime::counter_value("UncachedCompile"), compiles + 1);
}

TEST(StepAnalysis, ALossItemEveryStepIsNamedAsAHostTransfer) {
  TinyMlp model;
  int line = 0;
  for (int step = 0; step < 3; ++step) {
    Tensor loss = model.loss(batch(4));
    loss.backward();
    model.update();
    line = __LINE__ + 1;
    double value = loss.item();  // before mark_step: a host transfer every step
    EXPECT_TRUE(std::isfinite(value));
    lazy::mark_step();
  }
  const lazy::StepRecord last = lazy::recent_steps(runtime::current_device()).back();
  ASSERT_EQ(last.transfers.size(), 1u);
  EXPECT_EQ(last.transfers[0].read, "item()");
  EXPECT_TRUE(last.transfers[0].ran_graph);
  const std::string line_text = lazy::describe(last, runtime::current_device());
  EXPECT_TRUE(contains(line_text, "1 host transfer: item() at diagnostics_test.cpp:" + std::to_string(line) + " (ran a graph before mark_step)"))
      << line_text;
  EXPECT_EQ(last.executions, 1);  // the read ran the whole step; mark_step had nothing left
  EXPECT_EQ(last.compiles, 0);
}

// PyTorch/XLA runs the forward twice when loss.item() comes before mark_step()
// (12 executions for 6 steps); here the read keeps what it computed.
TEST(StepAnalysis, AReadBeforeMarkStepRunsTheForwardOnce) {
  TinyMlp model;
  auto step = [&](bool read_first) {
    Tensor loss = model.loss(batch(16));
    if (read_first) {
      EXPECT_TRUE(std::isfinite(loss.item()));  // a read mid-step, before backward
    }
    loss.backward();
    model.update();
    lazy::mark_step();
  };
  step(false);  // compile
  const int64_t flops_before = runtime::counter_value("ExecutedDotFlops");
  step(false);
  const int64_t step_flops = runtime::counter_value("ExecutedDotFlops") - flops_before;
  // forward: 16x128x64 + 16x64x8 multiply-adds; backward: twice that, less the input gradient of the first layer.
  EXPECT_EQ(step_flops, 2 * (16 * 128 * 64 + 16 * 64 * 8) + 2 * (16 * 64 * 8 * 2 + 16 * 128 * 64));
  int64_t executions = 0;
  const int64_t flops_start = runtime::counter_value("ExecutedDotFlops");
  for (int s = 0; s < 6; ++s) {
    step(true);
    executions += lazy::recent_steps(runtime::current_device()).back().executions;
  }
  EXPECT_EQ(executions, 12);  // the read's graph (forward) and mark_step's (backward, update) a step
  EXPECT_EQ(runtime::counter_value("ExecutedDotFlops") - flops_start, 6 * step_flops);  // no forward ran twice
}

TEST(StepAnalysis, AnItemAfterTheUpdateRunsOneGraphAStep) {
  TinyMlp model;
  int64_t executions = 0;
  for (int s = 0; s < 6; ++s) {
    Tensor loss = model.loss(batch(16));
    loss.backward();
    model.update();
    EXPECT_TRUE(std::isfinite(loss.item()));
    lazy::mark_step();
    executions += lazy::recent_steps(runtime::current_device()).back().executions;
  }
  EXPECT_EQ(executions, 6);
}

TEST(GraphGrowth, AHundredUpdatesWithoutMarkStepWarn) {
  Tensor w = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  Tensor g = from_vector(std::vector<float>{1, 1, 1, 1}, {2, 2});
  const int64_t warnings = lazy::LazyTensor::growth_warnings().load();
  testing::internal::CaptureStderr();
  for (int i = 0; i < 100; ++i) w.set_data(w - g * 0.01);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(lazy::LazyTensor::growth_warnings().load(), warnings + 1);
  (void)err;  // printed once a process: an earlier test may have printed it
  EXPECT_NEAR(w.to_vector<float>()[0], 0.0, 1e-5);
  // With a mark_step each update, no warning.
  for (int i = 0; i < 100; ++i) {
    w.set_data(w - g * 0.01);
    lazy::mark_step();
  }
  EXPECT_EQ(lazy::LazyTensor::growth_warnings().load(), warnings + 1);
}

}  // namespace
}  // namespace lazytrain
