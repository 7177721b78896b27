// Elementwise ops (torch's UnaryOps/BinaryOps/PointwiseOps): arithmetic, pow,
// math functions (exp, log, sqrt, rsqrt, tanh, erf, abs, sin, cos), clamp,
// comparisons, logical ops, where, masked_fill, casts and the Tensor operators.
#include <cmath>

#include "core/error.h"
#include "core/op_location.h"
#include "tensor/lowering.h"

namespace lazytrain {

using namespace detail;
using autograd::record;
using autograd::sum_to;
using hlo::ComparisonDirection;
using hlo::HloOpcode;

namespace {

template <HloOpcode OP>
int lower_binary(LoweringContext& c, const Node& n) {
  return hlo::binary(OP, operand_as(c, n, 0, n.dtype(), n.shape()), operand_as(c, n, 1, n.dtype(), n.shape())).id();
}

// add and mul of bools are logical or / and (torch's), not byte arithmetic.
template <HloOpcode OP, HloOpcode BOOL_OP>
int lower_arith(LoweringContext& c, const Node& n) {
  return hlo::binary(n.dtype() == DType::kBool ? BOOL_OP : OP, operand_as(c, n, 0, n.dtype(), n.shape()),
                     operand_as(c, n, 1, n.dtype(), n.shape())).id();
}

// The dtype a comparison computes in: its operands' result_type (a 0-d
// operand has an empty shape, as a 0-d tensor has).
DType compare_dtype(const Node& n) {
  using P = PromotionOperand::Priority;
  auto operand = [&](size_t i) {
    const auto& o = n.operand(i);
    return PromotionOperand{o->dtype(), o->shape().empty() ? P::kZeroDim : P::kDimensioned};
  };
  return result_type({operand(0), operand(1)});
}

template <ComparisonDirection D>
int lower_compare(LoweringContext& c, const Node& n) {
  DType t = compare_dtype(n);
  return hlo::compare(operand_as(c, n, 0, t, n.shape()), operand_as(c, n, 1, t, n.shape()), D).id();
}

template <HloOpcode OP>
int lower_unary(LoweringContext& c, const Node& n) {
  return hlo::unary(OP, operand_as(c, n, 0, n.dtype(), n.shape())).id();
}

// kind: the result dtype is result_type(a, b), bool (comparisons), or floating
// (true division: float32 for integer and bool operands).
enum class ResultKind { kPromoted, kBool, kFloating };

Tensor binary(const char* op, const Tensor& a, const Tensor& b, lazy::LowerFn lower, Loc loc,
              ResultKind kind = ResultKind::kPromoted) {
  Shape shape;
  try {
    shape = broadcast_shapes(a.shape(), b.shape(), op);
  } catch (const Error& e) {
    throw_error(op, std::string(e.what()).substr(std::string(op).size() + 3), loc);
  }
  DType t = kind == ResultKind::kBool ? DType::kBool : result_type(a, b);
  if (kind == ResultKind::kFloating && !is_floating_point(t)) t = DType::kFloat32;
  return make_op(op, {a, b}, shape, t, {}, lower);
}

// torch's refusals of bool operands to - (the message points at ~).
void check_sub_operands(DType a, DType b, Loc loc) {
  if (a == DType::kBool && b == DType::kBool) {
    throw_error("aten::sub", "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                "`logical_xor()` operator instead.", loc);
  }
  if (a == DType::kBool || b == DType::kBool) {
    throw_error("aten::sub", "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
                "invert a mask, use the `~` or `logical_not()` operator instead.", loc);
  }
}

Tensor unary(const char* op, const Tensor& x, lazy::LowerFn lower, bool needs_float = true) {
  DType t = x.dtype();
  if (needs_float && !is_floating_point(t)) t = DType::kFloat32;
  return make_op(op, {x}, x.shape(), t, {}, lower);
}

}  // namespace

namespace detail {
Tensor floating(const Tensor& x) { return is_floating_point(x.dtype()) ? x : to_dtype(x, DType::kFloat32); }
}  // namespace detail

Tensor wrap_scalar(Scalar s, const Tensor& other) { return scalar_operand(s.value, result_type(other, s), other.device()); }

// b * alpha for add/sub. With an integral result, alpha multiplies as an
// integer so integers stay integers (torch: int64 + int64 * 2 is int64), and
// a fractional alpha is torch's error.
namespace {
Tensor scaled_by_alpha(const Tensor& a, const Tensor& b, double alpha, const char* op, Loc loc) {
  if (alpha == 1.0) return b;
  const DType t = result_type(a, b);
  if (is_floating_point(t) || t == DType::kBool) return mul(b, alpha);
  if (alpha != std::trunc(alpha)) {
    throw_error(op, "For integral input tensors, argument alpha must not be a floating point number.", loc);
  }
  return mul(b, Scalar(static_cast<int64_t>(alpha)));
}
}  // namespace

Tensor add(const Tensor& a, const Tensor& b, double alpha, Loc loc) {
  OpLocationScope at(loc);
  Tensor bb = scaled_by_alpha(a, b, alpha, "aten::add", loc);
  Tensor out = binary("aten::add", a, bb, lower_arith<HloOpcode::kAdd, HloOpcode::kOr>, loc);
  return record(out, "AddBackward0", {a, b}, [sa = a.shape(), sb = b.shape(), alpha](const Tensor& g) {
    return std::vector<Tensor>{sum_to(g, sa), sum_to(alpha == 1.0 ? g : mul(g, alpha), sb)};
  });
}

Tensor sub(const Tensor& a, const Tensor& b, double alpha, Loc loc) {
  OpLocationScope at(loc);
  check_sub_operands(a.dtype(), b.dtype(), loc);
  Tensor bb = scaled_by_alpha(a, b, alpha, "aten::sub", loc);
  Tensor out = binary("aten::sub", a, bb, lower_binary<HloOpcode::kSubtract>, loc);
  return record(out, "SubBackward0", {a, b}, [sa = a.shape(), sb = b.shape(), alpha](const Tensor& g) {
    return std::vector<Tensor>{sum_to(g, sa), sum_to(mul(g, -alpha), sb)};
  });
}

Tensor mul(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  Tensor out = binary("aten::mul", a, b, lower_arith<HloOpcode::kMultiply, HloOpcode::kAnd>, loc);
  return record(out, "MulBackward0", {a, b}, [a = a.detach(), b = b.detach(), ra = a.requires_grad(), rb = b.requires_grad()](const Tensor& g) {
    return std::vector<Tensor>{ra ? sum_to(mul(g, b), a.shape()) : Tensor(), rb ? sum_to(mul(g, a), b.shape()) : Tensor()};
  });
}

Tensor div(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  // PyTorch's true division: integer and bool operands give float32 (the
  // lowering converts them).
  Tensor out = binary("aten::div", a, b, lower_binary<HloOpcode::kDivide>, loc, ResultKind::kFloating);
  return record(out, "DivBackward0", {a, b}, [a = a.detach(), b = b.detach(), rb = b.requires_grad()](const Tensor& g) {
    Tensor gb = rb ? sum_to(neg(div(mul(g, a), mul(b, b))), b.shape()) : Tensor();
    return std::vector<Tensor>{sum_to(div(g, b), a.shape()), gb};
  });
}

namespace {
// Gradient of maximum/minimum: to the input that was picked, split in half on ties
// (PyTorch's rule). `a_wins`/`b_wins` are the strict comparisons a > b / b > a
// (a < b / b < a for minimum).
std::vector<Tensor> min_max_backward(const Tensor& g, const Tensor& a_wins, const Tensor& b_wins, const Shape& sa, const Shape& sb,
                                     bool ra, bool rb) {
  Tensor half = mul(g, 0.5);
  Tensor zero = constant(0.0, g.dtype());
  Tensor ga = where(a_wins, g, where(b_wins, zero, half));
  Tensor gb = where(b_wins, g, where(a_wins, zero, half));
  return {ra ? sum_to(ga, sa) : Tensor(), rb ? sum_to(gb, sb) : Tensor()};
}
}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  Tensor out = binary("aten::maximum", a, b, lower_binary<HloOpcode::kMaximum>, loc);
  return record(out, "MaximumBackward0", {a, b}, [a = a.detach(), b = b.detach(), ra = a.requires_grad(), rb = b.requires_grad()](const Tensor& g) {
    return min_max_backward(g, gt(a, b), gt(b, a), a.shape(), b.shape(), ra, rb);
  });
}

Tensor minimum(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  Tensor out = binary("aten::minimum", a, b, lower_binary<HloOpcode::kMinimum>, loc);
  return record(out, "MinimumBackward0", {a, b}, [a = a.detach(), b = b.detach(), ra = a.requires_grad(), rb = b.requires_grad()](const Tensor& g) {
    return min_max_backward(g, lt(a, b), lt(b, a), a.shape(), b.shape(), ra, rb);
  });
}

Tensor add(const Tensor& a, Scalar b, Loc loc) {
  OpLocationScope at(loc);
  return add(a, wrap_scalar(b, a), 1.0, loc);
}
Tensor sub(const Tensor& a, Scalar b, Loc loc) {
  OpLocationScope at(loc);
  // A bool number is refused as a bool tensor is (wrapping it may promote it away).
  check_sub_operands(a.dtype(), scalar_dtype(b.kind), loc);
  return sub(a, wrap_scalar(b, a), 1.0, loc);
}
Tensor mul(const Tensor& a, Scalar b, Loc loc) {
  OpLocationScope at(loc);
  return mul(a, wrap_scalar(b, a), loc);
}
Tensor div(const Tensor& a, Scalar b, Loc loc) {
  OpLocationScope at(loc);
  return div(a, wrap_scalar(b, a), loc);
}

Tensor pow(const Tensor& a, Scalar exponent, Loc loc) {
  OpLocationScope at(loc);
  const DType t = result_type(a, exponent);
  if (!is_floating_point(t) && exponent.is_integral() && exponent.value < 0) {
    throw_error("aten::pow", "Integers to negative integer powers are not allowed.", loc);
  }
  if (!is_floating_point(t)) {
    // Integer powers by squaring (exact, and native code: HLO power on
    // integers runs on the interpreter); the exponent is part of the graph.
    const auto e = static_cast<int64_t>(exponent.value);
    return make_op("aten::pow", {a}, a.shape(), t, {{"exponent", e}}, +[](LoweringContext& c, const Node& n) {
      XlaOp base = convert(operand(c, n, 0), n.dtype());
      XlaOp result = base.full_like(1.0);
      for (int64_t e = n.int_attr("exponent"); e > 0; e >>= 1) {
        if (e & 1) result = result * base;
        if (e > 1) base = base * base;
      }
      return result.id();
    });
  }
  Tensor out = binary("aten::pow", a, scalar_operand(exponent.value, t, a.device()), lower_binary<HloOpcode::kPower>, loc);
  return record(out, "PowBackward0", {a}, [a = a.detach(), e = exponent.value](const Tensor& g) {
    // x^0 is constant: its gradient is 0 even at x = 0, where 0 * x^-1 would be NaN.
    if (e == 0.0) return std::vector<Tensor>{zeros(g.shape(), g.dtype())};
    return std::vector<Tensor>{mul(g, mul(pow(a, e - 1.0), e))};
  });
}

Tensor pow(const Tensor& a, const Tensor& exponent, Loc loc) {
  OpLocationScope at(loc);
  if (result_type(a, exponent) == DType::kBool) throw_error("aten::pow", "\"pow\" not implemented for 'Bool'", loc);
  Tensor out = binary("aten::pow", a, exponent, lower_binary<HloOpcode::kPower>, loc);
  if (!is_floating_point(out.dtype())) return out;
  return record(out, "PowBackward1", {a, exponent},
                [a = a.detach(), e = exponent.detach(), y = out.detach(), ra = a.requires_grad(), re = exponent.requires_grad()](const Tensor& g) {
    // d/da = e a^(e-1) (0 where e == 0, as torch); d/de = a^e log(a).
    Tensor ga, ge;
    if (ra) ga = sum_to(where(eq(e, 0.0), 0.0, mul(g, mul(e, pow(a, sub(e, 1.0))))), a.shape());
    if (re) ge = sum_to(mul(g, mul(y, log(a))), e.shape());
    return std::vector<Tensor>{ga, ge};
  });
}

Tensor neg(const Tensor& x, Loc loc) {
  OpLocationScope at(loc);
  if (x.dtype() == DType::kBool) {
    throw_error("aten::neg", "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a "
                "mask, use the `~` or `logical_not()` operator instead.", loc);
  }
  Tensor out = unary("aten::neg", x, lower_unary<HloOpcode::kNegate>, false);
  return record(out, "NegBackward0", {x}, [](const Tensor& g) { return std::vector<Tensor>{neg(g)}; });
}

Tensor exp(const Tensor& x, Loc loc) {
  OpLocationScope at(loc);
  Tensor out = unary("aten::exp", x, lower_unary<HloOpcode::kExp>);
  return record(out, "ExpBackward0", {x}, [y = out.detach()](const Tensor& g) { return std::vector<Tensor>{mul(g, y)}; });
}

Tensor log(const Tensor& x, Loc loc) {
  OpLocationScope at(loc);
  Tensor out = unary("aten::log", x, lower_unary<HloOpcode::kLog>);
  return record(out, "LogBackward0", {x}, [x = x.detach()](const Tensor& g) { return std::vector<Tensor>{div(g, x)}; });
}

Tensor sqrt(const Tensor& x, Loc loc) {
  OpLocationScope at(loc);
  Tensor out = unary("aten::sqrt", x, lower_unary<HloOpcode::kSqrt>);
  return record(out, "SqrtBackward0", {x}, [y = out.detach()](const Tensor& g) { return std::vector<Tensor>{div(g, mul(y, 2.0))}; });
}

Tensor rsqrt(const Tensor& x, Loc loc) {
  OpLocationScope at(loc);
  Tensor out = unary("aten::rsqrt", x, lower_unary<HloOpcode::kRsqrt>);
  return record(out, "RsqrtBackward0", {x}, [y = out.detach()](const Tensor& g) {
    return std::vector<Tensor>{mul(g, mul(pow(y, 3.0), -0.5))};
  });
}

Tensor tanh(const Tensor& x, Loc loc) {
  OpLocationScope at(loc);
  Tensor out = unary("aten::tanh", x, lower_unary<HloOpcode::kTanh>);
  return record(out, "TanhBackward0", {x}, [y = out.detach()](const Tensor& g) {
    return std::vector<Tensor>{mul(g, sub(constant(1.0, y.dtype()), mul(y, y)))};
  });
}

Tensor erf(const Tensor& x, Loc loc) {
  OpLocationScope at(loc);
  Tensor out = unary("aten::erf", x, lower_unary<HloOpcode::kErf>);
  return record(out, "ErfBackward0", {x}, [x = x.detach()](const Tensor& g) {
    return std::vector<Tensor>{mul(g, mul(exp(neg(mul(x, x))), 2.0 / std::sqrt(M_PI)))};
  });
}

Tensor abs(const Tensor& x, Loc loc) {
  OpLocationScope at(loc);
  Tensor out = unary("aten::abs", x, lower_unary<HloOpcode::kAbs>, false);
  return record(out, "AbsBackward0", {x}, [x = x.detach()](const Tensor& g) {
    return std::vector<Tensor>{mul(g, sub(to_dtype(gt(x, 0.0), g.dtype()), to_dtype(lt(x, 0.0), g.dtype())))};
  });
}

Tensor sin(const Tensor& x_in, Loc loc) {
  OpLocationScope at(loc);
  const Tensor x = floating(x_in);
  Tensor out = make_op("aten::sin", {x}, x.shape(), x.dtype(), {},
                       +[](LoweringContext& c, const Node& n) { return hlo::sin(operand(c, n, 0)).id(); });
  return record(out, "SinBackward0", {x}, [x = x.detach()](const Tensor& g) { return std::vector<Tensor>{mul(g, cos(x))}; });
}

Tensor cos(const Tensor& x_in, Loc loc) {
  OpLocationScope at(loc);
  const Tensor x = floating(x_in);
  Tensor out = make_op("aten::cos", {x}, x.shape(), x.dtype(), {},
                       +[](LoweringContext& c, const Node& n) { return hlo::cos(operand(c, n, 0)).id(); });
  return record(out, "CosBackward0", {x}, [x = x.detach()](const Tensor& g) { return std::vector<Tensor>{neg(mul(g, sin(x)))}; });
}

Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max, Loc loc) {
  OpLocationScope at(loc);
  if (!min && !max) throw_error("aten::clamp", "at least one of 'min' or 'max' must not be None", loc);
  DType t = x.dtype();
  if (min) t = promote_types(t, scalar_result_dtype(x, *min));
  if (max) t = promote_types(t, scalar_result_dtype(x, *max));
  const Tensor xt = to_dtype(x, t);
  // The bounds are operands (constants for 0 and ±1, else device data): a
  // changing bound (a schedule) never recompiles.
  std::vector<Tensor> inputs = {xt};
  if (min) inputs.push_back(scalar_operand(*min, t, x.device()));
  if (max) inputs.push_back(scalar_operand(*max, t, x.device()));
  const int64_t has_min = min.has_value(), has_max = max.has_value();
  Tensor out = make_op("aten::clamp", inputs, x.shape(), t, {{"has_min", has_min}, {"has_max", has_max}},
                       +[](LoweringContext& c, const Node& n) {
                         XlaOp y = operand(c, n, 0);
                         size_t next = 1;
                         if (n.int_attr("has_min")) y = hlo::max(y, operand_as(c, n, next++, n.dtype(), n.shape()));
                         if (n.int_attr("has_max")) y = hlo::min(y, operand_as(c, n, next++, n.dtype(), n.shape()));
                         return y.id();
                       });
  if (!is_floating_point(t)) return out;
  Tensor lo = min ? inputs[1] : Tensor(), hi = max ? inputs.back() : Tensor();
  return record(out, "ClampBackward1", {xt}, [xt = xt.detach(), lo, hi](const Tensor& g) {
    // torch's clamp_backward: g where min <= x <= max, else 0 (a NaN x gets none).
    Tensor inside = lo.defined() ? ge(xt, lo) : Tensor();
    if (hi.defined()) inside = inside.defined() ? logical_and(inside, le(xt, hi)) : le(xt, hi);
    return std::vector<Tensor>{where(inside, g, constant(0.0, g.dtype()))};
  });
}

