#include "models/auto_model.h"

#include "core/error.h"
#include "models/bert.h"
#include "models/roberta.h"

namespace lazytrain::models {

std::shared_ptr<MaskedLMModel> AutoModelForMaskedLM::from_config(const BertConfig& config) {
  if (config.model_type == "bert") return std::make_shared<BertForMaskedLM>(config);
  if (config.model_type == "roberta") return std::make_shared<RobertaForMaskedLM>(config);
  throw Error("[AutoModelForMaskedLM] model_type '" + config.model_type + "' has no masked-LM model; expected 'bert' or 'roberta'");
}

}  // namespace lazytrain::models
