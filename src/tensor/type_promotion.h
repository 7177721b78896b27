// torch's type promotion (torch.result_type), written once: every binary op
// (arithmetic, comparisons' compute type, where, bitwise) asks it for its
// result dtype, for tensor-tensor and tensor-number operands alike.
//
// The rule: operands fall in categories bool < integral < floating. Among
// operands of one priority (dimensioned tensors, 0-d tensors, Python numbers)
// dtypes promote by promote_types; a higher priority's dtype wins over a lower
// one's of the same or a lower category, and a lower priority only counts when
// its category is higher. So bf16 [n] * f32 0-d is bf16, int32 [n] + int64 0-d
// is int32, int32 [n] * 2.0 is float32 (a Python float is the default dtype,
// float32, whatever its value), bool [n] + 1 is int64.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "core/dtype.h"

namespace lazytrain {

class Tensor;

// A number operand (torch's Scalar / a Python number): its value and its kind.
// The kind, never the value, takes part in promotion: 2.0 is a float as 0.5 is.
// Integers are held as doubles (exact up to 2^53).
struct Scalar {
  enum class Kind : uint8_t { kBool, kInt, kFloat };
  template <typename T>
    requires std::is_arithmetic_v<T>
  Scalar(T v)  // NOLINT: implicit, as at::Scalar
      : value(static_cast<double>(v)),
        kind(std::is_same_v<T, bool> ? Kind::kBool : std::is_integral_v<T> ? Kind::kInt : Kind::kFloat) {}
  Scalar(double v, Kind k) : value(v), kind(k) {}
  double value;
  Kind kind;
  bool is_integral() const { return kind != Kind::kFloat; }
};

// The dtype a number has on its own: bool, int64, or the default float32.
DType scalar_dtype(Scalar::Kind kind);

// One operand as promotion sees it.
struct PromotionOperand {
  enum class Priority : uint8_t { kDimensioned, kZeroDim, kWrappedNumber };
  DType dtype;
  Priority priority;
};
PromotionOperand promotion_operand(const Tensor& t);
PromotionOperand promotion_operand(Scalar s);

// torch.result_type over the operands (at least one).
DType result_type(std::initializer_list<PromotionOperand> operands);
DType result_type(const Tensor& a, const Tensor& b);
DType result_type(const Tensor& a, Scalar b);
DType result_type(Scalar a, Scalar b);

}  // namespace lazytrain
