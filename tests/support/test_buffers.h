// Device buffers from host values and back, for backend tests that run
// executables directly (no tensors).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "runtime/buffer.h"

namespace lazytrain::testing {

// A buffer of `shape` x `dtype` holding `values` (T is dtype's storage type).
template <typename T>
runtime::Buffer buffer(const Shape& shape, DType dtype, const std::vector<T>& values) {
  runtime::Buffer b(shape, dtype);
  EXPECT_EQ(static_cast<int64_t>(values.size()), b.numel());
  std::memcpy(b.raw(), values.data(), values.size() * sizeof(T));
  return b;
}

// The elements of `b` as T (its storage type).
template <typename T>
std::vector<T> values(const runtime::Buffer& b) {
  std::vector<T> v(static_cast<size_t>(b.numel()));
  std::memcpy(v.data(), b.raw(), v.size() * sizeof(T));
  return v;
}

}  // namespace lazytrain::testing
