// encode_batch: Hugging Face's batch tokenization (tokenizer(list_of_texts)
// before padding) over any Tokenizer, on several threads: each text is
// encoded, truncated so that it fits max_length with its special tokens, and
// wrapped by build_inputs_with_special_tokens. The results are in the order of
// the texts and equal to encoding them one by one on one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "data/tokenizer.h"

namespace lazytrain::data {

struct BatchEncodeOptions {
  bool add_special_tokens = true;
  // HF truncation=True/"longest_first" for one sequence: a text's ids are cut
  // at the end to max_length minus the special tokens added. Unset: no truncation.
  std::optional<int64_t> max_length;
  // Threads that encode (each takes the next chunk of texts); 0: one per CPU
  // this process may run on (sched_getaffinity), at most one per 16 texts.
  int num_threads = 0;
};

// The ids of each text (UTF-8). Throws lazytrain::Error for max_length below
// the count of special tokens added (HF cannot truncate to that either) or
// negative num_threads, and the tokenizer's Error for a text it rejects, with
// the text's index: "[encode_batch] text 3: ...". The calling thread encodes
// too; nothing here touches Python, so a binding releases the GIL around it.
std::vector<std::vector<int64_t>> encode_batch(const Tokenizer& tokenizer, std::span<const std::string> texts,
                                               const BatchEncodeOptions& options = {});

// How many of build_inputs_with_special_tokens' special tokens come before and
// after the sequence ({1, 1} for BERT and RoBERTa, {0, 0} for GPT-2): what
// HF get_special_tokens_mask marks with 1.
struct SpecialTokensLayout {
  int64_t before = 0;
  int64_t after = 0;
};
SpecialTokensLayout special_tokens_layout(const Tokenizer& tokenizer);

// The threads encode_batch uses for `num_texts` texts with num_threads = 0.
int default_encode_threads(int64_t num_texts);

}  // namespace lazytrain::data
