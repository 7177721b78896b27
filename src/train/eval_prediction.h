// EvalPrediction and compute_metrics: Hugging Face's evaluation metrics from
// the predictions of every evaluation example (transformers.EvalPrediction,
// Trainer(compute_metrics=..., preprocess_logits_for_metrics=...)).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/literal.h"
#include "tensor/tensor.h"

namespace lazytrain::train {

// The evaluation's outputs on the host, every example's row in dataset order
// (padding rows left out): predictions [N, ...] (the logits, or what
// preprocess_logits_for_metrics made of them) and label_ids [N, ...]. Batches
// whose trailing dimensions differ (padding to each batch's longest example)
// are padded to the largest with -100, as Hugging Face's nested_concat does.
struct EvalPrediction {
  Literal predictions;
  Literal label_ids;
};

// Metrics by name ("accuracy" -> eval_accuracy: the Trainer adds the "eval_" prefix).
using ComputeMetricsFn = std::function<std::map<std::string, double>(const EvalPrediction&)>;
// Applied on the device to each batch's logits before they are read (e.g.
// argmax(-1), so that [B, S] ids cross to the host instead of [B, S, vocab]
// floats); `labels` are the batch's.
using PreprocessLogitsFn = std::function<Tensor(const Tensor& logits, const Tensor& labels)>;

// Rows [0, rows) of each literal, concatenated along the first dimension,
// trailing dimensions padded with -100 to the largest. Throws Error when the
// literals differ in rank or dtype.
Literal concat_rows(const std::vector<Literal>& parts, const std::vector<int64_t>& rows);

}  // namespace lazytrain::train
