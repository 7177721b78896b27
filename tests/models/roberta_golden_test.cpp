// RobertaForMaskedLM against Hugging Face's (tools/make_golden_roberta.py):
// parameter names, position ids, logits, loss and every gradient on a tiny
// config with padding (positions skip padding tokens).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../support/golden.h"
#include "data/labelled_positions.h"
#include "models/roberta.h"
#include "tensor/ops.h"

namespace lazytrain {
namespace {

using testing::expect_close;
using testing::GoldenFile;

TEST(RobertaGolden, PositionIdsSkipPadding) {
  Tensor ids = from_vector(std::vector<int64_t>{0, 7, 8, 2, 1, 0, 9, 2, 1, 1}, {2, 5});  // <pad> = 1
  EXPECT_EQ(models::roberta_position_ids(ids, 1).to_vector<int64_t>(), (std::vector<int64_t>{2, 3, 4, 5, 1, 2, 3, 4, 1, 1}));
}

TEST(RobertaGolden, NamesLogitsLossAndEveryGradientMatchPyTorch) {
  GoldenFile golden("roberta_tiny_mlm.safetensors");
  models::BertConfig config = models::BertConfig::from_json(nlohmann::json::parse(golden.metadata().at("config")), "golden config");
  EXPECT_EQ(config.model_type, "roberta");
  models::RobertaForMaskedLM model(config);
  auto named = model.named_parameters();
  EXPECT_EQ(named.size(), 2u * 16 + 5 + 5);
  for (const auto& [name, p] : named) {
    ASSERT_TRUE(golden.has(name)) << name;
    p.set_data(golden.tensor(name));
  }
  EXPECT_TRUE(model.lm_head->decoder_weight.is_same(model.embeddings->word_embeddings->weight));
  models::MaskedLMOutput out = model.forward(golden.tensor("input_ids"), golden.tensor("attention_mask"), golden.tensor("labels"));
  out.loss.backward();
  expect_close(out.logits, golden.floats("logits"), 1e-4, 1e-5, "logits");
  expect_close(out.loss, golden.floats("loss"), 1e-5, 0, "loss");
  for (const auto& [name, p] : named) {
    ASSERT_TRUE(p.grad().defined()) << name;
    expect_close(p.grad(), golden.floats("grad." + name), 1e-4, 1e-7, "grad." + name);
  }
}

// The LM head on the labelled rows only (run_mlm's path): HF's loss and gradients.
TEST(RobertaGolden, LabelledRowsGiveTheLossAndGradientsOfAllRows) {
  GoldenFile golden("roberta_tiny_mlm.safetensors");
  models::BertConfig config = models::BertConfig::from_json(nlohmann::json::parse(golden.metadata().at("config")), "golden config");
  models::RobertaForMaskedLM model(config);
  for (const auto& [name, p] : model.named_parameters()) p.set_data(golden.tensor(name));
  const data::LabelledPositions rows = data::labelled_positions(golden.tensor("labels").to_vector<int64_t>());
  const int64_t k = static_cast<int64_t>(rows.positions.size());
  models::MaskedLMOutput out =
      model.forward_labelled(golden.tensor("input_ids"), golden.tensor("attention_mask"), from_vector(rows.positions, {k}), from_vector(rows.labels, {k}));
  out.loss.backward();
  EXPECT_EQ(out.logits.shape(), (Shape{k, config.vocab_size}));
  expect_close(out.loss, golden.floats("loss"), 1e-5, 0, "loss");
  for (const auto& [name, p] : model.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    expect_close(p.grad(), golden.floats("grad." + name), 1e-4, 1e-7, "grad." + name);
  }
}

}  // namespace
}  // namespace lazytrain
