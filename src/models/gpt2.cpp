#include "nn/checkpoint.h"
#include "models/gpt2.h"

#include <cmath>
#include <limits>

#include "core/error.h"
#include "models/modeling_utils.h"

namespace lazytrain::models {

Conv1D::Conv1D(int64_t in_features, int64_t out_features, double init_std) {
  weight = register_parameter("weight", nn::normal_init({in_features, out_features}, init_std));
  bias = register_parameter("bias", nn::constant_init({out_features}, 0.0f));
}

// As linear (autocast casts it as torch's addmm: bias included) over the transposed weight.
Tensor Conv1D::forward(const Tensor& x) const { return linear(x, weight.t(), bias); }

Tensor gelu_new(const Tensor& x) { return gelu(x, "tanh"); }

GPT2Attention::GPT2Attention(const GPT2Config& c)
    : heads(c.n_head), head_dim(c.n_embd / c.n_head), scale(c.scale_attn_weights), sdpa(c.attn_implementation == "sdpa"), attn_pdrop(c.attn_pdrop) {
  c_attn = register_module("c_attn", std::make_shared<Conv1D>(c.n_embd, 3 * c.n_embd, c.initializer_range));
  c_proj = register_module("c_proj", std::make_shared<Conv1D>(c.n_embd, c.n_embd, c.initializer_range / std::sqrt(2.0 * c.n_layer)));
  attn_dropout = register_module("attn_dropout", std::make_shared<nn::Dropout>(c.attn_pdrop));
  resid_dropout = register_module("resid_dropout", std::make_shared<nn::Dropout>(c.resid_pdrop));
}

Tensor GPT2Attention::forward(const Tensor& hidden, const Tensor& mask) const {
  const int64_t b = hidden.shape()[0], s = hidden.shape()[1], e = heads * head_dim;
  Tensor qkv = c_attn->forward(hidden);
  auto split_heads = [&](int64_t part) { return qkv.slice(2, part * e, (part + 1) * e).view({b, s, heads, head_dim}).permute({0, 2, 1, 3}); };
  Tensor q = split_heads(0), k = split_heads(1), v = split_heads(2);
  if (sdpa) {
    // torch.autocast runs scaled_dot_product_attention in the lower dtype; q, k, v
    // already are (c_attn ran under it), so no cast. Undefined mask: is_causal.
    const Tensor context = scaled_dot_product_attention(q, k, v, mask, is_training() ? attn_pdrop : 0.0, !mask.defined(),
                                                        scale ? std::nullopt : std::optional<double>(1.0));
    return resid_dropout->forward(c_proj->forward(context.permute({0, 2, 1, 3}).reshape({b, s, e})));
  }
  Tensor scores = matmul(q, k.transpose(-1, -2));
  if (scale) scores = scores / std::sqrt(static_cast<double>(head_dim));
  // Causal: position i attends to j <= i; the rest get finfo(float32).min (HF's mask_value).
  runtime::DeviceGuard on_input_device(hidden.device());
  Tensor positions = arange(s);
  Tensor causal = ge(positions.unsqueeze(1), positions.unsqueeze(0));
  scores = where(causal, scores, full({}, std::numeric_limits<float>::lowest(), scores.dtype()));
  if (mask.defined()) scores = scores + mask;
  Tensor probs = attn_dropout->forward(softmax(scores, -1).to(v.dtype()));
  Tensor context = matmul(probs, v).permute({0, 2, 1, 3}).reshape({b, s, e});
  return resid_dropout->forward(c_proj->forward(context));
}

Tensor GPT2Attention::forward_cached(const Tensor& hidden, const Tensor& bias, LayerKVCache& cache, const CacheWrite& write) const {
  const int64_t b = hidden.shape()[0], s = hidden.shape()[1], e = heads * head_dim;
  Tensor qkv = c_attn->forward(hidden);
  auto split_heads = [&](int64_t part) { return qkv.slice(2, part * e, (part + 1) * e).view({b, s, heads, head_dim}).permute({0, 2, 1, 3}); };
  Tensor q = split_heads(0), k = split_heads(1), v = split_heads(2);
  const auto [keys, values] = update_kv_cache(cache, k, v, write);
  Tensor scores = matmul(q, keys.transpose(-1, -2));
  if (scale) scores = scores / std::sqrt(static_cast<double>(head_dim));
  Tensor probs = softmax(scores + bias, -1);
  Tensor context = matmul(probs, values).permute({0, 2, 1, 3}).reshape({b, s, e});
  return c_proj->forward(context);
}

GPT2MLP::GPT2MLP(const GPT2Config& c) {
  c_fc = register_module("c_fc", std::make_shared<Conv1D>(c.n_embd, c.inner_size(), c.initializer_range));
  c_proj = register_module("c_proj", std::make_shared<Conv1D>(c.inner_size(), c.n_embd, c.initializer_range / std::sqrt(2.0 * c.n_layer)));
  dropout = register_module("dropout", std::make_shared<nn::Dropout>(c.resid_pdrop));
}

Tensor GPT2MLP::forward(const Tensor& x) const { return dropout->forward(c_proj->forward(gelu_new(c_fc->forward(x)))); }

GPT2Block::GPT2Block(const GPT2Config& c) {
  ln_1 = register_module("ln_1", std::make_shared<nn::LayerNorm>(c.n_embd, c.layer_norm_epsilon));
  attn = register_module("attn", std::make_shared<GPT2Attention>(c));
  ln_2 = register_module("ln_2", std::make_shared<nn::LayerNorm>(c.n_embd, c.layer_norm_epsilon));
  mlp = register_module("mlp", std::make_shared<GPT2MLP>(c));
}

Tensor GPT2Block::forward(const Tensor& hidden, const Tensor& mask) const {
  Tensor x = hidden + attn->forward(ln_1->forward(hidden), mask);
  return x + mlp->forward(ln_2->forward(x));
}

Tensor GPT2Block::forward_cached(const Tensor& hidden, const Tensor& bias, LayerKVCache& cache, const CacheWrite& write) const {
  Tensor x = hidden + attn->forward_cached(ln_1->forward(hidden), bias, cache, write);
  return x + mlp->forward(ln_2->forward(x));
}

GPT2Model::GPT2Model(const GPT2Config& c) : sdpa(c.attn_implementation == "sdpa") {
  wte = register_module("wte", std::make_shared<nn::Embedding>(c.vocab_size, c.n_embd, c.initializer_range));
  wpe = register_module("wpe", std::make_shared<nn::Embedding>(c.n_positions, c.n_embd, c.initializer_range));
  drop = register_module("drop", std::make_shared<nn::Dropout>(c.embd_pdrop));
  auto list = register_module("h", std::make_shared<nn::ModuleList>());
  for (int64_t i = 0; i < c.n_layer; ++i) h.push_back(list->append(std::make_shared<GPT2Block>(c)));
  ln_f = register_module("ln_f", std::make_shared<nn::LayerNorm>(c.n_embd, c.layer_norm_epsilon));
}

Tensor GPT2Model::forward(const Tensor& input_ids, const Tensor& attention_mask) const {
  const int64_t s = input_ids.shape()[1];
  runtime::DeviceGuard on_input_device(input_ids.device());
  Tensor mask;
  if (attention_mask.defined() && sdpa) {
    // One bool [B, 1, S, S] mask, key j <= query i and not padding (sdpa takes no
    // is_causal with a mask); the kernel skips the blocks it masks whole.
    const Tensor positions = arange(s);
    const Tensor causal = ge(positions.view({s, 1}), positions.view({1, s}));
    mask = logical_and(causal.view({1, 1, s, s}), ne(attention_mask, 0.0).view({input_ids.shape()[0], 1, 1, s}));
  } else if (attention_mask.defined()) {
    mask = get_extended_attention_mask(attention_mask);
  }
  Tensor x = drop->forward(wte->forward(input_ids) + wpe->forward(arange(s)).unsqueeze(0));
  for (const auto& block : h) {
    if (gradient_checkpointing && is_training()) {
      x = nn::checkpoint([block, mask](const Tensor& in) { return block->forward(in, mask); }, x);
    } else {
      x = block->forward(x, mask);
    }
  }
  return ln_f->forward(x);
}

GPT2LMHeadModel::GPT2LMHeadModel(GPT2Config config) : config_(std::move(config)) {
  config_.validate("GPT2LMHeadModel's config");
  transformer = register_module("transformer", std::make_shared<GPT2Model>(config_));
  // lm_head.weight is transformer.wte.weight: registered under both names, listed once.
  register_module("lm_head", std::make_shared<TiedLMHead>(transformer->wte->weight));
}

CausalLMOutput GPT2LMHeadModel::forward(const Tensor& input_ids, const Tensor& attention_mask, const Tensor& labels) const {
  check(input_ids.dim() == 2, "GPT2LMHeadModel", "input_ids must be [batch, sequence], got " + shape_str(input_ids.shape()));
  const int64_t s = input_ids.shape()[1];
  check(s <= config_.n_positions, "GPT2LMHeadModel",
        "a sequence of " + std::to_string(s) + " tokens is longer than n_positions " + std::to_string(config_.n_positions));
  check(!attention_mask.defined() || attention_mask.shape() == input_ids.shape(), "GPT2LMHeadModel",
        "attention_mask " + (attention_mask.defined() ? shape_str(attention_mask.shape()) : std::string()) + " differs from input_ids " +
            shape_str(input_ids.shape()));
  CausalLMOutput out;
  Tensor hidden = transformer->forward(input_ids, attention_mask);
  out.logits = matmul(hidden, transformer->wte->weight.t());
  // The mean cross entropy of logits[:, :-1] against labels[:, 1:], as Hugging Face's.
  if (labels.defined()) out.loss = causal_lm_loss(out.logits, labels, "GPT2LMHeadModel");
  return out;
}

GenerationLimits GPT2LMHeadModel::generation_limits() const {
  return {"GPT-2", config_.vocab_size, config_.n_positions, "n_positions", config_.eos_token_id, std::nullopt};
}

std::vector<LayerKVCache> GPT2LMHeadModel::new_cache(int64_t batch, int64_t capacity) const {
  check(batch >= 1 && capacity >= 1, "GPT2LMHeadModel", "a KV cache needs batch and capacity >= 1");
  return zero_kv_cache(config_.n_layer, batch, config_.n_head, capacity, config_.n_embd / config_.n_head, generation_device());
}

Tensor GPT2LMHeadModel::forward_cached(const Tensor& input_ids, const Tensor& position_ids, const Tensor& bias,
                                       std::vector<LayerKVCache>& cache, const CacheWrite& write) const {
  check_cached_forward("GPT2LMHeadModel", input_ids, position_ids, bias, cache, transformer->h.size(), write);
  const int64_t b = input_ids.shape()[0], s = input_ids.shape()[1];
  Tensor x = transformer->wte->forward(input_ids) + transformer->wpe->forward(position_ids);
  for (size_t i = 0; i < transformer->h.size(); ++i) x = transformer->h[i]->forward_cached(x, bias, cache[i], write);
  Tensor last = transformer->ln_f->forward(x.slice(1, s - 1, s)).reshape({b, config_.n_embd});
  return matmul(last, transformer->wte->weight.t());
}

}  // namespace lazytrain::models
