#include "data/tokenizer.h"

namespace lazytrain::data {

int64_t Tokenizer::num_special_tokens_to_add() const {
  return static_cast<int64_t>(build_inputs_with_special_tokens({}).size());
}

CollatorTokens Tokenizer::collator_tokens() const {
  return {vocab_size(), mask_token_id(), pad_token_id(), all_special_ids()};
}

}  // namespace lazytrain::data
