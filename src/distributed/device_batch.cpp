#include "distributed/device_batch.h"

#include <algorithm>

#include "data/labelled_positions.h"
#include "tensor/ops.h"

namespace lazytrain::distributed {

DeviceBatch to_device(const data::Batch& batch) {
  DeviceBatch d;
  d.batch_size = batch.batch_size;
  d.num_examples = batch.num_examples;
  d.seq_len = batch.seq_len;
  d.input_ids = from_vector(batch.input_ids, {batch.batch_size, batch.seq_len});
  d.attention_mask = from_vector(batch.attention_mask, {batch.batch_size, batch.seq_len});
  d.labels = from_vector(batch.labels, {batch.batch_size, batch.seq_len});
  const data::LabelledPositions labelled = data::labelled_positions(batch.labels, batch.mlm_probability);
  const int64_t capacity = static_cast<int64_t>(labelled.positions.size());
  d.masked_lm_positions = from_vector(labelled.positions, {capacity});
  d.masked_lm_labels = from_vector(labelled.labels, {capacity});
  d.has_labels = std::any_of(batch.labels.begin(), batch.labels.end(), [](int64_t l) { return l != -100; });
  return d;
}

}  // namespace lazytrain::distributed
