#include "models/llama.h"

#include <cmath>

#include "core/error.h"
#include "nn/checkpoint.h"
#include "tensor/autocast.h"

namespace lazytrain::models {

LlamaRMSNorm::LlamaRMSNorm(int64_t hidden_size, double eps) : eps(eps) {
  weight = register_parameter("weight", nn::constant_init({hidden_size}, 1.0f));
}

Tensor LlamaRMSNorm::forward(const Tensor& x) const { return rms_norm(x, {x.shape().back()}, weight, eps); }

LlamaRotaryEmbedding::LlamaRotaryEmbedding(const LlamaConfig& c) {
  const int64_t dim = c.attention_head_dim();
  std::vector<float> values(static_cast<size_t>(dim / 2));
  // As torch computes 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float) / dim)): in f32.
  for (int64_t i = 0; i < dim / 2; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(dim);
    values[static_cast<size_t>(i)] = 1.0f / std::pow(static_cast<float>(c.rope_theta), exponent);
  }
  inv_freq = from_vector(values, {dim / 2});
}

std::pair<Tensor, Tensor> LlamaRotaryEmbedding::forward(const Tensor& position_ids) const {
  const Tensor freqs = position_ids.to(DType::kFloat32).unsqueeze(-1) * inv_freq;  // [B, S, D/2]
  const Tensor angles = cat({freqs, freqs}, -1);
  return {cos(angles), sin(angles)};
}

namespace {
Tensor rotate_half(const Tensor& x) {
  const int64_t d = x.shape().back();
  return cat({-x.slice(-1, d / 2, d), x.slice(-1, 0, d / 2)}, -1);
}
}  // namespace

std::pair<Tensor, Tensor> apply_rotary_pos_emb(const Tensor& q, const Tensor& k, const Tensor& cos, const Tensor& sin) {
  const Tensor c = cos.unsqueeze(1), s = sin.unsqueeze(1);  // broadcast over the heads
  return {q * c + rotate_half(q) * s, k * c + rotate_half(k) * s};
}

LlamaAttention::LlamaAttention(const LlamaConfig& c)
    : heads(c.num_attention_heads), kv_heads(c.key_value_heads()), head_dim(c.attention_head_dim()), attention_dropout(c.attention_dropout) {
  const double std = c.initializer_range;
  q_proj = register_module("q_proj", std::make_shared<nn::Linear>(c.hidden_size, heads * head_dim, std, c.attention_bias));
  k_proj = register_module("k_proj", std::make_shared<nn::Linear>(c.hidden_size, kv_heads * head_dim, std, c.attention_bias));
  v_proj = register_module("v_proj", std::make_shared<nn::Linear>(c.hidden_size, kv_heads * head_dim, std, c.attention_bias));
  o_proj = register_module("o_proj", std::make_shared<nn::Linear>(heads * head_dim, c.hidden_size, std, c.attention_bias));
}

std::tuple<Tensor, Tensor, Tensor> LlamaAttention::project(const Tensor& hidden, const Tensor& cos, const Tensor& sin) const {
  const int64_t b = hidden.shape()[0], s = hidden.shape()[1];
  auto split_heads = [&](const Tensor& x, int64_t n) { return x.view({b, s, n, head_dim}).transpose(1, 2); };
  const Tensor q = split_heads(q_proj->forward(hidden), heads), k = split_heads(k_proj->forward(hidden), kv_heads);
  const Tensor v = split_heads(v_proj->forward(hidden), kv_heads);
  auto [q_rot, k_rot] = apply_rotary_pos_emb(q, k, cos, sin);
  return {q_rot, k_rot, v};
}

Tensor LlamaAttention::attend(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool is_causal) const {
  const int64_t b = q.shape()[0], s = q.shape()[2];
  // HF's repeat_kv: key/value head j serves query heads j * groups .. (j + 1) * groups - 1.
  auto repeat_kv = [&](const Tensor& x) { return heads == kv_heads ? x : repeat_interleave(x, heads / kv_heads, 1); };
  // torch.autocast runs scaled_dot_product_attention in the lower dtype (its inputs cast);
  // outside autocast these are no-ops.
  const Tensor context = scaled_dot_product_attention(autocast_to_lower(q), autocast_to_lower(repeat_kv(k)), autocast_to_lower(repeat_kv(v)),
                                                      mask, is_training() ? attention_dropout : 0.0, is_causal);
  return o_proj->forward(context.transpose(1, 2).reshape({b, s, heads * head_dim}));
}

Tensor LlamaAttention::forward(const Tensor& hidden, const Tensor& cos, const Tensor& sin, const Tensor& mask) const {
  const auto [q, k, v] = project(hidden, cos, sin);
  return attend(q, k, v, mask, !mask.defined());
}

Tensor LlamaAttention::forward_cached(const Tensor& hidden, const Tensor& cos, const Tensor& sin, const Tensor& bias, LayerKVCache& cache,
                                      const CacheWrite& write) const {
  const auto [q, k, v] = project(hidden, cos, sin);
  const auto [keys, values] = update_kv_cache(cache, k, v, write);
  return attend(q, keys, values, bias, false);
}

LlamaMLP::LlamaMLP(const LlamaConfig& c) {
  const double std = c.initializer_range;
  gate_proj = register_module("gate_proj", std::make_shared<nn::Linear>(c.hidden_size, c.intermediate_size, std, c.mlp_bias));
  up_proj = register_module("up_proj", std::make_shared<nn::Linear>(c.hidden_size, c.intermediate_size, std, c.mlp_bias));
  down_proj = register_module("down_proj", std::make_shared<nn::Linear>(c.intermediate_size, c.hidden_size, std, c.mlp_bias));
}

Tensor LlamaMLP::forward(const Tensor& x) const { return down_proj->forward(silu(gate_proj->forward(x)) * up_proj->forward(x)); }

LlamaDecoderLayer::LlamaDecoderLayer(const LlamaConfig& c) {
  self_attn = register_module("self_attn", std::make_shared<LlamaAttention>(c));
  mlp = register_module("mlp", std::make_shared<LlamaMLP>(c));
  input_layernorm = register_module("input_layernorm", std::make_shared<LlamaRMSNorm>(c.hidden_size, c.rms_norm_eps));
  post_attention_layernorm = register_module("post_attention_layernorm", std::make_shared<LlamaRMSNorm>(c.hidden_size, c.rms_norm_eps));
}

Tensor LlamaDecoderLayer::forward(const Tensor& hidden, const Tensor& cos, const Tensor& sin, const Tensor& mask) const {
  const Tensor x = hidden + self_attn->forward(input_layernorm->forward(hidden), cos, sin, mask);
  return x + mlp->forward(post_attention_layernorm->forward(x));
}

Tensor LlamaDecoderLayer::forward_cached(const Tensor& hidden, const Tensor& cos, const Tensor& sin, const Tensor& bias, LayerKVCache& cache,
                                         const CacheWrite& write) const {
  const Tensor x = hidden + self_attn->forward_cached(input_layernorm->forward(hidden), cos, sin, bias, cache, write);
  return x + mlp->forward(post_attention_layernorm->forward(x));
}

LlamaModel::LlamaModel(const LlamaConfig& c) {
  embed_tokens = register_module("embed_tokens", std::make_shared<nn::Embedding>(c.vocab_size, c.hidden_size, c.initializer_range,
                                                                                 c.pad_token_id.value_or(-1)));
  auto list = register_module("layers", std::make_shared<nn::ModuleList>());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) layers.push_back(list->append(std::make_shared<LlamaDecoderLayer>(c)));
  norm = register_module("norm", std::make_shared<LlamaRMSNorm>(c.hidden_size, c.rms_norm_eps));
  rotary_emb = register_module("rotary_emb", std::make_shared<LlamaRotaryEmbedding>(c));
}

