// Loading golden tensors (tests/golden/*.safetensors, made by tools/ with PyTorch)
// and comparing lazytrain tensors against them.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "tensor/tensor.h"
#include "train/safetensors.h"

namespace lazytrain::testing {

inline std::string golden_path(const std::string& file) { return std::string(LAZYTRAIN_SOURCE_DIR) + "/tests/golden/" + file; }

class GoldenFile {
 public:
  explicit GoldenFile(const std::string& file) : records_(train::load_safetensors(golden_path(file), &metadata_)) {}
  bool has(const std::string& name) const { return records_.count(name) > 0; }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, record] : records_) out.push_back(name);
    return out;
  }
  // The golden tensor `name` as a lazytrain tensor (device data).
  Tensor tensor(const std::string& name) const {
    const auto& r = records_.at(name);
    return from_buffer(r.data.data(), r.shape, dtype_from_safetensors_name(r.dtype));
  }
  std::vector<float> floats(const std::string& name) const { return tensor(name).to_vector<float>(); }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::map<std::string, std::string> metadata_;
  std::map<std::string, train::TensorRecord> records_;
};

// Every element within rtol·|expected| + atol; reports the worst element.
// ||actual - expected|| / ||expected|| over all elements (bf16 results are
// compared as whole tensors: they agree to bf16's precision, not bit for bit).
inline double relative_l2(const Tensor& actual, const std::vector<float>& expected) {
  std::vector<float> got = to_dtype(actual, DType::kFloat32).to_vector<float>();
  EXPECT_EQ(got.size(), expected.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < got.size() && i < expected.size(); ++i) {
    diff += (static_cast<double>(got[i]) - expected[i]) * (static_cast<double>(got[i]) - expected[i]);
    norm += static_cast<double>(expected[i]) * expected[i];
  }
  return std::sqrt(diff / norm);
}

inline void expect_close(const Tensor& actual, const std::vector<float>& expected, double rtol, double atol, const std::string& what) {
  std::vector<float> got = actual.to_vector<float>();
  ASSERT_EQ(got.size(), expected.size()) << what << ": element count";
  double worst = 0;
  size_t worst_i = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double excess = std::abs(static_cast<double>(got[i]) - expected[i]) - (rtol * std::abs(expected[i]) + atol);
    if (!(excess <= worst)) {
      worst = std::isnan(excess) ? INFINITY : excess;
      worst_i = i;
    }
  }
  EXPECT_LE(worst, 0.0) << what << ": element " << worst_i << " is " << got[worst_i] << ", expected " << expected[worst_i];
}

}  // namespace lazytrain::testing
