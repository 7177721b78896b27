// DeviceBatch: a collated batch on the device, by field name (the dict of
// tensors a Hugging Face Trainer passes to the model as model(**inputs)), what
// a DeviceLoader hands the training loop.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "data/named_batch.h"
#include "tensor/tensor.h"

namespace lazytrain::distributed {

struct DeviceBatch {
  // Each field of the host batch as a device tensor of the same shape and
  // dtype; for a masked-LM batch (mlm_probability > 0) also the labelled
  // tokens (data/labelled_positions.h): "masked_lm_positions" int64 [K], flat
  // indices into the batch's rows x columns, and "masked_lm_labels" int64 [K]
  // (-100 past the labelled ones), for a loss on those rows only
  // (MaskedLMModel::forward_labelled).
  std::map<std::string, Tensor> tensors;
  int64_t batch_size = 0;
  int64_t num_examples = 0;  // rows holding examples (the rest pad a last partial batch)
  int64_t num_tokens = 0;    // input tokens of those rows: their elements of "input_ids" (num_examples without it)
  bool has_labels = true;    // some label is not -100 (the loss is defined); true without "labels"

  bool contains(const std::string& name) const { return tensors.count(name) > 0; }
  // The field `name`; Error naming it and the fields there are otherwise.
  const Tensor& operator[](const std::string& name) const;
};

// Copies `batch` to the current device (device data tensors; no graph is traced).
DeviceBatch to_device(const data::NamedBatch& batch);
// The masked- or causal-LM collator's batch (input_ids, attention_mask, labels).
DeviceBatch to_device(const data::Batch& batch);

}  // namespace lazytrain::distributed
