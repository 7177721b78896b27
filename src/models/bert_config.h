// BertConfig: Hugging Face's config.json for BERT (field names and defaults of
// transformers.BertConfig).
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace lazytrain::models {

struct BertConfig {
  int64_t vocab_size = 30522;
  int64_t hidden_size = 768;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 3072;
  std::string hidden_act = "gelu";
  double hidden_dropout_prob = 0.1;
  double attention_probs_dropout_prob = 0.1;
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  double initializer_range = 0.02;
  double layer_norm_eps = 1e-12;
  int64_t pad_token_id = 0;
  std::string position_embedding_type = "absolute";
  std::string model_type = "bert";
  // config._attn_implementation: "eager" (matmul, mask, softmax, dropout,
  // matmul as modeling_bert.py's eager_attention_forward; the default here, so
  // the README's main-job losses stay as printed) or "sdpa" (one fused
  // scaled_dot_product_attention op). Read from a config.json key
  // "attn_implementation", never written (config_fields.h).
  std::string attn_implementation = "eager";

  // Reads a config.json. Unknown fields are kept (extra) and written back.
  // Throws Error naming the file for a missing/unreadable file, invalid JSON or a
  // field of the wrong type. Values are checked by validate(), which callers run
  // after applying overrides (BertForMaskedLM's constructor runs it too).
  static BertConfig from_json_file(const std::string& path);
  static BertConfig from_json(const nlohmann::json& j, const std::string& source);
  nlohmann::json to_json() const;

  // Applies "hidden_size=128,num_hidden_layers=2" (transformers'
  // PretrainedConfig.update_from_string). Throws Error for an unknown key
  // ("key foo isn't in the original config dict"), a missing key or a value of
  // the wrong type.
  void update_from_string(const std::string& overrides);

  // attn_implementation eager or sdpa, hidden_size divisible by num_attention_heads, positive sizes (each at most
  // 2^24, about 4e9 parameters in all), hidden_act gelu, probabilities in [0, 1);
  // throws Error naming the field otherwise.
  void validate(const std::string& source) const;

  nlohmann::json extra = nlohmann::json::object();  // fields we carry but do not use
};

}  // namespace lazytrain::models