Tensor eq(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  return binary("aten::eq", a, b, lower_compare<ComparisonDirection::kEq>, loc, ResultKind::kBool);
}
Tensor ne(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  return binary("aten::ne", a, b, lower_compare<ComparisonDirection::kNe>, loc, ResultKind::kBool);
}
Tensor lt(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  return binary("aten::lt", a, b, lower_compare<ComparisonDirection::kLt>, loc, ResultKind::kBool);
}
Tensor le(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  return binary("aten::le", a, b, lower_compare<ComparisonDirection::kLe>, loc, ResultKind::kBool);
}
Tensor gt(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  return binary("aten::gt", a, b, lower_compare<ComparisonDirection::kGt>, loc, ResultKind::kBool);
}
Tensor ge(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  return binary("aten::ge", a, b, lower_compare<ComparisonDirection::kGe>, loc, ResultKind::kBool);
}
Tensor eq(const Tensor& a, Scalar b, Loc loc) {
  OpLocationScope at(loc);
  return eq(a, wrap_scalar(b, a), loc);
}
Tensor ne(const Tensor& a, Scalar b, Loc loc) {
  OpLocationScope at(loc);
  return ne(a, wrap_scalar(b, a), loc);
}
Tensor lt(const Tensor& a, Scalar b, Loc loc) {
  OpLocationScope at(loc);
  return lt(a, wrap_scalar(b, a), loc);
}
Tensor le(const Tensor& a, Scalar b, Loc loc) {
  OpLocationScope at(loc);
  return le(a, wrap_scalar(b, a), loc);
}
Tensor gt(const Tensor& a, Scalar b, Loc loc) {
  OpLocationScope at(loc);
  return gt(a, wrap_scalar(b, a), loc);
}
Tensor ge(const Tensor& a, Scalar b, Loc loc) {
  OpLocationScope at(loc);
  return ge(a, wrap_scalar(b, a), loc);
}

