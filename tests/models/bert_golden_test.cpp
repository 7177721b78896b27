// BertForMaskedLM against Hugging Face's (tools/make_golden_bert.py): logits,
// loss and the gradient of every parameter on a tiny config.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "../support/golden.h"
#include "core/error.h"
#include "data/labelled_positions.h"
#include "models/bert.h"
#include "tensor/ops.h"
#include "tensor/autocast.h"

namespace lazytrain {
namespace {

using testing::expect_close;
using testing::GoldenFile;
using testing::relative_l2;

class BertGolden : public ::testing::Test {
 protected:
  void SetUp() override { load("bert_tiny_mlm.safetensors"); }
  void load(const std::string& file) {
    golden = std::make_unique<GoldenFile>(file);
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

// The LM head on the labelled rows only (MaskedLMModel::forward_labelled, what
// run_mlm trains with): the loss and every gradient are Hugging Face's, computed
// on all rows, and the logits are the labelled rows of HF's.
TEST_F(BertGolden, LabelledRowsGiveTheLossAndGradientsOfAllRows) {
  const Tensor labels = golden->tensor("labels");
  const data::LabelledPositions rows = data::labelled_positions(labels.to_vector<int64_t>());
  const int64_t k = static_cast<int64_t>(rows.positions.size());
  const int64_t labelled = std::count_if(rows.labels.begin(), rows.labels.end(), [](int64_t l) { return l != -100; });
  ASSERT_GT(labelled, 1);
  ASSERT_LT(labelled, labels.numel());  // some rows are left out
  models::MaskedLMOutput out =
      model->forward_labelled(golden->tensor("input_ids"), golden->tensor("attention_mask"), from_vector(rows.positions, {k}), from_vector(rows.labels, {k}));
  out.loss.backward();
  EXPECT_EQ(out.logits.shape(), (Shape{k, config.vocab_size}));
  const std::vector<float> all = golden->floats("logits");
  std::vector<float> want;
  for (int64_t p : rows.positions) want.insert(want.end(), all.begin() + p * config.vocab_size, all.begin() + (p + 1) * config.vocab_size);
  expect_close(out.logits, want, 1e-4, 1e-5, "logits of the labelled rows");
  expect_close(out.loss, golden->floats("loss"), 1e-5, 0, "loss");
  for (const auto& [name, p] : model->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    expect_close(p.grad(), golden->floats("grad." + name), 1e-4, 1e-7, "grad." + name);
  }
}

TEST_F(BertGolden, LabelledRowsOfAnotherShapeAreOneError) {
  const Tensor ids = golden->tensor("input_ids"), mask = golden->tensor("attention_mask");
  try {
    model->forward_labelled(ids, mask, from_vector(std::vector<int64_t>{0, 1, 2}, {3}), from_vector(std::vector<int64_t>{5, 6}, {2}));
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[BertForMaskedLM] masked_lm_positions [3] and masked_lm_labels [2] must both be [K]"), std::string::npos)
        << e.what();
  }
}

// --bf16: the same model under torch.autocast('cpu', dtype=torch.bfloat16)
// (tools/make_golden_bert.py --bf16). bf16 keeps 8 significant bits, and the two
// systems round at slightly different places (torch's addmm adds the bias before
// its one rounding), so values agree to bf16's precision, not bit for bit:
// compared as whole tensors (relative L2 error under 1e-2 for the logits, 3e-2 for
// gradients), while the logits must differ from an f32 run (autocast engaged).
class BertGoldenBf16 : public BertGolden {
 protected:
  void SetUp() override { load("bert_tiny_mlm_bf16.safetensors"); }
};

TEST_F(BertGoldenBf16, AutocastMatchesPyTorchAutocast) {
  models::MaskedLMOutput out;
  {
    AutocastGuard autocast(true, DType::kBFloat16);
    out = model->forward(golden->tensor("input_ids"), golden->tensor("attention_mask"), golden->tensor("labels"));
  }
  out.loss.backward();  // outside the guard, as in PyTorch
  EXPECT_EQ(out.logits.dtype(), DType::kBFloat16);  // the decoder is a linear
  EXPECT_EQ(out.loss.dtype(), DType::kFloat32);     // cross_entropy runs in f32
  GoldenFile f32("bert_tiny_mlm.safetensors");
  const double logits_error = relative_l2(out.logits, golden->floats("logits"));
  EXPECT_LT(logits_error, 1e-2);
  EXPECT_GT(relative_l2(out.logits, f32.floats("logits")), 1e-3) << "the logits are f32-exact: autocast did not engage";
  expect_close(out.loss, golden->floats("loss"), 2e-3, 0, "loss");
  for (const auto& [name, p] : model->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_EQ(p.grad().dtype(), DType::kFloat32) << name;  // master weights' gradients stay f32
    if (name.find("key.bias") != std::string::npos) {
      // Exactly 0 in exact arithmetic (softmax ignores a per-row shift): rounding noise only.
      expect_close(p.grad(), golden->floats("grad." + name), 0, 1e-6, "grad." + name);
      continue;
    }
    EXPECT_LT(relative_l2(p.grad(), golden->floats("grad." + name)), 3e-2) << "grad." << name;
  }
}

}  // namespace
}  // namespace lazytrain
