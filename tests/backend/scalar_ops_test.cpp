// core/scalar_ops.h is the one definition of elementwise semantics: the
// interpreter (the HLO evaluator's kernels) and the CPU backend's generated
// kernels both give, bit for bit, what its functors give on the host, for
// NaN-propagating maximum/minimum, shifts outside [0, 32), bf16 rounding (ties
// to even, NaN) and bf16 transcendentals (SLEEF, or core/scalar_ops.h's inline erf and tanh, on both sides).
#include "core/scalar_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "../support/test_buffers.h"
#include "backend/registry.h"
#include "core/half.h"
#include "hlo/hlo_builder.h"

namespace lazytrain {
namespace {

using hlo::HloOpcode;
using runtime::Buffer;
using testing::buffer;
using testing::values;
namespace ops = scalar_ops;

// Runs `module` on both backends; checks the CPU backend fused it (so generated
// code, not the interpreter's kernels, computed it) and returns both results.
std::pair<std::vector<Buffer>, std::vector<Buffer>> run_both(const hlo::HloModule& module, const std::vector<Buffer>& args) {
  auto interpreted = backend::make_compiler("interpreter")->compile(module)->execute(args);
  auto executable = backend::make_compiler("cpu")->compile(module);
  int fusions = 0;
  for (const auto& in : executable->module().instructions) fusions += in.opcode == HloOpcode::kFusion;
  EXPECT_GT(fusions, 0) << executable->module().to_string();
  return {interpreted, executable->execute(args)};
}

template <typename T>
void expect_bits(const std::vector<T>& want, const Buffer& got, const char* what) {
  const std::vector<T> have = values<T>(got);
  ASSERT_EQ(have.size(), want.size()) << what;
  EXPECT_EQ(std::memcmp(have.data(), want.data(), want.size() * sizeof(T)), 0) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    T a = have[i], b = want[i];
    EXPECT_EQ(std::memcmp(&a, &b, sizeof(T)), 0) << what << " element " << i;
  }
}

TEST(ScalarOps, MaximumAndMinimumPropagateNanOnBothBackends) {
  const std::vector<float> x = {NAN, 1.0f, -0.0f, 2.0f, -INFINITY, 3.0f, NAN, 0.5f};
  hlo::HloBuilder b("minmax");
  int p = b.parameter({8}, DType::kFloat32);
  int s = b.parameter({}, DType::kFloat32);
  int one = b.broadcast(s, {8}, {});
  hlo::HloModule m = b.build({b.binary(HloOpcode::kMaximum, p, one), b.binary(HloOpcode::kMaximum, one, p),
                              b.binary(HloOpcode::kMinimum, p, one), b.binary(HloOpcode::kMinimum, one, p)});
  auto [interpreted, generated] = run_both(m, {buffer({8}, DType::kFloat32, x), buffer<float>({}, DType::kFloat32, {1.0f})});
  const std::function<float(float, float)> fns[] = {ops::Maximum(), [](float a, float c) { return ops::Maximum()(c, a); },
                                                    ops::Minimum(), [](float a, float c) { return ops::Minimum()(c, a); }};
  for (size_t k = 0; k < 4; ++k) {
    std::vector<float> want;
    for (float v : x) want.push_back(fns[k](v, 1.0f));
    expect_bits(want, interpreted[k], "interpreter");
    expect_bits(want, generated[k], "cpu");
  }
  // max(NaN, 1) and max(1, NaN) are NaN; max(-0, 1) is 1.
  EXPECT_TRUE(std::isnan(values<float>(generated[0])[0]));
  EXPECT_TRUE(std::isnan(values<float>(generated[1])[0]));
  EXPECT_EQ(values<float>(generated[0])[2], 1.0f);
  EXPECT_EQ(values<float>(generated[2])[1], 1.0f);
}

TEST(ScalarOps, ShiftRightLogicalOutsideTheWordGivesZero) {
  const std::vector<int32_t> a = {-8, 5, INT_MIN, 7, -1, 100, 3, 1};
  const std::vector<int32_t> n = {-1, 0, 1, 5, 31, 32, 40, 3};
  hlo::HloBuilder b("shift");
  int x = b.parameter({8}, DType::kInt32);
  int y = b.parameter({8}, DType::kInt32);
  int z = b.parameter({}, DType::kInt32);
  int shifted = b.binary(HloOpcode::kShiftRightLogical, x, b.binary(HloOpcode::kAdd, y, b.broadcast(z, {8}, {})));
  hlo::HloModule m = b.build({shifted});
  auto [interpreted, generated] =
      run_both(m, {buffer({8}, DType::kInt32, a), buffer({8}, DType::kInt32, n), buffer<int32_t>({}, DType::kInt32, {0})});
  std::vector<int32_t> want;
  for (size_t i = 0; i < a.size(); ++i) want.push_back(ops::ShiftRightLogical()(a[i], n[i]));
  EXPECT_EQ(want, (std::vector<int32_t>{0, 5, 0x40000000, 0, 1, 0, 0, 0}));
  expect_bits(want, interpreted[0], "interpreter");
  expect_bits(want, generated[0], "cpu");
}

TEST(ScalarOps, Bf16RoundingAndTranscendentalsAgreeBitForBit) {
  // f32 inputs that round to bf16 at ties (1 + 2^-8 -> 1, 1 + 3 * 2^-8 -> 1 + 2^-6),
  // a NaN, infinities, and ordinary values.
  const std::vector<float> x = {1.00390625f, 1.01171875f, NAN, INFINITY, -INFINITY, 0.3f, -1.7f, 2.5f,
                                -0.0f, 1e-3f, 3.14159f, -2.71828f, 0.75f, 8.0f, -0.125f, 0.9f};
  hlo::HloBuilder b("bf16");
  int p = b.parameter({16}, DType::kFloat32);
  // Each output gets a chain of its own (x times its own scalar 1, to bf16), so
  // that every op lands in a generated kernel rather than in the interpreter's.
  int scalars = 0;
  auto chain = [&] {
    ++scalars;
    return b.convert(b.binary(HloOpcode::kMultiply, p, b.broadcast(b.parameter({}, DType::kFloat32), {16}, {})), DType::kBFloat16);
  };
  std::vector<int> outputs = {chain()};
  for (HloOpcode op : {HloOpcode::kExp, HloOpcode::kTanh, HloOpcode::kErf, HloOpcode::kCosine}) outputs.push_back(b.unary(op, chain()));
  outputs.push_back(b.unary(HloOpcode::kLog, b.unary(HloOpcode::kAbs, chain())));
  outputs.push_back(b.binary(HloOpcode::kPower, b.unary(HloOpcode::kAbs, chain()), b.full(1.5, {16}, DType::kBFloat16)));
  hlo::HloModule m = b.build(outputs);
  std::vector<Buffer> args = {buffer({16}, DType::kFloat32, x)};
  for (int k = 0; k < scalars; ++k) args.push_back(buffer<float>({}, DType::kFloat32, {1.0f}));
  auto [interpreted, generated] = run_both(m, args);

  const std::function<float(float)> fns[] = {[](float v) { return v; }, ops::Exp(), ops::Tanh(), ops::Erf(), ops::Cosine(),
                                             [](float v) { return ops::Log()(ops::round_to_bf16(ops::Abs()(v))); },
                                             [](float v) { return ops::Power()(ops::round_to_bf16(ops::Abs()(v)), 1.5f); }};
  for (size_t k = 0; k < outputs.size(); ++k) {
    std::vector<uint16_t> want;
    for (float v : x) want.push_back(ops::float_to_bf16_bits(fns[k](ops::round_to_bf16(v))));
    expect_bits(want, interpreted[k], "interpreter");
    expect_bits(want, generated[k], "cpu");
  }
  // Ties go to even, a NaN becomes the quiet NaN 0x7fc0.
  const std::vector<uint16_t> rounded = values<uint16_t>(generated[0]);
  EXPECT_EQ(rounded[0], 0x3f80);  // 1.0
  EXPECT_EQ(rounded[1], 0x3f82);  // 1 + 2^-6
  EXPECT_EQ(rounded[2], 0x7fc0);
  EXPECT_EQ(BFloat16(1.00390625f).bits, 0x3f80);  // core/half.h rounds through the same function
}

// The largest error of `f` against the double-precision `reference`, in ULPs of
// the result, over every `stride`-th float bit pattern; NaN must give NaN.
double worst_ulp_error(float (*f)(float), double (*reference)(double), uint64_t stride) {
  double worst = 0;
  for (uint64_t bits = 0; bits <= 0xffffffffull; bits += stride) {
    const uint32_t u = static_cast<uint32_t>(bits);
    float x;
    std::memcpy(&x, &u, 4);
    const float got = f(x);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(got)) << x;
      continue;
    }
    const double exact = reference(static_cast<double>(x));
    // One ULP: the spacing of floats at |f(x)|, taken at the exact value (just below a
    // power of two it is the finer spacing below it); subnormals: 2^-149.
    const double ulp = std::fabs(exact) < FLT_MIN ? std::ldexp(1.0, -149) : std::ldexp(1.0, std::ilogb(exact) - 23);
    worst = std::max(worst, std::fabs(static_cast<double>(got) - exact) / ulp);
  }
  return worst;
}

