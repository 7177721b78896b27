// FillMaskPipeline's errors and its JSON layout, on the golden tiny models
// (tests/golden/fill_mask_{bert,roberta}/).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <string>

#include <nlohmann/json.hpp>

#include "../support/golden.h"
#include "core/error.h"
#include "pipelines/fill_mask.h"

namespace lazytrain {
namespace {

namespace fs = std::filesystem;
using pipelines::FillMaskPipeline;

const FillMaskPipeline& bert() {
  static const FillMaskPipeline p = FillMaskPipeline::from_pretrained(testing::golden_path("fill_mask_bert"));
  return p;
}

const FillMaskPipeline& roberta() {
  static const FillMaskPipeline p = FillMaskPipeline::from_pretrained(testing::golden_path("fill_mask_roberta"));
  return p;
}

// The message of the Error that `f` throws ("" when it throws none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(FillMask, TheOtherFamilysMaskTokenIsNamed) {
  const std::string bert_error = error_of([] { bert()({"Paris is the [MASK] of France.", "Paris is the <mask> of France."}); });
  EXPECT_NE(bert_error.find("[fill_mask] input 2 \"Paris is the <mask> of France.\" has no mask token [MASK]"), std::string::npos) << bert_error;
  EXPECT_NE(bert_error.find("not <mask>"), std::string::npos) << bert_error;
  // The first input is reported first.
  const std::string first = error_of([] { bert()({"no mask here", "the [MASK]"}); });
  EXPECT_NE(first.find("input 1 \"no mask here\" has no mask token [MASK] (this bert model"), std::string::npos) << first;
  EXPECT_EQ(first.find("not <mask>"), std::string::npos) << first;
  const std::string roberta_error = error_of([] { roberta()({"Paris is the [MASK] of France."}); });
  EXPECT_NE(roberta_error.find("has no mask token <mask>"), std::string::npos) << roberta_error;
  EXPECT_NE(roberta_error.find("not [MASK]"), std::string::npos) << roberta_error;
}

TEST(FillMask, RobertasMaskTakesTheSpaceBeforeIt) {
  // "the <mask> of" is ▁the <mask> ▁of (HF's <mask> has lstrip=True), as a
  // masked word is in training; not ▁the ▁ <mask> ▁of.
  const data::Tokenizer& tok = roberta().tokenizer();
  std::vector<int64_t> expected = tok.encode("the", false);
  expected.push_back(tok.mask_token_id());
  for (int64_t id : tok.encode("of", false)) expected.push_back(id);
  EXPECT_EQ(tok.encode("the <mask> of", false), expected);
  EXPECT_EQ(tok.encode("<mask>", false), (std::vector<int64_t>{tok.mask_token_id()}));
  EXPECT_EQ(tok.decode(tok.encode("the <mask> of"), false), "the<mask> of");  // as HF's RoBERTa decodes it
}

TEST(FillMask, BadOptionsAndLongInputsAreErrors) {
  const std::vector<std::string> one = {"paris is the [MASK] of france."};
  EXPECT_NE(error_of([&] { bert()(one, {.top_k = 0}); }).find("top_k must be between 1 and the vocabulary size 52, got 0"), std::string::npos);
  EXPECT_NE(error_of([&] { bert()(one, {.top_k = 53}); }).find("got 53"), std::string::npos);
  EXPECT_NE(error_of([&] { bert()(one, {.top_k = 5, .batch_size = 0}); }).find("batch_size must be at least 1"), std::string::npos);
  std::string long_text = "[MASK]";
  for (int i = 0; i < 70; ++i) long_text += " paris";
  EXPECT_NE(error_of([&] { bert()({long_text}); }).find("has 73 tokens; this model takes at most 64"), std::string::npos);
  // top_k = the whole vocabulary: every token once, scores summing to 1.
  const auto all = bert()(one, {.top_k = 52});
  double sum = 0;
  for (const auto& p : all[0].predictions[0]) sum += p.score;
  EXPECT_NEAR(sum, 1.0, 1e-5);
  for (size_t k = 1; k < all[0].predictions[0].size(); ++k) EXPECT_GE(all[0].predictions[0][k - 1].score, all[0].predictions[0][k].score);
}

TEST(FillMask, MissingFilesAreNamed) {
  EXPECT_NE(error_of([] { FillMaskPipeline::from_pretrained("/nonexistent/model"); }).find("model directory '/nonexistent/model' does not exist"),
            std::string::npos);
  const fs::path dir = fs::temp_directory_path() / ("fill_mask_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  EXPECT_NE(error_of([&] { FillMaskPipeline::from_pretrained(dir.string()); }).find("holds no config.json"), std::string::npos);
  fs::copy_file(testing::golden_path("fill_mask_bert/config.json"), dir / "config.json");
  EXPECT_NE(error_of([&] { FillMaskPipeline::from_pretrained(dir.string()); }).find("holds no model.safetensors"), std::string::npos);
  fs::copy_file(testing::golden_path("fill_mask_bert/model.safetensors"), dir / "model.safetensors");
  EXPECT_NE(error_of([&] { FillMaskPipeline::from_pretrained(dir.string()); }).find("vocab.txt"), std::string::npos);
  fs::remove_all(dir);
}

TEST(FillMask, JsonHasHuggingFacesStructure) {
  const auto results = bert()({"paris is the [MASK] of france.", "the [MASK] of [MASK] is paris."}, {.top_k = 2});
  // One input, one mask: a list of dicts, keys in HF's order.
  const std::string one = pipelines::fill_mask_json({results[0]});
  EXPECT_EQ(one.rfind("[{\"score\": ", 0), 0u) << one;
  EXPECT_NE(one.find(", \"token\": "), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(one);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0].size(), 4u);
  EXPECT_EQ(j[0]["token"], results[0].predictions[0][0].token);
  EXPECT_EQ(j[0]["token_str"], results[0].predictions[0][0].token_str);
  EXPECT_EQ(j[0]["sequence"], results[0].predictions[0][0].sequence);
  EXPECT_EQ(j[0]["score"].get<double>(), results[0].predictions[0][0].score);  // round-trips exactly
  // Two inputs: a list per input; the second has two masks: a list per mask.
  const nlohmann::json both = nlohmann::json::parse(pipelines::fill_mask_json(results));
  ASSERT_EQ(both.size(), 2u);
  EXPECT_TRUE(both[0][0].is_object());
  ASSERT_EQ(both[1].size(), 2u);
  ASSERT_EQ(both[1][1].size(), 2u);
  EXPECT_EQ(both[1][1][0]["token"], results[1].predictions[1][0].token);
  // Several masks keep the special tokens in the sequence, as HF.
  EXPECT_EQ(results[1].predictions[0][0].sequence.rfind("[CLS] the ", 0), 0u) << results[1].predictions[0][0].sequence;
}

}  // namespace
}  // namespace lazytrain
