#include <cstring>

#include "hlo/evaluator/kernels.h"

namespace lazytrain::hlo::evaluator {

namespace {

template <typename T>
void copy_typed(const T* src, const std::vector<int64_t>& strides, T* dst, const Shape& shape) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  const int64_t inner = shape[rank - 1];
  const int64_t inner_stride = strides[rank - 1];
  const int64_t rows = numel(shape) / std::max<int64_t>(inner, 1);
  if (inner == 0) return;
#pragma omp parallel for if (rows * inner * static_cast<int64_t>(sizeof(T)) >= kParallelCopyBytes) schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    // Decode the row index into the outer dims' offset in src.
    int64_t rem = row, offset = 0;
    for (int64_t d = rank - 2; d >= 0; --d) {
      int64_t i = rem % shape[d];
      rem /= shape[d];
      offset += i * strides[d];
    }
    const T* s = src + offset;
    T* o = dst + row * inner;
    if (inner_stride == 1) {
      std::memcpy(o, s, sizeof(T) * inner);
    } else if (inner_stride == 0) {
      for (int64_t j = 0; j < inner; ++j) o[j] = s[0];
    } else {
      for (int64_t j = 0; j < inner; ++j) o[j] = s[j * inner_stride];
    }
  }
}

}  // namespace

void strided_copy(const void* src, const std::vector<int64_t>& strides, void* dst, const Shape& shape, int64_t elem) {
  switch (elem) {
    case 1: copy_typed(static_cast<const uint8_t*>(src), strides, static_cast<uint8_t*>(dst), shape); break;
    case 2: copy_typed(static_cast<const uint16_t*>(src), strides, static_cast<uint16_t*>(dst), shape); break;
    case 4: copy_typed(static_cast<const uint32_t*>(src), strides, static_cast<uint32_t*>(dst), shape); break;
    default: copy_typed(static_cast<const uint64_t*>(src), strides, static_cast<uint64_t*>(dst), shape); break;
  }
}

}  // namespace lazytrain::hlo::evaluator
