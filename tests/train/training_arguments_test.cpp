// TrainingArguments: Hugging Face's defaults and checks, and training_args.json.
#include "train/training_arguments.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace lazytrain::train {
namespace {

std::string error_of(const TrainingArguments& a) {
  try {
    a.validate();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TrainingArguments valid() {
  TrainingArguments a;
  a.output_dir = "out";
  return a;
}

TEST(TrainingArguments, ResolveFillsHuggingFacesDefaults) {
  TrainingArguments a = valid();
  a.evaluation_strategy = "steps";
  a.logging_steps = 50;
  a.load_best_model_at_end = true;
  a.save_steps = 100;
  a.resolve();
  EXPECT_TRUE(a.do_eval);
  EXPECT_EQ(a.eval_steps, 50);
  EXPECT_EQ(a.metric_for_best_model, "loss");
  EXPECT_EQ(a.best_metric_key(), "eval_loss");
  EXPECT_EQ(a.greater_is_better, false);
  EXPECT_TRUE(a.logging_dir.starts_with("out/runs/")) << a.logging_dir;
  EXPECT_EQ(a.report_to, (std::vector<std::string>{"tensorboard"}));
  EXPECT_TRUE(a.reports_to_tensorboard());
  a.metric_for_best_model = "accuracy";
  a.greater_is_better.reset();
  a.resolve();
  EXPECT_EQ(a.greater_is_better, true);
  EXPECT_EQ(error_of(a), "");
}

TEST(TrainingArguments, EachBadValueNamesItsFlag) {
  auto with = [](auto change) {
    TrainingArguments a = valid();
    change(a);
    return error_of(a);
  };
  EXPECT_NE(with([](auto& a) { a.save_steps = 0; }).find("--save_steps must be positive, got 0"), std::string::npos);
  EXPECT_NE(with([](auto& a) { a.gradient_accumulation_steps = 0; }).find("--gradient_accumulation_steps"), std::string::npos);
  EXPECT_NE(with([](auto& a) { a.lr_scheduler_type = "cosin"; }).find("--lr_scheduler_type 'cosin' is not one of"), std::string::npos);
  EXPECT_NE(with([](auto& a) { a.evaluation_strategy = "step"; }).find("--evaluation_strategy 'step'"), std::string::npos);
  EXPECT_NE(with([](auto& a) { a.save_total_limit = 0; }).find("--save_total_limit must be positive"), std::string::npos);
  EXPECT_NE(with([](auto& a) { a.warmup_ratio = 1.5; }).find("--warmup_ratio"), std::string::npos);
  EXPECT_NE(with([](auto& a) { a.report_to = {"wandb"}; }).find("--report_to 'wandb'"), std::string::npos);
  EXPECT_NE(with([](auto& a) { a.fsdp = "shard_grad_op"; }).find("--fsdp expects full_shard (or \"full_shard auto_wrap\", the same here: every parameter is split; or nothing: replicas), got 'shard_grad_op'"),
            std::string::npos);
  EXPECT_NE(with([](auto& a) {
              a.fsdp = "full_shard";
              a.sharded_optimizer = true;
            }).find("leave out --sharded_optimizer"),
            std::string::npos);
  EXPECT_NE(with([](auto& a) { a.tp_size = 0; }).find("--tp_size must be between 1 (no tensor parallelism) and 256, got 0"), std::string::npos);
  EXPECT_NE(with([](auto& a) {
              a.tp_size = 2;
              a.fsdp = "full_shard";
            }).find("--tp_size with --fsdp is not supported yet"),
            std::string::npos);
  EXPECT_NE(with([](auto& a) {
              a.tp_size = 2;
              a.sharded_optimizer = true;
            }).find("--tp_size splits the optimizer state"),
            std::string::npos);
  EXPECT_NE(with([](auto& a) {
              a.load_best_model_at_end = true;
              a.evaluation_strategy = "steps";
              a.save_strategy = "epoch";
            }).find("requires the save and eval strategy to match"),
            std::string::npos);
  EXPECT_NE(with([](auto& a) {
              a.load_best_model_at_end = true;
              a.evaluation_strategy = "steps";
              a.eval_steps = 30;
              a.save_steps = 50;
            }).find("round multiple of 30"),
            std::string::npos);
}

TEST(TrainingArguments, ToJsonHoldsEveryValueWithHuggingFacesKeys) {
  TrainingArguments a = valid();
  a.gradient_accumulation_steps = 4;
  a.save_total_limit = 2;
  a.resolve();
  const nlohmann::json j = a.to_json();
  EXPECT_EQ(j["gradient_accumulation_steps"], 4);
  EXPECT_EQ(j["save_total_limit"], 2);
  EXPECT_EQ(j["eval_steps"], 500);
  EXPECT_TRUE(j["metric_for_best_model"].is_null());
  EXPECT_EQ(j["lr_scheduler_type"], "linear");
  EXPECT_EQ(j["learning_rate"], 5e-5);
  for (const char* key : {"output_dir", "per_device_train_batch_size", "num_train_epochs", "warmup_ratio", "logging_dir", "save_strategy",
                          "load_best_model_at_end", "report_to", "resume_from_checkpoint", "dataloader_drop_last", "seed", "bf16"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
}

TEST(TrainingArguments, FsdpIsHuggingFacesListOfOptions) {
  TrainingArguments a = valid();
  EXPECT_EQ(a.to_json()["fsdp"], nlohmann::json::array());
  a.fsdp = "full_shard";
  EXPECT_EQ(a.to_json()["fsdp"], nlohmann::json::array({"full_shard"}));
  EXPECT_EQ(TrainingArguments::from_json(a.to_json(), "test").fsdp, "full_shard");
  EXPECT_EQ(TrainingArguments::from_json({{"output_dir", "out"}, {"fsdp", "full_shard"}}, "test").fsdp, "full_shard");  // HF accepts a string too
}

TEST(TrainingArguments, TpSizeIsWrittenAndReadBack) {
  TrainingArguments a = valid();
  EXPECT_EQ(a.to_json()["tp_size"], 1);
  EXPECT_FALSE(a.uses_spmd());
  a.tp_size = 2;
  EXPECT_TRUE(a.uses_spmd());
  EXPECT_EQ(TrainingArguments::from_json(a.to_json(), "test").tp_size, 2);
}

}  // namespace
}  // namespace lazytrain::train
