// AutoModelForMaskedLM picks the class of config.model_type; both models share
// BertEncoder::forward and get_extended_attention_mask.
#include "models/auto_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "models/bert.h"
#include "models/roberta.h"

namespace lazytrain::models {
namespace {

BertConfig tiny(BertConfig c) {
  c.update_from_string("vocab_size=40,hidden_size=8,num_hidden_layers=2,num_attention_heads=2,intermediate_size=16,max_position_embeddings=20");
  return c;
}

TEST(AutoModelForMaskedLM, BuildsTheClassOfTheModelType) {
  std::shared_ptr<MaskedLMModel> bert = AutoModelForMaskedLM::from_config(tiny(BertConfig()));
  ASSERT_NE(std::dynamic_pointer_cast<BertForMaskedLM>(bert), nullptr);
  EXPECT_EQ(bert->named_parameters().front().first, "bert.embeddings.word_embeddings.weight");
  std::shared_ptr<MaskedLMModel> roberta = AutoModelForMaskedLM::from_config(tiny(roberta_config()));
  ASSERT_NE(std::dynamic_pointer_cast<RobertaForMaskedLM>(roberta), nullptr);
  EXPECT_EQ(roberta->named_parameters().front().first, "roberta.embeddings.word_embeddings.weight");
  EXPECT_EQ(roberta->config().model_type, "roberta");

  // Through the interface: logits [B, S, V] and a finite loss.
  Tensor ids = from_vector(std::vector<int64_t>{5, 6, 7, 8, 9, 10}, {2, 3});
  Tensor mask = from_vector(std::vector<int64_t>{1, 1, 1, 1, 1, 0}, {2, 3});
  Tensor labels = from_vector(std::vector<int64_t>{-100, 6, -100, 8, -100, -100}, {2, 3});
  for (const auto& model : {bert, roberta}) {
    MaskedLMOutput out = model->forward(ids, mask, labels);
    EXPECT_EQ(out.logits.shape(), (Shape{2, 3, 40}));
    const double loss = out.loss.item();
    EXPECT_TRUE(std::isfinite(loss));
    EXPECT_NEAR(loss, std::log(40.0), 0.5);  // near uniform at initialisation
  }
}

TEST(AutoModelForMaskedLM, UnknownModelTypeIsAnError) {
  BertConfig c = tiny(BertConfig());
  c.model_type = "gpt2";
  try {
    AutoModelForMaskedLM::from_config(c);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[AutoModelForMaskedLM] model_type 'gpt2' has no masked-LM model"), std::string::npos) << e.what();
  }
}

TEST(AutoModelForMaskedLM, ExtendedAttentionMaskIsAdditive) {
  Tensor mask = from_vector(std::vector<int64_t>{1, 0, 1}, {1, 3});
  Tensor ext = get_extended_attention_mask(mask);
  EXPECT_EQ(ext.shape(), (Shape{1, 1, 1, 3}));
  const float lowest = std::numeric_limits<float>::lowest();
  EXPECT_EQ(ext.to_vector<float>(), (std::vector<float>{0.0f, lowest, 0.0f}));
}

TEST(AutoModelForMaskedLM, LabelsOfTheWrongShapeNameTheModel) {
  std::shared_ptr<MaskedLMModel> bert = AutoModelForMaskedLM::from_config(tiny(BertConfig()));
  Tensor ids = from_vector(std::vector<int64_t>{5, 6, 7, 8}, {2, 2});
  Tensor mask = from_vector(std::vector<int64_t>{1, 1, 1, 1}, {2, 2});
  try {
    bert->forward(ids, mask, from_vector(std::vector<int64_t>{1, 2, 3, 4}, {4}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[BertForMaskedLM] labels [4] must match input_ids [2, 2]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lazytrain::models
