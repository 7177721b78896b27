#include "models/gpt2_config.h"

#include <fstream>

#include "core/error.h"
#include "models/config_fields.h"

namespace lazytrain::models {

namespace {
template <typename F>
void for_each_field(GPT2Config& c, F&& f) {
  f("vocab_size", c.vocab_size);
  f("n_positions", c.n_positions);
  f("n_embd", c.n_embd);
  f("n_layer", c.n_layer);
  f("n_head", c.n_head);
  f("activation_function", c.activation_function);
  f("resid_pdrop", c.resid_pdrop);
  f("embd_pdrop", c.embd_pdrop);
  f("attn_pdrop", c.attn_pdrop);
  f("layer_norm_epsilon", c.layer_norm_epsilon);
  f("initializer_range", c.initializer_range);
  f("scale_attn_weights", c.scale_attn_weights);
  f("bos_token_id", c.bos_token_id);
  f("eos_token_id", c.eos_token_id);
  f("model_type", c.model_type);
}
auto fields = [](GPT2Config& config, auto&& visit) { for_each_field(config, visit); };
}  // namespace

GPT2Config GPT2Config::from_json(const nlohmann::json& j, const std::string& source) {
  GPT2Config c;
  c.extra = read_config_fields(c, j, "GPT2Config", source, fields);
  read_attn_implementation(c.extra, c.attn_implementation, "GPT2Config", source);
  if (c.extra.contains("n_inner")) {  // null or a width
    const nlohmann::json& v = c.extra["n_inner"];
    if (!v.is_null() && !v.is_number_integer()) throw Error("[GPT2Config] " + source + ": field 'n_inner' has the wrong type (" + v.dump() + ")");
    c.n_inner = v.is_null() ? 0 : v.get<int64_t>();
    c.extra.erase("n_inner");
  }
  return c;
}

GPT2Config GPT2Config::from_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("[GPT2Config] cannot open config file '" + path + "': expected a Hugging Face config.json");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error("[GPT2Config] '" + path + "' is not valid JSON: " + e.what());
  }
  return from_json(j, "'" + path + "'");
}

nlohmann::json GPT2Config::to_json() const {
  nlohmann::json j = extra;
  GPT2Config copy = *this;
  for_each_field(copy, [&](const char* name, auto& field) { j[name] = field; });
  j["n_inner"] = n_inner > 0 ? nlohmann::json(n_inner) : nlohmann::json(nullptr);
  if (!j.contains("architectures")) j["architectures"] = {"GPT2LMHeadModel"};
  return j;
}

void GPT2Config::update_from_string(const std::string& overrides) { apply_config_overrides(*this, overrides, fields); }

void GPT2Config::validate(const std::string& source) const {
  auto require = [&](bool ok, const std::string& what) {
    if (!ok) throw Error("[GPT2Config] " + source + ": " + what);
  };
  require(model_type == "gpt2", "model_type is '" + model_type + "', expected 'gpt2' (a GPT-2 config.json)");
  check_attn_implementation(attn_implementation, "GPT2Config", source);
  const std::pair<const char*, int64_t> sizes[] = {{"vocab_size", vocab_size}, {"n_positions", n_positions}, {"n_embd", n_embd},
                                                   {"n_layer", n_layer}, {"n_head", n_head}};
  for (const auto& [name, value] : sizes) {
    require(value > 0, std::string(name) + " must be positive, got " + std::to_string(value));
    require(value <= (int64_t{1} << 24), std::string(name) + " = " + std::to_string(value) + " is too large (at most 16777216)");
  }
  require(n_inner >= 0 && n_inner <= (int64_t{1} << 24), "n_inner must be null or a positive width");
  require(n_embd % n_head == 0, "n_embd (" + std::to_string(n_embd) + ") is not a multiple of n_head (" + std::to_string(n_head) + ")");
  require(activation_function == "gelu_new" || activation_function == "gelu_pytorch_tanh",
          "activation_function '" + activation_function + "' is not supported; expected 'gelu_new'");
  for (double p : {resid_pdrop, embd_pdrop, attn_pdrop}) require(p >= 0 && p < 1, "dropout probabilities must be in [0, 1)");
  require(layer_norm_epsilon > 0 && initializer_range >= 0, "layer_norm_epsilon must be positive and initializer_range non-negative");
}

}  // namespace lazytrain::models
