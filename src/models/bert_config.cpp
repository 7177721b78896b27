#include "models/bert_config.h"

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "models/config_fields.h"

namespace lazytrain::models {

namespace {

// Every field we read, as (name, pointer-to-member) visitors.
template <typename F>
void for_each_field(BertConfig& c, F&& f) {
  f("vocab_size", c.vocab_size);
  f("hidden_size", c.hidden_size);
  f("num_hidden_layers", c.num_hidden_layers);
  f("num_attention_heads", c.num_attention_heads);
  f("intermediate_size", c.intermediate_size);
  f("hidden_act", c.hidden_act);
  f("hidden_dropout_prob", c.hidden_dropout_prob);
  f("attention_probs_dropout_prob", c.attention_probs_dropout_prob);
  f("max_position_embeddings", c.max_position_embeddings);
  f("type_vocab_size", c.type_vocab_size);
  f("initializer_range", c.initializer_range);
  f("layer_norm_eps", c.layer_norm_eps);
  f("pad_token_id", c.pad_token_id);
  f("position_embedding_type", c.position_embedding_type);
  f("model_type", c.model_type);
}

}  // namespace

BertConfig BertConfig::from_json(const nlohmann::json& j, const std::string& source) {
  BertConfig c;
  c.extra = read_config_fields(c, j, "BertConfig", source, [](BertConfig& config, auto&& visit) { for_each_field(config, visit); });
  read_attn_implementation(c.extra, c.attn_implementation, "BertConfig", source);
  return c;
}

BertConfig BertConfig::from_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("[BertConfig] cannot open config file '" + path + "': expected a Hugging Face config.json");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error("[BertConfig] '" + path + "' is not valid JSON: " + e.what());
  }
  return from_json(j, "'" + path + "'");
}

nlohmann::json BertConfig::to_json() const {
  nlohmann::json j = extra;
  BertConfig copy = *this;
  for_each_field(copy, [&](const char* name, auto& field) { j[name] = field; });
  if (!j.contains("architectures")) j["architectures"] = {model_type == "roberta" ? "RobertaForMaskedLM" : "BertForMaskedLM"};
  return j;
}

void BertConfig::update_from_string(const std::string& overrides) {
  apply_config_overrides(*this, overrides, [](BertConfig& config, auto&& visit) { for_each_field(config, visit); });
}

void BertConfig::validate(const std::string& source) const {
  auto require = [&](bool ok, const std::string& what) {
    if (!ok) throw Error("[BertConfig] " + source + ": " + what);
  };
  check_attn_implementation(attn_implementation, "BertConfig", source);
  // Sizes: positive, and small enough that the parameters fit in memory.
  const std::pair<const char*, int64_t> sizes[] = {{"vocab_size", vocab_size}, {"hidden_size", hidden_size},
                                                   {"num_hidden_layers", num_hidden_layers}, {"num_attention_heads", num_attention_heads},
                                                   {"intermediate_size", intermediate_size}, {"max_position_embeddings", max_position_embeddings},
                                                   {"type_vocab_size", type_vocab_size}};
  for (const auto& [name, value] : sizes) {
    require(value > 0 || (value == 0 && std::string(name) == "num_hidden_layers"), std::string(name) + " must be positive, got " + std::to_string(value));
    require(value <= (int64_t{1} << 24), std::string(name) + " = " + std::to_string(value) + " is too large (at most 16777216)");
  }
  const double parameters = static_cast<double>(vocab_size + max_position_embeddings + type_vocab_size) * static_cast<double>(hidden_size) +
                            static_cast<double>(num_hidden_layers) * (4.0 * static_cast<double>(hidden_size) * static_cast<double>(hidden_size) +
                                                                     2.0 * static_cast<double>(hidden_size) * static_cast<double>(intermediate_size));
  require(parameters <= 4e9, "the model would have about " + std::to_string(static_cast<int64_t>(parameters)) +
                                 " parameters; lazytrain's limit is 4e9 (check hidden_size, intermediate_size, vocab_size)");
  require(hidden_size % num_attention_heads == 0, "the hidden size (" + std::to_string(hidden_size) +
                                                      ") is not a multiple of the number of attention heads (" + std::to_string(num_attention_heads) + ")");
  require(hidden_act == "gelu", "hidden_act '" + hidden_act + "' is not supported; expected 'gelu'");
  require(position_embedding_type == "absolute", "position_embedding_type must be 'absolute'");
  require(hidden_dropout_prob >= 0 && hidden_dropout_prob < 1 && attention_probs_dropout_prob >= 0 && attention_probs_dropout_prob < 1,
          "dropout probabilities must be in [0, 1)");
  require(layer_norm_eps > 0 && initializer_range >= 0, "layer_norm_eps must be positive and initializer_range non-negative");
  require(pad_token_id >= 0 && pad_token_id < vocab_size, "pad_token_id must be a valid token id");
}

}  // namespace lazytrain::models
