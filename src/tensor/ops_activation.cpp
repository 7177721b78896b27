// Elementwise functions added after the first set: sigmoid, silu, sin, cos, clamp.
#include "core/error.h"
#include "core/op_location.h"
#include "tensor/lowering.h"

namespace lazytrain {

using namespace detail;
using autograd::record;

namespace {

// A floating copy of x: integer and bool tensors become float32 (torch's rule for these functions).
Tensor floating(const Tensor& x) { return is_floating_point(x.dtype()) ? x : to_dtype(x, DType::kFloat32); }

// 0.5 tanh(x / 2) + 0.5 (XLA's logistic expansion: bounded for any x).
XlaOp lower_sigmoid(XlaOp x) {
  XlaOp half = x.full_like(0.5);
  return half * tanh(half * x) + half;
}

}  // namespace

Tensor sigmoid(const Tensor& x_in, Loc loc) {
  OpLocationScope at(loc);
  const Tensor x = floating(x_in);
  Tensor out = make_op("aten::sigmoid", {x}, x.shape(), x.dtype(), {}, +[](LoweringContext& c, const Node& n) {
    return lower_sigmoid(operand(c, n, 0)).id();
  });
  return record(out, "SigmoidBackward0", {x}, [y = out.detach()](const Tensor& g) {
    return std::vector<Tensor>{mul(g, mul(y, sub(constant(1.0, y.dtype()), y)))};
  });
}

Tensor silu(const Tensor& x_in, Loc loc) {
  OpLocationScope at(loc);
  const Tensor x = floating(x_in);
  Tensor out = make_op("aten::silu", {x}, x.shape(), x.dtype(), {}, +[](LoweringContext& c, const Node& n) {
    XlaOp x = operand(c, n, 0);
    return (x * lower_sigmoid(x)).id();
  });
  return record(out, "SiluBackward0", {x}, [x = x.detach()](const Tensor& g) {
    // d/dx x s(x) = s (1 + x (1 - s)), one fused loop.
    Tensor gx = make_op("aten::silu_backward", {g, x}, x.shape(), x.dtype(), {}, +[](LoweringContext& c, const Node& n) {
      XlaOp g = operand(c, n, 0), x = operand(c, n, 1);
      XlaOp s = lower_sigmoid(x);
      return (g * (s * (1 + x * (1 - s)))).id();
    });
    return std::vector<Tensor>{gx};
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

}  // namespace lazytrain
