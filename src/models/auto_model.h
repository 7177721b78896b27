// The Auto classes, as Hugging Face's: the class of a config's model_type.
//   AutoModelForMaskedLM: "bert" → BertForMaskedLM, "roberta" → RobertaForMaskedLM;
//   AutoModelForCausalLM: "gpt2" → GPT2LMHeadModel, "llama" → LlamaForCausalLM.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "models/causal_lm.h"
#include "models/modeling_utils.h"

namespace lazytrain::models {

struct AutoModelForMaskedLM {
  // A newly initialised model of config.model_type. Throws Error for a
  // model_type with no masked-LM class here (naming the supported ones).
  static std::shared_ptr<MaskedLMModel> from_config(const BertConfig& config);
};

// A causal LM's config, read by the config class of its model_type (AutoConfig).
struct CausalLMConfig {
  nlohmann::json json;      // config.json with every field (the class's to_json)
  GenerationLimits limits;  // vocab_size, the positions, eos/pad ids
};

struct AutoModelForCausalLM {
  // AutoConfig for the causal LMs: `j` (a config.json's object; {} for the
  // defaults) read by the config class of j's model_type, else `model_type`,
  // then `overrides` ("key=value,...", PretrainedConfig.update_from_string)
  // applied, then validated. Throws Error naming `source` and the field, or
  // for a model_type with no causal LM ("gpt2", "llama" expected).
  static CausalLMConfig config_from_json(const nlohmann::json& j, const std::string& model_type, const std::string& overrides,
                                         const std::string& source);
  // The same from a config.json file (Error naming it when missing or not JSON).
  static CausalLMConfig config_from_file(const std::string& path, const std::string& model_type = "gpt2");
  // A newly initialised model of config.json's model_type (validated again).
  static std::shared_ptr<CausalLMModel> from_config(const nlohmann::json& config);
};

}  // namespace lazytrain::models
