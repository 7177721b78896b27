// DeviceBatch: a collated Batch as device tensors [batch_size, seq_len] (int64),
// what a DeviceLoader hands the training loop.
#pragma once

#include "data/data_collator.h"
#include "tensor/tensor.h"

namespace lazytrain::distributed {

struct DeviceBatch {
  Tensor input_ids, attention_mask, labels;
  // The labelled tokens (data/labelled_positions.h): int64 [K] flat indices into
  // the batch's B*S tokens and their labels (-100 past the labelled ones), for a
  // masked-LM loss on those rows only (MaskedLMModel::forward_labelled).
  Tensor masked_lm_positions, masked_lm_labels;
  int64_t batch_size = 0, seq_len = 0;
  int64_t num_examples = 0;  // rows holding examples (the rest pad a last partial batch)
  bool has_labels = false;  // some label is not -100 (the loss is defined)
};

// Copies `batch` to the current device (device data tensors; no graph is traced).
DeviceBatch to_device(const data::Batch& batch);

}  // namespace lazytrain::distributed
