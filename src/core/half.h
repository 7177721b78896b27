// BFloat16 and Half: 16-bit floating storage types; arithmetic happens in float.
//
// BFloat16 keeps float32's upper 16 bits; conversion from float rounds to nearest
// even, as PyTorch's c10::BFloat16 does. Half is the compiler's IEEE binary16.
#pragma once

#include <cstdint>
#include <cstring>

namespace lazytrain {

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float value) {  // NOLINT: implicit, like c10::BFloat16
    uint32_t u;
    std::memcpy(&u, &value, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) {  // NaN stays a quiet NaN
      bits = 0x7fc0;
      return;
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    bits = static_cast<uint16_t>(u >> 16);
  }
  operator float() const {  // NOLINT
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

using Half = _Float16;

}  // namespace lazytrain
