// Elementwise ops: arithmetic, math functions, comparisons, where, casts.
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
  return c.builder().binary(OP, operand_as(c, n, 0, n.dtype(), n.shape()), operand_as(c, n, 1, n.dtype(), n.shape()));
}

template <ComparisonDirection D>
int lower_compare(LoweringContext& c, const Node& n) {
  DType t = promote_types(n.operand(0)->dtype(), n.operand(1)->dtype());
  return c.builder().compare(operand_as(c, n, 0, t, n.shape()), operand_as(c, n, 1, t, n.shape()), D);
}

template <HloOpcode OP>
int lower_unary(LoweringContext& c, const Node& n) {
  return c.builder().unary(OP, operand_as(c, n, 0, n.dtype(), n.shape()));
}

Tensor binary(const char* op, const Tensor& a, const Tensor& b, lazy::LowerFn lower, Loc loc, bool comparison = false) {
  Shape shape;
  try {
    shape = broadcast_shapes(a.shape(), b.shape(), op);
  } catch (const Error& e) {
    throw_error(op, std::string(e.what()).substr(std::string(op).size() + 3), loc);
  }
  DType t = comparison ? DType::kBool : promote_types(a.dtype(), b.dtype());
  return make_op(op, {a, b}, shape, t, {}, lower);
}

Tensor unary(const char* op, const Tensor& x, lazy::LowerFn lower, bool needs_float = true) {
  DType t = x.dtype();
  if (needs_float && !is_floating_point(t)) t = DType::kFloat32;
  return make_op(op, {x}, x.shape(), t, {}, lower);
}

Tensor scalar_like(const Tensor& x, double value) { return scalar_operand(value, scalar_result_dtype(x, value), x.device()); }

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, double alpha, Loc loc) {
  OpLocationScope at(loc);
  Tensor bb = alpha == 1.0 ? b : mul(b, alpha);
  Tensor out = binary("aten::add", a, bb, lower_binary<HloOpcode::kAdd>, loc);
  return record(out, "AddBackward0", {a, b}, [sa = a.shape(), sb = b.shape(), alpha](const Tensor& g) {
    return std::vector<Tensor>{sum_to(g, sa), sum_to(alpha == 1.0 ? g : mul(g, alpha), sb)};
  });
}

Tensor sub(const Tensor& a, const Tensor& b, double alpha, Loc loc) {
  OpLocationScope at(loc);
  Tensor bb = alpha == 1.0 ? b : mul(b, alpha);
  Tensor out = binary("aten::sub", a, bb, lower_binary<HloOpcode::kSubtract>, loc);
  return record(out, "SubBackward0", {a, b}, [sa = a.shape(), sb = b.shape(), alpha](const Tensor& g) {
    return std::vector<Tensor>{sum_to(g, sa), sum_to(mul(g, -alpha), sb)};
  });
}

Tensor mul(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  Tensor out = binary("aten::mul", a, b, lower_binary<HloOpcode::kMultiply>, loc);
  return record(out, "MulBackward0", {a, b}, [a = a.detach(), b = b.detach(), ra = a.requires_grad(), rb = b.requires_grad()](const Tensor& g) {
    return std::vector<Tensor>{ra ? sum_to(mul(g, b), a.shape()) : Tensor(), rb ? sum_to(mul(g, a), b.shape()) : Tensor()};
  });
}

