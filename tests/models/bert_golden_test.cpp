// BertForMaskedLM against Hugging Face's (tools/make_golden_bert.py): logits,
// loss and the gradient of every parameter on a tiny config.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../support/golden.h"
#include "models/bert.h"

namespace lazytrain {
namespace {

using testing::expect_close;
using testing::GoldenFile;

class BertGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    golden = std::make_unique<GoldenFile>("bert_tiny_mlm.safetensors");
    config = models::BertConfig::from_json(nlohmann::json::parse(golden->metadata().at("config")), "golden config");
    model = std::make_unique<models::BertForMaskedLM>(config);
    for (const auto& [name, p] : model->named_parameters()) {
      ASSERT_TRUE(golden->has(name)) << name;
      p.set_data(golden->tensor(name));
    }
  }
  std::unique_ptr<GoldenFile> golden;
  models::BertConfig config;
  std::unique_ptr<models::BertForMaskedLM> model;
};

TEST_F(BertGolden, ParameterNamesAreHuggingFaces) {
  auto named = model->named_parameters();
  EXPECT_EQ(named.size(), 2u * 16 + 5 + 5);  // per layer 16, embeddings 5, head 5
  EXPECT_EQ(named.front().first, "bert.embeddings.word_embeddings.weight");
  EXPECT_EQ(model->parameter("cls.predictions.bias").shape(), (Shape{config.vocab_size}));
  EXPECT_EQ(model->parameter("bert.encoder.layer.1.output.dense.weight").shape(), (Shape{config.hidden_size, config.intermediate_size}));
  // The decoder is tied to the word embeddings: the same tensor, listed once.
  EXPECT_TRUE(model->predictions->decoder_weight.is_same(model->bert->embeddings->word_embeddings->weight));
}

TEST_F(BertGolden, LogitsLossAndEveryGradientMatchPyTorch) {
  models::MaskedLMOutput out = model->forward(golden->tensor("input_ids"), golden->tensor("attention_mask"), golden->tensor("labels"));
  out.loss.backward();
  expect_close(out.logits, golden->floats("logits"), 1e-4, 1e-5, "logits");
  expect_close(out.loss, golden->floats("loss"), 1e-5, 0, "loss");
  for (const auto& [name, p] : model->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    expect_close(p.grad(), golden->floats("grad." + name), 1e-4, 1e-7, "grad." + name);
  }
}

}  // namespace
}  // namespace lazytrain
