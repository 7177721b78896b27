// FillMaskPipeline against Hugging Face's fill-mask pipeline on the PyTorch
// reference models (tools/make_golden_fill_mask.py, through
// tools/torch_reference/fill_mask.py): the token ids, the logits at each mask,
// the ranking, the scores and the decoded strings, for a tiny BERT and a tiny
// RoBERTa, batched and one input at a time.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "../support/golden.h"
#include "pipelines/fill_mask.h"

namespace lazytrain {
namespace {

using pipelines::FillMaskPipeline;
using pipelines::FillMaskResult;

std::vector<int64_t> ints(const train::TensorRecord& r) {
  std::vector<int64_t> v(r.data.size() / sizeof(int64_t));
  std::memcpy(v.data(), r.data.data(), r.data.size());
  return v;
}

std::vector<float> floats(const train::TensorRecord& r) {
  std::vector<float> v(r.data.size() / sizeof(float));
  std::memcpy(v.data(), r.data.data(), r.data.size());
  return v;
}

// Runs the pipeline of `model_dir` on the golden file's texts and compares every
// field; sets *worst to the largest difference of a mask logit.
void expect_matches_golden(const FillMaskPipeline& pipeline, const std::string& golden_file, int64_t batch_size, double* worst) {
  std::map<std::string, std::string> meta;
  const std::map<std::string, train::TensorRecord> golden = train::load_safetensors(golden_file, &meta);
  const auto texts = nlohmann::json::parse(meta.at("texts")).get<std::vector<std::string>>();
  const nlohmann::json expected = nlohmann::json::parse(meta.at("expected"));
  const int64_t top_k = std::stoll(meta.at("top_k"));
  const std::vector<FillMaskResult> results = pipeline(texts, {.top_k = top_k, .batch_size = batch_size});
  EXPECT_EQ(results.size(), texts.size());
  *worst = 0;
  for (size_t i = 0; i < results.size() && i < texts.size(); ++i) {
    const std::string at = golden_file + " input " + std::to_string(i) + " \"" + texts[i] + "\" batch_size " + std::to_string(batch_size);
    const std::string n = std::to_string(i);
    const FillMaskResult& r = results[i];
    EXPECT_EQ(r.input_ids, ints(golden.at("input_ids." + n))) << at;
    EXPECT_EQ(r.mask_positions, ints(golden.at("mask_positions." + n))) << at;
    const std::vector<float> logits = floats(golden.at("mask_logits." + n));
    const std::vector<int64_t> top_ids = ints(golden.at("top_ids." + n));
    const std::vector<float> top_scores = floats(golden.at("top_scores." + n));
    const size_t masks = r.mask_positions.size();
    ASSERT_EQ(r.mask_logits.size(), masks) << at;
    ASSERT_EQ(r.predictions.size(), masks) << at;
    const size_t vocab = logits.size() / masks;
    // One mask: a list of predictions; several: a list per mask.
    const nlohmann::json per_mask = masks == 1 ? nlohmann::json::array({expected[i]}) : expected[i];
    for (size_t m = 0; m < masks; ++m) {
      ASSERT_EQ(r.mask_logits[m].size(), vocab) << at;
      for (size_t v = 0; v < vocab; ++v) {
        const double d = std::abs(static_cast<double>(r.mask_logits[m][v]) - logits[m * vocab + v]);
        *worst = std::max(*worst, d);
        EXPECT_LE(d, 1e-4) << at << " mask " << m << " logit of token " << v;
      }
      ASSERT_EQ(r.predictions[m].size(), static_cast<size_t>(top_k)) << at;
      for (int64_t k = 0; k < top_k; ++k) {
        const pipelines::FillMaskPrediction& p = r.predictions[m][k];
        const nlohmann::json& want = per_mask[m][k];
        EXPECT_EQ(p.token, top_ids[m * top_k + k]) << at << " mask " << m << " rank " << k;
        EXPECT_EQ(p.token, want.at("token").get<int64_t>()) << at;
        EXPECT_NEAR(p.score, top_scores[m * top_k + k], 1e-5) << at << " mask " << m << " rank " << k;
        EXPECT_EQ(p.token_str, want.at("token_str").get<std::string>()) << at << " rank " << k;
        EXPECT_EQ(p.sequence, want.at("sequence").get<std::string>()) << at << " rank " << k;
      }
    }
  }
}

void expect_model_matches_golden(const std::string& name) {
  const FillMaskPipeline pipeline = FillMaskPipeline::from_pretrained(testing::golden_path(name));
  EXPECT_FALSE(pipeline.model().is_training());
  // All inputs in one padded batch; one at a time; batches of 3 (the last one filled up).
  for (int64_t batch_size : {8, 1, 3}) {
    double worst = 0;
    expect_matches_golden(pipeline, testing::golden_path(name + ".safetensors"), batch_size, &worst);
    EXPECT_LT(worst, 1e-4) << name;
  }
}

TEST(FillMaskGolden, BertMatchesPyTorch) { expect_model_matches_golden("fill_mask_bert"); }

TEST(FillMaskGolden, RobertaMatchesPyTorch) { expect_model_matches_golden("fill_mask_roberta"); }

// A model of your own (e.g. the main job's) against a golden file that
// tools/torch_reference/fill_mask.py --save_golden wrote for it:
//   LAZYTRAIN_FILL_MASK_MODEL=DIR LAZYTRAIN_FILL_MASK_GOLDEN=FILE ./build/lazytrain_tests --gtest_filter='FillMaskGolden.*'
TEST(FillMaskGolden, ModelFromEnvironment) {
  const char* model = std::getenv("LAZYTRAIN_FILL_MASK_MODEL");
  const char* golden = std::getenv("LAZYTRAIN_FILL_MASK_GOLDEN");
  if (model == nullptr || golden == nullptr) GTEST_SKIP() << "set LAZYTRAIN_FILL_MASK_MODEL and LAZYTRAIN_FILL_MASK_GOLDEN";
  double worst = 0;
  expect_matches_golden(FillMaskPipeline::from_pretrained(model), golden, 8, &worst);
  std::printf("max |logit - reference| = %.3g\n", worst);
}

}  // namespace
}  // namespace lazytrain
