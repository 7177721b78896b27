// Literal::scalar: a 0-d literal of each dtype, the value converted as the
// HLO builder's constants and the scalar operands of ops need it.
#include "core/literal.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/half.h"

namespace lazytrain {
namespace {

TEST(LiteralScalar, EveryDtypeHoldsTheConvertedValue) {
  const Literal f = Literal::scalar(0.1, DType::kFloat32);
  EXPECT_EQ(f.shape(), Shape{});
  EXPECT_EQ(f.dtype(), DType::kFloat32);
  EXPECT_EQ(*f.data<float>(), 0.1f);
  // bf16 keeps 8 significant bits: 1 + 2^-9 rounds (to nearest) to 1, 1 + 3 * 2^-9 to 1 + 2^-7.
  EXPECT_EQ(static_cast<float>(*Literal::scalar(1.0 + std::ldexp(1.0, -9), DType::kBFloat16).data<BFloat16>()), 1.0f);
  EXPECT_EQ(static_cast<float>(*Literal::scalar(1.0 + 3 * std::ldexp(1.0, -9), DType::kBFloat16).data<BFloat16>()),
            1.0f + std::ldexp(1.0f, -7));
  EXPECT_EQ(static_cast<float>(*Literal::scalar(-2.5, DType::kFloat16).data<Half>()), -2.5f);
  EXPECT_EQ(*Literal::scalar(-7.9, DType::kInt32).data<int32_t>(), -7);  // toward zero
  EXPECT_EQ(*Literal::scalar(4294967296.0, DType::kInt64).data<int64_t>(), int64_t{4294967296});
  EXPECT_EQ(*Literal::scalar(0.5, DType::kBool).data<uint8_t>(), 1);
  EXPECT_EQ(*Literal::scalar(0.0, DType::kBool).data<uint8_t>(), 0);
  EXPECT_TRUE(std::isnan(*Literal::scalar(std::nan(""), DType::kFloat32).data<float>()));
}

TEST(LiteralScalar, IsAllElementsEqual) {
  EXPECT_TRUE(all_elements_equal(Literal::scalar(3.0, DType::kInt64), 3.0));
  EXPECT_TRUE(all_elements_equal(Literal::scalar(-1.0, DType::kBFloat16), -1.0));
  EXPECT_FALSE(all_elements_equal(Literal::scalar(2.0, DType::kFloat32), 3.0));
}

}  // namespace
}  // namespace lazytrain
