// FillMaskPipeline: Hugging Face's fill-mask pipeline (transformers'
// pipelines/fill_mask.py, FillMaskPipeline) for a masked language model and
// its tokenizer. pipelines/ stands above models/ and data/ (and train/, whose
// model_io loads the weights), as transformers.pipelines does: a pipeline is
// the one place that needs a model and its tokenizer together.
//
// Semantics, as HF's: every input holds the tokenizer's mask token ("[MASK]"
// for BERT, "<mask>" for RoBERTa) at least once; the model runs in eval mode
// (no dropout) without autograd; at each mask position the logits over the
// vocabulary go through softmax (float32) and the top_k tokens by probability
// are kept, each with
//   score     the probability,
//   token     the token id,
//   token_str tokenizer.decode({token}),
//   sequence  tokenizer.decode(the input ids with that mask replaced by token,
//             padding removed), skipping special tokens only when the input has
//             a single mask (HF keeps them, and the other masks, otherwise).
// Several masks in one input give one ranked list per mask (HF's
// "experimental" multi-mask output), each mask predicted independently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "models/modeling_utils.h"

namespace lazytrain::pipelines {

// One ranked prediction for one mask: HF's {"score", "token", "token_str", "sequence"}.
struct FillMaskPrediction {
  double score = 0;  // softmax probability at the mask, a float32 value
  int64_t token = 0;
  std::string token_str;
  std::string sequence;
};

// What the pipeline made of one input text.
struct FillMaskResult {
  std::vector<int64_t> input_ids;       // [S]: tokenizer.encode(text), special tokens included
  std::vector<int64_t> mask_positions;  // [M]: indices into input_ids of the mask tokens, ascending
  // [M][vocab_size]: the model's logits at each mask position (float32).
  std::vector<std::vector<float>> mask_logits;
  // [M][top_k]: per mask, the predictions by descending score (ties: lower id first).
  std::vector<std::vector<FillMaskPrediction>> predictions;
};

struct FillMaskOptions {
  int64_t top_k = 5;       // predictions per mask, 1..vocab_size
  int64_t batch_size = 8;  // inputs per forward, padded to a common length
};

class FillMaskPipeline {
 public:
  // `model` is put in eval mode. Throws Error when the tokenizer's vocabulary
  // is larger than the model's vocab_size.
  FillMaskPipeline(std::shared_ptr<models::MaskedLMModel> model, std::shared_ptr<const data::Tokenizer> tokenizer);

  // HF pipeline("fill-mask", model=DIR): a directory written by `lazytrain
  // run_mlm` (or save_pretrained) holding config.json (its model_type picks
  // BERT or RoBERTa), model.safetensors in Hugging Face's names and the
  // tokenizer (vocab.txt; spm.model). Throws Error "[fill_mask] ..." naming the
  // directory or file that is missing, and the loaders' errors for a malformed
  // config, checkpoint or tokenizer.
  static FillMaskPipeline from_pretrained(const std::string& model_dir);

  // Runs `texts` in batches of options.batch_size (each padded with the pad id
  // and attention mask 0 to its longest input rounded up to a multiple of 8, as
  // the tokenizer's pad_to_multiple_of=8, so that batches share compiled graphs;
  // the results equal those of one input at a time, up to float rounding). Returns one result per text, in
  // order. Throws Error "[fill_mask] ..." before running anything for: top_k
  // outside 1..vocab_size, batch_size < 1, an input without the mask token
  // (naming the input, its number from 1 and the expected token, and saying so
  // when it holds the other model family's mask token), an input longer than
  // the model's positions allow.
  std::vector<FillMaskResult> operator()(const std::vector<std::string>& texts, const FillMaskOptions& options = {}) const;

  const data::Tokenizer& tokenizer() const { return *tokenizer_; }
  const models::MaskedLMModel& model() const { return *model_; }

 private:
  std::vector<FillMaskResult> run_batch(const std::vector<std::vector<int64_t>>& ids, int64_t rows, int64_t top_k) const;
  FillMaskPrediction prediction(const FillMaskResult& result, size_t mask, int64_t token, float score) const;

  std::shared_ptr<models::MaskedLMModel> model_;
  std::shared_ptr<const data::Tokenizer> tokenizer_;
};

// HF's output structure as JSON text, laid out as Python's json.dumps writes it
// (", " and ": " separators, keys in HF's order score, token, token_str,
// sequence; scores in their shortest round-trip form): per result a list of
// dicts (one mask) or a list of such lists (several masks); for several
// results, a list of those. One result is not wrapped (HF returns outputs[0]
// for a single input).
std::string fill_mask_json(const std::vector<FillMaskResult>& results);

}  // namespace lazytrain::pipelines