// erf and tanh are computed inline (core/scalar_ops.h's erf_f32 and tanh_f32, not
// SLEEF): within 1.06 and 1.51 ULP of double precision over a sweep of float bit
// patterns (every one with LAZYTRAIN_SWEEP_STRIDE=1, a few minutes), their
// special values, and the same bits from both backends. Reference values: mpmath
// at 30 digits, rounded to float.
TEST(ScalarOps, InlineErfAndTanhAreAccurateAndTheSameOnBothBackends) {
  const char* stride_env = std::getenv("LAZYTRAIN_SWEEP_STRIDE");
  const uint64_t stride = stride_env ? std::max<uint64_t>(1, std::strtoull(stride_env, nullptr, 10)) : 4099;
  const double erf_error = worst_ulp_error(ops::erf_f32, [](double v) { return std::erf(v); }, stride);
  const double tanh_error = worst_ulp_error(ops::tanh_f32, [](double v) { return std::tanh(v); }, stride);
  EXPECT_LE(erf_error, 1.06);
  EXPECT_LE(tanh_error, 1.51);
  EXPECT_GT(std::min(erf_error, tanh_error), 0.5) << "a sweep that cannot fail";  // rounding alone reaches half an ULP

  // Within one ULP of each correctly rounded reference.
  const std::pair<float, float> references[] = {{0.5f, 0.520499877813046537682746653892f},
                                                {1.0f, 0.842700792949714869341220635083f},
                                                {-2.0f, -0.995322265018952734162069256367f},
                                                {3.5f, 0.999999256901627658587254476316f},
                                                {0x1p-66f, 0x1.20dd76p-66f}};  // 2/sqrt(pi) 2^-66
  for (const auto& [at, reference] : references) {
    EXPECT_LE(std::fabs(ops::erf_f32(at) - reference), std::nextafter(std::fabs(reference), INFINITY) - std::fabs(reference)) << at;
  }
  const std::pair<float, float> tanh_references[] = {{0.5f, 0.462117157260009758502318483643f},
                                                     {1.25f, 0.848283639957512609293251099813f},
                                                     {-3.0f, -0.995054753686730451386266719967f},
                                                     {0x1p-70f, 0x1p-70f}};
  for (const auto& [at, reference] : tanh_references) {
    EXPECT_LE(std::fabs(ops::tanh_f32(at) - reference), 2 * (std::nextafter(std::fabs(reference), INFINITY) - std::fabs(reference))) << at;
  }
  EXPECT_EQ(ops::tanh_f32(10.0f), 1.0f);
  EXPECT_EQ(ops::tanh_f32(-INFINITY), -1.0f);
  EXPECT_TRUE(std::signbit(ops::tanh_f32(-0.0f)) && ops::tanh_f32(-0.0f) == 0.0f);
  EXPECT_EQ(ops::erf_f32(4.5f), 1.0f);
  EXPECT_EQ(ops::erf_f32(INFINITY), 1.0f);
  EXPECT_EQ(ops::erf_f32(-INFINITY), -1.0f);
  EXPECT_TRUE(std::signbit(ops::erf_f32(-0.0f)) && ops::erf_f32(-0.0f) == 0.0f);

  // Both backends: GELU-like chains (x * s, then erf or tanh) over [-5, 5) and special values.
  std::vector<float> x = {NAN, INFINITY, -INFINITY, -0.0f, 0.875f, -0.875f, 4.0f, 1e-30f, 1.25f, -9.5f};
  while (x.size() < 4096) x.push_back(-5.0f + 10.0f * static_cast<float>(x.size()) / 4096.0f);
  const int64_t n = static_cast<int64_t>(x.size());
  hlo::HloBuilder b("erf");
  int p = b.parameter({n}, DType::kFloat32);
  int s = b.parameter({}, DType::kFloat32);
  int s2 = b.parameter({}, DType::kFloat32);
  hlo::HloModule m = b.build({b.unary(HloOpcode::kErf, b.binary(HloOpcode::kMultiply, p, b.broadcast(s, {n}, {}))),
                              b.unary(HloOpcode::kTanh, b.binary(HloOpcode::kMultiply, p, b.broadcast(s2, {n}, {})))});
  auto [interpreted, generated] = run_both(m, {buffer({n}, DType::kFloat32, x), buffer<float>({}, DType::kFloat32, {1.0f}),
                                               buffer<float>({}, DType::kFloat32, {1.0f})});
  for (int k = 0; k < 2; ++k) {
    std::vector<float> want;
    for (float v : x) want.push_back(k == 0 ? ops::erf_f32(v) : ops::tanh_f32(v));
    expect_bits(want, interpreted[k], "interpreter");
    expect_bits(want, generated[k], "cpu");
  }
}

}  // namespace
}  // namespace lazytrain
