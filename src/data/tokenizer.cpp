#include "data/tokenizer.h"

#include <utility>

#include "data/unicode_text.h"

namespace lazytrain::data {

int64_t Tokenizer::num_special_tokens_to_add() const {
  return static_cast<int64_t>(build_inputs_with_special_tokens({}).size());
}

CollatorTokens Tokenizer::collator_tokens() const {
  return {vocab_size(), mask_token_id(), pad_token_id(), all_special_ids()};
}

std::string clean_up_tokenization(std::string text) {
  for (auto [from, to] : {std::pair{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
                          {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}}) {
    unicode::replace_all(text, from, to);
  }
  return text;
}

}  // namespace lazytrain::data
