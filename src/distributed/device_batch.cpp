#include "distributed/device_batch.h"

#include <span>

#include "core/error.h"
#include "data/labelled_positions.h"
#include "tensor/ops.h"

namespace lazytrain::distributed {

const Tensor& DeviceBatch::operator[](const std::string& name) const {
  const auto it = tensors.find(name);
  if (it != tensors.end()) return it->second;
  std::string names;
  for (const auto& [key, value] : tensors) names += (names.empty() ? "" : ", ") + key;
  throw Error("[DeviceBatch] the batch has no field '" + name + "'; it has " + (names.empty() ? "none" : names));
}

DeviceBatch to_device(const data::NamedBatch& batch) {
  data::check_named_batch(batch, "DeviceBatch");
  DeviceBatch d;
  d.batch_size = batch.rows;
  d.num_examples = batch.num_examples;
  d.num_tokens = batch.num_examples;
  for (const auto& [name, a] : batch.arrays) d.tensors.emplace(name, from_buffer(a.raw(), a.shape(), a.dtype()));
  if (const auto ids = batch.arrays.find("input_ids"); ids != batch.arrays.end() && batch.rows > 0) {
    d.num_tokens = batch.num_examples * (ids->second.numel() / batch.rows);
  }
  const auto labels = batch.arrays.find("labels");
  if (labels != batch.arrays.end() && labels->second.dtype() == DType::kInt64) {
    const std::span<const int64_t> values(labels->second.data<int64_t>(), static_cast<size_t>(labels->second.numel()));
    d.has_labels = false;
    for (int64_t l : values) d.has_labels = d.has_labels || l != -100;
    if (batch.mlm_probability > 0.0) {
      const data::LabelledPositions labelled = data::labelled_positions(values, batch.mlm_probability);
      const int64_t capacity = static_cast<int64_t>(labelled.positions.size());
      d.tensors.emplace("masked_lm_positions", from_vector(labelled.positions, {capacity}));
      d.tensors.emplace("masked_lm_labels", from_vector(labelled.labels, {capacity}));
    }
  }
  return d;
}

DeviceBatch to_device(const data::Batch& batch) { return to_device(data::to_named_batch(data::Batch(batch))); }

}  // namespace lazytrain::distributed