Tensor LlamaModel::forward(const Tensor& input_ids, const Tensor& attention_mask) const {
  const int64_t s = input_ids.shape()[1];
  runtime::DeviceGuard on_input_device(input_ids.device());
  const Tensor positions = arange(s).unsqueeze(0);
  const auto [cos, sin] = rotary_emb->forward(positions);
  Tensor mask;  // undefined: the causal mask alone (sdpa's is_causal)
  if (attention_mask.defined()) {
    const int64_t b = input_ids.shape()[0];
    const Tensor causal = ge(positions.view({s, 1}), positions.view({1, s}));  // [S, S]: key j <= query i
    mask = logical_and(causal.view({1, 1, s, s}), ne(attention_mask, 0.0).view({b, 1, 1, s}));
  }
  Tensor x = embed_tokens->forward(input_ids);
  for (const auto& layer : layers) {
    if (gradient_checkpointing && is_training()) {
      x = nn::checkpoint([layer, cos, sin, mask](const Tensor& in) { return layer->forward(in, cos, sin, mask); }, x);
    } else {
      x = layer->forward(x, cos, sin, mask);
    }
  }
  return norm->forward(x);
}

LlamaForCausalLM::LlamaForCausalLM(LlamaConfig config) : config_(std::move(config)) {
  config_.validate("LlamaForCausalLM's config");
  model = register_module("model", std::make_shared<LlamaModel>(config_));
  if (config_.tie_word_embeddings) {  // registered under both names, listed once (as embed_tokens)
    lm_head_weight_ = register_module("lm_head", std::make_shared<TiedLMHead>(model->embed_tokens->weight))->weight;
  } else {
    lm_head_weight_ = register_module("lm_head", std::make_shared<nn::Linear>(config_.hidden_size, config_.vocab_size,
                                                                              config_.initializer_range, /*bias=*/false))->weight;
  }
}

