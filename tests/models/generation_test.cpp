// generate(): greedy search against PyTorch token for token (a plain
// recompute-everything greedy loop on the same weights,
// tools/make_golden_generate.py), the KV cache, left padding and batching that
// the reference does not have, the bounded graph count, and HF's sampling warpers.
#include "models/generation.h"

#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "../support/golden.h"
#include "core/error.h"
#include "runtime/metrics.h"

namespace lazytrain::models {
namespace {

using lazytrain::testing::GoldenFile;

class GenerateGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    golden = std::make_unique<GoldenFile>("gpt2_generate.safetensors");
    config = GPT2Config::from_json(nlohmann::json::parse(golden->metadata().at("config")), "golden config");
    max_new_tokens = std::stoll(golden->metadata().at("max_new_tokens"));
    model = std::make_unique<GPT2LMHeadModel>(config);
    for (const auto& [name, p] : model->named_parameters()) p.set_data(golden->tensor(name));
    model->eval();
    for (int i = 0; i < 3; ++i) {
      prompts.push_back(golden->tensor("prompt." + std::to_string(i)).to_vector<int64_t>());
      expected.push_back(golden->tensor("generated." + std::to_string(i)).to_vector<int64_t>());
    }
  }
  std::unique_ptr<GoldenFile> golden;
  GPT2Config config;
  int64_t max_new_tokens = 0;
  std::unique_ptr<GPT2LMHeadModel> model;
  std::vector<std::vector<int64_t>> prompts, expected;
};

