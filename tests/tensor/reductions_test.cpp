// Reductions that the golden file (made by torch 1.13) does not cover: amin,
// argmin, prod, any, all, and torch's rules for NaN, empty dims, repeated dims
// and the int64 limits. Expected values are torch 2.13's for the same inputs;
// tests/python/test_reductions_torch.py compares with torch itself.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "../support/expect_error.h"
#include "core/error.h"
#include "tensor/tensor.h"

namespace lazytrain {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

TEST(Reductions, ArgmaxAndArgminTakeTheFirstNan) {
  // torch: argmax([1, nan, 3]) == 1 and argmin too; [[nan, 1], [2, 3]].argmax(1) == [0, 1].
  Tensor x = from_vector(std::vector<float>{1, kNan, 3}, {3});
  EXPECT_EQ(argmax(x, 0).to_vector<int64_t>(), std::vector<int64_t>{1});
  EXPECT_EQ(argmin(x, 0).to_vector<int64_t>(), std::vector<int64_t>{1});
  Tensor m = from_vector(std::vector<float>{kNan, 1, 2, 3}, {2, 2});
  EXPECT_EQ(argmax(m, 1).to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(argmin(m, 0, true).shape(), (Shape{1, 2}));
  EXPECT_EQ(argmin(m, 0).to_vector<int64_t>(), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(argmin(from_vector(std::vector<float>{4, 2, 2}, {3}), 0).to_vector<int64_t>(), std::vector<int64_t>{1});
}

TEST(Reductions, AminIsExactForBoolAndInt64Limits) {
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  Tensor i = from_vector(std::vector<int64_t>{3, lo, hi}, {3});
  EXPECT_EQ(amin(i, {}).to_vector<int64_t>(), std::vector<int64_t>{lo});
  EXPECT_EQ(amax(i, {}).to_vector<int64_t>(), std::vector<int64_t>{hi});
  EXPECT_EQ(amin(from_vector(std::vector<int64_t>{hi, hi}, {2}), {}).to_vector<int64_t>(), std::vector<int64_t>{hi});
  EXPECT_EQ(amax(from_vector(std::vector<int64_t>{lo, lo}, {2}), {}).to_vector<int64_t>(), std::vector<int64_t>{lo});
  Tensor b = to_dtype(from_vector(std::vector<int64_t>{1, 0, 1, 1}, {2, 2}), DType::kBool);
  EXPECT_EQ(to_dtype(amin(b, {1}), DType::kInt64).to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(to_dtype(amin(b, {}), DType::kInt64).to_vector<int64_t>(), std::vector<int64_t>{0});
}

TEST(Reductions, AminGradientIsSharedBetweenTies) {
  Tensor x = from_vector(std::vector<float>{1, 3, 1}, {3});
  x.requires_grad_();
  amin(x, {}).backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{0.5f, 0, 0.5f}));
}

TEST(Reductions, EmptyDimsRaiseForReductionsWithoutIdentity) {
  Tensor e = zeros({0, 3});
  expect_error([&] { argmax(e, 0); }, "aten::argmax", "Expected reduction dim 0 to have non-zero size");
  expect_error([&] { argmin(e, 0); }, "aten::argmin", "Expected reduction dim 0 to have non-zero size");
  expect_error([&] { amax(e, {}); }, "aten::amax", "Expected reduction dim to be specified for input.numel() == 0");
  expect_error([&] { amin(e, {0, 1}); }, "aten::amin", "Expected reduction dim 0 to have non-zero size");
  EXPECT_EQ(amax(e, {1}).shape(), Shape{0});
  EXPECT_EQ(argmax(e, 1).shape(), Shape{0});
  // Reductions with an identity: torch's values.
  EXPECT_EQ(prod(e).to_vector<float>(), std::vector<float>{1});
  EXPECT_EQ(to_dtype(any(e), DType::kInt64).to_vector<int64_t>(), std::vector<int64_t>{0});
  EXPECT_EQ(to_dtype(all(e), DType::kInt64).to_vector<int64_t>(), std::vector<int64_t>{1});
}

TEST(Reductions, ADimNamedTwiceRaises) {
  Tensor x = ones({2, 3});
  expect_error([&] { sum(x, {0, 0}); }, "aten::sum", "dim 0 appears multiple times in the list of dims");
  expect_error([&] { amax(x, {1, -1}); }, "aten::amax", "dim 1 appears multiple times in the list of dims");
  expect_error([&] { mean(x, {-2, 0}); }, "aten::mean", "dim 0 appears multiple times in the list of dims");
}

TEST(Reductions, ProdValuesDtypesAndGradientAtZeros) {
  Tensor x = from_vector(std::vector<float>{2, 3, 4, 0, 5, 0}, {2, 3});
  EXPECT_EQ(prod(x, {1}).to_vector<float>(), (std::vector<float>{24, 0}));
  EXPECT_EQ(prod(from_vector(std::vector<int64_t>{2, -3}, {2})).dtype(), DType::kInt64);
  EXPECT_EQ(prod(from_vector(std::vector<int64_t>{2, -3}, {2})).to_vector<int64_t>(), std::vector<int64_t>{-6});
  // torch: the gradient is the product of the others: [12, 8, 6] for a row with
  // no zero, [0, 0, 0] for one with two zeros, [0, 5, 0]-like where one zero is.
  x.requires_grad_();
  sum(prod(x, {1})).backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{12, 8, 6, 0, 0, 0}));
  Tensor y = from_vector(std::vector<float>{2, 0, 4}, {3});
  y.requires_grad_();
  prod(y).backward();
  EXPECT_EQ(y.grad().to_vector<float>(), (std::vector<float>{0, 8, 0}));
}

TEST(Reductions, AnyAndAllCountNanAsTrue) {
  Tensor x = from_vector(std::vector<float>{0, kNan, 0, 0}, {2, 2});
  EXPECT_EQ(any(x).dtype(), DType::kBool);
  EXPECT_EQ(to_dtype(any(x, {1}), DType::kInt64).to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(to_dtype(all(x, {0}), DType::kInt64).to_vector<int64_t>(), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(to_dtype(all(from_vector(std::vector<int64_t>{1, -2}, {2})), DType::kInt64).to_vector<int64_t>(), std::vector<int64_t>{1});
}

}  // namespace
}  // namespace lazytrain
