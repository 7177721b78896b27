// XlaOp (hlo/xla_op.h): expressions written with operators build the HLO they
// read as — checked by evaluating small computations on the HLO evaluator and
// by the instructions they append.
#include "hlo/xla_op.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "hlo/evaluator/hlo_evaluator.h"

namespace lazytrain::hlo {
namespace {

Literal f32(const Shape& shape, const std::vector<float>& values) {
  Literal l(shape, DType::kFloat32);
  std::memcpy(l.mutable_raw(), values.data(), values.size() * sizeof(float));
  return l;
}

template <typename T>
std::vector<T> values(const Literal& l) {
  std::vector<T> v(static_cast<size_t>(l.numel()));
  std::memcpy(v.data(), l.raw(), v.size() * sizeof(T));
  return v;
}

// Builds `outputs` over one f32[n] parameter fed with `input` and evaluates them.
template <typename F>
std::vector<Literal> run(const std::vector<float>& input, F outputs) {
  HloBuilder b("xla_op");
  XlaOp x(b, b.parameter({static_cast<int64_t>(input.size())}, DType::kFloat32));
  std::vector<int> ids;
  for (const XlaOp& y : outputs(x)) ids.push_back(y.id());
  return HloEvaluator().evaluate(b.build(ids), {f32({static_cast<int64_t>(input.size())}, input)});
}

TEST(XlaOp, SiluBackwardReadsAsItsFormula) {
  const std::vector<float> in = {-2.0f, 0.0f, 0.5f, 3.0f};
  auto out = run(in, [](XlaOp x) {
    XlaOp s = 0.5 * tanh(0.5 * x) + 0.5;  // sigmoid
    XlaOp g = x.full_like(2.0);
    return std::vector<XlaOp>{g * s * (1 + x * (1 - s))};
  });
  std::vector<float> got = values<float>(out.at(0));
  for (size_t i = 0; i < in.size(); ++i) {
    const double s = 1.0 / (1.0 + std::exp(-in[i]));
    EXPECT_NEAR(got[i], 2.0 * s * (1.0 + in[i] * (1.0 - s)), 1e-6) << i;
  }
}

TEST(XlaOp, ArithmeticWithNumbersOnEitherSide) {
  auto out = run({1.0f, 2.0f, 4.0f}, [](XlaOp x) {
    return std::vector<XlaOp>{x + 1, 1 + x, x - 1, 10 - x, x * 3, 3 * x, x / 2, 8 / x, -x};
  });
  const std::vector<std::vector<float>> expected = {{2, 3, 5}, {2, 3, 5}, {0, 1, 3}, {9, 8, 6}, {3, 6, 12},
                                                    {3, 6, 12}, {0.5f, 1, 2}, {8, 4, 2}, {-1, -2, -4}};
  ASSERT_EQ(out.size(), expected.size());
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(values<float>(out[i]), expected[i]) << "output " << i;
}

TEST(XlaOp, MathFunctions) {
  auto out = run({1.0f, 4.0f}, [](XlaOp x) {
    return std::vector<XlaOp>{exp(x), log(x), sqrt(x), rsqrt(x), abs(-x), max(x, 2.0), min(x, 2.0), pow(x, x.full_like(2.0))};
  });
  auto near = [](const Literal& l, std::vector<double> expected) {
    std::vector<float> got = values<float>(l);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-5 * std::abs(expected[i])) << i;
  };
  near(out[0], {std::exp(1.0), std::exp(4.0)});
  near(out[1], {0.0, std::log(4.0)});
  near(out[2], {1.0, 2.0});
  near(out[3], {1.0, 0.5});
  near(out[4], {1.0, 4.0});
  near(out[5], {2.0, 4.0});
  near(out[6], {1.0, 2.0});
  near(out[7], {1.0, 16.0});
}

TEST(XlaOp, ComparisonsGivePredAndSelectPicks) {
  auto out = run({1.0f, 2.0f, 3.0f}, [](XlaOp x) {
    XlaOp two = x.full_like(2.0);
    return std::vector<XlaOp>{eq(x, two), ne(x, 2.0), lt(x, 2.0), le(x, 2.0), gt(x, 2.0), ge(x, 2.0),
                              select(gt(x, 2.0), x, 0.0), select(lt(x, 2.0), -1.0, x),
                              convert(lt(x, 2.0) | gt(x, 2.0), DType::kInt32), convert(~eq(x, two) & le(x, 2.0), DType::kInt32)};
  });
  EXPECT_EQ(out[0].dtype(), DType::kBool);
  EXPECT_EQ(values<uint8_t>(out[0]), (std::vector<uint8_t>{0, 1, 0}));
  EXPECT_EQ(values<uint8_t>(out[1]), (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(values<uint8_t>(out[2]), (std::vector<uint8_t>{1, 0, 0}));
  EXPECT_EQ(values<uint8_t>(out[3]), (std::vector<uint8_t>{1, 1, 0}));
  EXPECT_EQ(values<uint8_t>(out[4]), (std::vector<uint8_t>{0, 0, 1}));
  EXPECT_EQ(values<uint8_t>(out[5]), (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(values<float>(out[6]), (std::vector<float>{0, 0, 3}));
  EXPECT_EQ(values<float>(out[7]), (std::vector<float>{-1, 2, 3}));
  EXPECT_EQ(values<int32_t>(out[8]), (std::vector<int32_t>{1, 0, 1}));
  EXPECT_EQ(values<int32_t>(out[9]), (std::vector<int32_t>{1, 0, 0}));
}

TEST(XlaOp, ShapesReductionsAndConstants) {
  auto out = run({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, [](XlaOp x) {
    HloBuilder& b = x.builder();
    XlaOp m = reshape(x, {2, 3});
    XlaOp rows = reduce_sum(m, {1});                                 // [6, 15]
    XlaOp centered = m - broadcast(rows, {2, 3}, {0}) / 3.0;         // each row minus its mean
    XlaOp col = iota(b, {2, 3}, DType::kFloat32, 1);                 // [[0, 1, 2], [0, 1, 2]]
    XlaOp halves = broadcast_to(scalar(b, 0.5, DType::kFloat32), {2, 3});
    return std::vector<XlaOp>{rows, reduce_max(centered, {0}), transpose(m, {1, 0}) + transpose(col, {1, 0}),
                              slice(x, {1}, {6}, {2}), concatenate({x, reshape(halves, {6}) * 0.0}, 0),
                              matmul(m, transpose(m, {1, 0})), full(b, 7.0, {2}, DType::kInt64)};
  });
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{6, 15}));
  EXPECT_EQ(values<float>(out[1]), (std::vector<float>{-1, 0, 1}));
  EXPECT_EQ(out[2].shape(), (Shape{3, 2}));
  EXPECT_EQ(values<float>(out[2]), (std::vector<float>{1, 4, 3, 6, 5, 8}));
  EXPECT_EQ(values<float>(out[3]), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(values<float>(out[4]), (std::vector<float>{1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(values<float>(out[5]), (std::vector<float>{14, 32, 32, 77}));
  EXPECT_EQ(values<int64_t>(out[6]), (std::vector<int64_t>{7, 7}));
}

TEST(XlaOp, NumberOperandIsAConstantOfTheValuesShapeAndDtype) {
  HloBuilder b("mixed");
  XlaOp x(b, b.parameter({2, 3}, DType::kBFloat16));
  XlaOp y = 1 - x;
  const HloInstruction& sub = b.at(y.id());
  EXPECT_EQ(sub.opcode, HloOpcode::kSubtract);
  EXPECT_EQ(sub.operands.at(1), x.id());
  const HloInstruction& one = b.at(sub.operands.at(0));
  EXPECT_EQ(one.opcode, HloOpcode::kBroadcast);
  EXPECT_EQ(one.shape, (Shape{2, 3}));
  EXPECT_EQ(one.dtype, DType::kBFloat16);
  EXPECT_EQ(b.at(one.operands.at(0)).opcode, HloOpcode::kConstant);
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.dtype(), DType::kBFloat16);
  // convert to the dtype it has already appends nothing, as HloBuilder::convert.
  EXPECT_EQ(convert(x, DType::kBFloat16).id(), x.id());
}

}  // namespace
}  // namespace lazytrain::hlo
