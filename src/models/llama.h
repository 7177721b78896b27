// LlamaForCausalLM as Hugging Face defines it (modeling_llama.py), with its
// parameter names, so its safetensors load as they are (N = layer, H heads,
// KV key/value heads, D head_dim, I intermediate_size):
//   model.embed_tokens.weight [vocab, hidden]
//   model.layers.N.self_attn.q_proj.weight [H D, hidden], k_proj / v_proj [KV D, hidden],
//     o_proj [hidden, H D] (each with .bias when attention_bias)
//   model.layers.N.mlp.gate_proj / up_proj [I, hidden], down_proj [hidden, I] (.bias when mlp_bias)
//   model.layers.N.input_layernorm.weight, post_attention_layernorm.weight, model.norm.weight [hidden]
//   lm_head.weight [vocab, hidden]: model.embed_tokens.weight when tie_word_embeddings (listed once).
// Pre-norm decoder layers: RMSNorm (x / sqrt(mean(x^2) + rms_norm_eps) * weight,
// in f32), rotary position embeddings (RoPE, Su et al. 2021, in HF's
// rotate_half layout: inv_freq = 1 / rope_theta^(2i / D), i < D/2, the angles
// concatenated twice), causal grouped-query attention (each key/value head
// serves H / KV query heads; scores / sqrt(D)) as one
// scaled_dot_product_attention op, and the SwiGLU MLP down(silu(gate(x)) * up(x)).
// Initialisation as HF's _init_weights: Linear and Embedding weights
// N(0, initializer_range), biases 0, embed_tokens' pad_token_id row 0, norms 1.
// Under autocast (bf16) the attention runs in bf16, as torch.autocast casts
// scaled_dot_product_attention's inputs; RoPE and the norms stay in f32.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "models/causal_lm.h"
#include "models/llama_config.h"
#include "nn/layers.h"

namespace lazytrain::models {

// Hugging Face's LlamaRMSNorm: weight [hidden], ones at initialisation.
class LlamaRMSNorm : public nn::Module {
 public:
  LlamaRMSNorm(int64_t hidden_size, double eps);
  // x [..., hidden] (f32 or bf16; computed in f32) → [..., hidden] f32.
  Tensor forward(const Tensor& x) const;
  Tensor weight;
  double eps;
};

// Hugging Face's LlamaRotaryEmbedding (rope_type "default"). No parameters:
// inv_freq [D/2] f32 is computed on the host as torch does (f32 arange / D,
// rope_theta ** that, 1 / that) and kept on the device the model is built on
// (HF's non-persistent buffer).
class LlamaRotaryEmbedding : public nn::Module {
 public:
  explicit LlamaRotaryEmbedding(const LlamaConfig& config);
  // position_ids int64 [B, S] (or [1, S]) → (cos, sin), each f32 [B, S, D].
  std::pair<Tensor, Tensor> forward(const Tensor& position_ids) const;
  Tensor inv_freq;
};

// q [B, H, S, D], k [B, KV, S, D], cos/sin [B, S, D] → (q, k) rotated:
// x cos + rotate_half(x) sin, rotate_half(x) = cat(-x[..., D/2:], x[..., :D/2]).
std::pair<Tensor, Tensor> apply_rotary_pos_emb(const Tensor& q, const Tensor& k, const Tensor& cos, const Tensor& sin);

class LlamaAttention : public nn::Module {
 public:
  explicit LlamaAttention(const LlamaConfig& config);
  // hidden [B, S, hidden], cos/sin [B or 1, S, D]; mask: bool [B, 1, S, S]
  // (true: attend; causal and padding in one), or undefined for the causal
  // mask alone. → [B, S, hidden].
  Tensor forward(const Tensor& hidden, const Tensor& cos, const Tensor& sin, const Tensor& mask) const;
  // With a KV cache (GenerationMixin::forward_cached): bias the additive f32
  // mask of the keys attended over; the cache holds the rotated keys.
  Tensor forward_cached(const Tensor& hidden, const Tensor& cos, const Tensor& sin, const Tensor& bias, LayerKVCache& cache,
                        const CacheWrite& write) const;
  std::shared_ptr<nn::Linear> q_proj, k_proj, v_proj, o_proj;
  int64_t heads, kv_heads, head_dim;
  double attention_dropout;

