// Example: one tokenized training example, as a Hugging Face datasets row after
// run_mlm's tokenize_function / group_texts (columns input_ids, attention_mask,
// special_tokens_mask).
#pragma once

#include <cstdint>
#include <vector>

namespace lazytrain::data {

struct Example {
  std::vector<int64_t> input_ids;
  std::vector<int64_t> attention_mask;      // 1 = real token, 0 = padding
  std::vector<uint8_t> special_tokens_mask;  // 1 = [CLS]/[SEP]/[PAD]/..., never masked for MLM
};

}  // namespace lazytrain::data