Tensor div(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  Tensor out = binary("aten::div", a, b, lower_binary<HloOpcode::kDivide>, loc);
  if (!is_floating_point(out.dtype())) {
    // PyTorch's true division: integer inputs give float32.
    out = binary("aten::div", to_dtype(a, DType::kFloat32), to_dtype(b, DType::kFloat32), lower_binary<HloOpcode::kDivide>, loc);
  }
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

Tensor add(const Tensor& a, double b, Loc loc) {
  OpLocationScope at(loc);
  return add(a, scalar_like(a, b));
}
Tensor sub(const Tensor& a, double b, Loc loc) {
  OpLocationScope at(loc);
  return sub(a, scalar_like(a, b));
}
Tensor mul(const Tensor& a, double b, Loc loc) {
  OpLocationScope at(loc);
  return mul(a, scalar_like(a, b));
}
Tensor div(const Tensor& a, double b, Loc loc) {
  OpLocationScope at(loc);
  return div(a, scalar_like(a, b));
}

Tensor pow(const Tensor& a, double exponent, Loc loc) {
  OpLocationScope at(loc);
  Tensor e = scalar_operand(exponent, is_floating_point(a.dtype()) ? a.dtype() : DType::kFloat32, a.device());
  Tensor out = binary("aten::pow", a, e, lower_binary<HloOpcode::kPower>, loc);
  return record(out, "PowBackward0", {a}, [a = a.detach(), exponent](const Tensor& g) {
    // x^0 is constant: its gradient is 0 even at x = 0, where 0 * x^-1 would be NaN.
    if (exponent == 0.0) return std::vector<Tensor>{zeros(g.shape(), g.dtype())};
    return std::vector<Tensor>{mul(g, mul(pow(a, exponent - 1.0), exponent))};
  });
}

Tensor neg(const Tensor& x, Loc loc) {
  OpLocationScope at(loc);
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

Tensor relu(const Tensor& x, Loc loc) {
  OpLocationScope at(loc);
  Tensor out = make_op("aten::relu", {x}, x.shape(), x.dtype(), {}, +[](LoweringContext& c, const Node& n) {
    auto& b = c.builder();
    return b.binary(HloOpcode::kMaximum, c.operand(n, 0), b.full(0.0, n.shape(), n.dtype()));
  });
  return record(out, "ReluBackward0", {x}, [x = x.detach()](const Tensor& g) {
    return std::vector<Tensor>{mul(g, to_dtype(gt(x, 0.0), g.dtype()))};
  });
}

namespace {
// The tanh form's constants: sqrt(2/pi) and the cubic coefficient (PyTorch's kBeta, kKappa).
const double kGeluTanhBeta = std::sqrt(2.0 / M_PI);
constexpr double kGeluTanhKappa = 0.044715;

// tanh(sqrt(2/pi) (x + 0.044715 x^3)), and x^2 for the backward.
int gelu_tanh_inner(hlo::HloBuilder& b, int x, int x_squared, const Shape& s, DType t) {
  int cube = b.binary(HloOpcode::kMultiply, x_squared, x);
  int poly = b.binary(HloOpcode::kAdd, x, b.binary(HloOpcode::kMultiply, b.full(kGeluTanhKappa, s, t), cube));
  return b.unary(HloOpcode::kTanh, b.binary(HloOpcode::kMultiply, b.full(kGeluTanhBeta, s, t), poly));
}

// PyTorch's GELU kernels (forward and backward) compute a bf16 or f16 tensor in
// float and round the result once; these lowerings do the same (rounding after
// every op lost up to 40% of the value where erf nears -1, x ≈ -3).
DType gelu_compute_dtype(DType t) { return t == DType::kBFloat16 || t == DType::kFloat16 ? DType::kFloat32 : t; }

// none: d/dx = 0.5 (1 + erf(x/√2)) + x · exp(-x²/2) / √(2π)
// tanh (PyTorch's GeluBackward): with u = tanh(β (x + κ x³)),
//   d/dx = 0.5 (1 + u) + 0.5 x (1 - u²) β (1 + 3 κ x²)
Tensor gelu_backward(const Tensor& g, const Tensor& x, const std::string& approximate) {
  const bool tanh_form = approximate == "tanh";
  auto lower_none = +[](LoweringContext& c, const Node& n) {
    auto& b = c.builder();
    const Shape& s = n.shape();
    const DType t = gelu_compute_dtype(n.dtype());
    int grad = b.convert(c.operand(n, 0), t), x = b.convert(c.operand(n, 1), t);
    int cdf = b.binary(HloOpcode::kMultiply, b.full(0.5, s, t),
                       b.binary(HloOpcode::kAdd, b.full(1.0, s, t),
                                b.unary(HloOpcode::kErf, b.binary(HloOpcode::kMultiply, x, b.full(M_SQRT1_2, s, t)))));
    int pdf = b.binary(HloOpcode::kMultiply, b.full(1.0 / std::sqrt(2.0 * M_PI), s, t),
                       b.unary(HloOpcode::kExp, b.binary(HloOpcode::kMultiply, b.full(-0.5, s, t), b.binary(HloOpcode::kMultiply, x, x))));
    int d = b.binary(HloOpcode::kAdd, cdf, b.binary(HloOpcode::kMultiply, x, pdf));
    return b.convert(b.binary(HloOpcode::kMultiply, grad, d), n.dtype());
  };
  auto lower_tanh = +[](LoweringContext& c, const Node& n) {
    auto& b = c.builder();
    const Shape& s = n.shape();
    const DType t = gelu_compute_dtype(n.dtype());
    int grad = b.convert(c.operand(n, 0), t), x = b.convert(c.operand(n, 1), t);
    int x_squared = b.binary(HloOpcode::kMultiply, x, x);
    int u = gelu_tanh_inner(b, x, x_squared, s, t);
    int left = b.binary(HloOpcode::kMultiply, b.full(0.5, s, t), b.binary(HloOpcode::kAdd, b.full(1.0, s, t), u));
    int one_minus_u2 = b.binary(HloOpcode::kSubtract, b.full(1.0, s, t), b.binary(HloOpcode::kMultiply, u, u));
    int slope = b.binary(HloOpcode::kMultiply, b.full(kGeluTanhBeta, s, t),
                         b.binary(HloOpcode::kAdd, b.full(1.0, s, t), b.binary(HloOpcode::kMultiply, b.full(3.0 * kGeluTanhKappa, s, t), x_squared)));
    int right = b.binary(HloOpcode::kMultiply, b.binary(HloOpcode::kMultiply, b.full(0.5, s, t), x),
                         b.binary(HloOpcode::kMultiply, one_minus_u2, slope));
    return b.convert(b.binary(HloOpcode::kMultiply, grad, b.binary(HloOpcode::kAdd, left, right)), n.dtype());
  };
  return make_op("aten::gelu_backward", {g, x}, x.shape(), x.dtype(), {{"approximate", approximate}}, tanh_form ? lower_tanh : lower_none);
}
}  // namespace

Tensor gelu(const Tensor& x, const std::string& approximate, Loc loc) {
  OpLocationScope at(loc);
  check(is_floating_point(x.dtype()), "aten::gelu", "expects a floating-point tensor, got " + torch_name(x.dtype()));
  check(approximate == "none" || approximate == "tanh", "aten::gelu",
        "approximate must be 'none' or 'tanh', got '" + approximate + "'");
  auto lower_none = +[](LoweringContext& c, const Node& n) {
    auto& b = c.builder();
    const Shape& s = n.shape();
    const DType t = gelu_compute_dtype(n.dtype());
    int x = b.convert(c.operand(n, 0), t);
    int e = b.unary(HloOpcode::kErf, b.binary(HloOpcode::kMultiply, x, b.full(M_SQRT1_2, s, t)));
    int half_x = b.binary(HloOpcode::kMultiply, x, b.full(0.5, s, t));
    return b.convert(b.binary(HloOpcode::kMultiply, half_x, b.binary(HloOpcode::kAdd, b.full(1.0, s, t), e)), n.dtype());
  };
  auto lower_tanh = +[](LoweringContext& c, const Node& n) {
    auto& b = c.builder();
    const Shape& s = n.shape();
    const DType t = gelu_compute_dtype(n.dtype());
    int x = b.convert(c.operand(n, 0), t);
    int u = gelu_tanh_inner(b, x, b.binary(HloOpcode::kMultiply, x, x), s, t);
    int half_x = b.binary(HloOpcode::kMultiply, x, b.full(0.5, s, t));
    return b.convert(b.binary(HloOpcode::kMultiply, half_x, b.binary(HloOpcode::kAdd, b.full(1.0, s, t), u)), n.dtype());
  };
  Tensor out = make_op("aten::gelu", {x}, x.shape(), x.dtype(), {{"approximate", approximate}}, approximate == "tanh" ? lower_tanh : lower_none);
  return record(out, "GeluBackward0", {x}, [x = x.detach(), approximate](const Tensor& g) {
    return std::vector<Tensor>{gelu_backward(g, x, approximate)};
  });
}

Tensor eq(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  return binary("aten::eq", a, b, lower_compare<ComparisonDirection::kEq>, loc, true);
}
Tensor ne(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  return binary("aten::ne", a, b, lower_compare<ComparisonDirection::kNe>, loc, true);
}
Tensor lt(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  return binary("aten::lt", a, b, lower_compare<ComparisonDirection::kLt>, loc, true);
}
Tensor le(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  return binary("aten::le", a, b, lower_compare<ComparisonDirection::kLe>, loc, true);
}
Tensor gt(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  return binary("aten::gt", a, b, lower_compare<ComparisonDirection::kGt>, loc, true);
}
Tensor ge(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  return binary("aten::ge", a, b, lower_compare<ComparisonDirection::kGe>, loc, true);
}
Tensor eq(const Tensor& a, double b, Loc loc) {
  OpLocationScope at(loc);
  return eq(a, scalar_like(a, b));
}
Tensor ne(const Tensor& a, double b, Loc loc) {
  OpLocationScope at(loc);
  return ne(a, scalar_like(a, b));
}
Tensor lt(const Tensor& a, double b, Loc loc) {
  OpLocationScope at(loc);
  return lt(a, scalar_like(a, b));
}
Tensor gt(const Tensor& a, double b, Loc loc) {
  OpLocationScope at(loc);
  return gt(a, scalar_like(a, b));
}

Tensor logical_and(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  return binary("aten::logical_and", to_dtype(a, DType::kBool), to_dtype(b, DType::kBool), lower_binary<HloOpcode::kAnd>, loc, true);
}
Tensor logical_or(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  return binary("aten::logical_or", to_dtype(a, DType::kBool), to_dtype(b, DType::kBool), lower_binary<HloOpcode::kOr>, loc, true);
}
Tensor logical_not(const Tensor& x, Loc loc) {
  OpLocationScope at(loc);
  return make_op("aten::logical_not", {to_dtype(x, DType::kBool)}, x.shape(), DType::kBool, {},
                 +[](LoweringContext& c, const Node& n) { return c.builder().unary(HloOpcode::kNot, c.operand(n, 0)); });
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
  DType t = promote_types(a.dtype(), b.dtype());
  Tensor out = make_op("aten::where", {condition, a, b}, shape, t, {}, +[](LoweringContext& c, const Node& n) {
    return c.builder().select(operand_as(c, n, 0, DType::kBool, n.shape()), operand_as(c, n, 1, n.dtype(), n.shape()),
                              operand_as(c, n, 2, n.dtype(), n.shape()));
  });
  return record(out, "WhereBackward0", {condition, a, b}, [cond = condition.detach(), sa = a.shape(), sb = b.shape()](const Tensor& g) {
    Tensor zero = constant(0.0, g.dtype());
    return std::vector<Tensor>{Tensor(), sum_to(where(cond, g, zero), sa), sum_to(where(cond, zero, g), sb)};
  });
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
    return c.builder().select(operand_as(c, n, 1, DType::kBool, n.shape()), operand_as(c, n, 2, n.dtype(), n.shape()), c.operand(n, 0));
  });
  return record(out, "MaskedFillBackward0", {x}, [mask = mask.detach()](const Tensor& g) {
    return std::vector<Tensor>{where(mask, constant(0.0, g.dtype()), g)};
  });
}