 private:
  // q [B, S, H D] etc. projected and rotated → q [B, H, S, D], k, v [B, KV, S, D].
  std::tuple<Tensor, Tensor, Tensor> project(const Tensor& hidden, const Tensor& cos, const Tensor& sin) const;
  // softmax(q k^T / sqrt(D) + mask) v with k, v repeated to H heads, then o_proj.
  Tensor attend(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool is_causal) const;
};

class LlamaMLP : public nn::Module {
 public:
  explicit LlamaMLP(const LlamaConfig& config);
  // x [..., hidden] → down_proj(silu(gate_proj(x)) * up_proj(x)).
  Tensor forward(const Tensor& x) const;
  std::shared_ptr<nn::Linear> gate_proj, up_proj, down_proj;
};

class LlamaDecoderLayer : public nn::Module {
 public:
  explicit LlamaDecoderLayer(const LlamaConfig& config);
  Tensor forward(const Tensor& hidden, const Tensor& cos, const Tensor& sin, const Tensor& mask) const;
  Tensor forward_cached(const Tensor& hidden, const Tensor& cos, const Tensor& sin, const Tensor& bias, LayerKVCache& cache,
                        const CacheWrite& write) const;
  std::shared_ptr<LlamaAttention> self_attn;
  std::shared_ptr<LlamaMLP> mlp;
  std::shared_ptr<LlamaRMSNorm> input_layernorm, post_attention_layernorm;
};

class LlamaModel : public nn::Module {
 public:
  explicit LlamaModel(const LlamaConfig& config);
  // input_ids int64 [B, S] (S <= max_position_embeddings; positions 0 .. S-1
  // for every row, as HF without position_ids), attention_mask int64 [B, S]
  // (1: a real token) or undefined → the last hidden state [B, S, hidden] (after norm).
  Tensor forward(const Tensor& input_ids, const Tensor& attention_mask) const;
  std::shared_ptr<nn::Embedding> embed_tokens;
  std::vector<std::shared_ptr<LlamaDecoderLayer>> layers;
  std::shared_ptr<LlamaRMSNorm> norm;
  std::shared_ptr<LlamaRotaryEmbedding> rotary_emb;
  // Hugging Face's model.gradient_checkpointing: in training, each layer's
  // activations are recomputed during backward (nn/checkpoint.h).
  bool gradient_checkpointing = false;
};

class LlamaForCausalLM : public CausalLMModel {
 public:
  // Validates the config (Error naming the field).
  explicit LlamaForCausalLM(LlamaConfig config);
  // input_ids int64 [B, S], attention_mask int64 [B, S] or undefined, labels
  // int64 [B, S] (-100: no loss) or undefined. logits [B, S, vocab] (bf16
  // under autocast); the loss is the mean cross entropy of logits[:, :-1]
  // against labels[:, 1:] (shifted inside, as Hugging Face's). Throws Error
  // naming the model when the shapes disagree or S exceeds max_position_embeddings.
  CausalLMOutput forward(const Tensor& input_ids, const Tensor& attention_mask = Tensor(), const Tensor& labels = Tensor()) const override;

  // GenerationMixin (models/causal_lm.h): the cache holds num_key_value_heads
  // heads of rotated keys; forward_cached's positions are RoPE's.
  GenerationLimits generation_limits() const override;
  runtime::Device generation_device() const override { return model->embed_tokens->weight.device(); }
  std::vector<LayerKVCache> new_cache(int64_t batch, int64_t capacity) const override;
  Tensor forward_cached(const Tensor& input_ids, const Tensor& position_ids, const Tensor& bias, std::vector<LayerKVCache>& cache,
                        const CacheWrite& write) const override;

  const LlamaConfig& config() const { return config_; }
  // lm_head.weight: its own [vocab, hidden], or model.embed_tokens.weight when tied.
  const Tensor& lm_head_weight() const { return lm_head_weight_; }
  // Hugging Face's gradient_checkpointing_enable() (nn/checkpoint.h).
  void gradient_checkpointing_enable() override { model->gradient_checkpointing = true; }
  nlohmann::json config_json() const override { return config_.to_json(); }
  std::shared_ptr<LlamaModel> model;

 private:
  LlamaConfig config_;
  Tensor lm_head_weight_;
};

}  // namespace lazytrain::models
