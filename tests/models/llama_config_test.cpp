// LlamaConfig: transformers' field names and defaults, nullable fields, the
// rope forms of transformers 4 and 5, overrides, and one clear error per bad value.
#include "models/llama_config.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace lazytrain::models {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(LlamaConfig, DefaultsAreTransformers) {
  const LlamaConfig c;
  EXPECT_EQ(c.vocab_size, 32000);
  EXPECT_EQ(c.hidden_size, 4096);
  EXPECT_EQ(c.intermediate_size, 11008);
  EXPECT_EQ(c.key_value_heads(), 32);
  EXPECT_EQ(c.attention_head_dim(), 128);
  EXPECT_EQ(c.max_position_embeddings, 2048);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_id, 2);
  EXPECT_FALSE(c.pad_token_id);
  EXPECT_FALSE(c.tie_word_embeddings);
  const nlohmann::json j = c.to_json();
  EXPECT_TRUE(j.at("num_key_value_heads").is_null());
  EXPECT_TRUE(j.at("rope_scaling").is_null());
  EXPECT_TRUE(j.at("pad_token_id").is_null());
  EXPECT_EQ(j.at("architectures"), nlohmann::json({"LlamaForCausalLM"}));
  EXPECT_NO_THROW(c.validate("defaults"));
}

TEST(LlamaConfig, SmolLM2ConfigReadsAndRoundTrips) {
  // SmolLM2-135M's config.json fields (transformers 4.x), unknown ones kept.
  const nlohmann::json j = nlohmann::json::parse(R"({"architectures": ["LlamaForCausalLM"], "attention_bias": false,
    "attention_dropout": 0.0, "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "silu", "hidden_size": 576,
    "initializer_range": 0.041666666666666664, "intermediate_size": 1536, "max_position_embeddings": 8192,
    "mlp_bias": false, "model_type": "llama", "num_attention_heads": 9, "num_hidden_layers": 30, "num_key_value_heads": 3,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 100000, "tie_word_embeddings": true,
    "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": true, "vocab_size": 49152})");
  const LlamaConfig c = LlamaConfig::from_json(j, "smollm2");
  EXPECT_NO_THROW(c.validate("smollm2"));
  EXPECT_EQ(c.key_value_heads(), 3);
  EXPECT_EQ(c.attention_head_dim(), 64);
  EXPECT_DOUBLE_EQ(c.rope_theta, 100000.0);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.extra.at("torch_dtype"), "bfloat16");
  const nlohmann::json back = c.to_json();
  for (const auto& [key, value] : j.items()) EXPECT_EQ(back.at(key), value) << key;
}

TEST(LlamaConfig, TransformersFiveRopeParametersAreRead) {
  const LlamaConfig c = LlamaConfig::from_json(
      nlohmann::json::parse(R"({"model_type": "llama", "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0}})"), "v5");
  EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
  EXPECT_FALSE(c.to_json().contains("rope_parameters"));  // written as rope_theta, which transformers 5 reads too
  EXPECT_NE(error_of([] {
              LlamaConfig::from_json(nlohmann::json::parse(R"({"rope_parameters": {"rope_type": "llama3", "factor": 8.0}})"), "'x/config.json'");
            }).find("[LlamaConfig] 'x/config.json': rope_parameters"),
            std::string::npos);
}

TEST(LlamaConfig, RopeScalingOtherThanNullIsOneClearError) {
  EXPECT_EQ(error_of([] { LlamaConfig::from_json(nlohmann::json::parse(R"({"rope_scaling": {"type": "linear", "factor": 2.0}})"), "'c.json'"); }),
            "[LlamaConfig] 'c.json': rope_scaling {\"factor\":2.0,\"type\":\"linear\"} is not supported; only null (the default RoPE of "
            "rope_theta) is");
}

TEST(LlamaConfig, OverridesSetNullableFields) {
  LlamaConfig c;
  c.update_from_string("hidden_size=64,num_attention_heads=4,num_key_value_heads=2,head_dim=32,pad_token_id=0,tie_word_embeddings=true");
  EXPECT_EQ(c.key_value_heads(), 2);
  EXPECT_EQ(c.attention_head_dim(), 32);
  EXPECT_EQ(c.pad_token_id, 0);
  c.update_from_string("num_key_value_heads=None,pad_token_id=null");
  EXPECT_EQ(c.key_value_heads(), 4);
  EXPECT_FALSE(c.pad_token_id);
  EXPECT_EQ(error_of([&] { c.update_from_string("n_embd=3"); }), "[config_overrides] key n_embd isn't in the original config dict");
  EXPECT_EQ(error_of([&] { c.update_from_string("num_key_value_heads=two"); }), "[config_overrides] can't parse value 'two' of key num_key_value_heads");
}

TEST(LlamaConfig, BadValuesNameTheField) {
  auto invalid = [](const std::string& overrides) {
    LlamaConfig c;
    c.update_from_string("hidden_size=64,num_attention_heads=4," + overrides);
    return error_of([&] { c.validate("'cfg'"); });
  };
  EXPECT_EQ(invalid("num_key_value_heads=3"), "[LlamaConfig] 'cfg': num_attention_heads (4) is not a multiple of num_key_value_heads (3)");
  EXPECT_EQ(invalid("num_attention_heads=5"), "[LlamaConfig] 'cfg': hidden_size (64) is not a multiple of num_attention_heads (5)");
  EXPECT_EQ(invalid("head_dim=7"), "[LlamaConfig] 'cfg': head_dim must be a positive even number (RoPE rotates pairs), got 7");
  EXPECT_EQ(invalid("hidden_act=gelu"), "[LlamaConfig] 'cfg': hidden_act 'gelu' is not supported; expected 'silu'");
  EXPECT_EQ(invalid("model_type=gpt2"), "[LlamaConfig] 'cfg': model_type is 'gpt2', expected 'llama' (a Llama config.json)");
  EXPECT_EQ(invalid("pad_token_id=32000"), "[LlamaConfig] 'cfg': pad_token_id 32000 is outside the vocabulary [0, 32000)");
  EXPECT_EQ(invalid("num_hidden_layers=0"), "[LlamaConfig] 'cfg': num_hidden_layers must be positive, got 0");
  EXPECT_EQ(error_of([] { LlamaConfig::from_json(nlohmann::json::parse(R"({"num_key_value_heads": "2"})"), "'c'"); }),
            "[LlamaConfig] 'c': field 'num_key_value_heads' has the wrong type (\"2\")");
  EXPECT_EQ(error_of([] { LlamaConfig::from_json(nlohmann::json::parse(R"({"eos_token_id": [1, 2]})"), "'c'"); }),
            "[LlamaConfig] 'c': eos_token_id is a list ([1,2]); lazytrain's Llama takes one eos id");
  EXPECT_NE(error_of([] { LlamaConfig::from_json_file("/nonexistent/config.json"); }).find("cannot open config file '/nonexistent/config.json'"),
            std::string::npos);
}

}  // namespace
}  // namespace lazytrain::models