CausalLMOutput LlamaForCausalLM::forward(const Tensor& input_ids, const Tensor& attention_mask, const Tensor& labels) const {
  check(input_ids.dim() == 2, "LlamaForCausalLM", "input_ids must be [batch, sequence], got " + shape_str(input_ids.shape()));
  const int64_t s = input_ids.shape()[1];
  check(s <= config_.max_position_embeddings, "LlamaForCausalLM",
        "a sequence of " + std::to_string(s) + " tokens is longer than max_position_embeddings " + std::to_string(config_.max_position_embeddings));
  check(!attention_mask.defined() || attention_mask.shape() == input_ids.shape(), "LlamaForCausalLM",
        "attention_mask " + (attention_mask.defined() ? shape_str(attention_mask.shape()) : std::string()) + " differs from input_ids " +
            shape_str(input_ids.shape()));
  CausalLMOutput out;
  out.logits = linear(model->forward(input_ids, attention_mask), lm_head_weight_, Tensor());
  if (labels.defined()) out.loss = causal_lm_loss(out.logits, labels, "LlamaForCausalLM");
  return out;
}

GenerationLimits LlamaForCausalLM::generation_limits() const {
  return {"Llama", config_.vocab_size, config_.max_position_embeddings, "max_position_embeddings", config_.eos_token_id, config_.pad_token_id};
}

std::vector<LayerKVCache> LlamaForCausalLM::new_cache(int64_t batch, int64_t capacity) const {
  check(batch >= 1 && capacity >= 1, "LlamaForCausalLM", "a KV cache needs batch and capacity >= 1");
  return zero_kv_cache(config_.num_hidden_layers, batch, config_.key_value_heads(), capacity, config_.attention_head_dim(), generation_device());
}

Tensor LlamaForCausalLM::forward_cached(const Tensor& input_ids, const Tensor& position_ids, const Tensor& bias,
                                        std::vector<LayerKVCache>& cache, const CacheWrite& write) const {
  check_cached_forward("LlamaForCausalLM", input_ids, position_ids, bias, cache, model->layers.size(), write);
  const int64_t b = input_ids.shape()[0], s = input_ids.shape()[1];
  const auto [cos, sin] = model->rotary_emb->forward(position_ids);
  Tensor x = model->embed_tokens->forward(input_ids);
  for (size_t i = 0; i < model->layers.size(); ++i) x = model->layers[i]->forward_cached(x, cos, sin, bias, cache[i], write);
  const Tensor last = model->norm->forward(x.slice(1, s - 1, s)).reshape({b, config_.hidden_size});
  return linear(last, lm_head_weight_, Tensor());
}

}  // namespace lazytrain::models
