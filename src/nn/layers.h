// The layers BERT needs, with torch.nn's parameter names and Hugging Face's
// initialisation (weights N(0, initializer_range), biases 0, LayerNorm 1/0).
#pragma once

#include "nn/module.h"

namespace lazytrain::nn {

// y = x @ weight^T + bias; weight [out_features, in_features], bias [out_features].
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, double init_std, bool bias = true);
  // x [..., in_features] → [..., out_features].
  Tensor forward(const Tensor& x) const;
  Tensor weight, bias;
};

// weight [num_embeddings, embedding_dim]. The row at padding_idx starts at zero
// and receives no gradient from lookups (torch.nn.Embedding's padding_idx).
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, double init_std, int64_t padding_idx = -1);
  // indices int64 [...] → [..., embedding_dim].
  Tensor forward(const Tensor& indices) const;
  Tensor weight;
  int64_t padding_idx;
};

// Normalises the last dim; weight/bias [dim].
class LayerNorm : public Module {
 public:
  LayerNorm(int64_t dim, double eps);
  Tensor forward(const Tensor& x) const;
  Tensor weight, bias;
  double eps;
};

class Dropout : public Module {
 public:
  explicit Dropout(double p) : p(p) {}
  Tensor forward(const Tensor& x) const { return dropout(x, p, is_training()); }
  double p;
};

}  // namespace lazytrain::nn
