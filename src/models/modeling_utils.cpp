#include "models/modeling_utils.h"

#include <limits>

#include "core/error.h"

namespace lazytrain::models {

Tensor get_extended_attention_mask(const Tensor& attention_mask) {
  const int64_t b = attention_mask.shape()[0], s = attention_mask.shape()[1];
  return (1.0 - attention_mask.to(DType::kFloat32).view({b, 1, 1, s})) * static_cast<double>(std::numeric_limits<float>::lowest());
}

Tensor masked_lm_loss(const Tensor& logits, const Tensor& labels, const char* model) {
  const Shape tokens(logits.shape().begin(), logits.shape().end() - 1);
  if (labels.shape() != tokens) {
    throw Error(std::string("[") + model + "] labels " + shape_str(labels.shape()) + " must match input_ids " + shape_str(tokens));
  }
  return cross_entropy(logits.view({-1, logits.shape().back()}), labels.view({-1}));
}

}  // namespace lazytrain::models
