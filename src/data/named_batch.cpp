#include "data/named_batch.h"

#include <cstring>

#include "core/error.h"

namespace lazytrain::data {

namespace {

Literal int64_array(std::vector<int64_t>&& values, int64_t rows, int64_t columns) {
  Literal a({rows, columns}, DType::kInt64);
  if (!values.empty()) std::memcpy(a.mutable_raw(), values.data(), values.size() * sizeof(int64_t));
  return a;
}

// `value` written into `count` elements of `dtype` at `out`.
void fill(void* out, int64_t count, DType dtype, int64_t value) {
  switch (dtype) {
    case DType::kInt64: {
      auto* p = static_cast<int64_t*>(out);
      for (int64_t i = 0; i < count; ++i) p[i] = value;
      return;
    }
    case DType::kInt32: {
      auto* p = static_cast<int32_t*>(out);
      for (int64_t i = 0; i < count; ++i) p[i] = static_cast<int32_t>(value);
      return;
    }
    default:
      // Zero in every other dtype (f32, bf16, f16, bool); only integer fields get other pad values.
      std::memset(out, 0, static_cast<size_t>(count * itemsize(dtype)));
      if (value != 0) throw Error("[pad_rows] a pad value of " + std::to_string(value) + " for a " + torch_name(dtype) + " field");
  }
}

}  // namespace

NamedBatch to_named_batch(Batch&& batch) {
  NamedBatch out;
  out.rows = batch.batch_size;
  out.num_examples = batch.num_examples;
  out.mlm_probability = batch.mlm_probability;
  out.arrays["input_ids"] = int64_array(std::move(batch.input_ids), batch.batch_size, batch.seq_len);
  out.arrays["attention_mask"] = int64_array(std::move(batch.attention_mask), batch.batch_size, batch.seq_len);
  out.arrays["labels"] = int64_array(std::move(batch.labels), batch.batch_size, batch.seq_len);
  return out;
}

void check_named_batch(const NamedBatch& batch, const std::string& source) {
  if (batch.arrays.empty()) throw Error("[" + source + "] the collated batch has no field");
  for (const auto& [name, a] : batch.arrays) {
    if (a.shape().empty()) throw Error("[" + source + "] field '" + name + "' is a scalar; every field needs the batch as its first dimension");
    if (a.shape()[0] != batch.rows) {
      throw Error("[" + source + "] field '" + name + "' has " + std::to_string(a.shape()[0]) + " rows, the batch " + std::to_string(batch.rows));
    }
  }
}

void pad_rows(NamedBatch& batch, int64_t rows, int64_t pad_token_id) {
  check(batch.rows <= rows, "pad_rows", "the batch has " + std::to_string(batch.rows) + " rows, more than the " + std::to_string(rows) + " asked for");
  if (batch.rows == rows) return;
  for (auto& [name, a] : batch.arrays) {
    Shape shape = a.shape();
    const int64_t row_elements = batch.rows > 0 ? a.numel() / batch.rows : numel(Shape(shape.begin() + 1, shape.end()));
    shape[0] = rows;
    Literal padded(shape, a.dtype());
    auto* out = static_cast<uint8_t*>(padded.mutable_raw());
    if (a.nbytes() > 0) std::memcpy(out, a.raw(), static_cast<size_t>(a.nbytes()));
    const int64_t value = name == "labels" ? -100 : name == "input_ids" ? pad_token_id : 0;
    fill(out + a.nbytes(), (rows - batch.rows) * row_elements, a.dtype(), value);
    a = std::move(padded);
  }
  batch.rows = rows;
}

int64_t count_labels(const NamedBatch& batch) {
  const auto it = batch.arrays.find("labels");
  if (it == batch.arrays.end() || it->second.dtype() != DType::kInt64) return 0;
  const int64_t* p = it->second.data<int64_t>();
  int64_t n = 0;
  for (int64_t i = 0; i < it->second.numel(); ++i) n += p[i] != -100;
  return n;
}

}  // namespace lazytrain::data
