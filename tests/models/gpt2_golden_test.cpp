// GPT2LMHeadModel against a PyTorch re-implementation of Hugging Face's
// (tools/make_golden_gpt2.py, tools/torch_reference/gpt2.py): logits, loss and
// the gradient of every parameter on a tiny config with padding.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../support/golden.h"
#include "core/error.h"
#include "models/gpt2.h"
#include "tensor/autocast.h"

namespace lazytrain {
namespace {

using testing::expect_close;
using testing::GoldenFile;
using testing::relative_l2;

class GPT2Golden : public ::testing::Test {
 protected:
  void SetUp() override { load("gpt2_tiny_clm.safetensors"); }
  // attn_implementation: the golden is PyTorch's eager attention; "sdpa" must
  // match it too (dropout is off).
  void load(const std::string& file, const std::string& attn_implementation = "eager") {
    golden = std::make_unique<GoldenFile>(file);
    config = models::GPT2Config::from_json(nlohmann::json::parse(golden->metadata().at("config")), "golden config");
    config.attn_implementation = attn_implementation;
    model = std::make_unique<models::GPT2LMHeadModel>(config);
    for (const auto& [name, p] : model->named_parameters()) {
      ASSERT_TRUE(golden->has(name)) << name;
      p.set_data(golden->tensor(name));
    }
  }
  std::unique_ptr<GoldenFile> golden;
  models::GPT2Config config;
  std::unique_ptr<models::GPT2LMHeadModel> model;
};

TEST_F(GPT2Golden, ParameterNamesAreHuggingFaces) {
  const auto named = model->named_parameters();
  EXPECT_EQ(named.size(), 2u + 2u * 12 + 2u);  // wte, wpe; 12 a block; ln_f
  EXPECT_EQ(named.front().first, "transformer.wte.weight");
  EXPECT_EQ(model->parameter("transformer.h.1.attn.c_attn.weight").shape(), (Shape{32, 96}));  // Conv1D: [in, out]
  EXPECT_EQ(model->parameter("transformer.h.0.mlp.c_fc.weight").shape(), (Shape{32, 128}));
  // lm_head.weight is the word embeddings: one tensor, under both names.
  const auto tied = model->tied_parameters();
  ASSERT_EQ(tied.size(), 1u);
  EXPECT_EQ(tied[0], (std::pair<std::string, std::string>{"lm_head.weight", "transformer.wte.weight"}));
}

void expect_golden_logits_loss_and_gradients(models::GPT2LMHeadModel& model, const GoldenFile& golden) {
  models::CausalLMOutput out = model.forward(golden.tensor("input_ids"), golden.tensor("attention_mask"), golden.tensor("labels"));
  out.loss.backward();
  expect_close(out.logits, golden.floats("logits"), 1e-4, 1e-5, "logits");
  expect_close(out.loss, golden.floats("loss"), 1e-5, 0, "loss");
  for (const auto& [name, p] : model.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    expect_close(p.grad(), golden.floats("grad." + name), 1e-4, 1e-7, "grad." + name);
  }
}

TEST_F(GPT2Golden, LogitsLossAndEveryGradientMatchPyTorch) {
  ASSERT_EQ(config.attn_implementation, "eager");
  expect_golden_logits_loss_and_gradients(*model, *golden);
}

TEST_F(GPT2Golden, SdpaAttentionMatchesPyTorchsEager) {
  load("gpt2_tiny_clm.safetensors", "sdpa");
  expect_golden_logits_loss_and_gradients(*model, *golden);
}

TEST_F(GPT2Golden, WrongShapesAreOneErrorNamingTheModel) {
  EXPECT_THROW(model->forward(zeros({2, 65}, DType::kInt64)), Error);  // longer than n_positions 64
  EXPECT_THROW(model->forward(zeros({2, 8}, DType::kInt64), ones({2, 7}, DType::kInt64)), Error);
  EXPECT_THROW(model->forward(zeros({2, 8}, DType::kInt64), Tensor(), zeros({2, 7}, DType::kInt64)), Error);
}

// Under torch.autocast('cpu', dtype=torch.bfloat16) (make_golden_gpt2.py --bf16):
// the same tolerances as BERT's bf16 golden test.
class GPT2GoldenBf16 : public GPT2Golden {
 protected:
  void SetUp() override { load("gpt2_tiny_clm_bf16.safetensors"); }
};

void expect_autocast_matches(models::GPT2LMHeadModel& model, const GoldenFile& golden) {
  models::CausalLMOutput out;
  {
    AutocastGuard autocast(true, DType::kBFloat16);
    out = model.forward(golden.tensor("input_ids"), golden.tensor("attention_mask"), golden.tensor("labels"));
  }
  out.loss.backward();
  EXPECT_EQ(out.logits.dtype(), DType::kBFloat16);
  EXPECT_EQ(out.loss.dtype(), DType::kFloat32);
  GoldenFile f32("gpt2_tiny_clm.safetensors");
  EXPECT_LT(relative_l2(out.logits, golden.floats("logits")), 1e-2);
  EXPECT_GT(relative_l2(out.logits, f32.floats("logits")), 1e-3) << "the logits are f32-exact: autocast did not engage";
  expect_close(out.loss, golden.floats("loss"), 2e-3, 0, "loss");
  for (const auto& [name, p] : model.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_EQ(p.grad().dtype(), DType::kFloat32) << name;
    EXPECT_LT(relative_l2(p.grad(), golden.floats("grad." + name)), 3e-2) << "grad." << name;
  }
}

TEST_F(GPT2GoldenBf16, AutocastMatchesPyTorchAutocast) { expect_autocast_matches(*model, *golden); }

// sdpa under autocast takes bf16 q, k, v and accumulates in f32 (PyTorch's
// golden ran eager attention: bf16 matmuls, an f32 softmax): the same bounds.
TEST_F(GPT2GoldenBf16, SdpaAutocastMatchesPyTorchAutocast) {
  load("gpt2_tiny_clm_bf16.safetensors", "sdpa");
  expect_autocast_matches(*model, *golden);
}

}  // namespace
}  // namespace lazytrain