Tensor logical_and(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  return binary("aten::logical_and", to_dtype(a, DType::kBool), to_dtype(b, DType::kBool), lower_binary<HloOpcode::kAnd>, loc, ResultKind::kBool);
}
Tensor logical_or(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  return binary("aten::logical_or", to_dtype(a, DType::kBool), to_dtype(b, DType::kBool), lower_binary<HloOpcode::kOr>, loc, ResultKind::kBool);
}
Tensor logical_not(const Tensor& x, Loc loc) {
  OpLocationScope at(loc);
  return make_op("aten::logical_not", {to_dtype(x, DType::kBool)}, x.shape(), DType::kBool, {},
                 +[](LoweringContext& c, const Node& n) { return (~operand(c, n, 0)).id(); });
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  if (condition.dtype() != DType::kBool) {
    throw_error("aten::where", "condition must be a bool tensor, got " + torch_name(condition.dtype()), loc);
  }
  Shape shape;
  try {
    shape = broadcast_shapes(broadcast_shapes(condition.shape(), a.shape(), "aten::where"), b.shape(), "aten::where");
  } catch (const Error& e) {
    throw_error("aten::where", std::string(e.what()).substr(15), loc);
  }
  DType t = result_type(a, b);
  Tensor out = make_op("aten::where", {condition, a, b}, shape, t, {}, +[](LoweringContext& c, const Node& n) {
    return select(operand_as(c, n, 0, DType::kBool, n.shape()), operand_as(c, n, 1, n.dtype(), n.shape()),
                  operand_as(c, n, 2, n.dtype(), n.shape())).id();
  });
  return record(out, "WhereBackward0", {condition, a, b}, [cond = condition.detach(), sa = a.shape(), sb = b.shape()](const Tensor& g) {
    Tensor zero = constant(0.0, g.dtype());
    return std::vector<Tensor>{Tensor(), sum_to(where(cond, g, zero), sa), sum_to(where(cond, zero, g), sb)};
  });
}