TEST_F(GenerateGolden, GreedyBatchOfThreePromptsMatchesPyTorchTokenForToken) {
  ASSERT_EQ(max_new_tokens, 50);
  GenerationConfig g;
  g.max_new_tokens = max_new_tokens;
  const GenerateOutput out = generate(*model, prompts, g);
  ASSERT_EQ(out.sequences.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(out.sequences[i], expected[i]) << "prompt " << i;
  // Prompt 1 makes eos (the golden config's eos_token_id) early; its later tokens are the pad id (= eos).
  const auto eos_at = std::find(expected[1].begin(), expected[1].end(), config.eos_token_id) - expected[1].begin();
  EXPECT_GE(eos_at, 25);
  EXPECT_LT(eos_at, 49);
  EXPECT_EQ(out.prompt_bucket, 32);     // the longest prompt, 21 tokens
  EXPECT_EQ(out.cache_capacity, 128);   // 32 + 50 → 128
  EXPECT_EQ(out.graphs.size(), 2u);     // one prefill, one decode step
}

TEST_F(GenerateGolden, EachPromptAloneGivesTheSameTokens) {
  GenerationConfig g;
  g.max_new_tokens = max_new_tokens;
  for (size_t i = 0; i < 3; ++i) {
    const GenerateOutput out = generate(*model, {prompts[i]}, g);
    ASSERT_EQ(out.sequences.size(), 1u);
    // Alone, a sequence that ends stops the generation: no padding after its eos.
    std::vector<int64_t> want = expected[i];
    const auto eos = std::find(want.begin(), want.end(), config.eos_token_id);
    if (eos != want.end()) want.erase(eos + 1, want.end());
    EXPECT_EQ(out.sequences[0], want) << "prompt " << i;
    EXPECT_EQ(out.prompt_bucket, 16 * (i == 2 ? 2 : 1));
  }
}

TEST_F(GenerateGolden, SamplingWithTopKOneIsGreedyAndASeedRepeats) {
  GenerationConfig g;
  g.max_new_tokens = 20;
  g.eos_token_id = -1;  // never stops early
  const auto greedy = generate(*model, {prompts[0]}, g).sequences;
  g.do_sample = true;
  g.top_k = 1;
  g.num_return_sequences = 2;
  const auto top1 = generate(*model, {prompts[0]}, g).sequences;
  ASSERT_EQ(top1.size(), 2u);
  EXPECT_EQ(top1[0], greedy[0]);
  EXPECT_EQ(top1[1], greedy[0]);

  g.top_k = 0;
  g.temperature = 1.5;
  g.num_return_sequences = 3;
  g.seed = 7;
  const auto a = generate(*model, {prompts[0]}, g).sequences;
  const auto b = generate(*model, {prompts[0]}, g).sequences;
  EXPECT_EQ(a, b);  // the same seed draws the same tokens
  EXPECT_NE(a[0], a[1]);  // three rows of one prompt draw differently
  g.seed = 8;
  EXPECT_NE(generate(*model, {prompts[0]}, g).sequences, a);
}

TEST_F(GenerateGolden, BadRequestsAreOneErrorBeforeAnythingRuns) {
  GenerationConfig g;
  auto message = [&](const std::vector<std::vector<int64_t>>& p, const GenerationConfig& c) {
    try {
      generate(*model, p, c);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  g.num_return_sequences = 2;
  EXPECT_EQ(message(prompts, g), "[generate] greedy search returns one sequence a prompt; num_return_sequences 2 needs do_sample (as Hugging Face's generate)");
  g = {};
  g.max_new_tokens = 124;
  EXPECT_EQ(message({prompts[0]}, g), "[generate] prompt 1 has 5 tokens; with max_new_tokens 124 that is 129 positions, more than the model's n_positions 128");
  g = {};
  EXPECT_EQ(message({{1, 384}}, g), "[generate] prompt 1 holds token id 384, outside the vocabulary [0, 384)");
  EXPECT_EQ(message({{}}, g), "[generate] prompt 1 is empty (GPT-2 needs at least one token to continue)");
  g.do_sample = true;
  g.top_p = 1.5;
  EXPECT_EQ(message(prompts, g), "[generate] top_p must be a float between 0 and 1, got 1.500000");
  g.top_p = 1;
  g.temperature = 0;
  EXPECT_EQ(message(prompts, g), "[generate] temperature must be a strictly positive float, got 0.000000");
  model->train();
  EXPECT_EQ(message(prompts, {}), "[generate] the model is in training mode (dropout on); call eval() first");
}

// 200 new tokens run 2 graphs; another prompt length in the same bucket compiles nothing more.
TEST(GenerateGraphs, TwoHundredTokensCompileTwoGraphsAndABucketRepeatsWithoutCompiling) {
  GPT2Config config;
  config.update_from_string("vocab_size=64,n_positions=256,n_embd=16,n_layer=2,n_head=2");
  manual_seed(3);
  GPT2LMHeadModel model(config);
  model.eval();
  GenerationConfig g;
  g.max_new_tokens = 200;
  g.eos_token_id = -1;
  const int64_t compiles_before = runtime::counter_value("UncachedCompile") + runtime::counter_value("CachedCompile");
  const GenerateOutput out = generate(model, {{1, 2, 3}}, g);
  EXPECT_EQ(out.sequences[0].size(), 200u);
  EXPECT_EQ(out.graphs.size(), 2u);
  EXPECT_EQ(out.cache_capacity, 256);
  const int64_t uncached = runtime::counter_value("UncachedCompile");
  const GenerateOutput again = generate(model, {{5, 6, 7, 8, 9, 10, 11}}, g);  // 7 tokens: still bucket 16
  EXPECT_EQ(again.graphs, out.graphs);
  EXPECT_EQ(runtime::counter_value("UncachedCompile"), uncached);
  EXPECT_GE(runtime::counter_value("UncachedCompile") + runtime::counter_value("CachedCompile") - compiles_before, 2);
}

TEST(SamplingProbabilities, WarpersAsHuggingFaces) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f, 0.0f};
  GenerationConfig g;
  g.do_sample = true;
  g.top_k = 2;  // the k-th largest is 3; both 3s stay
  std::vector<double> p = sampling_probabilities(logits, g);
  EXPECT_DOUBLE_EQ(p[1], 0.5);
  EXPECT_DOUBLE_EQ(p[3], 0.5);
  EXPECT_EQ(p[0] + p[2] + p[4], 0.0);
  g.top_k = 3;  // ties at the k-th are kept: 3, 3, 2
  p = sampling_probabilities(logits, g);
  EXPECT_GT(p[2], 0.0);
  EXPECT_EQ(p[0], 0.0);

  // top_p: softmax of {1, 3, 2, 3, 0} ≈ {.0629, .4649, .1710, .4649, .0231}; top_p 0.9 drops
  // the ascending prefix whose mass stays <= 0.1 (tokens 4 and 0: 0.086), keeping 3 tokens.
  g.top_k = 0;
  g.top_p = 0.9;
  p = sampling_probabilities(logits, g);
  EXPECT_EQ(p[4], 0.0);
  EXPECT_EQ(p[0], 0.0);
  EXPECT_NEAR(p[2], 0.1710 / (0.1710 + 2 * 0.4649), 1e-3);
  g.top_p = 0.0;  // at least one token stays
  p = sampling_probabilities(logits, g);
  EXPECT_EQ(std::count_if(p.begin(), p.end(), [](double x) { return x > 0; }), 1);

  // Temperature 2 halves the logits.
  g.top_p = 1.0;
  g.temperature = 2.0;
  p = sampling_probabilities(logits, g);
  EXPECT_NEAR(p[1] / p[2], std::exp(0.5), 1e-6);
  EXPECT_EQ(greedy_token(logits), 1);  // the first maximum, as torch.argmax

  // A tiny temperature samples as greedy (the scores stay finite in double) ...
  g.temperature = 1e-40;
  p = sampling_probabilities(logits, g);
  EXPECT_DOUBLE_EQ(p[1] + p[3], 1.0);  // the two maxima
  // ... one that overflows even double is an error, as are inf or NaN logits.
  g.temperature = 1e-320;
  EXPECT_THROW(sampling_probabilities(logits, g), Error);
  g.temperature = 1.0;
  EXPECT_THROW(sampling_probabilities({1.0f, std::nanf("")}, g), Error);
  EXPECT_THROW(sampling_probabilities({1.0f, INFINITY}, g), Error);
  const std::vector<double> masked = sampling_probabilities({-INFINITY, 0.0f}, g);  // -inf is a masked token
  EXPECT_EQ(masked, (std::vector<double>{0.0, 1.0}));
}

}  // namespace
}  // namespace lazytrain::models
