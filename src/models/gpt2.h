// GPT2LMHeadModel as Hugging Face defines it (modeling_gpt2.py), with its parameter names, so its safetensors load as they are:
//   transformer.wte.weight [vocab, n_embd], transformer.wpe.weight [n_positions, n_embd]
//   transformer.h.N.ln_1.{weight,bias}, .attn.c_attn.{weight [n_embd, 3 n_embd], bias}
//   transformer.h.N.attn.c_proj.*, .ln_2.*, .mlp.c_fc.* ([n_embd, inner]), .mlp.c_proj.*
//   transformer.ln_f.*; lm_head.weight is transformer.wte.weight (tied, listed once).
// Pre-LayerNorm blocks; causal self-attention (scores / sqrt(head_dim), masked
// with finfo(float32).min above the diagonal and where attention_mask is 0);
// gelu_new (the tanh approximation). config.attn_implementation picks the
// attention: "sdpa", one scaled_dot_product_attention op (is_causal, or a bool
// causal-and-padding mask; its own dropout stream), or "eager", matmul / mask /
// softmax / dropout / matmul; with dropout off they agree to f32 rounding except
// on a query row whose every key is padding (sdpa: 0, eager: uniform weights),
// a row whose loss is ignored. Initialisation as HF's _init_weights:
// N(0, initializer_range), c_proj weights N(0, initializer_range / sqrt(2 n_layer)).
#pragma once

#include <memory>
#include <vector>

#include "models/causal_lm.h"
#include "models/gpt2_config.h"
#include "nn/layers.h"

namespace lazytrain::models {

// HF's Conv1D: y = x @ weight + bias with weight [in, out] (a transposed Linear).
class Conv1D : public nn::Module {
 public:
  Conv1D(int64_t in_features, int64_t out_features, double init_std);
  // x [..., in] → [..., out].
  Tensor forward(const Tensor& x) const;
  Tensor weight, bias;
};

// gelu_new: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (HF's NewGELUActivation),
// which is torch's gelu(approximate="tanh"): one aten::gelu op, fused into one loop.
Tensor gelu_new(const Tensor& x);

class GPT2Attention : public nn::Module {
 public:
  explicit GPT2Attention(const GPT2Config& config);
  // hidden [B, S, n_embd] -> [B, S, n_embd]. mask: undefined (causal only), or
  // with eager attention the additive f32 [B, 1, 1, S] padding mask, with sdpa
  // the bool [B, 1, S, S] causal-and-padding mask (true = attend); GPT2Model makes it.
  Tensor forward(const Tensor& hidden, const Tensor& mask) const;
  // Attention with a KV cache. A prefill attends over its own S tokens, a decode
  // step over the whole cache; `bias` is the additive f32 mask of the keys it
  // attends over: [B, 1, S, S] for a prefill, [B, 1, 1, capacity] for a step
  // (0 where a query sees a key, finfo(float32).min elsewhere: it carries the
  // causal and the padding mask). Replaces cache.key/value by the updated cache.
  Tensor forward_cached(const Tensor& hidden, const Tensor& bias, LayerKVCache& cache, const CacheWrite& write) const;
  std::shared_ptr<Conv1D> c_attn, c_proj;
  std::shared_ptr<nn::Dropout> attn_dropout, resid_dropout;
  int64_t heads, head_dim;
  bool scale;
  bool sdpa;          // config.attn_implementation == "sdpa"
  double attn_pdrop;  // sdpa's dropout_p in training
};

class GPT2MLP : public nn::Module {
 public:
  explicit GPT2MLP(const GPT2Config& config);
  Tensor forward(const Tensor& x) const;
  std::shared_ptr<Conv1D> c_fc, c_proj;
  std::shared_ptr<nn::Dropout> dropout;
};

class GPT2Block : public nn::Module {
 public:
  explicit GPT2Block(const GPT2Config& config);
  Tensor forward(const Tensor& hidden, const Tensor& mask) const;
  Tensor forward_cached(const Tensor& hidden, const Tensor& bias, LayerKVCache& cache, const CacheWrite& write) const;
  std::shared_ptr<nn::LayerNorm> ln_1, ln_2;
  std::shared_ptr<GPT2Attention> attn;
  std::shared_ptr<GPT2MLP> mlp;
};

class GPT2Model : public nn::Module {
 public:
  explicit GPT2Model(const GPT2Config& config);
  // input_ids int64 [B, S] (S <= n_positions), attention_mask int64 [B, S] or
  // undefined → the last hidden state [B, S, n_embd] (after ln_f).
  Tensor forward(const Tensor& input_ids, const Tensor& attention_mask) const;
  std::shared_ptr<nn::Embedding> wte, wpe;
  std::shared_ptr<nn::Dropout> drop;
  std::vector<std::shared_ptr<GPT2Block>> h;
  std::shared_ptr<nn::LayerNorm> ln_f;
  // Hugging Face's transformer.gradient_checkpointing: in training, each
  // block's activations are recomputed during backward (nn/checkpoint.h).
  bool gradient_checkpointing = false;
  bool sdpa;  // config.attn_implementation == "sdpa": the blocks take a bool mask
};

class GPT2LMHeadModel : public CausalLMModel {
 public:
  // Validates the config (Error naming the field).
  explicit GPT2LMHeadModel(GPT2Config config);
  // labels int64 [B, S] (-100: no loss), or undefined. The loss is the mean
  // cross entropy of logits[:, :-1] against labels[:, 1:] (the labels are
  // shifted inside, as Hugging Face's). Throws Error naming the model when the
  // shapes disagree or S exceeds n_positions.
  CausalLMOutput forward(const Tensor& input_ids, const Tensor& attention_mask = Tensor(), const Tensor& labels = Tensor()) const override;

  // GenerationMixin (models/causal_lm.h): the cache holds n_head heads; the
  // positions of forward_cached index wpe.
  GenerationLimits generation_limits() const override;
  runtime::Device generation_device() const override { return transformer->wte->weight.device(); }
  std::vector<LayerKVCache> new_cache(int64_t batch, int64_t capacity) const override;
  Tensor forward_cached(const Tensor& input_ids, const Tensor& position_ids, const Tensor& bias, std::vector<LayerKVCache>& cache,
                        const CacheWrite& write) const override;
  const GPT2Config& config() const { return config_; }
  std::shared_ptr<GPT2Model> transformer;
  // Hugging Face's gradient_checkpointing_enable() (nn/checkpoint.h).
  void gradient_checkpointing_enable() override { transformer->gradient_checkpointing = true; }
  nlohmann::json config_json() const override { return config_.to_json(); }

 private:
  GPT2Config config_;
};

}  // namespace lazytrain::models
