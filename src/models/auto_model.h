// AutoModelForMaskedLM, as Hugging Face's: the masked-LM class of a config's
// model_type ("bert" → BertForMaskedLM, "roberta" → RobertaForMaskedLM).
#pragma once

#include <memory>

#include "models/modeling_utils.h"

namespace lazytrain::models {

struct AutoModelForMaskedLM {
  // A newly initialised model of config.model_type. Throws Error for a
  // model_type with no masked-LM class here (naming the supported ones).
  static std::shared_ptr<MaskedLMModel> from_config(const BertConfig& config);
};

}  // namespace lazytrain::models
