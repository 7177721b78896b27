#include "train/eval_prediction.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace lazytrain::train {

namespace {

// Writes -100 in `dtype` into `count` elements at `out`.
void fill_ignore_index(uint8_t* out, int64_t count, DType dtype) {
  for (int64_t i = 0; i < count; ++i) {
    switch (dtype) {
      case DType::kInt64: reinterpret_cast<int64_t*>(out)[i] = -100; break;
      case DType::kInt32: reinterpret_cast<int32_t*>(out)[i] = -100; break;
      case DType::kFloat32: reinterpret_cast<float*>(out)[i] = -100.0f; break;
      default: throw Error("[EvalPrediction] cannot pad " + torch_name(dtype) + " predictions of different shapes");
    }
  }
}

}  // namespace

Literal concat_rows(const std::vector<Literal>& parts, const std::vector<int64_t>& rows) {
  check(parts.size() == rows.size(), "EvalPrediction", "one row count per part");
  if (parts.empty()) return Literal(Shape{0}, DType::kInt64);
  const Literal& first = parts.front();
  Shape trailing(first.shape().begin() + (first.shape().empty() ? 0 : 1), first.shape().end());
  for (const Literal& p : parts) {
    if (p.shape().size() != first.shape().size() || p.dtype() != first.dtype()) {
      throw Error("[EvalPrediction] batches gave predictions of different ranks or dtypes (" + torch_name(first.dtype()) + " vs " +
                  torch_name(p.dtype()) + ")");
    }
    for (size_t d = 1; d < p.shape().size(); ++d) trailing[d - 1] = std::max(trailing[d - 1], p.shape()[d]);
  }
  int64_t total = 0;
  for (int64_t r : rows) total += r;
  Shape shape{total};
  shape.insert(shape.end(), trailing.begin(), trailing.end());
  Literal out(shape, first.dtype());
  auto* dst = static_cast<uint8_t*>(out.mutable_raw());
  const int64_t item = itemsize(first.dtype());
  const int64_t row_elements = numel(trailing);
  int64_t at = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Literal& p = parts[i];
    const auto* src = static_cast<const uint8_t*>(p.raw());
    const Shape part_trailing(p.shape().begin() + 1, p.shape().end());
    const bool same = part_trailing == trailing;
    for (int64_t r = 0; r < rows[i]; ++r, ++at) {
      uint8_t* row = dst + at * row_elements * item;
      if (same) {
        std::memcpy(row, src + r * row_elements * item, static_cast<size_t>(row_elements * item));
        continue;
      }
      // Different trailing shape: copy element by element into the larger row, -100 elsewhere.
      fill_ignore_index(row, row_elements, first.dtype());
      const int64_t part_row = numel(part_trailing);
      for (int64_t e = 0; e < part_row; ++e) {
        int64_t rest = e, offset = 0, stride = 1;
        for (int64_t d = static_cast<int64_t>(part_trailing.size()) - 1; d >= 0; --d) {
          const int64_t index = rest % part_trailing[static_cast<size_t>(d)];
          rest /= part_trailing[static_cast<size_t>(d)];
          offset += index * stride;
          stride *= trailing[static_cast<size_t>(d)];
        }
        std::memcpy(row + offset * item, src + (r * part_row + e) * item, static_cast<size_t>(item));
      }
    }
  }
  return out;
}

}  // namespace lazytrain::train
