// torch's type promotion (tensor/type_promotion.h) and the ops written on it
// that the golden file (made by torch 1.13 before they existed) does not
// cover. Expected values are torch 2.13's for the same inputs;
// tests/python/test_type_promotion.py compares every dtype pair with torch.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "../support/backend_scope.h"
#include "../support/expect_error.h"
#include "core/error.h"
#include "tensor/tensor.h"

namespace lazytrain {
namespace {

using P = PromotionOperand::Priority;

Tensor ints(std::vector<int64_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return from_vector(v, {n});
}

TEST(TypePromotion, ResultTypeFollowsCategoriesAndPriorities) {
  // Dimensioned tensors promote among themselves.
  EXPECT_EQ(result_type({{DType::kInt32, P::kDimensioned}, {DType::kInt64, P::kDimensioned}}), DType::kInt64);
  EXPECT_EQ(result_type({{DType::kBFloat16, P::kDimensioned}, {DType::kFloat16, P::kDimensioned}}), DType::kFloat32);
  // A 0-d tensor of the same category does not promote; of a higher one it does.
  EXPECT_EQ(result_type({{DType::kBFloat16, P::kDimensioned}, {DType::kFloat32, P::kZeroDim}}), DType::kBFloat16);
  EXPECT_EQ(result_type({{DType::kInt32, P::kDimensioned}, {DType::kInt64, P::kZeroDim}}), DType::kInt32);
  EXPECT_EQ(result_type({{DType::kInt32, P::kDimensioned}, {DType::kBFloat16, P::kZeroDim}}), DType::kBFloat16);
  EXPECT_EQ(result_type({{DType::kBool, P::kDimensioned}, {DType::kInt32, P::kZeroDim}}), DType::kInt32);
  // Two 0-d tensors promote as dimensioned ones.
  EXPECT_EQ(result_type({{DType::kInt32, P::kZeroDim}, {DType::kInt64, P::kZeroDim}}), DType::kInt64);
  // Numbers: the kind's default dtype, and only across categories.
  EXPECT_EQ(result_type(ints({1}).to(DType::kInt32), Scalar(2.0)), DType::kFloat32);
  EXPECT_EQ(result_type(ints({1}).to(DType::kInt32), Scalar(2)), DType::kInt32);
  EXPECT_EQ(result_type(ints({1}).to(DType::kBool), Scalar(2)), DType::kInt64);
  EXPECT_EQ(result_type(ints({1}).to(DType::kBool), Scalar(true)), DType::kBool);
  EXPECT_EQ(result_type(ones({2}, DType::kFloat16), Scalar(2.5)), DType::kFloat16);
  EXPECT_EQ(result_type(full({}, 1.0, DType::kInt32), Scalar(2.5)), DType::kFloat32);
  EXPECT_EQ(result_type(full({}, 1.0, DType::kBFloat16), Scalar(2.5)), DType::kBFloat16);
  EXPECT_EQ(result_type(Scalar(1), Scalar(0.5)), DType::kFloat32);
  EXPECT_EQ(result_type(Scalar(1), Scalar(false)), DType::kInt64);
}

TEST(TypePromotion, ScalarOperandsPromoteByKind) {
  Tensor i = ints({3, 4});
  EXPECT_EQ(mul(i, 1.0).dtype(), DType::kFloat32);  // torch: float32 whatever the float's value
  EXPECT_EQ(mul(i, 2).dtype(), DType::kInt64);
  EXPECT_EQ(add(i.to(DType::kBool), 1).dtype(), DType::kInt64);
  EXPECT_EQ(mul(ones({2}, DType::kBFloat16), full({}, 3.0)).dtype(), DType::kBFloat16);
  EXPECT_EQ(add(i.to(DType::kInt32), full({}, 3.0, DType::kInt64)).dtype(), DType::kInt32);
  EXPECT_EQ(wrap_scalar(2.5, i).dtype(), DType::kFloat32);
  EXPECT_EQ(wrap_scalar(2, i).dtype(), DType::kInt64);
  EXPECT_EQ(wrap_scalar(2, i).dim(), 0);
  EXPECT_EQ(le(i, 3.5).to_vector<uint8_t>(), (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(ge(i, 4).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1}));
  // Compared in the result type: int [n] < 3.5 in float32, not 3.5 cut to 3.
  EXPECT_EQ(lt(i, 3.5).to_vector<uint8_t>(), (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(div(i, 2).dtype(), DType::kFloat32);
  EXPECT_EQ(div(i, 2).to_vector<float>(), (std::vector<float>{1.5f, 2.0f}));
}

TEST(TypePromotion, BoolArithmeticRefusesSubAndNeg) {
  Tensor m = gt(ints({1, 0}), 0);
  EXPECT_EQ(add(m, m).dtype(), DType::kBool);
  EXPECT_EQ(add(m, m).to_vector<uint8_t>(), (std::vector<uint8_t>{1, 0}));  // logical or, never 2
  EXPECT_EQ(mul(m, m).to_vector<uint8_t>(), (std::vector<uint8_t>{1, 0}));
  expect_error([&] { (void)(1 - m); }, "aten::sub", "with a bool tensor is not supported");
  expect_error([&] { sub(m, 1); }, "aten::sub", "use the `~` or `logical_not()` operator instead");
  expect_error([&] { sub(m, m); }, "aten::sub", "with two bool tensors is not supported");
  expect_error([&] { sub(ints({1}), true); }, "aten::sub", "with a bool tensor is not supported");
  expect_error([&] { neg(m); }, "aten::neg", "Negation, the `-` operator, on a bool tensor is not supported");
}

TEST(TypePromotion, PowOfTensorsAndIntegerPowers) {
  Tensor p = pow(ints({2, 3}), 2);
  EXPECT_EQ(p.dtype(), DType::kInt64);
  EXPECT_EQ(p.to_vector<int64_t>(), (std::vector<int64_t>{4, 9}));
  EXPECT_EQ(pow(ints({-3, 5}), 3).to_vector<int64_t>(), (std::vector<int64_t>{-27, 125}));
  EXPECT_EQ(pow(ints({7}), 0).to_vector<int64_t>(), (std::vector<int64_t>{1}));
  EXPECT_EQ(pow(ints({2}), 0.5).dtype(), DType::kFloat32);
  expect_error([] { pow(ints({2}), -1); }, "aten::pow", "Integers to negative integer powers are not allowed.");
  EXPECT_EQ(pow(ints({2, -3}), ints({3, 2})).to_vector<int64_t>(), (std::vector<int64_t>{8, 9}));
  Tensor base = from_vector(std::vector<float>{1.5f, 2.0f}, {2}).requires_grad_();
  Tensor e = from_vector(std::vector<float>{2.0f, 0.5f}, {2}).requires_grad_();
  Tensor y = pow(base, e);
  std::vector<float> v = y.to_vector<float>();
  EXPECT_FLOAT_EQ(v[0], 2.25f);
  EXPECT_FLOAT_EQ(v[1], 1.4142135f);
  sum(y).backward();
  std::vector<float> gb = base.grad().to_vector<float>(), ge = e.grad().to_vector<float>();
  EXPECT_NEAR(gb[0], 3.0, 1e-5);                               // e a^(e-1)
  EXPECT_NEAR(gb[1], 0.5 / std::sqrt(2.0), 1e-5);
  EXPECT_NEAR(ge[0], 2.25 * std::log(1.5), 1e-5);              // a^e log(a)
  EXPECT_NEAR(ge[1], std::sqrt(2.0) * std::log(2.0), 1e-5);
  EXPECT_EQ(pow(ones({2}, DType::kBFloat16), full({}, 2.0)).dtype(), DType::kBFloat16);
  expect_error([] { pow(gt(ints({1}), 0), gt(ints({1}), 0)); }, "aten::pow", "not implemented for 'Bool'");
}

TEST(TypePromotion, FloorDivideAndRemainderRoundDown) {
  Tensor a = ints({-7, -6, -1, 0, 1, 5, 7});
  // torch 2.13: a // 2, a % 2, a // -2, a % -2.
  EXPECT_EQ(floor_divide(a, wrap_scalar(2, a)).to_vector<int64_t>(), (std::vector<int64_t>{-4, -3, -1, 0, 0, 2, 3}));
  EXPECT_EQ(remainder(a, wrap_scalar(2, a)).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1, 0, 1, 1, 1}));
  EXPECT_EQ(floor_divide(a, wrap_scalar(-2, a)).to_vector<int64_t>(), (std::vector<int64_t>{3, 3, 0, 0, -1, -3, -4}));
  EXPECT_EQ(remainder(a, wrap_scalar(-2, a)).to_vector<int64_t>(), (std::vector<int64_t>{-1, 0, -1, 0, -1, -1, -1}));
  Tensor f = a.to(DType::kFloat32);
  EXPECT_EQ(floor_divide(f, wrap_scalar(2.5, f)).to_vector<float>(), (std::vector<float>{-3, -3, -1, 0, 0, 2, 2}));
  EXPECT_EQ(remainder(f, wrap_scalar(2.5, f)).to_vector<float>(), (std::vector<float>{0.5, 1.5, 1.5, 0, 1, 0, 2}));
  EXPECT_EQ(remainder(f, wrap_scalar(-2.5, f)).to_vector<float>(), (std::vector<float>{-2, -1, -1, 0, -1.5, 0, -0.5}));
  EXPECT_EQ(floor_divide(a, wrap_scalar(2.5, a)).dtype(), DType::kFloat32);
  Tensor x = f.requires_grad_();
  sum(remainder(x, wrap_scalar(2.5, x))).backward();
  EXPECT_EQ(x.grad().to_vector<float>(), std::vector<float>(7, 1.0f));
  Tensor m = gt(a, 0);
  expect_error([&] { floor_divide(m, m); }, "aten::floor_divide", "not implemented for 'Bool'");
  expect_error([&] { remainder(m, m); }, "aten::remainder", "not implemented for 'Bool'");
}

TEST(TypePromotion, BitwiseOnIntegersLogicalOnBool) {
  Tensor x = ints({1, -2, 6, 0}), y = ints({3, 3, -5, 7});
  EXPECT_EQ(bitwise_and(x, y).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 2, 0}));
  EXPECT_EQ(bitwise_or(x, y).to_vector<int64_t>(), (std::vector<int64_t>{3, -1, -1, 7}));
  EXPECT_EQ(bitwise_xor(x, y).to_vector<int64_t>(), (std::vector<int64_t>{2, -3, -3, 7}));
  EXPECT_EQ(bitwise_not(x).to_vector<int64_t>(), (std::vector<int64_t>{-2, 1, -7, -1}));
  EXPECT_EQ(bitwise_not(x.to(DType::kInt32)).dtype(), DType::kInt32);
  Tensor m = gt(ints({1, 0, 1, 0}), 0), n = gt(ints({1, 1, 0, 0}), 0);
  EXPECT_EQ(bitwise_and(m, n).to_vector<uint8_t>(), (std::vector<uint8_t>{1, 0, 0, 0}));
  EXPECT_EQ(bitwise_or(m, n).to_vector<uint8_t>(), (std::vector<uint8_t>{1, 1, 1, 0}));
  EXPECT_EQ(bitwise_xor(m, n).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 1, 0}));
  EXPECT_EQ(bitwise_not(m).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 0, 1}));
  EXPECT_EQ(bitwise_and(m, n).dtype(), DType::kBool);
  expect_error([] { bitwise_and(ones({1}), ones({1})); }, "aten::bitwise_and", "\"bitwise_and_cpu\" not implemented for 'Float'");
  expect_error([] { bitwise_not(ones({1}, DType::kBFloat16)); }, "aten::bitwise_not", "not implemented for 'BFloat16'");
}

