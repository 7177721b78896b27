#include "nn/layers.h"

namespace lazytrain::nn {

Linear::Linear(int64_t in_features, int64_t out_features, double init_std, bool with_bias) {
  weight = register_parameter("weight", normal_init({out_features, in_features}, init_std));
  if (with_bias) bias = register_parameter("bias", constant_init({out_features}, 0.0f));
}

Tensor Linear::forward(const Tensor& x) const { return linear(x, weight, bias); }

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim, double init_std, int64_t padding_idx)
    : padding_idx(padding_idx) {
  weight = register_parameter("weight", normal_init({num_embeddings, embedding_dim}, init_std, padding_idx));
}

Tensor Embedding::forward(const Tensor& indices) const { return embedding(weight, indices, padding_idx); }

LayerNorm::LayerNorm(int64_t dim, double eps) : eps(eps) {
  weight = register_parameter("weight", constant_init({dim}, 1.0f));
  bias = register_parameter("bias", constant_init({dim}, 0.0f));
}

Tensor LayerNorm::forward(const Tensor& x) const { return layer_norm(x, {weight.shape()[0]}, weight, bias, eps); }

}  // namespace lazytrain::nn
