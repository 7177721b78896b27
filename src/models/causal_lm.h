// What the causal language models (GPT2LMHeadModel, LlamaForCausalLM) share:
// their output, the label shift of their loss, and the interface generate()
// drives (Hugging Face's GenerationMixin over a static KV cache, as
// transformers' StaticCache: pre-allocated, written in place).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/module.h"
#include "runtime/device.h"
#include "tensor/tensor.h"

namespace lazytrain::models {

// An output projection tied to the word embeddings (Hugging Face's lm_head.weight
// = embeddings.weight): the same tensor registered under lm_head, listed once.
struct TiedLMHead : nn::Module {
  explicit TiedLMHead(const Tensor& tied) : weight(tied) { register_parameter("weight", tied); }
  Tensor weight;
};

struct CausalLMOutput {
  Tensor loss;    // 0-d f32, defined when labels were given
  Tensor logits;  // [B, S, vocab_size]
};

// labels int64 [B, S] -> [B, S]: column i holds labels[:, i + 1], the last
// column -100 (ignored). The loss and next-token accuracy of position i are
// taken against it, as Hugging Face's logits[:, :-1] against labels[:, 1:].
Tensor shift_labels_left(const Tensor& labels);

// The mean cross entropy of logits [B, S, V] (any float dtype, taken in f32)
// against labels [B, S] shifted inside (-100 ignored): Hugging Face's
// ForCausalLMLoss. Computed against the shifted labels rather than on a copy of
// logits[:, :-1] ([B, S-1, V]: 823 MB for GPT-2 at 4 x 1024). Throws Error
// naming `model` when labels' shape differs from the logits' [B, S] or S < 2.
Tensor causal_lm_loss(const Tensor& logits, const Tensor& labels, const char* model);

// The keys and values of one attention layer kept between generation steps
// (Hugging Face's past_key_values, pre-allocated): each [B, kv_heads,
// capacity, head_dim], f32. Slot j holds the token at column j of the padded
// sequence.
struct LayerKVCache {
  Tensor key, value;
};

// Where a cached forward writes its keys and values: a prefill writes its S
// tokens at slots [0, S); a decode step (S = 1) writes the one slot `slot`
// names (an int64 0-d device tensor, so every step runs the same graph).
struct CacheWrite {
  Tensor slot;  // undefined: prefill
};

// The cache update of one layer: k, v [B, kv_heads, S, head_dim] written as
// `write` says into cache.key/value (replaced by the updated cache). Returns
// the keys and values to attend over: k, v themselves for a prefill, the
// whole cache for a decode step.
std::pair<Tensor, Tensor> update_kv_cache(LayerKVCache& cache, const Tensor& k, const Tensor& v, const CacheWrite& write);

// Zeros for `layers` layers of [batch, kv_heads, capacity, head_dim] f32 on `device`.
std::vector<LayerKVCache> zero_kv_cache(int64_t layers, int64_t batch, int64_t kv_heads, int64_t capacity, int64_t head_dim,
                                        const runtime::Device& device);

// What generate() (models/generation.h) needs to know of a model.
struct GenerationLimits {
  std::string model_name;           // "GPT-2", "Llama": names the model in errors
  int64_t vocab_size = 0;
  int64_t max_positions = 0;        // a prompt plus its new tokens fit in this many positions
  std::string max_positions_field;  // its config field: "n_positions", "max_position_embeddings"
  std::optional<int64_t> eos_token_id, pad_token_id;  // the config's (none: never stops / pad = eos)
};

// Hugging Face's GenerationMixin as generate() uses it: a static KV cache and
// a forward over it. Both causal LMs implement it.
class GenerationMixin {
 public:
  virtual ~GenerationMixin() = default;
  virtual GenerationLimits generation_limits() const = 0;
  // The module (training mode, the device of its parameters).
  virtual const nn::Module& generation_module() const = 0;
  virtual runtime::Device generation_device() const = 0;
  // An empty cache for `batch` sequences of up to `capacity` tokens: zeros, one
  // LayerKVCache a layer.
  virtual std::vector<LayerKVCache> new_cache(int64_t batch, int64_t capacity) const = 0;
  // One generation step with a KV cache (eval mode; no labels). input_ids and
  // position_ids int64 [B, S] (a left-padded row's first real token is position
  // 0); bias: the additive f32 mask of the keys attended over, [B, 1, S, S] for
  // a prefill, [B, 1, 1, capacity] for a step (0 where a query sees a key,
  // finfo(float32).min elsewhere: it carries the causal and the padding mask).
  // Returns the logits of the last column, [B, vocab_size] f32. Throws Error
  // naming the model when the shapes disagree with each other or with the cache.
  virtual Tensor forward_cached(const Tensor& input_ids, const Tensor& position_ids, const Tensor& bias, std::vector<LayerKVCache>& cache,
                                const CacheWrite& write) const = 0;
};

// A causal language model (GPT2LMHeadModel, LlamaForCausalLM) as the Trainer,
// the CLI and generate() use it: its parameters through nn::Module, one
// forward, its config.json and the cached forward of GenerationMixin.
class CausalLMModel : public nn::Module, public GenerationMixin {
 public:
  // input_ids int64 [B, S], attention_mask int64 [B, S] (1: a real token) or
  // undefined, labels int64 [B, S] (-100: no loss) or undefined → logits
  // [B, S, vocab_size] and, with labels, the mean cross entropy of
  // logits[:, :-1] against labels[:, 1:] (shifted inside, as Hugging Face's).
  // Throws Error naming the model when the shapes disagree or S exceeds its positions.
  virtual CausalLMOutput forward(const Tensor& input_ids, const Tensor& attention_mask = Tensor(), const Tensor& labels = Tensor()) const = 0;
  // config.json with every field, as save_pretrained writes it.
  virtual nlohmann::json config_json() const = 0;
  // Hugging Face's gradient_checkpointing_enable() (nn/checkpoint.h).
  virtual void gradient_checkpointing_enable() = 0;
  const nn::Module& generation_module() const override { return *this; }
};

// The checks every forward_cached makes (the message names `model`).
void check_cached_forward(const char* model, const Tensor& input_ids, const Tensor& position_ids, const Tensor& bias,
                          const std::vector<LayerKVCache>& cache, size_t layers, const CacheWrite& write);

}  // namespace lazytrain::models
