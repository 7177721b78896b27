// GPT2Config: Hugging Face's config.json for GPT-2 (field names and defaults of
// transformers.GPT2Config; ../shared/data/gpt2/config.json is GPT-2 124M's).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace lazytrain::models {

struct GPT2Config {
  int64_t vocab_size = 50257;
  int64_t n_positions = 1024;
  int64_t n_embd = 768;
  int64_t n_layer = 12;
  int64_t n_head = 12;
  int64_t n_inner = 0;  // config.json's null: 4 * n_embd
  std::string activation_function = "gelu_new";
  double resid_pdrop = 0.1;
  double embd_pdrop = 0.1;
  double attn_pdrop = 0.1;
  double layer_norm_epsilon = 1e-5;
  double initializer_range = 0.02;
  bool scale_attn_weights = true;
  int64_t bos_token_id = 50256;
  int64_t eos_token_id = 50256;
  std::string model_type = "gpt2";
  // config._attn_implementation: "sdpa" (one fused scaled_dot_product_attention
  // op, the default as transformers') or "eager" (matmul, mask, softmax,
  // dropout, matmul as modeling_gpt2.py's eager_attention_forward). Read from a
  // config.json key "attn_implementation", never written (config_fields.h).
  std::string attn_implementation = "sdpa";

  // The MLP's width: n_inner, or 4 * n_embd when it is null.
  int64_t inner_size() const { return n_inner > 0 ? n_inner : 4 * n_embd; }

  // Reads a config.json; unknown fields are kept (extra) and written back.
  // Throws Error naming the file for a missing file, invalid JSON or a field of
  // the wrong type. Values are checked by validate().
  static GPT2Config from_json_file(const std::string& path);
  static GPT2Config from_json(const nlohmann::json& j, const std::string& source);
  nlohmann::json to_json() const;
  // "n_embd=128,n_layer=2" (PretrainedConfig.update_from_string); Error for an
  // unknown key or a value of the wrong type.
  void update_from_string(const std::string& overrides);
  // model_type "gpt2", attn_implementation eager or sdpa, positive sizes (at most 2^24), n_embd divisible by n_head, activation
  // gelu_new (or its other names gelu_pytorch_tanh), dropouts in [0, 1);
  // throws Error naming the field otherwise.
  void validate(const std::string& source) const;

  nlohmann::json extra = nlohmann::json::object();
};

}  // namespace lazytrain::models
