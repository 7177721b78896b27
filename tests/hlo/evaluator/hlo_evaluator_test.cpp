// HloEvaluator: HLO computed on host Literals, with no backend — exact values
// for dot (every operand layout), reduce, gather, scatter, data movement and
// elementwise ops, the errors that must surface, and literals as values.
#include "hlo/evaluator/hlo_evaluator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "hlo/hlo_builder.h"

namespace lazytrain::hlo {
namespace {

template <typename T>
Literal literal(const Shape& shape, DType dtype, const std::vector<T>& values) {
  Literal l(shape, dtype);
  EXPECT_EQ(static_cast<int64_t>(values.size()), l.numel());
  std::memcpy(l.mutable_raw(), values.data(), values.size() * sizeof(T));
  return l;
}

template <typename T>
std::vector<T> values(const Literal& l) {
  std::vector<T> v(static_cast<size_t>(l.numel()));
  std::memcpy(v.data(), l.raw(), v.size() * sizeof(T));
  return v;
}

TEST(HloEvaluator, DotInEveryLayoutSumsExactly) {
  // a [2, 3] = [[1, 2, 3], [4, 5, 6]], w [3, 2] = [[1, 0], [0, 1], [1, 1]]: a @ w = [[4, 5], [10, 11]].
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, w = {1, 0, 0, 1, 1, 1};
  const std::vector<float> at = {1, 4, 2, 5, 3, 6}, wt = {1, 0, 1, 0, 1, 1};
  const std::vector<float> expected = {4, 5, 10, 11};
  for (int layout = 0; layout < 4; ++layout) {
    const bool ta = layout & 1, tw = layout & 2;
    HloBuilder b("dot");
    int x = b.parameter(ta ? Shape{3, 2} : Shape{2, 3}, DType::kFloat32);
    int y = b.parameter(tw ? Shape{2, 3} : Shape{3, 2}, DType::kFloat32);
    int d = b.dot(x, y, {{}, {}, {ta ? 0 : 1}, {tw ? 1 : 0}});
    HloModule m = b.build({d});
    std::vector<Literal> out = HloEvaluator().evaluate(
        m, {literal(ta ? Shape{3, 2} : Shape{2, 3}, DType::kFloat32, ta ? at : a),
            literal(tw ? Shape{2, 3} : Shape{3, 2}, DType::kFloat32, tw ? wt : w)});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].shape(), (Shape{2, 2}));
    EXPECT_EQ(values<float>(out[0]), expected) << "layout " << layout;
  }
}

TEST(HloEvaluator, BatchedIntegerDot) {
  HloBuilder b("bdot");
  int x = b.parameter({2, 1, 2}, DType::kInt64);
  int y = b.parameter({2, 2, 1}, DType::kInt64);
  HloModule m = b.build({b.dot(x, y, {{0}, {0}, {2}, {1}})});
  std::vector<Literal> out =
      HloEvaluator().evaluate(m, {literal<int64_t>({2, 1, 2}, DType::kInt64, {1, 2, 3, 4}), literal<int64_t>({2, 2, 1}, DType::kInt64, {5, 6, 7, 8})});
  EXPECT_EQ(values<int64_t>(out[0]), (std::vector<int64_t>{1 * 5 + 2 * 6, 3 * 7 + 4 * 8}));
}

TEST(HloEvaluator, ReduceGatherScatterAndDataMovement) {
  HloBuilder b("mix");
  int x = b.parameter({2, 3}, DType::kFloat32);
  int idx = b.parameter({3}, DType::kInt32);
  int rows = b.reduce(x, {1}, ReduceKind::kAdd);
  int cols = b.reduce(x, {0}, ReduceKind::kMax);
  int g = b.gather(x, idx);
  int s = b.scatter_add(x, idx, g);
  int t = b.transpose(x, {1, 0});
  int sl = b.slice(x, {0, 1}, {2, 3}, {1, 1});
  int r = b.reshape(x, {3, 2});
  HloModule m = b.build({rows, cols, g, s, t, sl, r});
  std::vector<Literal> out = HloEvaluator().evaluate(
      m, {literal<float>({2, 3}, DType::kFloat32, {1, -2, 3, 4, 5, -6}), literal<int32_t>({3}, DType::kInt32, {1, 0, 1})});
  ASSERT_EQ(out.size(), 7u);
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{2, 3}));
  EXPECT_EQ(values<float>(out[1]), (std::vector<float>{4, 5, 3}));
  EXPECT_EQ(values<float>(out[2]), (std::vector<float>{4, 5, -6, 1, -2, 3, 4, 5, -6}));
  // Row 0 gets row 0 once more; row 1 gets row 1 twice more.
  EXPECT_EQ(values<float>(out[3]), (std::vector<float>{2, -4, 6, 12, 15, -18}));
  EXPECT_EQ(values<float>(out[4]), (std::vector<float>{1, 4, -2, 5, 3, -6}));
  EXPECT_EQ(values<float>(out[5]), (std::vector<float>{-2, 3, 5, -6}));
  EXPECT_EQ(out[6].shape(), (Shape{3, 2}));
  EXPECT_EQ(values<float>(out[6]), (std::vector<float>{1, -2, 3, 4, 5, -6}));
}

