// The Trainer over the asynchronous pipeline: a step whose execution fails on
// the device is reported with its training step, and training stops there.
#include "train/trainer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "core/error.h"
#include "nn/module.h"
#include "tensor/ops.h"

namespace lazytrain::train {
namespace {

struct Table : nn::Module {
  Table() { weight = register_parameter("weight", from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2})); }
  Tensor weight;
};

TEST(Trainer, AStepThatFailsOnTheDeviceNamesTheStep) {
  Table model;
  TrainingArguments args;
  args.output_dir = (std::filesystem::temp_directory_path() / ("lazytrain_trainer_" + std::to_string(::getpid()))).string();
  args.max_steps = 3;
  args.per_device_train_batch_size = 1;
  args.disable_tqdm = true;
  // Rows past the table's 2: found only when the gather runs on the device.
  LossFn loss = [&](const distributed::DeviceBatch& b) { return sum(index_select(model.weight, 0, b["input_ids"].view({-1}))); };
  std::vector<data::Example> examples(4);
  for (auto& e : examples) e.input_ids = {7, 8};
  data::DataCollatorOptions collator;
  collator.mlm = false;
  Trainer trainer(model, args, loss, examples, {}, [&] { return data::DataCollatorForLanguageModeling(data::CollatorTokens{10, 4, 0, {0}}, collator); });
  try {
    trainer.train();
    FAIL() << "expected the failed execution";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[Trainer] training step 1:"), std::string::npos) << what;
    EXPECT_NE(what.find("out of range"), std::string::npos) << what;
  }
  lazy::wait_device_ops();  // the failure was reported once; nothing is left pending or failing
}

}  // namespace
}  // namespace lazytrain::train
