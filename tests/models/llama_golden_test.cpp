// LlamaForCausalLM against Hugging Face's own (transformers' LlamaForCausalLM,
// tools/make_golden_llama.py): logits, loss and the gradient of every parameter
// on tiny grouped-query configs with padding, untied and tied (with biases and
// a padding_idx), f32 and under bf16 autocast.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../support/golden.h"
#include "core/error.h"
#include "models/llama.h"
#include "tensor/autocast.h"
#include "train/trainer.h"

namespace lazytrain {
namespace {

using testing::expect_close;
using testing::GoldenFile;
using testing::relative_l2;

class LlamaGolden : public ::testing::Test {
 protected:
  void SetUp() override { load("llama_tiny_clm.safetensors"); }
  void load(const std::string& file) {
    golden = std::make_unique<GoldenFile>(file);
    config = models::LlamaConfig::from_json(nlohmann::json::parse(golden->metadata().at("config")), "golden config");
    model = std::make_unique<models::LlamaForCausalLM>(config);
    for (const auto& [name, p] : model->named_parameters()) {
      ASSERT_TRUE(golden->has(name)) << name;
      p.set_data(golden->tensor(name));
    }
  }
  // One forward and backward on the golden inputs, checked against every stored value.
  void expect_matches_golden() {
    models::CausalLMOutput out = model->forward(golden->tensor("input_ids"), golden->tensor("attention_mask"), golden->tensor("labels"));
    out.loss.backward();
    expect_close(out.logits, golden->floats("logits"), 1e-4, 1e-5, "logits");
    expect_close(out.loss, golden->floats("loss"), 1e-5, 0, "loss");
    for (const auto& [name, p] : model->named_parameters()) {
      ASSERT_TRUE(p.grad().defined()) << name;
      expect_close(p.grad(), golden->floats("grad." + name), 1e-4, 1e-6, "grad." + name);
    }
  }
  std::unique_ptr<GoldenFile> golden;
  models::LlamaConfig config;
  std::unique_ptr<models::LlamaForCausalLM> model;
};

TEST_F(LlamaGolden, ParameterNamesAndShapesAreHuggingFaces) {
  const auto named = model->named_parameters();
  EXPECT_EQ(named.size(), 1u + 2u * 9 + 1u + 1u);  // embed_tokens; 9 a layer; norm; lm_head
  EXPECT_EQ(named.front().first, "model.embed_tokens.weight");
  EXPECT_EQ(named.back().first, "lm_head.weight");
  EXPECT_EQ(model->parameter("model.layers.1.self_attn.q_proj.weight").shape(), (Shape{32, 32}));  // 4 heads x 8
  EXPECT_EQ(model->parameter("model.layers.1.self_attn.k_proj.weight").shape(), (Shape{16, 32}));  // 2 key/value heads x 8
  EXPECT_EQ(model->parameter("model.layers.0.mlp.gate_proj.weight").shape(), (Shape{48, 32}));
  EXPECT_EQ(model->parameter("model.layers.0.mlp.down_proj.weight").shape(), (Shape{32, 48}));
  EXPECT_EQ(model->parameter("model.layers.0.post_attention_layernorm.weight").shape(), (Shape{32}));
  EXPECT_EQ(model->parameter("model.norm.weight").shape(), (Shape{32}));
  EXPECT_TRUE(model->tied_parameters().empty());
  // Every stored parameter (not grad.*, inputs or outputs) is one of the model's.
  size_t stored = 0;
  for (const std::string& name : golden->names()) stored += name.rfind("model.", 0) == 0 || name == "lm_head.weight";
  EXPECT_EQ(stored, named.size());
}

TEST_F(LlamaGolden, LogitsLossAndEveryGradientMatchTransformers) { expect_matches_golden(); }

TEST_F(LlamaGolden, LastHiddenStateMatchesTransformers) {
  NoGradGuard no_grad;
  const Tensor hidden = model->model->forward(golden->tensor("input_ids"), golden->tensor("attention_mask"));
  expect_close(hidden, golden->floats("hidden_states." + std::to_string(config.num_hidden_layers)), 1e-4, 1e-5, "last hidden state");
}

TEST_F(LlamaGolden, GradientCheckpointingGivesTheSameGradients) {
  model->gradient_checkpointing_enable();
  expect_matches_golden();
}

TEST_F(LlamaGolden, WithoutAttentionMaskTheUnpaddedRowIsTheSame) {
  // Row 0 has no padding: the causal mask alone (sdpa's is_causal) gives its logits.
  NoGradGuard no_grad;
  const Tensor ids = golden->tensor("input_ids").slice(0, 0, 1);
  const std::vector<float> all = golden->floats("logits");
  const std::vector<float> row0(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(all.size() / 2));
  expect_close(model->forward(ids).logits, row0, 1e-4, 1e-5, "row 0 logits");
}

TEST_F(LlamaGolden, WrongShapesAreOneErrorNamingTheModel) {
  auto message = [&](auto&& call) {
    try {
      call();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { model->forward(zeros({2, 65}, DType::kInt64)); }).find("[LlamaForCausalLM] a sequence of 65 tokens is longer than max_position_embeddings 64"),
            std::string::npos);
  EXPECT_NE(message([&] { model->forward(zeros({2, 8}, DType::kInt64), ones({2, 7}, DType::kInt64)); }).find("[LlamaForCausalLM] attention_mask"),
            std::string::npos);
  EXPECT_NE(message([&] { model->forward(zeros({2, 8}, DType::kInt64), Tensor(), zeros({2, 7}, DType::kInt64)); }).find("[LlamaForCausalLM] labels"),
            std::string::npos);
}

// tie_word_embeddings, attention_bias, mlp_bias, pad_token_id 0 (padding_idx), rope_theta 500.
class LlamaGoldenTied : public LlamaGolden {
 protected:
  void SetUp() override { load("llama_tiny_clm_tied.safetensors"); }
};

TEST_F(LlamaGoldenTied, LmHeadIsTheEmbeddingsListedOnce) {
  EXPECT_EQ(model->named_parameters().size(), 1u + 2u * 16 + 1u);  // 9 weights and 7 biases a layer; no lm_head
  const auto tied = model->tied_parameters();
  ASSERT_EQ(tied.size(), 1u);
  EXPECT_EQ(tied[0], (std::pair<std::string, std::string>{"lm_head.weight", "model.embed_tokens.weight"}));
  EXPECT_EQ(model->parameter("model.layers.0.self_attn.k_proj.bias").shape(), (Shape{16}));
  EXPECT_EQ(model->parameter("model.layers.0.mlp.up_proj.bias").shape(), (Shape{48}));
}

TEST_F(LlamaGoldenTied, LogitsLossAndEveryGradientMatchTransformers) { expect_matches_golden(); }

TEST(LlamaInit, FollowsHuggingFacesInitWeights) {
  manual_seed(0);
  models::LlamaConfig c;
  c.update_from_string("vocab_size=512,hidden_size=64,intermediate_size=96,num_hidden_layers=1,num_attention_heads=4,"
                       "num_key_value_heads=1,pad_token_id=3,attention_bias=true,initializer_range=0.05");
  models::LlamaForCausalLM model(c);
  auto stats = [](const Tensor& t) {
    const std::vector<float> v = t.to_vector<float>();
    double sum = 0, sq = 0;
    for (float x : v) sum += x, sq += double{x} * x;
    const double mean = sum / static_cast<double>(v.size());
    return std::pair{mean, std::sqrt(sq / static_cast<double>(v.size()) - mean * mean)};
  };
  for (const char* name : {"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "model.layers.0.mlp.down_proj.weight", "lm_head.weight"}) {
    const auto [mean, std] = stats(model.parameter(name));
    EXPECT_NEAR(mean, 0.0, 0.005) << name;
    EXPECT_NEAR(std, 0.05, 0.005) << name;
  }
  const std::vector<float> embed = model.parameter("model.embed_tokens.weight").to_vector<float>();
  for (int64_t j = 0; j < 64; ++j) EXPECT_EQ(embed[3 * 64 + j], 0.0f) << "padding_idx row";
  EXPECT_EQ(stats(model.parameter("model.layers.0.self_attn.v_proj.bias")), (std::pair{0.0, 0.0}));
  EXPECT_EQ(stats(model.parameter("model.layers.0.input_layernorm.weight")), (std::pair{1.0, 0.0}));
}

TEST_F(LlamaGoldenTied, TrainerDecaysNeitherNormsNorBiases) {
  // transformers' get_decay_parameter_names: biases and every norm weight are left out.
  const train::DecayGroups groups = train::split_weight_decay(*model);
  EXPECT_EQ(groups.decay.size(), 1u + 2u * 7);           // embed_tokens; q, k, v, o, gate, up, down a layer
  EXPECT_EQ(groups.no_decay.size(), 2u * 9 + 1u);        // 7 biases and 2 norms a layer; model.norm
}

// Under torch.autocast('cpu', dtype=torch.bfloat16): the tolerances of GPT-2's bf16 golden test.
class LlamaGoldenBf16 : public LlamaGolden {
 protected:
  void SetUp() override { load("llama_tiny_clm_bf16.safetensors"); }
};

TEST_F(LlamaGoldenBf16, AutocastMatchesTransformersUnderAutocast) {
  models::CausalLMOutput out;
  {
    AutocastGuard autocast(true, DType::kBFloat16);
    out = model->forward(golden->tensor("input_ids"), golden->tensor("attention_mask"), golden->tensor("labels"));
  }
  out.loss.backward();
  EXPECT_EQ(out.logits.dtype(), DType::kBFloat16);
  EXPECT_EQ(out.loss.dtype(), DType::kFloat32);
  GoldenFile f32("llama_tiny_clm.safetensors");
  EXPECT_LT(relative_l2(out.logits, golden->floats("logits")), 1e-2);
  EXPECT_GT(relative_l2(out.logits, f32.floats("logits")), 1e-3) << "the logits are f32-exact: autocast did not engage";
  expect_close(out.loss, golden->floats("loss"), 2e-3, 0, "loss");
  for (const auto& [name, p] : model->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_EQ(p.grad().dtype(), DType::kFloat32) << name;
    EXPECT_LT(relative_l2(p.grad(), golden->floats("grad." + name)), 3e-2) << "grad." << name;
  }
}

}  // namespace
}  // namespace lazytrain
