// Literal: a host value of one shape and dtype (dense, row-major bytes), as
// XLA's xla::Literal. HLO constants hold one; the HLO evaluator computes them.
//
// Copies share their bytes (an HloInstruction is copied by every pass), and a
// write through a non-const data<T>() first gives this Literal bytes of its own
// (copy on write), so a Literal behaves as a value.
#pragma once

#include <cstdint>
#include <memory>

#include "core/dtype.h"
#include "core/shape.h"

namespace lazytrain {

class Literal {
 public:
  // No value (defined() is false).
  Literal() = default;
  // Zero-filled storage for `shape` elements of `dtype`.
  Literal(Shape shape, DType dtype);
  // A 0-d literal of `dtype` holding `value`: bf16 and f16 rounded to nearest
  // even through float, integers truncated toward zero (as static_cast), a
  // pred true for any non-zero value.
  static Literal scalar(double value, DType dtype);

  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  int64_t numel() const { return lazytrain::numel(shape_); }
  int64_t nbytes() const { return numel() * itemsize(dtype_); }
  bool defined() const { return bytes_ != nullptr; }

  const void* raw() const { return bytes_.get(); }
  // Writable bytes (copied first when another Literal shares them).
  void* mutable_raw();
  // Elements as T, the storage type of dtype() (float, BFloat16, Half, int32_t, int64_t, uint8_t for pred).
  template <typename T>
  const T* data() const { return static_cast<const T*>(raw()); }
  template <typename T>
  T* data() { return static_cast<T*>(mutable_raw()); }

  // The same bytes under `shape`, which must have numel() elements (Error otherwise).
  Literal reshaped(Shape shape) const;

  // Same shape, dtype and bytes (a NaN equals the same NaN bits).
  bool operator==(const Literal& other) const;

 private:
  Shape shape_;
  DType dtype_ = DType::kFloat32;
  std::shared_ptr<uint8_t[]> bytes_;
};

// True when every element of `literal` equals `value` (a NaN never does; a
// pred's elements are 0 or 1; a bf16 or f16 element is compared as a float).
bool all_elements_equal(const Literal& literal, double value);

}  // namespace lazytrain
