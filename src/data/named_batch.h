// NamedBatch: one collated batch on the host as named arrays, what a Hugging
// Face collator returns (a dict: "input_ids", "attention_mask", "labels", or
// any other fields a model takes). Every array has the batch's rows as its
// first dimension. The Trainer and the DeviceLoader move it to the device as a
// DeviceBatch (distributed/device_batch.h) without knowing its fields.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/literal.h"
#include "data/data_collator.h"

namespace lazytrain::data {

struct NamedBatch {
  std::map<std::string, Literal> arrays;  // each [rows, ...]; int64, int32, f32, bf16 or bool
  int64_t rows = 0;
  int64_t num_examples = 0;  // rows holding examples; rows past them pad a last partial batch (pad_rows)
  // > 0: "labels" are masked-LM labels drawn at this rate, which sizes the
  // labelled positions the device batch carries (data/labelled_positions.h).
  double mlm_probability = 0.0;
};

// The masked- or causal-LM collator's Batch as a NamedBatch ("input_ids",
// "attention_mask", "labels": int64 [batch_size, seq_len]).
NamedBatch to_named_batch(Batch&& batch);

// Throws Error naming `source` and the field when the batch has no array, an
// array without a first dimension, or arrays whose first dimensions differ
// from each other or from rows.
void check_named_batch(const NamedBatch& batch, const std::string& source);

// Appends rows until the batch has `rows`: "input_ids" pad_token_id,
// "labels" -100 (no loss, no accuracy), every other field 0 (attention_mask 0:
// nothing attends to them). A last partial batch keeps the static batch shape
// this way (one compiled step) instead of being dropped; num_examples keeps
// the real count. Throws Error when the batch has more than `rows` rows.
void pad_rows(NamedBatch& batch, int64_t rows, int64_t pad_token_id);

// The labels that are not -100 ("labels" as int64), 0 without "labels".
int64_t count_labels(const NamedBatch& batch);

}  // namespace lazytrain::data
