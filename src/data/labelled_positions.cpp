#include "data/labelled_positions.h"

#include <algorithm>
#include <cmath>

namespace lazytrain::data {

namespace {
constexpr int64_t kIgnoreIndex = -100;
constexpr int64_t kBuckets = 64;
}  // namespace

int64_t labelled_capacity(int64_t tokens, int64_t labelled, double mlm_probability) {
  if (tokens <= 0) return 0;
  const double n = static_cast<double>(tokens), p = mlm_probability;
  const double expected_high = p > 0 ? n * p + 6.0 * std::sqrt(n * p * (1.0 - p)) : 0.0;
  const int64_t need = std::max<int64_t>(labelled, static_cast<int64_t>(std::ceil(expected_high)));
  const int64_t step = (tokens + kBuckets - 1) / kBuckets;
  const int64_t steps = std::max<int64_t>(1, (need + step - 1) / step);
  return std::min(tokens, steps * step);
}

LabelledPositions labelled_positions(std::span<const int64_t> labels, double mlm_probability) {
  LabelledPositions out;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] == kIgnoreIndex) continue;
    out.positions.push_back(static_cast<int64_t>(i));
    out.labels.push_back(labels[i]);
  }
  const int64_t capacity =
      labelled_capacity(static_cast<int64_t>(labels.size()), static_cast<int64_t>(out.positions.size()), mlm_probability);
  out.positions.resize(static_cast<size_t>(capacity), 0);
  out.labels.resize(static_cast<size_t>(capacity), kIgnoreIndex);
  return out;
}

}  // namespace lazytrain::data