// Copies of 256 KiB and more are split over the cores (kParallelCopyBytes): a
// concatenate along the last dim, a transpose and a slice of GPT-2's head-split
// size, each value checked against its index arithmetic.
TEST(HloEvaluator, LargeCopiesSplitOverCoresKeepEveryElement) {
  const int64_t rows = 256, a_cols = 768, b_cols = 1536;
  HloBuilder b("copies");
  int x = b.parameter({rows, a_cols}, DType::kFloat32);
  int y = b.parameter({rows, b_cols}, DType::kFloat32);
  int cat = b.concatenate({x, y}, 1);
  int t = b.transpose(b.reshape(y, {4, 64, 12, 128}), {0, 2, 1, 3});
  int sl = b.slice(y, {0, 768}, {rows, b_cols}, {1, 1});
  HloModule m = b.build({cat, t, sl});
  std::vector<float> xv(rows * a_cols), yv(rows * b_cols);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i);
  for (size_t i = 0; i < yv.size(); ++i) yv[i] = -static_cast<float>(i);
  std::vector<Literal> out =
      HloEvaluator().evaluate(m, {literal<float>({rows, a_cols}, DType::kFloat32, xv), literal<float>({rows, b_cols}, DType::kFloat32, yv)});
  const std::vector<float> c = values<float>(out[0]), tr = values<float>(out[1]), s = values<float>(out[2]);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < a_cols + b_cols; ++k) {
      const float want = k < a_cols ? xv[r * a_cols + k] : yv[r * b_cols + k - a_cols];
      ASSERT_EQ(c[r * (a_cols + b_cols) + k], want) << r << ", " << k;
    }
    for (int64_t k = 0; k < b_cols - 768; ++k) ASSERT_EQ(s[r * 768 + k], yv[r * b_cols + 768 + k]);
  }
  // t[b, h, s, d] = y viewed as [b, s, h, d].
  for (int64_t i = 0; i < 4 * 12 * 64 * 128; ++i) {
    const int64_t d = i % 128, s_ = i / 128 % 64, h = i / (128 * 64) % 12, b_ = i / (128 * 64 * 12);
    ASSERT_EQ(tr[i], yv[((b_ * 64 + s_) * 12 + h) * 128 + d]) << i;
  }
}

TEST(HloEvaluator, ElementwiseSemantics) {
  HloBuilder b("elementwise");
  int x = b.parameter({4}, DType::kFloat32);
  int y = b.parameter({4}, DType::kFloat32);
  int mx = b.binary(HloOpcode::kMaximum, x, y);
  int h = b.convert(x, DType::kBFloat16);
  int e = b.unary(HloOpcode::kExp, y);
  HloModule m = b.build({mx, h, e});
  const float nan = std::nanf("");
  std::vector<Literal> out = HloEvaluator().evaluate(
      m, {literal<float>({4}, DType::kFloat32, {nan, 1.0f, 1.00390625f, -3.0f}), literal<float>({4}, DType::kFloat32, {1.0f, nan, 0.0f, -2.0f})});
  std::vector<float> maxima = values<float>(out[0]);
  EXPECT_TRUE(std::isnan(maxima[0]));  // NaN propagates from either side
  EXPECT_TRUE(std::isnan(maxima[1]));
  EXPECT_EQ(maxima[2], 1.00390625f);
  EXPECT_EQ(maxima[3], -2.0f);
  // 1 + 2^-8 lies halfway between two bf16 values: ties to even gives 1.
  EXPECT_EQ(static_cast<float>(out[1].data<BFloat16>()[2]), 1.0f);
  EXPECT_EQ(values<float>(out[2])[2], 1.0f);
}

TEST(HloEvaluator, ErrorsSurface) {
  HloBuilder b("errors");
  int x = b.parameter({2}, DType::kFloat32);
  int idx = b.parameter({1}, DType::kInt64);
  HloModule m = b.build({b.gather(x, idx)});
  EXPECT_THROW(HloEvaluator().evaluate(m, {literal<float>({2}, DType::kFloat32, {1, 2}), literal<int64_t>({1}, DType::kInt64, {2})}), Error);
  // A wrong argument shape, and a wrong argument count.
  EXPECT_THROW(HloEvaluator().evaluate(m, {literal<float>({1}, DType::kFloat32, {1}), literal<int64_t>({1}, DType::kInt64, {0})}), Error);
  EXPECT_THROW(HloEvaluator().evaluate(m, {}), Error);

  HloBuilder d("divide");
  HloModule dm = d.build({d.binary(HloOpcode::kDivide, d.scalar(7, DType::kInt32), d.scalar(0, DType::kInt32))});
  EXPECT_THROW(HloEvaluator().evaluate(dm, {}), Error);
}

TEST(Literal, CopiesAreValues) {
  Literal a = literal<int32_t>({2}, DType::kInt32, {1, 2});
  Literal b = a;
  EXPECT_EQ(a, b);
  b.data<int32_t>()[0] = 7;  // copy on write: `a` keeps its value
  EXPECT_EQ(a.data<int32_t>()[0], 1);
  EXPECT_EQ(b.data<int32_t>()[0], 7);
  EXPECT_FALSE(a == b);
  EXPECT_EQ(a.reshaped({2, 1}).shape(), (Shape{2, 1}));
  EXPECT_THROW(a.reshaped({3}), Error);
  EXPECT_FALSE(Literal().defined());
  EXPECT_EQ(values<float>(Literal({3}, DType::kFloat32)), (std::vector<float>{0, 0, 0}));  // zero-filled
}

}  // namespace
}  // namespace lazytrain::hlo
