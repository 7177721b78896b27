#include "models/modeling_utils.h"

#include <limits>

#include "core/error.h"
#include "tensor/ops.h"

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

MaskedLMOutput MaskedLMModel::forward(const Tensor& input_ids, const Tensor& attention_mask, const Tensor& labels) const {
  MaskedLMOutput out;
  out.logits = lm_logits(sequence_output(input_ids, attention_mask));
  if (labels.defined()) out.loss = masked_lm_loss(out.logits, labels, model_name());
  return out;
}

MaskedLMOutput MaskedLMModel::forward_labelled(const Tensor& input_ids, const Tensor& attention_mask, const Tensor& masked_lm_positions,
                                               const Tensor& masked_lm_labels, bool all_logits) const {
  if (masked_lm_positions.dim() != 1 || masked_lm_labels.shape() != masked_lm_positions.shape()) {
    throw Error(std::string("[") + model_name() + "] masked_lm_positions " + shape_str(masked_lm_positions.shape()) + " and masked_lm_labels " +
                shape_str(masked_lm_labels.shape()) + " must both be [K]");
  }
  const Tensor hidden = sequence_output(input_ids, attention_mask);
  const int64_t width = hidden.shape().back();
  // The transform and the decoder act on each token alone: gathering the rows
  // first gives the labelled rows' logits exactly.
  const Tensor rows = index_select(hidden.view({-1, width}), 0, masked_lm_positions);
  MaskedLMOutput out;
  out.labelled_logits = out.logits = lm_logits(rows);
  out.loss = cross_entropy(out.logits, masked_lm_labels);
  if (all_logits) out.logits = lm_logits(hidden);
  return out;
}

}  // namespace lazytrain::models
