// Activation functions (torch's Activation.cpp): relu, gelu (exact and tanh
// form), sigmoid, silu, with their gradients.
#include <cmath>

#include "core/error.h"
#include "core/op_location.h"
#include "tensor/lowering.h"

namespace lazytrain {

using namespace detail;
using autograd::record;

namespace {

// 0.5 tanh(x / 2) + 0.5 (XLA's logistic expansion: bounded for any x).
XlaOp lower_sigmoid(XlaOp x) {
  XlaOp half = x.full_like(0.5);
  return half * tanh(half * x) + half;
}

}  // namespace

Tensor relu(const Tensor& x, Loc loc) {
  OpLocationScope at(loc);
  Tensor out = make_op("aten::relu", {x}, x.shape(), x.dtype(), {}, +[](LoweringContext& c, const Node& n) {
    return max(operand(c, n, 0), 0.0).id();
  });
  return record(out, "ReluBackward0", {x}, [x = x.detach()](const Tensor& g) {
    return std::vector<Tensor>{mul(g, to_dtype(gt(x, 0.0), g.dtype()))};
  });
}

namespace {
// The tanh form's constants: sqrt(2/pi) and the cubic coefficient (PyTorch's kBeta, kKappa).
const double kGeluTanhBeta = std::sqrt(2.0 / M_PI);
constexpr double kGeluTanhKappa = 0.044715;

// tanh(sqrt(2/pi) (x + 0.044715 x^3)), given x^2 (the backward's too).
XlaOp gelu_tanh_inner(XlaOp x, XlaOp x_squared) {
  return tanh(kGeluTanhBeta * (x + kGeluTanhKappa * (x_squared * x)));
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
    const DType t = gelu_compute_dtype(n.dtype());
    XlaOp g = convert(operand(c, n, 0), t), x = convert(operand(c, n, 1), t);
    XlaOp cdf = 0.5 * (1 + erf(x * M_SQRT1_2));
    XlaOp pdf = (1.0 / std::sqrt(2.0 * M_PI)) * exp(-0.5 * (x * x));
    return convert(g * (cdf + x * pdf), n.dtype()).id();
  };
  auto lower_tanh = +[](LoweringContext& c, const Node& n) {
    const DType t = gelu_compute_dtype(n.dtype());
    XlaOp g = convert(operand(c, n, 0), t), x = convert(operand(c, n, 1), t);
    XlaOp x_squared = x * x;
    XlaOp u = gelu_tanh_inner(x, x_squared);
    XlaOp left = 0.5 * (1 + u);
    XlaOp slope = kGeluTanhBeta * (1 + (3.0 * kGeluTanhKappa) * x_squared);
    XlaOp right = (0.5 * x) * ((1 - u * u) * slope);
    return convert(g * (left + right), n.dtype()).id();
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
    XlaOp x = convert(operand(c, n, 0), gelu_compute_dtype(n.dtype()));
    return convert((x * 0.5) * (1 + erf(x * M_SQRT1_2)), n.dtype()).id();
  };
  auto lower_tanh = +[](LoweringContext& c, const Node& n) {
    XlaOp x = convert(operand(c, n, 0), gelu_compute_dtype(n.dtype()));
    XlaOp u = gelu_tanh_inner(x, x * x);
    return convert((x * 0.5) * (1 + u), n.dtype()).id();
  };
  Tensor out = make_op("aten::gelu", {x}, x.shape(), x.dtype(), {{"approximate", approximate}}, approximate == "tanh" ? lower_tanh : lower_none);
  return record(out, "GeluBackward0", {x}, [x = x.detach(), approximate](const Tensor& g) {
    return std::vector<Tensor>{gelu_backward(g, x, approximate)};
  });
}

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

}  // namespace lazytrain
