// ArrayRef and MutableArrayRef: a dense, row-major array the HLO evaluator's
// kernels read or write, without owning it. Host Literals and the interpreter
// backend's device buffers both lend their bytes this way, so the same kernels
// serve constant folding and execution without a copy.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/shape.h"

namespace lazytrain::hlo {

class ArrayRef {
 public:
  // `data` holds numel(shape) elements of `dtype`; `shape` must outlive this ref.
  ArrayRef(const void* data, const Shape& shape, DType dtype) : data_(data), shape_(&shape), dtype_(dtype) {}
  const Shape& shape() const { return *shape_; }
  DType dtype() const { return dtype_; }
  int64_t numel() const { return lazytrain::numel(*shape_); }
  int64_t nbytes() const { return numel() * itemsize(dtype_); }
  const void* raw() const { return data_; }
  template <typename T>
  const T* data() const { return static_cast<const T*>(data_); }

 private:
  const void* data_;
  const Shape* shape_;
  DType dtype_;
};

class MutableArrayRef {
 public:
  MutableArrayRef(void* data, const Shape& shape, DType dtype) : data_(data), shape_(&shape), dtype_(dtype) {}
  const Shape& shape() const { return *shape_; }
  DType dtype() const { return dtype_; }
  int64_t numel() const { return lazytrain::numel(*shape_); }
  int64_t nbytes() const { return numel() * itemsize(dtype_); }
  void* raw() const { return data_; }
  template <typename T>
  T* data() const { return static_cast<T*>(data_); }

 private:
  void* data_;
  const Shape* shape_;
  DType dtype_;
};

}  // namespace lazytrain::hlo
