// The scalar semantics of HLO's elementwise opcodes, written once, as functors:
// the HLO evaluator (hence the interpreter backend) applies them element by
// element, and every kernel the CPU backend generates includes this very
// header and calls them (MLX's compiled_preamble.h includes the unary_ops.h and
// binary_ops.h of its eager kernels the same way), so the two cannot disagree
// on NaN rules, shifts or rounding.
//
// Generated kernels are compiled where the source tree may be gone: the build
// embeds this file's text into the library (cmake/kernel_prelude.cpp.in), so it
// must stay self-contained C++17 with standard headers only.
//
// Values are computed in float for f32/bf16/f16, in the type itself for s32,
// s64 and pred (uint8_t). A bf16 result is rounded to bf16 after each op.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

// Transcendental functions: SLEEF's 1.0-ULP (u10) kernels, defined (with their
// vector variants) in core/scalar_functions.cpp, which is compiled into the
// library and into every generated shared object. Declared SIMD so that
// vectorized loops call the vector variants: 8 lanes (_ZGVdN8v_*, SLEEF's AVX2)
// when compiled for AVX2, 16 lanes (_ZGVeN16v_*, SLEEF's AVX-512) when
// compiled for AVX-512 (generated kernels on an AVX-512 CPU, backend/cpu/kernel_isa.h).
#if defined(_OPENMP) && defined(__AVX512F__)
#define LAZYTRAIN_DECLARE_SIMD _Pragma("omp declare simd simdlen(16) notinbranch")
#elif defined(_OPENMP)
#define LAZYTRAIN_DECLARE_SIMD _Pragma("omp declare simd simdlen(8) notinbranch")
#else
#define LAZYTRAIN_DECLARE_SIMD
#endif
extern "C" {
LAZYTRAIN_DECLARE_SIMD float lt_expf(float x);
LAZYTRAIN_DECLARE_SIMD float lt_logf(float x);
LAZYTRAIN_DECLARE_SIMD float lt_tanhf(float x);
LAZYTRAIN_DECLARE_SIMD float lt_erff(float x);
LAZYTRAIN_DECLARE_SIMD float lt_cosf(float x);
LAZYTRAIN_DECLARE_SIMD float lt_sinf(float x);
LAZYTRAIN_DECLARE_SIMD float lt_powf(float x, float y);
}

