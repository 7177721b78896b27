// The positions of a batch that carry a label, so that a masked-LM loss can be
// computed on those rows only: about 15% of the tokens under BERT's masking,
// while Hugging Face's BertForMaskedLM runs the vocabulary-sized decoder on
// every token and discards the rest. Google's BERT pre-training feeds the same
// pair (masked_lm_positions, masked_lm_ids) from its data pipeline.
//
// The number of labelled tokens varies from batch to batch; a compiled step
// needs a static shape. The positions are padded to a capacity: a multiple of
// ceil(n / 64) for a batch of n tokens, at least the expected count plus six
// standard deviations when the masking probability p is known (binomial: p*n +
// 6*sqrt(n*p*(1-p))). Under BERT's 15% masking a batch of 8 x 128 tokens
// (mean 154 labels at most, s.d. 11) always gets 224 rows, so training compiles
// one graph; a count above the floor, about one batch in a billion, costs one
// more graph of the next bucket, never a wrong loss. At most 64 capacities
// exist per batch shape.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace lazytrain::data {

struct LabelledPositions {
  // Flat indices into the batch's tokens (row * seq_len + column), ascending;
  // padded with index 0 up to the capacity.
  std::vector<int64_t> positions;
  // The label at each position; -100 (ignored by cross_entropy) for padding.
  std::vector<int64_t> labels;
};

// The capacity for `labelled` labelled tokens among `tokens` under masking
// probability `mlm_probability` (0: unknown): the smallest multiple of
// ceil(tokens / 64) that is >= labelled and >= the expected count + 6 s.d.,
// at least ceil(tokens / 64), at most `tokens`. 0 when tokens is 0.
int64_t labelled_capacity(int64_t tokens, int64_t labelled, double mlm_probability = 0.0);

// The positions of `labels` (one per token, -100 where no loss is taken) that
// are not -100, with their labels, padded to labelled_capacity.
LabelledPositions labelled_positions(std::span<const int64_t> labels, double mlm_probability = 0.0);

}  // namespace lazytrain::data