TEST(TypePromotion, WhereWithNumbers) {
  Tensor c = gt(ints({1, 0, 1}), 0);
  Tensor x = from_vector(std::vector<float>{1, 2, 3}, {3});
  EXPECT_EQ(where(c, x, 0.0).to_vector<float>(), (std::vector<float>{1, 0, 3}));
  EXPECT_EQ(where(c, 0.5, ints({1, 2, 3})).dtype(), DType::kFloat32);
  EXPECT_EQ(where(c, 0.5, ints({1, 2, 3})).to_vector<float>(), (std::vector<float>{0.5, 2, 0.5}));
  EXPECT_EQ(where(c, ints({1, 2, 3}), 0).dtype(), DType::kInt64);
  EXPECT_EQ(where(c, 1.0, 0.0).dtype(), DType::kFloat32);
  EXPECT_EQ(where(c, 1, 0).dtype(), DType::kInt64);
  EXPECT_EQ(where(c, 1, 0).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(where(c, ones({3}, DType::kBFloat16), 0.5).dtype(), DType::kBFloat16);
}

TEST(TypePromotion, HalfMeanAccumulatesInFloat32) {
  // torch 2.13: (ones(1000, bf16) * 3).mean() is 3.0; rounding the sum (3000) to bf16 first gives 3.015625.
  for (DType t : {DType::kBFloat16, DType::kFloat16}) {
    Tensor m = mean(mul(ones({1000}, t), 3));
    EXPECT_EQ(m.dtype(), t);
    EXPECT_EQ(m.item(), 3.0);
  }
}

}  // namespace
}  // namespace lazytrain
