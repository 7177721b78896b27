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

// ---- erf and tanh, inline so that a kernel's loop vectorizes them ----
//
// SLEEF's erff and tanhf (u10) cost about 1.8 and 1.35 ns an element at 16
// lanes (GELU's erf was a fifth of bert-mini's bf16 step); these about 0.55 ns.
// Their error, checked against double precision for every float, is at most
// 1.06 ULP (erf) and 1.51 ULP (tanh) (tests/backend/scalar_ops_test.cpp;
// coefficients from tools/fit_inline_functions.py). Only fmaf, +, -, *, / and bit
// operations: every build rounds them alike (explicit fmaf wherever an add
// follows a product, so that no compiler contracts differently), and the
// interpreter, whose library is compiled with other flags than the kernels,
// gets the same bits.

// e^x for erf and tanh below: x = n ln2 + r, |r| <= ln2/2 (Cody and Waite's two-part
// ln2), e^r by a degree-6 polynomial fitted to relative error, times 2^n in two
// factors so that a subnormal result rounds once. x is clamped to [-104, 89]
// (outside, e^x is 0 or inf in float). At most 0.91 ULP over every float.
inline float expf_inline(float x) {
  x = select(x < -104.0f, -104.0f, x);
  x = select(x > 89.0f, 89.0f, x);
  const float shifter = 0x1.8p23f;  // adding it rounds to an integer, held in the low bits
  const float t = __builtin_fmaf(x, 0x1.715476p+0f, shifter);
  const float n = t - shifter;
  float r = __builtin_fmaf(-n, 0x1.62e430p-1f, x);
  r = __builtin_fmaf(-n, -0x1.05c610p-29f, r);
  float q = 0x1.687c22p-10f;
  q = __builtin_fmaf(q, r, 0x1.123b8ep-7f);
  q = __builtin_fmaf(q, r, 0x1.555b58p-5f);
  q = __builtin_fmaf(q, r, 0x1.55548ep-3f);
  q = __builtin_fmaf(q, r, 0x1.fffff8p-2f);
  const float p = __builtin_fmaf(__builtin_fmaf(q, r, 1.0f), r, 1.0f);
  uint32_t tb;
  __builtin_memcpy(&tb, &t, 4);
  const int32_t k = int32_t(tb - 0x4b400000u);  // n
  const uint32_t b1 = uint32_t((k >> 1) + 127) << 23, b2 = uint32_t(k - (k >> 1) + 127) << 23;
  float s1, s2;
  __builtin_memcpy(&s1, &b1, 4);
  __builtin_memcpy(&s2, &b2, 4);
  // Exact for a normal result (scaling by powers of two), so a caller's add that a
  // compiler contracts with this product into an fma rounds the same; erf and tanh
  // use it only where e^x is normal (x >= -19).
  return p * s1 * s2;
}

// erf(x). |x| < 0.875: x + x P(x^2), P of degree 5; otherwise sign(x) (1 -
// e^(-x^2) Q(|x|)), Q of degree 12 about 2.4375 on [0.875, 4] (erfc(x) e^(x^2) is
// smooth there; beyond 4, 1 - erfc rounds to 1), with x^2 split exactly in two
// by fmaf. Coefficients: least-squares fits to relative error on Chebyshev
// nodes against mpmath's erf, rounded to float. NaN stays NaN, erf(-0) = -0.
inline float erf_f32(float x) {
  const float ax = __builtin_fabsf(x);
  const float t = x * x;
  float p = -0x1.450632p-11f;
  p = __builtin_fmaf(p, t, 0x1.49bd4cp-8f);
  p = __builtin_fmaf(p, t, -0x1.b6f162p-6f);
  p = __builtin_fmaf(p, t, 0x1.ce20f8p-4f);
  p = __builtin_fmaf(p, t, -0x1.81270ap-2f);
  p = __builtin_fmaf(p, t, 0x1.06eba6p-3f);
  const float small = __builtin_fmaf(x, p, x);
  const float xb = select(ax > 4.0f, 4.0f, ax);
  const float u = xb - 0x1.38p+1f;
  float q = 0x1.047902p-23f;
  q = __builtin_fmaf(q, u, -0x1.1f80aep-21f);
  q = __builtin_fmaf(q, u, 0x1.421bfap-20f);
  q = __builtin_fmaf(q, u, -0x1.1f453ep-18f);
  q = __builtin_fmaf(q, u, 0x1.37db06p-16f);
  q = __builtin_fmaf(q, u, -0x1.1f3924p-14f);
  q = __builtin_fmaf(q, u, 0x1.f4881cp-13f);
  q = __builtin_fmaf(q, u, -0x1.ac615cp-11f);
  q = __builtin_fmaf(q, u, 0x1.6315fep-9f);
  q = __builtin_fmaf(q, u, -0x1.1b62d8p-7f);
  q = __builtin_fmaf(q, u, 0x1.b2249p-6f);
  q = __builtin_fmaf(q, u, -0x1.3db068p-4f);
  q = __builtin_fmaf(q, u, 0x1.b97394p-3f);
  const float hi = xb * xb, lo = __builtin_fmaf(xb, xb, -hi);
  float e = expf_inline(-hi);
  e = __builtin_fmaf(-e, lo, e);  // e^(-hi - lo)
  const float large = __builtin_copysignf(__builtin_fmaf(-e, q, 1.0f), x);
  return select(ax < 0.875f, small, large);
}

// tanh(x). |x| < 1.25: x + x^3 P(x^2), P of degree 9; otherwise sign(x) (1 - e)
// / (1 + e) with e = e^(-2|x|) (|x| clamped to 9.5, where tanh is 1 in float).
// P: a least-squares fit to relative error against mpmath's tanh, rounded to
// float. NaN stays NaN, tanh(-0) = -0.
inline float tanh_f32(float x) {
  const float ax = __builtin_fabsf(x);
  const float t = x * x;
  float p = 0x1.75081p-18f;
  p = __builtin_fmaf(p, t, -0x1.01a74ep-14f);
  p = __builtin_fmaf(p, t, 0x1.584726p-12f);
  p = __builtin_fmaf(p, t, -0x1.35494cp-10f);
  p = __builtin_fmaf(p, t, 0x1.bc6bb6p-9f);
  p = __builtin_fmaf(p, t, -0x1.1f34e2p-7f);
  p = __builtin_fmaf(p, t, 0x1.65cee8p-6f);
  p = __builtin_fmaf(p, t, -0x1.ba0fe8p-5f);
  p = __builtin_fmaf(p, t, 0x1.1110ccp-3f);
  p = __builtin_fmaf(p, t, -0x1.555554p-2f);
  const float small = __builtin_copysignf(__builtin_fmaf(ax * t, p, ax), x);
  const float e = expf_inline(-2.0f * select(ax > 9.5f, 9.5f, ax));
  const float large = __builtin_copysignf((1.0f - e) / (1.0f + e), x);
  return select(ax < 1.25f, small, large);
}

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
  float operator()(float x) const { return tanh_f32(x); }
};
struct Erf {
  float operator()(float x) const { return erf_f32(x); }
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
