// generate() with LlamaForCausalLM: greedy search against transformers'
// LlamaForCausalLM token for token (a recompute-everything greedy loop with no
// cache, tools/make_golden_llama.py), so the grouped-query KV cache (key/value
// heads only, rotated keys), left padding with RoPE positions from each row's
// first token, and batching are checked against a path that has none of them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../support/golden.h"
#include "core/error.h"
#include "models/generation.h"

namespace lazytrain::models {
namespace {

using lazytrain::testing::GoldenFile;

class LlamaGenerateGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    golden = std::make_unique<GoldenFile>("llama_generate.safetensors");
    config = LlamaConfig::from_json(nlohmann::json::parse(golden->metadata().at("config")), "golden config");
    max_new_tokens = std::stoll(golden->metadata().at("max_new_tokens"));
    model = std::make_unique<LlamaForCausalLM>(config);
    for (const auto& [name, p] : model->named_parameters()) p.set_data(golden->tensor(name));
    model->eval();
    for (int i = 0; i < 3; ++i) {
      prompts.push_back(golden->tensor("prompt." + std::to_string(i)).to_vector<int64_t>());
      expected.push_back(golden->tensor("generated." + std::to_string(i)).to_vector<int64_t>());
    }
  }
  std::unique_ptr<GoldenFile> golden;
  LlamaConfig config;
  int64_t max_new_tokens = 0;
  std::unique_ptr<LlamaForCausalLM> model;
  std::vector<std::vector<int64_t>> prompts, expected;
};

TEST_F(LlamaGenerateGolden, GreedyBatchOfThreePromptsMatchesTransformersTokenForToken) {
  ASSERT_EQ(max_new_tokens, 50);
  ASSERT_EQ(config.key_value_heads(), 2);
  GenerationConfig g;
  g.max_new_tokens = max_new_tokens;
  const GenerateOutput out = generate(*model, prompts, g);
  ASSERT_EQ(out.sequences.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(out.sequences[i], expected[i]) << "prompt " << i;
  // Prompt 1 makes eos early; with no pad_token_id its later tokens are eos.
  const auto eos_at = std::find(expected[1].begin(), expected[1].end(), *config.eos_token_id) - expected[1].begin();
  EXPECT_GE(eos_at, 25);
  EXPECT_LT(eos_at, 49);
  EXPECT_EQ(out.prompt_bucket, 32);
  EXPECT_EQ(out.cache_capacity, 128);
  EXPECT_EQ(out.graphs.size(), 2u);
}

TEST_F(LlamaGenerateGolden, EachPromptAloneGivesTheSameTokens) {
  GenerationConfig g;
  g.max_new_tokens = max_new_tokens;
  for (size_t i = 0; i < 3; ++i) {
    const GenerateOutput out = generate(*model, {prompts[i]}, g);
    std::vector<int64_t> want = expected[i];
    const auto eos = std::find(want.begin(), want.end(), *config.eos_token_id);
    if (eos != want.end()) want.erase(eos + 1, want.end());
    EXPECT_EQ(out.sequences[0], want) << "prompt " << i;
  }
}

TEST_F(LlamaGenerateGolden, TheCacheHoldsTheKeyValueHeadsOnly) {
  const std::vector<LayerKVCache> cache = model->new_cache(3, 64);
  ASSERT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache[0].key.shape(), (Shape{3, 2, 64, 8}));
  EXPECT_EQ(cache[1].value.shape(), (Shape{3, 2, 64, 8}));
}

TEST_F(LlamaGenerateGolden, BadRequestsNameLlamasFields) {
  GenerationConfig g;
  g.max_new_tokens = 124;
  try {
    generate(*model, {prompts[0]}, g);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[generate] prompt 1 has 5 tokens; with max_new_tokens 124 that is 129 positions, more than the model's "
                           "max_position_embeddings 128");
  }
  g = {};
  EXPECT_THROW(generate(*model, {{}}, g), Error);
}

}  // namespace
}  // namespace lazytrain::models
