// AdamW, gradient clipping and the warm-up schedule against PyTorch
// (tools/make_golden_adamw.py).
#include <gtest/gtest.h>

#include "../support/golden.h"
#include "core/error.h"
#include "lazy/lazy_api.h"
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

// torch keeps a step count per parameter: b, first updated at step 2, gets the
// bias correction of its own step 1 (values from torch.optim.AdamW, torch 2.13).
TEST(AdamW, CountsStepsPerParameterAsTorch) {
  Tensor a = from_vector(std::vector<float>{1, 2}, {2}).requires_grad_();
  Tensor b = from_vector(std::vector<float>{3}, {1}).requires_grad_();
  optim::AdamW opt({{{a}, 0.01}, {{b}, 0.0}}, {0.1, 0.9, 0.999, 1e-8, 0.0});
  const std::vector<std::vector<float>> grad_a = {{0.5f, -1.0f}, {0.1f, 0.2f}, {0.3f, -0.3f}};
  const std::vector<std::vector<float>> grad_b = {{}, {1.0f}, {-2.0f}};
  const std::vector<std::vector<float>> want_a = {{0.8990000486373901f, 2.0980000495910645f},
                                                  {0.8177969455718994f, 2.1470046043395996f},
                                                  {0.7310731410980225f, 2.200796127319336f}};
  const std::vector<float> want_b = {3.0f, 2.9000000953674316f, 2.936610460281372f};
  for (size_t k = 0; k < 3; ++k) {
    a.set_grad(from_vector(grad_a[k], {2}));
    b.set_grad(grad_b[k].empty() ? Tensor() : from_vector(grad_b[k], {1}));
    opt.step();
    lazy::mark_step();
    expect_close(a, want_a[k], 1e-6, 1e-7, "a at step " + std::to_string(k + 1));
    expect_close(b, {want_b[k]}, 1e-6, 1e-7, "b at step " + std::to_string(k + 1));
  }
  EXPECT_EQ(opt.step_count(), 3);
  EXPECT_EQ(opt.param_step(0, 0), 3);
  EXPECT_EQ(opt.param_step(1, 0), 2);
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
