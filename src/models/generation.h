// generate() for the causal LMs (GPT2LMHeadModel, LlamaForCausalLM, through
// GenerationMixin, models/causal_lm.h): Hugging Face's GenerationMixin.generate with
// greedy search and sampling (temperature, top-k, top-p), on static shapes so a
// generation compiles a bounded number of graphs whatever its lengths.
//
// How it runs (HF's batched generation with left padding, and a static
// pre-allocated KV cache as transformers' StaticCache):
//   - the prompts are left-padded to a bucket P = the smallest power of two
//     >= max(16, longest prompt); a padded row's positions start at 0 on its
//     first real token, and padding is masked out of attention;
//   - the cache holds C = the smallest power of two >= P + max_new_tokens
//     slots a layer ([rows, kv_heads, C, head_dim]: n_head for GPT-2,
//     num_key_value_heads for Llama);
//   - one prefill graph runs the P prompt columns and fills slots [0, P);
//     then one decode graph per token writes slot P + t, the slot and the
//     attention mask being device data, so every step runs the same graph.
// So a call compiles at most 2 graphs (prefill for (rows, P, C), decode for
// (rows, C)), and any number of calls with the same rows at most
// b (b + 1) / 2 + b, b = log2(n_positions / 16) + 1 (P runs over 16 .. n_positions
// and C over 32 .. 2 n_positions: 7 each and at most 35 graphs for GPT-2's 1024
// positions); a repeated bucket only executes.
//
// The next token is chosen on the host from the last column's f32 logits, as
// HF's logits processors do: greedy takes the first maximum (torch.argmax);
// sampling divides by temperature, keeps the top_k scores (ties at the k-th
// kept, TopKLogitsWarper), then the smallest set whose probability reaches
// top_p (TopPLogitsWarper, at least one token), and draws from the softmax
// with a std::mt19937_64 seeded with `seed`.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "models/causal_lm.h"
// The models it drives, for its callers.
#include "models/gpt2.h"
#include "models/llama.h"

namespace lazytrain::models {

// Hugging Face's GenerationConfig fields of the same names.
struct GenerationConfig {
  int64_t max_new_tokens = 20;
  bool do_sample = false;
  double temperature = 1.0;  // > 0
  int64_t top_k = 50;        // 0: no top-k filter
  double top_p = 1.0;        // in [0, 1]; 1: no top-p filter
  int64_t num_return_sequences = 1;
  uint64_t seed = 42;  // of the sampling generator (transformers.set_seed before generate)
  // A sequence that makes eos_token_id is finished; its later tokens are
  // pad_token_id. Unset: the model config's eos_token_id (none: no sequence
  // ends early) and pad_token_id, and pad = eos when the config has none (what
  // GPT-2's generate does, with a warning, since it has no pad token).
  std::optional<int64_t> eos_token_id, pad_token_id;
};

struct GenerateOutput {
  // [prompts x num_return_sequences][T]: the new tokens of each sequence (the
  // copies of a prompt are adjacent), all of one length T <= max_new_tokens:
  // generation stops when every sequence has finished.
  std::vector<std::vector<int64_t>> sequences;
  int64_t prompt_bucket = 0;   // P
  int64_t cache_capacity = 0;  // C
  std::set<uint64_t> graphs;   // hashes of the distinct graphs this call ran
};

// Generates from `prompts` (token ids, each non-empty) on the model's device,
// without autograd; the model must be in eval mode (HF's from_pretrained
// sets it). Throws Error "[generate] ..." before running anything for an
// empty prompt list or prompt, an id outside the vocabulary, a longest prompt
// plus max_new_tokens beyond the model's positions (n_positions, max_position_embeddings), max_new_tokens < 1, temperature <= 0,
// top_k < 0, top_p outside [0, 1], num_return_sequences < 1, or greedy search
// with num_return_sequences > 1 (HF's error), and for a model in training mode;
// while sampling, sampling_probabilities' errors.
GenerateOutput generate(const GenerationMixin& model, const std::vector<std::vector<int64_t>>& prompts, const GenerationConfig& config);

// The choice of the next token from one row of logits, as generate makes it
// (exposed for tests). `logits` [vocab], f32.
int64_t greedy_token(const std::vector<float>& logits);
// The sampling distribution after temperature, top_k and top_p (HF's warpers),
// as probabilities summing to 1 (0 for filtered tokens), computed in double (a
// tiny temperature then samples as greedy instead of overflowing f32). Throws
// Error "[generate] ..." for NaN or +inf logits, and for a temperature so small
// that a score overflows double. -inf logits are filtered tokens.
std::vector<double> sampling_probabilities(const std::vector<float>& logits, const GenerationConfig& config);

}  // namespace lazytrain::models
