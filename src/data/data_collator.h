// DataCollatorForLanguageModeling: Hugging Face's collator of the same name
// (transformers.data.data_collator): pads a list of examples into one batch and,
// for masked language modelling, picks the tokens to predict.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "data/example.h"

namespace lazytrain::data {

class Tokenizer;

// One collated batch, row-major [batch_size, seq_len].
struct Batch {
  int64_t batch_size = 0;
  int64_t seq_len = 0;
  int64_t num_examples = 0;  // rows that hold examples; rows past them are padding (pad_batch_rows)
  std::vector<int64_t> input_ids;
  std::vector<int64_t> attention_mask;
  std::vector<int64_t> labels;  // -100 where no loss is taken (cross_entropy ignore_index)
  // The masking probability that made the labels (0: not a masked-LM batch);
  // it sizes the labelled rows' capacity (data/labelled_positions.h).
  double mlm_probability = 0.0;
};

// What the collator needs from a tokenizer.
struct CollatorTokens {
  int64_t vocab_size = 0;     // random replacements are drawn from [0, vocab_size)
  int64_t mask_token_id = -1;
  int64_t pad_token_id = -1;
  std::vector<int64_t> special_ids;  // used when an example has no special_tokens_mask
};

struct DataCollatorOptions {
  bool mlm = true;               // false: causal LM labels (input_ids, pads -> -100)
  // !mlm: which positions are padding for the labels. true: those whose id is
  // pad_token_id (HF's DataCollatorForLanguageModeling(mlm=False)); false: those
  // with attention_mask 0, so a real token equal to the pad id keeps its label
  // (run_clm.py: default_data_collator over group_texts' labels = input_ids;
  // GPT-2's pad id is its <|endoftext|>, a real token of the text).
  bool pad_labels_by_id = true;
  double mlm_probability = 0.15;
  int64_t pad_to_multiple_of = 0;  // 0: pad to the longest example only
  uint64_t seed = 42;
};

// Appends padding rows to `batch` until it has `rows` rows: input_ids
// pad_token_id, attention_mask 0, labels -100, so they carry no loss and no
// accuracy. A last partial batch keeps the static batch shape this way (one
// compiled step) instead of being dropped. num_examples keeps the real count.
// Throws Error when the batch already has more than `rows` rows.
void pad_batch_rows(Batch& batch, int64_t rows, int64_t pad_token_id);

class DataCollatorForLanguageModeling {
 public:
  // Takes the special ids and vocab size from `tokenizer`. Throws
  // lazytrain::Error when mlm_probability is outside [0, 1], pad_to_multiple_of
  // is negative, or vocab_size < 1.
  explicit DataCollatorForLanguageModeling(const Tokenizer& tokenizer,
                                           DataCollatorOptions options = {});
  explicit DataCollatorForLanguageModeling(CollatorTokens tokens, DataCollatorOptions options = {});

  // HF DataCollatorForLanguageModeling.__call__ (torch_call + torch_mask_tokens):
  //  * pads every example on the right to the longest one (rounded up to
  //    pad_to_multiple_of): input_ids with [PAD], attention_mask 0, special mask 1;
  //    an empty attention_mask means all 1, an empty special_tokens_mask means
  //    "ids in special_ids";
  //  * mlm: every non-special position is selected with probability
  //    mlm_probability; labels = original id there, -100 elsewhere; a selected
  //    token becomes [MASK] with probability 0.8, else a uniform random id in
  //    [0, vocab_size) with probability 0.5, else stays unchanged;
  //  * !mlm: labels = input_ids with padding positions -100 (see pad_labels_by_id).
  // Draws come from a std::mt19937_64 seeded in the constructor, so the same
  // seed and the same calls give the same batches. Throws Error for an empty
  // batch, all-empty examples, or masks whose length differs from input_ids.
  Batch operator()(std::span<const Example> examples);
  // The same with a generator of its own, seeded from (options.seed, stream):
  // DataLoader workers pass the batch number, so batches made on several
  // threads, in any order, are the ones a single thread would make. Thread-safe.
  Batch operator()(std::span<const Example> examples, uint64_t stream) const;

  const CollatorTokens& tokens() const { return tokens_; }
  const DataCollatorOptions& options() const { return options_; }

 private:
  double uniform();             // [0, 1) with 53 random bits
  int64_t random_token();       // [0, vocab_size)

  CollatorTokens tokens_;
  DataCollatorOptions options_;
  std::mt19937_64 rng_;
};

}  // namespace lazytrain::data
