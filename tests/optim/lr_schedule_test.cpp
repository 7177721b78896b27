// transformers' learning-rate schedules and LambdaLR's state against PyTorch
// (tests/golden/schedules.json, made by tools/make_golden_schedules.py).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "../support/golden.h"
#include "core/error.h"
#include "optim/lr_scheduler.h"

namespace lazytrain {
namespace {

nlohmann::json golden_schedules() {
  std::ifstream in(testing::golden_path("schedules.json"));
  return nlohmann::json::parse(in);
}

optim::AdamW optimizer_for(const Tensor& p, double lr) { return optim::AdamW({{{p}, 0.0}}, {lr, 0.9, 0.999, 1e-8, 0.0}); }

// The scheduler a golden case names, made through the factory a user would call.
optim::LambdaLR make_scheduler(const nlohmann::json& c, optim::AdamW& optimizer) {
  const std::string name = c["name"];
  const int64_t warmup = c["num_warmup_steps"], total = c["num_training_steps"];
  const double cycles = c["num_cycles"];
  if (name == "cosine" && cycles != 0.5) return optim::get_cosine_schedule_with_warmup(optimizer, warmup, total, cycles);
  return optim::get_scheduler(name, optimizer, warmup, total);
}

// Each schedule's learning rate at steps 0 .. total + 2 is PyTorch's LambdaLR
// value with transformers' multiplier (the same double arithmetic, so equal to
// a few ulps); the multiplier functions give the same factors.
TEST(LrSchedule, EveryScheduleMatchesTransformersThroughLambdaLR) {
  const nlohmann::json golden = golden_schedules();
  const double lr = golden["lr"];
  ASSERT_EQ(golden["cases"].size(), 8u);
  for (const auto& c : golden["cases"]) {
    SCOPED_TRACE(c.dump().substr(0, 120));
    Tensor p = from_vector(std::vector<float>{1, 2}, {2});
    optim::AdamW optimizer = optimizer_for(p, lr);
    optim::LambdaLR scheduler = make_scheduler(c, optimizer);
    const std::vector<double> expected = c["lrs"];
    const int64_t warmup = c["num_warmup_steps"], total = c["num_training_steps"];
    for (int64_t step = 0; step < static_cast<int64_t>(expected.size()); ++step) {
      EXPECT_DOUBLE_EQ(scheduler.get_last_lr()[0], expected[step]) << "step " << step;
      EXPECT_EQ(optimizer.lr(), scheduler.get_last_lr()[0]);
      double factor = 1.0;
      if (c["name"] == "linear") factor = optim::linear_schedule_with_warmup(step, warmup, total);
      if (c["name"] == "cosine") factor = optim::cosine_schedule_with_warmup(step, warmup, total, c["num_cycles"]);
      if (c["name"] == "constant_with_warmup") factor = optim::constant_schedule_with_warmup(step, warmup);
      EXPECT_DOUBLE_EQ(lr * factor, expected[step]) << "step " << step;
      scheduler.step();
    }
  }
}

// Values from the formulas themselves (transformers' optimization.py), at the
// points where the shape of each schedule changes.
TEST(LrSchedule, CosineAndConstantFormulasAtTheirCorners) {
  EXPECT_DOUBLE_EQ(optim::cosine_schedule_with_warmup(0, 4, 14), 0.0);
  EXPECT_DOUBLE_EQ(optim::cosine_schedule_with_warmup(2, 4, 14), 0.5);
  EXPECT_DOUBLE_EQ(optim::cosine_schedule_with_warmup(4, 4, 14), 1.0);   // progress 0: cos 0
  EXPECT_DOUBLE_EQ(optim::cosine_schedule_with_warmup(9, 4, 14), 0.5);   // progress 1/2: cos(π/2)
  EXPECT_NEAR(optim::cosine_schedule_with_warmup(14, 4, 14), 0.0, 1e-16);  // progress 1: cos π
  // Past the end the half cosine turns up again, as in transformers (no clamp of progress).
  EXPECT_NEAR(optim::cosine_schedule_with_warmup(19, 4, 14), 0.5, 1e-15);
  // num_cycles 1: a full cosine, back at 1 when training ends.
  EXPECT_DOUBLE_EQ(optim::cosine_schedule_with_warmup(14, 4, 14, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(optim::constant_schedule_with_warmup(1, 4), 0.25);
  EXPECT_DOUBLE_EQ(optim::constant_schedule_with_warmup(4, 4), 1.0);
  EXPECT_DOUBLE_EQ(optim::constant_schedule_with_warmup(100, 4), 1.0);
  EXPECT_DOUBLE_EQ(optim::constant_schedule_with_warmup(0, 0), 1.0);
}

TEST(LrSchedule, GetSchedulerNamesTheValidTypesForAnUnknownOne) {
  Tensor p = from_vector(std::vector<float>{1}, {1});
  optim::AdamW optimizer = optimizer_for(p, 1e-3);
  EXPECT_EQ(optim::scheduler_type_names(), (std::vector<std::string>{"linear", "cosine", "constant", "constant_with_warmup"}));
  try {
    optim::get_scheduler("cosin", optimizer, 1, 10);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[get_scheduler] unknown scheduler type 'cosin'; expected one of: linear, cosine, constant, constant_with_warmup");
  }
  EXPECT_EQ(optimizer.lr(), 1e-3);  // untouched
  // "constant" ignores both step counts.
  optim::LambdaLR constant = optim::get_scheduler("constant", optimizer, 5, 10);
  EXPECT_EQ(constant.get_last_lr()[0], 1e-3);
}

// state_dict() holds the keys and values of PyTorch's LambdaLR.state_dict()
// after the same steps.
TEST(LrSchedule, StateDictMatchesPyTorchsLambdaLR) {
  const nlohmann::json golden = golden_schedules()["state_dict"];
  Tensor p = from_vector(std::vector<float>{1, 2}, {2});
  optim::AdamW optimizer({{{p}, 0.0}, {{}, 0.01}}, {golden_schedules()["lr"].get<double>(), 0.9, 0.999, 1e-8, 0.0});
  optim::LambdaLR scheduler = optim::get_scheduler(golden["name"], optimizer, golden["num_warmup_steps"], golden["num_training_steps"]);
  for (int i = 0; i < golden["steps"].get<int>(); ++i) scheduler.step();
  // PyTorch's state was made with one parameter group; this optimizer has two (one rate).
  nlohmann::json expected = golden["value"];
  expected["base_lrs"].push_back(expected["base_lrs"][0]);
  expected["_last_lr"].push_back(expected["_last_lr"][0]);
  EXPECT_EQ(scheduler.state_dict(), expected);
}

// A scheduler made afresh (as a resumed Trainer makes it, from the arguments)
// and loaded from the saved JSON text continues the schedule exactly.
TEST(LrSchedule, LoadStateDictResumesTheSchedule) {
  Tensor p = from_vector(std::vector<float>{1, 2}, {2});
  optim::AdamW reference_optimizer = optimizer_for(p, 5e-4);
  optim::LambdaLR reference = optim::get_scheduler("cosine", reference_optimizer, 3, 20);
  for (int i = 0; i < 6; ++i) reference.step();
  const std::string saved = reference.state_dict().dump();

  optim::AdamW resumed_optimizer = optimizer_for(p, 5e-4);
  optim::LambdaLR resumed = optim::get_scheduler("cosine", resumed_optimizer, 3, 20);
  resumed.load_state_dict(nlohmann::json::parse(saved), "checkpoint-6/scheduler.json");
  EXPECT_EQ(resumed.last_epoch(), 6);
  EXPECT_EQ(resumed_optimizer.lr(), reference_optimizer.lr());  // bit for bit through the JSON text
  for (int i = 0; i < 16; ++i) {
    reference.step();
    resumed.step();
    ASSERT_EQ(resumed.get_last_lr(), reference.get_last_lr()) << "step " << resumed.last_epoch();
  }
  EXPECT_EQ(resumed.state_dict(), reference.state_dict());
}

TEST(LrSchedule, LoadStateDictRejectsABadStateAndChangesNothing) {
  Tensor p = from_vector(std::vector<float>{1, 2}, {2});
  optim::AdamW optimizer = optimizer_for(p, 1e-3);
  optim::LambdaLR scheduler = optim::get_linear_schedule_with_warmup(optimizer, 2, 10);
  scheduler.step();
  const nlohmann::json good = scheduler.state_dict();
  auto expect_error = [&](nlohmann::json bad, const std::string& fragment) {
    try {
      scheduler.load_state_dict(bad, "ckpt/scheduler.json");
      ADD_FAILURE() << "no error for " << bad.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("ckpt/scheduler.json"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
    EXPECT_EQ(scheduler.state_dict(), good);
    EXPECT_EQ(optimizer.lr(), 5e-4);
  };
  nlohmann::json missing = good;
  missing.erase("last_epoch");
  expect_error(missing, "missing key 'last_epoch'");
  nlohmann::json two_groups = good;
  two_groups["base_lrs"] = {1e-3, 1e-3};
  expect_error(two_groups, "'base_lrs'");
  nlohmann::json count = good;
  count["_step_count"] = 5;
  expect_error(count, "'_step_count' is 5");
  nlohmann::json text = good;
  text["_last_lr"] = {"fast"};
  expect_error(text, "'_last_lr'");
  expect_error(nlohmann::json::array(), "expected a JSON object");
  // PyTorch's other keys are accepted and ignored.
  nlohmann::json torch_style = good;
  torch_style["verbose"] = false;
  torch_style["lr_lambdas"] = {nullptr};
  scheduler.load_state_dict(torch_style);
  EXPECT_EQ(scheduler.state_dict(), good);
}

}  // namespace
}  // namespace lazytrain
