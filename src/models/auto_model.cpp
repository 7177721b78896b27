#include "models/auto_model.h"

#include <fstream>

#include "core/error.h"
#include "models/bert.h"
#include "models/gpt2.h"
#include "models/llama.h"
#include "models/roberta.h"

namespace lazytrain::models {

std::shared_ptr<MaskedLMModel> AutoModelForMaskedLM::from_config(const BertConfig& config) {
  if (config.model_type == "bert") return std::make_shared<BertForMaskedLM>(config);
  if (config.model_type == "roberta") return std::make_shared<RobertaForMaskedLM>(config);
  throw Error("[AutoModelForMaskedLM] model_type '" + config.model_type + "' has no masked-LM model; expected 'bert' or 'roberta'");
}

namespace {
std::string model_type_of(const nlohmann::json& j, const std::string& fallback, const std::string& source) {
  if (!j.is_object()) throw Error("[AutoModelForCausalLM] " + source + ": expected a JSON object");
  if (!j.contains("model_type")) return fallback;
  if (!j["model_type"].is_string()) throw Error("[AutoModelForCausalLM] " + source + ": field 'model_type' has the wrong type (" + j["model_type"].dump() + ")");
  return j["model_type"].get<std::string>();
}

[[noreturn]] void no_causal_lm(const std::string& model_type, const std::string& source) {
  throw Error("[AutoModelForCausalLM] " + source + ": model_type is '" + model_type + "', expected 'gpt2' or 'llama' (a causal LM's config.json)");
}
}  // namespace

CausalLMConfig AutoModelForCausalLM::config_from_json(const nlohmann::json& j, const std::string& model_type, const std::string& overrides,
                                                      const std::string& source) {
  const std::string type = model_type_of(j, model_type, source);
  nlohmann::json typed = j;
  typed["model_type"] = type;
  if (type == "gpt2") {
    GPT2Config c = GPT2Config::from_json(typed, source);
    if (!overrides.empty()) c.update_from_string(overrides);
    c.validate(source);
    return {c.to_json(), {"GPT-2", c.vocab_size, c.n_positions, "n_positions", c.eos_token_id, std::nullopt}};
  }
  if (type == "llama") {
    LlamaConfig c = LlamaConfig::from_json(typed, source);
    if (!overrides.empty()) c.update_from_string(overrides);
    c.validate(source);
    return {c.to_json(), {"Llama", c.vocab_size, c.max_position_embeddings, "max_position_embeddings", c.eos_token_id, c.pad_token_id}};
  }
  no_causal_lm(type, source);
}

CausalLMConfig AutoModelForCausalLM::config_from_file(const std::string& path, const std::string& model_type) {
  std::ifstream in(path);
  if (!in) throw Error("[AutoModelForCausalLM] cannot open config file '" + path + "': expected a Hugging Face config.json");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error("[AutoModelForCausalLM] '" + path + "' is not valid JSON: " + e.what());
  }
  return config_from_json(j, model_type, "", "'" + path + "'");
}

std::shared_ptr<CausalLMModel> AutoModelForCausalLM::from_config(const nlohmann::json& config) {
  const std::string type = model_type_of(config, "", "the config");
  if (type == "gpt2") return std::make_shared<GPT2LMHeadModel>(GPT2Config::from_json(config, "the config"));
  if (type == "llama") return std::make_shared<LlamaForCausalLM>(LlamaConfig::from_json(config, "the config"));
  no_causal_lm(type, "the config");
}

}  // namespace lazytrain::models
