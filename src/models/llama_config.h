// LlamaConfig: Hugging Face's config.json for Llama (field names and defaults of
// transformers.LlamaConfig, as 4.x writes them: rope_theta and rope_scaling;
// transformers 5's rope_parameters {"rope_type": "default", "rope_theta": x} is
// read too). SmolLM2-135M, for one, is hidden_size 576, 30 layers, 9 heads, 3
// key/value heads, intermediate_size 1536, vocab_size 49152, tied embeddings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace lazytrain::models {

struct LlamaConfig {
  int64_t vocab_size = 32000;
  int64_t hidden_size = 4096;
  int64_t intermediate_size = 11008;
  int64_t num_hidden_layers = 32;
  int64_t num_attention_heads = 32;
  std::optional<int64_t> num_key_value_heads;  // null: num_attention_heads (multi-head attention)
  std::optional<int64_t> head_dim;             // null: hidden_size / num_attention_heads
  std::string hidden_act = "silu";
  int64_t max_position_embeddings = 2048;
  double initializer_range = 0.02;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;  // the RoPE base (rope_scaling must be null: default RoPE only)
  bool attention_bias = false;
  double attention_dropout = 0.0;
  bool mlp_bias = false;
  bool tie_word_embeddings = false;
  std::optional<int64_t> bos_token_id = 1;
  std::optional<int64_t> eos_token_id = 2;
  std::optional<int64_t> pad_token_id;  // also embed_tokens' padding_idx
  std::string model_type = "llama";
  // config._attn_implementation: "sdpa" only (one scaled_dot_product_attention
  // op). Read from a config.json key "attn_implementation", never written
  // (config_fields.h); validate() rejects "eager".
  std::string attn_implementation = "sdpa";

  int64_t key_value_heads() const { return num_key_value_heads.value_or(num_attention_heads); }
  int64_t attention_head_dim() const { return head_dim.value_or(hidden_size / num_attention_heads); }

  // Reads a config.json; unknown fields are kept (extra) and written back.
  // Throws Error naming the file for a missing file, invalid JSON, a field of
  // the wrong type, a rope_scaling other than null, rope_parameters of another
  // rope_type, or a list of eos_token_id. Values are checked by validate().
  static LlamaConfig from_json_file(const std::string& path);
  static LlamaConfig from_json(const nlohmann::json& j, const std::string& source);
  // Every field (null ones as null), rope_scaling null, architectures ["LlamaForCausalLM"].
  nlohmann::json to_json() const;
  // "hidden_size=64,num_key_value_heads=2" (PretrainedConfig.update_from_string;
  // "None" sets a nullable field to null); Error for an unknown key or a value
  // of the wrong type.
  void update_from_string(const std::string& overrides);
  // model_type "llama", positive sizes (at most 2^24), hidden_size divisible by
  // num_attention_heads (transformers' check), num_attention_heads divisible by
  // num_key_value_heads, an even head_dim (RoPE rotates pairs), hidden_act
  // silu (or its name swish), attention_dropout in [0, 1), positive
  // rms_norm_eps and rope_theta, token ids in [0, vocab_size); throws Error
  // naming the field otherwise.
  void validate(const std::string& source) const;

  nlohmann::json extra = nlohmann::json::object();
};

}  // namespace lazytrain::models