namespace lazytrain::scalar_ops {

// `c ? a : b` by blending bits, exact for every value (NaN payloads kept).
// Branch-free because GCC does not if-convert `c ? a : b` in loops that also
// call SIMD clones.
template <typename T>
inline T select(bool c, T a, T b) {
  using Bits = std::conditional_t<sizeof(T) == 1, uint8_t,
                                  std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
  static_assert(sizeof(Bits) == sizeof(T), "select blends 1-, 2-, 4- or 8-byte values");
  Bits ia, ib;
  __builtin_memcpy(&ia, &a, sizeof(T));
  __builtin_memcpy(&ib, &b, sizeof(T));
  const Bits m = Bits(-Bits(c));
  const Bits r = Bits((ia & m) | (ib & Bits(~m)));
  T out;
  __builtin_memcpy(&out, &r, sizeof(T));
  return out;
}

// ---- bf16: float's upper 16 bits (as PyTorch's c10::BFloat16) ----

// The float a bf16 holds.
inline float bf16_to_float(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
// `x` rounded to the nearest bf16, ties to even; a NaN becomes the quiet NaN
// 0x7fc0. The result is a float holding a bf16 value exactly.
inline float round_to_bf16(float x) {
  uint32_t u;
  __builtin_memcpy(&u, &x, 4);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  const uint32_t nan = uint32_t(-uint32_t((u & 0x7fffffffu) > 0x7f800000u));
  const uint32_t r = (0x7fc00000u & nan) | (rounded & ~nan);
  float f;
  __builtin_memcpy(&f, &r, 4);
  return f;
}
// The bf16 bits of a float that already holds a bf16 value (round_to_bf16's result).
inline uint16_t bf16_bits(float x) {
  uint32_t u;
  __builtin_memcpy(&u, &x, 4);
  return uint16_t(u >> 16);
}
// The bf16 nearest `x` (round_to_bf16), as bits.
inline uint16_t float_to_bf16_bits(float x) { return bf16_bits(round_to_bf16(x)); }

// ---- unary ----

struct Negate {
  template <typename T>
  T operator()(T x) const { return T(-x); }
};
// x < 0 ? -x : x (so abs(-0.0) is -0.0 and a NaN stays itself).
struct Abs {
  template <typename T>
  T operator()(T x) const { return select<T>(x < 0, T(-x), x); }
};
struct Not {
  template <typename T>
  T operator()(T x) const { return T(!x); }
};
struct Exp {
  float operator()(float x) const { return lt_expf(x); }
};
struct Log {
  float operator()(float x) const { return lt_logf(x); }
};
struct Sqrt {
  float operator()(float x) const { return std::sqrt(x); }
};
struct Rsqrt {
  float operator()(float x) const { return 1.0f / std::sqrt(x); }
};
struct Tanh {
  float operator()(float x) const { return lt_tanhf(x); }
};
struct Erf {
  float operator()(float x) const { return lt_erff(x); }
};
struct Cosine {
  float operator()(float x) const { return lt_cosf(x); }
};
struct Sine {
  float operator()(float x) const { return lt_sinf(x); }
};
// convert to pred: any nonzero value (NaN included) is true.
struct ConvertToPred {
  template <typename T>
  uint8_t operator()(T x) const { return uint8_t(x != 0); }
};

// ---- binary ----

struct Add {
  template <typename T>
  T operator()(T a, T b) const { return T(a + b); }
};
struct Subtract {
  template <typename T>
  T operator()(T a, T b) const { return T(a - b); }
};
struct Multiply {
  template <typename T>
  T operator()(T a, T b) const { return T(a * b); }
};
// Integer division by zero is the caller's to reject (it raises an Error).
struct Divide {
  template <typename T>
  T operator()(T a, T b) const { return T(a / b); }
};
// NaN-propagating, as XLA's maximum: a NaN on either side gives NaN.
struct Maximum {
  template <typename T>
  T operator()(T a, T b) const { return select<T>(a != a || a > b, a, b); }
};
struct Minimum {
  template <typename T>
  T operator()(T a, T b) const { return select<T>(a != a || a < b, a, b); }
};
// Floats through SLEEF; integers through double pow, truncated.
struct Power {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) return lt_powf(float(a), float(b));
    else return static_cast<T>(std::pow(a, b));
  }
};
struct And {
  template <typename T>
  T operator()(T a, T b) const { return T(a & b); }
};
struct Or {
  template <typename T>
  T operator()(T a, T b) const { return T(a | b); }
};
// s32 only; a shift outside [0, 32) gives 0 (XLA's semantics), not C++'s undefined behaviour.
struct ShiftRightLogical {
  int32_t operator()(int32_t a, int32_t b) const { return int32_t((b < 0 || b >= 32) ? 0u : (uint32_t(a) >> b)); }
};

// ---- compare (pred results) and select ----

struct Equal {
  template <typename T>
  uint8_t operator()(T a, T b) const { return uint8_t(a == b); }
};
struct NotEqual {
  template <typename T>
  uint8_t operator()(T a, T b) const { return uint8_t(a != b); }
};
struct Less {
  template <typename T>
  uint8_t operator()(T a, T b) const { return uint8_t(a < b); }
};
struct LessEqual {
  template <typename T>
  uint8_t operator()(T a, T b) const { return uint8_t(a <= b); }
};
struct Greater {
  template <typename T>
  uint8_t operator()(T a, T b) const { return uint8_t(a > b); }
};
struct GreaterEqual {
  template <typename T>
  uint8_t operator()(T a, T b) const { return uint8_t(a >= b); }
};
struct Select {
  template <typename T>
  T operator()(bool pred, T on_true, T on_false) const { return select<T>(pred, on_true, on_false); }
};

}  // namespace lazytrain::scalar_ops