Tensor where(const Tensor& condition, const Tensor& a, Scalar b, Loc loc) {
  OpLocationScope at(loc);
  return where(condition, a, wrap_scalar(b, a), loc);
}
Tensor where(const Tensor& condition, Scalar a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  return where(condition, wrap_scalar(a, b), b, loc);
}
Tensor where(const Tensor& condition, Scalar a, Scalar b, Loc loc) {
  OpLocationScope at(loc);
  // Two numbers: their own result_type (float32 for floats, int64 for ints).
  const DType t = result_type(a, b);
  return where(condition, scalar_operand(a.value, t, condition.device()), scalar_operand(b.value, t, condition.device()), loc);
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value, Loc loc) {
  OpLocationScope at(loc);
  if (mask.dtype() != DType::kBool) {
    throw_error("aten::masked_fill", "mask must be a bool tensor, got " + torch_name(mask.dtype()), loc);
  }
  Shape shape = broadcast_shapes(x.shape(), mask.shape(), "aten::masked_fill");
  if (shape != x.shape()) {
    throw_error("aten::masked_fill", "mask " + shape_str(mask.shape()) + " must broadcast to the input's shape " + shape_str(x.shape()), loc);
  }
  // The fill value is an operand (a constant for 0 and ±1, else device data).
  Tensor fill = scalar_operand(value, x.dtype(), x.device());
  Tensor out = make_op("aten::masked_fill", {x, mask, fill}, x.shape(), x.dtype(), {}, +[](LoweringContext& c, const Node& n) {
    return select(operand_as(c, n, 1, DType::kBool, n.shape()), operand_as(c, n, 2, n.dtype(), n.shape()), operand(c, n, 0)).id();
  });
  return record(out, "MaskedFillBackward0", {x}, [mask = mask.detach()](const Tensor& g) {
    return std::vector<Tensor>{where(mask, constant(0.0, g.dtype()), g)};
  });
}

