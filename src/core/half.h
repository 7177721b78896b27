// BFloat16 and Half: 16-bit floating storage types; arithmetic happens in float.
//
// BFloat16 keeps float32's upper 16 bits; conversion from float rounds to nearest
// even, as PyTorch's c10::BFloat16 does. Half is the compiler's IEEE binary16.
#pragma once

#include <cstdint>

#include "core/scalar_ops.h"

namespace lazytrain {

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  // Rounds as every bf16 op does (scalar_ops::round_to_bf16).
  BFloat16(float value) : bits(scalar_ops::float_to_bf16_bits(value)) {}  // NOLINT: implicit, like c10::BFloat16
  operator float() const { return scalar_ops::bf16_to_float(bits); }  // NOLINT
};

using Half = _Float16;

}  // namespace lazytrain
