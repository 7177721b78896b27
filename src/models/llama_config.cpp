#include "models/llama_config.h"

#include <fstream>

#include "core/error.h"
#include "models/config_fields.h"

namespace lazytrain::models {

namespace {
template <typename F>
void for_each_field(LlamaConfig& c, F&& f) {
  f("vocab_size", c.vocab_size);
  f("hidden_size", c.hidden_size);
  f("intermediate_size", c.intermediate_size);
  f("num_hidden_layers", c.num_hidden_layers);
  f("num_attention_heads", c.num_attention_heads);
  f("num_key_value_heads", c.num_key_value_heads);
  f("head_dim", c.head_dim);
  f("hidden_act", c.hidden_act);
  f("max_position_embeddings", c.max_position_embeddings);
  f("initializer_range", c.initializer_range);
  f("rms_norm_eps", c.rms_norm_eps);
  f("rope_theta", c.rope_theta);
  f("attention_bias", c.attention_bias);
  f("attention_dropout", c.attention_dropout);
  f("mlp_bias", c.mlp_bias);
  f("tie_word_embeddings", c.tie_word_embeddings);
  f("bos_token_id", c.bos_token_id);
  f("eos_token_id", c.eos_token_id);
  f("pad_token_id", c.pad_token_id);
  f("model_type", c.model_type);
}
auto fields = [](LlamaConfig& config, auto&& visit) { for_each_field(config, visit); };
constexpr const char* kKind = "LlamaConfig";
}  // namespace

LlamaConfig LlamaConfig::from_json(const nlohmann::json& j, const std::string& source) {
  auto fail = [&](const std::string& what) { throw Error(std::string("[") + kKind + "] " + source + ": " + what); };
  if (j.is_object() && j.contains("eos_token_id") && j["eos_token_id"].is_array()) {
    fail("eos_token_id is a list (" + j["eos_token_id"].dump() + "); lazytrain's Llama takes one eos id");
  }
  LlamaConfig c;
  c.extra = read_config_fields(c, j, kKind, source, fields);
  read_attn_implementation(c.extra, c.attn_implementation, kKind, source);
  if (c.extra.contains("rope_scaling")) {
    if (!c.extra["rope_scaling"].is_null()) {
      fail("rope_scaling " + c.extra["rope_scaling"].dump() + " is not supported; only null (the default RoPE of rope_theta) is");
    }
    c.extra.erase("rope_scaling");
  }
  if (c.extra.contains("rope_parameters")) {  // transformers 5's form of rope_theta / rope_scaling
    const nlohmann::json& r = c.extra["rope_parameters"];
    if (!r.is_null()) {
      const nlohmann::json type = r.is_object() ? r.value("rope_type", r.value("type", nlohmann::json("default"))) : nlohmann::json();
      if (!r.is_object() || type != "default") {
        fail("rope_parameters " + r.dump() + " is not supported; only rope_type 'default' (RoPE of rope_theta) is");
      }
      if (r.contains("rope_theta")) {
        if (!r["rope_theta"].is_number()) fail("rope_parameters.rope_theta has the wrong type (" + r["rope_theta"].dump() + ")");
        c.rope_theta = r["rope_theta"].get<double>();
      }
    }
    c.extra.erase("rope_parameters");
  }
  return c;
}

LlamaConfig LlamaConfig::from_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(std::string("[") + kKind + "] cannot open config file '" + path + "': expected a Hugging Face config.json");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("[") + kKind + "] '" + path + "' is not valid JSON: " + e.what());
  }
  return from_json(j, "'" + path + "'");
}

nlohmann::json LlamaConfig::to_json() const {
  nlohmann::json j = extra;
  LlamaConfig copy = *this;
  for_each_field(copy, [&](const char* name, auto& field) { j[name] = config_field_json(field); });
  j["rope_scaling"] = nullptr;
  if (!j.contains("architectures")) j["architectures"] = {"LlamaForCausalLM"};
  return j;
}

void LlamaConfig::update_from_string(const std::string& overrides) { apply_config_overrides(*this, overrides, fields); }

void LlamaConfig::validate(const std::string& source) const {
  auto require = [&](bool ok, const std::string& what) {
    if (!ok) throw Error(std::string("[") + kKind + "] " + source + ": " + what);
  };
  require(model_type == "llama", "model_type is '" + model_type + "', expected 'llama' (a Llama config.json)");
  require(attn_implementation == "sdpa", "attn_implementation '" + attn_implementation + "' is not supported; Llama's attention is 'sdpa' only");
  const std::pair<const char*, int64_t> sizes[] = {{"vocab_size", vocab_size},
                                                   {"hidden_size", hidden_size},
                                                   {"intermediate_size", intermediate_size},
                                                   {"num_hidden_layers", num_hidden_layers},
                                                   {"num_attention_heads", num_attention_heads},
                                                   {"num_key_value_heads", key_value_heads()},
                                                   {"max_position_embeddings", max_position_embeddings}};
  for (const auto& [name, value] : sizes) {
    require(value > 0, std::string(name) + " must be positive, got " + std::to_string(value));
    require(value <= (int64_t{1} << 24), std::string(name) + " = " + std::to_string(value) + " is too large (at most 16777216)");
  }
  require(hidden_size % num_attention_heads == 0,
          "hidden_size (" + std::to_string(hidden_size) + ") is not a multiple of num_attention_heads (" + std::to_string(num_attention_heads) + ")");
  require(num_attention_heads % key_value_heads() == 0, "num_attention_heads (" + std::to_string(num_attention_heads) +
                                                            ") is not a multiple of num_key_value_heads (" + std::to_string(key_value_heads()) + ")");
  const int64_t d = attention_head_dim();
  require(d > 0 && d <= (int64_t{1} << 16) && d % 2 == 0, "head_dim must be a positive even number (RoPE rotates pairs), got " + std::to_string(d));
  require(hidden_act == "silu" || hidden_act == "swish", "hidden_act '" + hidden_act + "' is not supported; expected 'silu'");
  require(attention_dropout >= 0 && attention_dropout < 1, "attention_dropout must be in [0, 1)");
  require(rms_norm_eps > 0 && rope_theta > 0 && initializer_range >= 0,
          "rms_norm_eps and rope_theta must be positive and initializer_range non-negative");
  for (const auto& [name, id] : {std::pair{"bos_token_id", bos_token_id}, std::pair{"eos_token_id", eos_token_id}, std::pair{"pad_token_id", pad_token_id}}) {
    require(!id || (*id >= 0 && *id < vocab_size),
            std::string(name) + " " + (id ? std::to_string(*id) : "") + " is outside the vocabulary [0, " + std::to_string(vocab_size) + ")");
  }
}

}  // namespace lazytrain::models
