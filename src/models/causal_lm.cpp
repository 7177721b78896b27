#include "models/causal_lm.h"

#include "core/error.h"
#include "tensor/ops.h"

namespace lazytrain::models {

Tensor shift_labels_left(const Tensor& labels) {
  check(labels.dim() == 2, "shift_labels_left", "labels must be [batch, sequence], got " + shape_str(labels.shape()));
  const int64_t b = labels.shape()[0], s = labels.shape()[1];
  runtime::DeviceGuard on_labels_device(labels.device());
  return cat({labels.slice(1, 1, s), full({b, 1}, -100.0, labels.dtype())}, 1);
}

Tensor causal_lm_loss(const Tensor& logits, const Tensor& labels, const char* model) {
  const int64_t b = logits.shape()[0], s = logits.shape()[1], vocab = logits.shape()[2];
  check(labels.shape() == Shape({b, s}), model, "labels " + shape_str(labels.shape()) + " differ from input_ids " + shape_str(Shape{b, s}));
  check(s >= 2, model, "a loss needs at least 2 tokens a sequence (labels are shifted by one)");
  return cross_entropy(to_dtype(logits.reshape({b * s, vocab}), DType::kFloat32), shift_labels_left(labels).reshape({b * s}));
}

std::pair<Tensor, Tensor> update_kv_cache(LayerKVCache& cache, const Tensor& k, const Tensor& v, const CacheWrite& write) {
  const int64_t s = k.shape()[2], capacity = cache.key.shape()[2];
  if (!write.slot.defined()) {  // a prefill attends over its own tokens
    cache.key = cat({k.to(DType::kFloat32), cache.key.slice(2, s, capacity)}, 2);
    cache.value = cat({v.to(DType::kFloat32), cache.value.slice(2, s, capacity)}, 2);
    return {k, v};
  }
  runtime::DeviceGuard on_cache_device(cache.key.device());
  Tensor at_slot = eq(arange(capacity), write.slot).view({1, 1, capacity, 1});
  cache.key = where(at_slot, k.to(DType::kFloat32), cache.key);
  cache.value = where(at_slot, v.to(DType::kFloat32), cache.value);
  return {cache.key, cache.value};
}

std::vector<LayerKVCache> zero_kv_cache(int64_t layers, int64_t batch, int64_t kv_heads, int64_t capacity, int64_t head_dim,
                                        const runtime::Device& device) {
  runtime::DeviceGuard on_model_device(device);
  std::vector<LayerKVCache> cache(static_cast<size_t>(layers));
  for (LayerKVCache& layer : cache) {
    layer.key = zeros({batch, kv_heads, capacity, head_dim});
    layer.value = zeros({batch, kv_heads, capacity, head_dim});
  }
  return cache;
}

void check_cached_forward(const char* model, const Tensor& input_ids, const Tensor& position_ids, const Tensor& bias,
                          const std::vector<LayerKVCache>& cache, size_t layers, const CacheWrite& write) {
  check(input_ids.dim() == 2 && position_ids.shape() == input_ids.shape(), model,
        "input_ids and position_ids must be one [batch, sequence] shape, got " + shape_str(input_ids.shape()) + " and " +
            shape_str(position_ids.shape()));
  check(cache.size() == layers, model, "the KV cache has " + std::to_string(cache.size()) + " layers, the model " + std::to_string(layers));
  const int64_t b = input_ids.shape()[0], s = input_ids.shape()[1], capacity = cache[0].key.shape()[2];
  check(cache[0].key.shape()[0] == b, model,
        "the KV cache holds " + std::to_string(cache[0].key.shape()[0]) + " sequences, input_ids " + std::to_string(b));
  check(write.slot.defined() ? s == 1 : s <= capacity, model,
        write.slot.defined() ? "a decode step takes one token a sequence, got " + std::to_string(s)
                             : "a prompt of " + std::to_string(s) + " tokens does not fit a KV cache of " + std::to_string(capacity));
  const Shape want_bias{b, 1, s, write.slot.defined() ? capacity : s};
  check(bias.shape() == want_bias, model, "bias must be " + shape_str(want_bias) + ", got " + shape_str(bias.shape()));
}

}  // namespace lazytrain::models