Tensor to_dtype(const Tensor& x, DType dtype, Loc loc) {
  OpLocationScope at(loc);
  if (x.dtype() == dtype) return x;
  Tensor out = make_op("aten::_to_copy", {x}, x.shape(), dtype, {{"dtype", torch_name(dtype)}},
                       +[](LoweringContext& c, const Node& n) { return convert(operand(c, n, 0), n.dtype()).id(); });
  if (!is_floating_point(dtype)) return out;
  return record(out, "ToCopyBackward0", {x}, [from = x.dtype()](const Tensor& g) { return std::vector<Tensor>{to_dtype(g, from)}; });
}

Tensor operator+(TensorOperand a, const Tensor& b) { return add(a.tensor, b, 1.0, a.loc); }
Tensor operator-(TensorOperand a, const Tensor& b) { return sub(a.tensor, b, 1.0, a.loc); }
Tensor operator*(TensorOperand a, const Tensor& b) { return mul(a.tensor, b, a.loc); }
Tensor operator/(TensorOperand a, const Tensor& b) { return div(a.tensor, b, a.loc); }
Tensor operator+(TensorOperand a, Scalar b) { return add(a.tensor, b, a.loc); }
Tensor operator-(TensorOperand a, Scalar b) { return sub(a.tensor, b, a.loc); }
Tensor operator*(TensorOperand a, Scalar b) { return mul(a.tensor, b, a.loc); }
Tensor operator/(TensorOperand a, Scalar b) { return div(a.tensor, b, a.loc); }
Tensor operator+(Scalar a, TensorOperand b) { return add(b.tensor, a, b.loc); }
Tensor operator-(Scalar a, TensorOperand b) { return sub(wrap_scalar(a, b.tensor), b.tensor, 1.0, b.loc); }
Tensor operator*(Scalar a, TensorOperand b) { return mul(b.tensor, a, b.loc); }
Tensor operator-(TensorOperand x) { return neg(x.tensor, x.loc); }

}  // namespace lazytrain
