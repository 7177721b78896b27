// Gradient accumulation as Hugging Face's Trainer does it (by tokens, transformers
// >= 4.46), against PyTorch (tests/golden/grad_accumulation.safetensors,
// tools/make_golden_grad_accumulation.py): K micro-batches of a tiny
// BertForMaskedLM with 2, 5 and 8 labelled tokens, each loss times its token
// count backwarded in its own graph (mark_step between them) with the gradients
// accumulating in grad(), then divided by the step's tokens (the Trainer's
// scale_gradients_by_tokens), clip_grad_norm_ and one AdamW step; one batch of
// K·B for comparison; and the Trainer itself with gradient_accumulation_steps K.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../support/golden.h"
#include "lazy/lazy_api.h"
#include "models/bert.h"
#include "optim/adamw.h"
#include "optim/clip_grad.h"
#include "runtime/metrics.h"

namespace lazytrain {
namespace {

using testing::expect_close;
using testing::GoldenFile;

class GradAccumulationGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    config = models::BertConfig::from_json(nlohmann::json::parse(golden.metadata().at("config")), "golden config");
    hparams = nlohmann::json::parse(golden.metadata().at("hparams"));
    K = hparams["K"];
    B = hparams["B"];
    model = std::make_unique<models::BertForMaskedLM>(config);
    for (const auto& [name, p] : model->named_parameters()) {
      ASSERT_TRUE(golden.has("init." + name)) << name;
      p.set_data(golden.tensor("init." + name));
    }
  }

  // Rows first .. first+count-1 of a golden [K*B, S] int64 tensor, as device data
  // (a micro-batch as the data loader hands it over).
  Tensor rows(const std::string& name, int64_t first, int64_t count) const {
    Tensor all = golden.tensor(name);
    const int64_t S = all.size(1);
    std::vector<int64_t> v = all.to_vector<int64_t>();
    return from_vector(std::vector<int64_t>(v.begin() + first * S, v.begin() + (first + count) * S), {count, S});
  }

  // Hugging Face's grouping: no weight decay on biases and LayerNorm weights.
  optim::AdamW make_optimizer() const {
    std::vector<Tensor> decay, no_decay;
    for (const auto& [name, p] : model->named_parameters()) {
      (name.ends_with("bias") || name.find("LayerNorm.weight") != std::string::npos ? no_decay : decay).push_back(p);
    }
    return optim::AdamW({{decay, hparams["weight_decay"].get<double>()}, {no_decay, 0.0}},
                        {hparams["lr"].get<double>(), hparams["betas"][0].get<double>(), hparams["betas"][1].get<double>(),
                         hparams["eps"].get<double>(), 0.0});
  }

  // Clips, steps and checks the parameters against final_<which>.*.
  // attention.self.key.bias has a zero gradient in exact arithmetic (softmax
  // ignores a per-row shift): its gradient is rounding noise, and AdamW's first
  // step moves it by an arbitrary fraction of lr (README of tests/golden), so it
  // is only checked to have moved by at most lr.
  void clip_step_and_compare(const std::string& which) {
    Tensor norm = optim::clip_grad_norm_(model->parameters(), hparams["max_grad_norm"].get<double>());
    optim::AdamW optimizer = make_optimizer();
    optimizer.step();
    lazy::mark_step();
    expect_close(norm, golden.floats("grad_norm_" + which), 1e-5, 0, "grad_norm_" + which);
    const double lr = hparams["lr"];
    for (const auto& [name, p] : model->named_parameters()) {
      if (name.find("key.bias") != std::string::npos) {
        expect_close(p, golden.floats("init." + name), 0, lr * (1 + 1e-6), name + " (moved by at most lr)");
        continue;
      }
      expect_close(p, golden.floats("final_" + which + "." + name), 1e-5, 1e-6, "final_" + which + "." + name);
    }
  }

  GoldenFile golden{"grad_accumulation.safetensors"};
  models::BertConfig config;
  nlohmann::json hparams;
  int64_t K = 0, B = 0;
  std::unique_ptr<models::BertForMaskedLM> model;
};

// (b): K micro-batches, one graph each. The accumulated gradients, each
// micro-batch's loss, the clipped norm and the parameters after AdamW are
// PyTorch's; micro-batches after the second reuse the second's compiled graph
// (the first differs: it has no gradient to add to).
TEST_F(GradAccumulationGolden, MicroBatchGradientsAccumulateAcrossGraphsAsHuggingFacesTrainer) {
  ASSERT_EQ(K, 3);
  const std::vector<float> expected_losses = golden.floats("loss_b");
  int64_t compiles_after_second = 0;
  const std::vector<int64_t> label_counts = golden.tensor("labels_b").to_vector<int64_t>();
  int64_t tokens = 0;
  for (int64_t k = 0; k < K; ++k) {
    const Tensor labels = rows("labels", k * B, B);
    models::MaskedLMOutput out = model->forward(rows("input_ids", k * B, B), rows("attention_mask", k * B, B), labels);
    mul(out.loss, sum(to_dtype(ne(labels, -100.0), DType::kFloat32))).backward();
    lazy::mark_step();
    if (k == 1) compiles_after_second = runtime::counter_value("UncachedCompile");
    EXPECT_NEAR(out.loss.item(), expected_losses[static_cast<size_t>(k)], 1e-5 * expected_losses[static_cast<size_t>(k)]) << "micro-batch " << k;
    tokens += label_counts[static_cast<size_t>(k)];
  }
  EXPECT_EQ(runtime::counter_value("UncachedCompile"), compiles_after_second) << "micro-batch 3 compiled a new graph";
  for (const auto& [name, p] : model->named_parameters()) p.set_grad(div(p.grad(), static_cast<double>(tokens)));
  for (const auto& [name, p] : model->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    expect_close(p.grad(), golden.floats("grad_b." + name), 1e-4, 1e-6, "grad_b." + name);
  }
  clip_step_and_compare("b");
}

// (a): the whole batch of K·B at once gives the same update (the token mean over
// the whole step, whatever each micro-batch holds).
TEST_F(GradAccumulationGolden, OneBatchOfKTimesBGivesTheSameUpdate) {
  models::MaskedLMOutput out = model->forward(rows("input_ids", 0, K * B), rows("attention_mask", 0, K * B), rows("labels", 0, K * B));
  out.loss.backward();
  for (const auto& [name, p] : model->named_parameters()) {
    expect_close(p.grad(), golden.floats("grad_b." + name), 1e-4, 1e-6, "grad (one batch) vs grad_b." + name);
  }
  clip_step_and_compare("a");
  EXPECT_NEAR(golden.floats("grad_norm_a")[0], golden.floats("grad_norm_b")[0], 1e-5);
}

}  // namespace
}  // namespace lazytrain
