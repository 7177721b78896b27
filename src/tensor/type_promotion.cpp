#include "tensor/type_promotion.h"

#include <optional>

#include "core/error.h"
#include "tensor/tensor.h"

namespace lazytrain {

namespace {

int category(DType t) {
  if (t == DType::kBool) return 0;
  return is_floating_point(t) ? 2 : 1;
}

// torch's combine_categories: `higher` (a higher priority's dtype) wins unless
// `lower` is of a higher category, or `higher` is bool (then they promote).
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (category(*higher) >= category(*lower)) return higher;
  return promote_types(*higher, *lower);
}

}  // namespace

DType scalar_dtype(Scalar::Kind kind) {
  switch (kind) {
    case Scalar::Kind::kBool: return DType::kBool;
    case Scalar::Kind::kInt: return DType::kInt64;
    case Scalar::Kind::kFloat: return DType::kFloat32;
  }
  return DType::kFloat32;
}

PromotionOperand promotion_operand(const Tensor& t) {
  return {t.dtype(), t.dim() == 0 ? PromotionOperand::Priority::kZeroDim : PromotionOperand::Priority::kDimensioned};
}

PromotionOperand promotion_operand(Scalar s) { return {scalar_dtype(s.kind), PromotionOperand::Priority::kWrappedNumber}; }

DType result_type(std::initializer_list<PromotionOperand> operands) {
  std::optional<DType> by_priority[3];
  for (const PromotionOperand& o : operands) {
    std::optional<DType>& r = by_priority[static_cast<int>(o.priority)];
    r = r ? promote_types(*r, o.dtype) : o.dtype;
  }
  std::optional<DType> out = combine(by_priority[0], combine(by_priority[1], by_priority[2]));
  check(out.has_value(), "result_type", "needs at least one operand");
  return *out;
}

DType result_type(const Tensor& a, const Tensor& b) { return result_type({promotion_operand(a), promotion_operand(b)}); }
DType result_type(const Tensor& a, Scalar b) { return result_type({promotion_operand(a), promotion_operand(b)}); }
DType result_type(Scalar a, Scalar b) { return result_type({promotion_operand(a), promotion_operand(b)}); }

}  // namespace lazytrain
