// AdamW, gradient clipping and the warm-up schedule against PyTorch
// (tools/make_golden_adamw.py).
#include <gtest/gtest.h>

#include "../support/golden.h"
#include "core/error.h"
#include "lazy/graph_executor.h"
#include "optim/adamw.h"
#include "optim/clip_grad.h"
#include "optim/lr_scheduler.h"
#include "runtime/metrics.h"

namespace lazytrain {
namespace {

using testing::expect_close;
using testing::GoldenFile;

const std::vector<std::string> kNames = {"dense.weight", "dense.bias", "LayerNorm.weight"};

TEST(AdamWGolden, ThreeStepsMatchTorchOptimAdamW) {
  GoldenFile golden("adamw_step.safetensors");
  std::vector<Tensor> params;
  for (const auto& n : kNames) params.push_back(golden.tensor("init." + n).requires_grad_());
  optim::AdamW opt({{{params[0]}, 0.01}, {{params[1], params[2]}, 0.0}}, {1e-3, 0.9, 0.999, 1e-8, 0.0});
  int64_t compiles_before_step2 = 0;
  for (int k = 1; k <= 3; ++k) {
    for (size_t i = 0; i < params.size(); ++i) params[i].set_grad(golden.tensor("grad." + kNames[i] + ".step" + std::to_string(k)));
    opt.step();
    lazy::mark_step();
    if (k == 2) compiles_before_step2 = runtime::counter_value("UncachedCompile");
    for (size_t i = 0; i < params.size(); ++i) {
      std::string suffix = kNames[i] + ".step" + std::to_string(k);
      expect_close(params[i], golden.floats("param." + suffix), 1e-5, 1e-7, "param." + suffix);
      size_t group = i == 0 ? 0 : 1, index = i == 0 ? 0 : i - 1;
      expect_close(opt.exp_avg(group, index), golden.floats("exp_avg." + suffix), 1e-5, 1e-9, "exp_avg." + suffix);
      expect_close(opt.exp_avg_sq(group, index), golden.floats("exp_avg_sq." + suffix), 1e-5, 1e-12, "exp_avg_sq." + suffix);
    }
  }
  // The step count and bias corrections are device data: step 3 reuses step 2's graph.
  EXPECT_EQ(runtime::counter_value("UncachedCompile"), compiles_before_step2);
}

TEST(AdamWGolden, ClipGradNormMatchesPyTorch) {
  GoldenFile golden("adamw_step.safetensors");
  std::vector<Tensor> params;
  for (const auto& n : kNames) {
    Tensor p = golden.tensor("init." + n).requires_grad_();
    p.set_grad(golden.tensor("clip.grad." + n));
    params.push_back(p);
  }
  Tensor total = optim::clip_grad_norm_(params, 1.0);
  expect_close(total, golden.floats("clip.total_norm"), 1e-5, 0, "total_norm");
  for (size_t i = 0; i < params.size(); ++i) expect_close(params[i].grad(), golden.floats("clip.clipped." + kNames[i]), 1e-5, 1e-8, kNames[i]);
}

TEST(AdamWGolden, LinearScheduleWithWarmupMatchesTransformers) {
  GoldenFile golden("adamw_step.safetensors");
  std::vector<float> expected = golden.floats("schedule.lr");
  for (int64_t step = 0; step < 20; ++step) {
    EXPECT_NEAR(1e-3 * optim::linear_schedule_with_warmup(step, 5, 20), expected[step], 1e-9) << "step " << step;
  }
}

// The scheduler object (LambdaLR) sets the optimizer's rate: get_last_lr() after
// k step() calls is transformers' rate at step k.
TEST(AdamWGolden, LambdaLRSchedulerSetsTheOptimizersRate) {
  GoldenFile golden("adamw_step.safetensors");
  std::vector<float> expected = golden.floats("schedule.lr");
  Tensor p = from_vector(std::vector<float>{1, 2}, {2});
  optim::AdamW optimizer({{{p}, 0.0}}, {1e-3, 0.9, 0.999, 1e-8, 0.0});
  optim::LambdaLR scheduler = optim::get_linear_schedule_with_warmup(optimizer, 5, 20);
  for (int64_t step = 0; step < 20; ++step) {
    EXPECT_EQ(scheduler.last_epoch(), step);
    ASSERT_EQ(scheduler.get_last_lr().size(), 1u);
    EXPECT_NEAR(scheduler.get_last_lr()[0], expected[step], 1e-9) << "step " << step;
    EXPECT_EQ(optimizer.lr(), scheduler.get_last_lr()[0]);
    scheduler.step();
  }
}

TEST(AdamW, RejectsInvalidHyperParameters) {
  EXPECT_THROW(optim::AdamW({}, {-1.0, 0.9, 0.999, 1e-8, 0.0}), Error);
  EXPECT_THROW(optim::AdamW({}, {1e-3, 1.0, 0.999, 1e-8, 0.0}), Error);
}

}  // namespace
}  // namespace lazytrain