Tensor to_dtype(const Tensor& x, DType dtype, Loc loc) {
  OpLocationScope at(loc);
  if (x.dtype() == dtype) return x;
  Tensor out = make_op("aten::_to_copy", {x}, x.shape(), dtype, {{"dtype", torch_name(dtype)}},
                       +[](LoweringContext& c, const Node& n) { return c.builder().convert(c.operand(n, 0), n.dtype()); });
  if (!is_floating_point(dtype)) return out;
  return record(out, "ToCopyBackward0", {x}, [from = x.dtype()](const Tensor& g) { return std::vector<Tensor>{to_dtype(g, from)}; });
}

Tensor operator+(TensorOperand a, const Tensor& b) { return add(a.tensor, b, 1.0, a.loc); }
Tensor operator-(TensorOperand a, const Tensor& b) { return sub(a.tensor, b, 1.0, a.loc); }
Tensor operator*(TensorOperand a, const Tensor& b) { return mul(a.tensor, b, a.loc); }
Tensor operator/(TensorOperand a, const Tensor& b) { return div(a.tensor, b, a.loc); }
Tensor operator+(TensorOperand a, double b) { return add(a.tensor, b, a.loc); }
Tensor operator-(TensorOperand a, double b) { return sub(a.tensor, b, a.loc); }
Tensor operator*(TensorOperand a, double b) { return mul(a.tensor, b, a.loc); }
Tensor operator/(TensorOperand a, double b) { return div(a.tensor, b, a.loc); }
Tensor operator+(double a, TensorOperand b) { return add(b.tensor, a, b.loc); }
Tensor operator-(double a, TensorOperand b) { return add(neg(b.tensor, b.loc), a, b.loc); }
Tensor operator*(double a, TensorOperand b) { return mul(b.tensor, a, b.loc); }
Tensor operator-(TensorOperand x) { return neg(x.tensor, x.loc); }

}  // namespace lazytrain
