// Floor division, remainder and bitwise ops (torch's BinaryOps.cpp, and
// UnaryOps.cpp for bitwise_not): Python's //, %, ~, &, |, ^ on tensors, with
// torch's semantics (floor rounding; bitwise on integers, logical on bool). HLO
// has no floor, remainder or xor here: each lowers to a few elementwise
// instructions that fuse into one loop.
#include "core/error.h"
#include "core/op_location.h"
#include "tensor/lowering.h"

namespace lazytrain {

using namespace detail;
using autograd::record;
using autograd::sum_to;

namespace {

Shape broadcast(const char* op, const Tensor& a, const Tensor& b, Loc loc) {
  try {
    return broadcast_shapes(a.shape(), b.shape(), op);
  } catch (const Error& e) {
    throw_error(op, std::string(e.what()).substr(std::string(op).size() + 3), loc);
  }
}

struct Operands {
  XlaOp a, b;
};
// Operands 0 and 1 of n, converted to `t` and broadcast to n's shape.
Operands operands(LoweringContext& c, const Node& n, DType t) {
  return {operand_as(c, n, 0, t, n.shape()), operand_as(c, n, 1, t, n.shape())};
}

// Floating x rounded toward zero: through int64 where |x| < 2^23 (every f32
// of larger magnitude is already integral; NaN and inf pass as themselves).
XlaOp trunc_float(XlaOp x) {
  XlaOp t = convert(convert(x, DType::kInt64), DType::kFloat32);
  return select(lt(abs(x), 8388608.0), t, x);
}

// The quotient rounded toward zero and the remainder with a's sign (C's / and
// %), then torch's fix-up: where the remainder is non-zero and its sign
// differs from b's, the quotient drops by one and the remainder gains b.
// Floating operands compute in float32 (torch's opmath for bf16/f16).
struct FloorParts {
  XlaOp quotient, remainder, adjust, b;
};
FloorParts floor_parts(LoweringContext& c, const Node& n) {
  const bool floating = is_floating_point(n.dtype());
  auto [a, b] = operands(c, n, floating ? DType::kFloat32 : n.dtype());
  XlaOp q = a / b;
  if (floating) q = trunc_float(q);
  XlaOp r = a - q * b;
  XlaOp zero = r.full_like(0.0);
  XlaOp signs_differ = ne(lt(r, zero), lt(b, zero));
  return {q, r, ne(r, zero) & signs_differ, b};
}

int lower_floor_divide(LoweringContext& c, const Node& n) {
  if (!is_floating_point(n.dtype())) {
    FloorParts p = floor_parts(c, n);
    return select(p.adjust, p.quotient - 1, p.quotient).id();
  }
  // floor(a / b): a / b itself where it is not finite (b == 0 gives +-inf or NaN, as torch).
  auto [a, b] = operands(c, n, DType::kFloat32);
  XlaOp q = a / b;
  XlaOp t = trunc_float(q);
  return convert(select(gt(t, q), t - 1, t), n.dtype()).id();
}

int lower_remainder(LoweringContext& c, const Node& n) {
  FloorParts p = floor_parts(c, n);
  return convert(select(p.adjust, p.remainder + p.b, p.remainder), n.dtype()).id();
}

void refuse_bool(const char* op, const char* kernel, DType t, Loc loc) {
  if (t == DType::kBool) throw_error(op, std::string("\"") + kernel + "\" not implemented for 'Bool'", loc);
}

}  // namespace

Tensor floor_divide(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  const DType t = result_type(a, b);
  refuse_bool("aten::floor_divide", "div_floor_cpu", t, loc);
  return make_op("aten::floor_divide", {a, b}, broadcast("aten::floor_divide", a, b, loc), t, {}, lower_floor_divide);
}

Tensor remainder(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  const DType t = result_type(a, b);
  refuse_bool("aten::remainder", "remainder_cpu", t, loc);
  Tensor out = make_op("aten::remainder", {a, b}, broadcast("aten::remainder", a, b, loc), t, {}, lower_remainder);
  if (!is_floating_point(t)) return out;
  return record(out, "RemainderBackward0", {a, b}, [a = a.detach(), b = b.detach(), ra = a.requires_grad(), rb = b.requires_grad()](const Tensor& g) {
    return std::vector<Tensor>{ra ? sum_to(g, a.shape()) : Tensor(), rb ? sum_to(mul(neg(g), floor_divide(a, b)), b.shape()) : Tensor()};
  });
}

namespace {

enum class Bitwise { kAnd, kOr, kXor };

template <Bitwise K>
int lower_bitwise(LoweringContext& c, const Node& n) {
  auto [a, b] = operands(c, n, n.dtype());
  if constexpr (K == Bitwise::kAnd) return (a & b).id();
  if constexpr (K == Bitwise::kOr) return (a | b).id();
  // a ^ b: the bits of a | b that are not in a & b (a subset, so no borrow).
  if (n.dtype() == DType::kBool) return ne(a, b).id();
  return ((a | b) - (a & b)).id();
}

template <Bitwise K>
Tensor bitwise(const char* op, const char* kernel, const Tensor& a, const Tensor& b, Loc loc) {
  const DType t = result_type(a, b);
  if (is_floating_point(t)) throw_error(op, std::string("\"") + kernel + "\" not implemented for '" + scalar_type_name(t) + "'", loc);
  return make_op(op, {a, b}, broadcast(op, a, b, loc), t, {}, lower_bitwise<K>);
}

}  // namespace

Tensor bitwise_and(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  return bitwise<Bitwise::kAnd>("aten::bitwise_and", "bitwise_and_cpu", a, b, loc);
}
Tensor bitwise_or(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  return bitwise<Bitwise::kOr>("aten::bitwise_or", "bitwise_or_cpu", a, b, loc);
}
Tensor bitwise_xor(const Tensor& a, const Tensor& b, Loc loc) {
  OpLocationScope at(loc);
  return bitwise<Bitwise::kXor>("aten::bitwise_xor", "bitwise_xor_cpu", a, b, loc);
}

Tensor bitwise_not(const Tensor& x, Loc loc) {
  OpLocationScope at(loc);
  if (is_floating_point(x.dtype())) {
    throw_error("aten::bitwise_not", "\"bitwise_not_cpu\" not implemented for '" + scalar_type_name(x.dtype()) + "'", loc);
  }
  return make_op("aten::bitwise_not", {x}, x.shape(), x.dtype(), {}, +[](LoweringContext& c, const Node& n) {
    XlaOp x = operand(c, n, 0);
    if (n.dtype() == DType::kBool) return (~x).id();
    // ~x == -x - 1 in two's complement (HLO's not is logical here).
    return (-x - 1).id();
  });
}

}  // namespace lazytrain
