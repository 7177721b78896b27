"""Elementwise ATen ops: arithmetic, comparisons, logical and bitwise ops,
unary math. lazytrain's ops follow torch's type promotion and Python-scalar
rules themselves (src/tensor/type_promotion.h), so each lowering is the op."""
import torch

import lazytrain as lt

from . import register
from ._common import is_tensor

aten = torch.ops.aten


def _scalar_first(fn, a, b):
    """fn(a, b) for a Python scalar `a` (aten.pow.Scalar, rsub's reversed form):
    `a` as a 0-dim tensor of the dtype torch gives a wrapped number beside b."""
    return fn(lt.scalar_tensor(a, lt.result_type(b, a)), b)


def _either_side(fn):
    """fn over (a, b) where the decompositions may put a Python scalar first
    (aten.sub.Tensor(1, x) in silu_backward): the scalar as a 0-dim tensor."""

    def lowered(a, b, **kwargs):
        if is_tensor(a):
            return fn(a, b, **kwargs)
        return _scalar_first(lambda x, y: fn(x, y, **kwargs), a, b)

    lowered.__name__ = fn.__name__
    return lowered


@register(aten.add.Tensor, aten.add.Scalar)
@_either_side
def add(a, b, alpha=1):
    return lt.add(a, b, alpha=alpha)


@register(aten.sub.Tensor, aten.sub.Scalar)
@_either_side
def sub(a, b, alpha=1):
    return lt.sub(a, b, alpha=alpha)


@register(aten.rsub.Scalar, aten.rsub.Tensor)
def rsub(a, b, alpha=1):
    # b - alpha * a, with `a` the tensor (aten's self)
    if is_tensor(b):
        return lt.sub(b, a, alpha=alpha)
    return _scalar_first(lambda x, y: lt.sub(x, y, alpha=alpha), b, a)


@register(aten.mul.Tensor, aten.mul.Scalar)
@_either_side
def mul(a, b):
    return lt.mul(a, b)


@register(aten.div.Tensor, aten.div.Scalar)
@_either_side
def div(a, b):
    return lt.div(a, b)


@register(aten.div.Tensor_mode, aten.div.Scalar_mode)
def div_mode(a, b, rounding_mode=None):
    out = lt.div(a, b, rounding_mode=rounding_mode)
    if rounding_mode == "floor" and out.is_floating_point():
        # torch: an infinite dividend floor-divided by a non-zero number is NaN
        # (lazytrain gives +-inf); a zero divisor gives a / b in both.
        out = lt.where(_isinf(a) & (b != 0), float("nan"), out) if is_tensor(a) else out
    return out


def _isinf(x):
    return lt.abs(x) == float("inf")


@register(aten.remainder.Tensor, aten.remainder.Scalar)
@_either_side
def remainder(a, b):
    return lt.remainder(a, b)


@register(aten.pow.Tensor_Scalar, aten.pow.Tensor_Tensor, aten.pow.Scalar)
def pow_(a, b):
    if not is_tensor(a):
        return _scalar_first(lt.pow, a, b)
    if a.is_floating_point() and not is_tensor(b) and b in (0.5, -0.5):
        return lt.sqrt(a) if b == 0.5 else lt.rsqrt(a)  # torch's kernel: so pow(-inf, 0.5) is NaN
    return lt.pow(a, b)


@register(aten.maximum.default)
@_either_side
def maximum(a, b):
    return lt.maximum(a, b)


@register(aten.minimum.default)
@_either_side
def minimum(a, b):
    return lt.minimum(a, b)


def _compare(fn):
    return _either_side(lambda a, b: fn(a, b))


for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    register(getattr(aten, _name).Tensor, getattr(aten, _name).Scalar)(_compare(getattr(lt, _name)))


@register(aten.logical_not.default)
def logical_not(a):
    return lt.logical_not(a)


@register(aten.logical_and.default)
@_either_side
def logical_and(a, b):
    return lt.logical_and(a, b)


@register(aten.logical_or.default)
@_either_side
def logical_or(a, b):
    return lt.logical_or(a, b)


@register(aten.bitwise_not.default)
def bitwise_not(a):
    return lt.bitwise_not(a)


@register(aten.bitwise_and.Tensor, aten.bitwise_and.Scalar)
@_either_side
def bitwise_and(a, b):
    return lt.bitwise_and(a, b)


@register(aten.bitwise_or.Tensor, aten.bitwise_or.Scalar)
@_either_side
def bitwise_or(a, b):
    return lt.bitwise_or(a, b)


@register(aten.bitwise_xor.Tensor, aten.bitwise_xor.Scalar)
@_either_side
def bitwise_xor(a, b):
    return lt.bitwise_xor(a, b)


def _unary(name):
    fn = getattr(lt, name)
    register(getattr(aten, name).default)(lambda a: fn(a))


for _name in ("neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "erf", "relu"):
    _unary(_name)


@register(aten.where.self)
def where(cond, a, b):
    return lt.where(cond, a, b)


@register(aten.clamp.default)
def clamp(a, min=None, max=None):
    return lt.clamp(a, min, max)


@register(aten.clamp.Tensor)
def clamp_tensor(a, min=None, max=None):
    return lt.clamp(a, min, max)


@register(aten.gelu.default)
def gelu(a, approximate="none"):
    return lt.gelu(a, approximate=approximate)


@register(aten.silu.default)
def silu(a):
    return lt.silu(a)


# Unary math lazytrain has no op for: exact compositions of its ops (see the
# list of ops that deserve a native lazytrain op in docs/torch_compile.md).

def _in_float32(fn):
    """fn computed in float32 for a bf16/f16 input (one rounding, as torch's
    CPU kernels), the input's dtype for float32; integer inputs become float32."""

    def lowered(a):
        out = fn(a.float() if a.dtype != lt.float32 else a)
        return out.to(a.dtype) if a.is_floating_point() else out

    lowered.__name__ = fn.__name__
    return lowered


@register(aten.reciprocal.default)
def reciprocal(a):
    return _scalar_first(lt.div, 1, a)


@register(aten.isnan.default)
def isnan(a):
    return lt.ne(a, a)


@register(aten.isinf.default)
def isinf(a):
    return _isinf(a)


@register(aten.logical_xor.default)
@_either_side
def logical_xor(a, b):
    return lt.ne(_truth(a), _truth(b))


def _truth(x):
    return x if is_tensor(x) and x.dtype == lt.bool else lt.ne(x, 0)


@register(aten.sign.default)
def sign(a):
    if a.dtype == lt.bool:
        return a
    return lt.sub((a > 0).to(a.dtype), (a < 0).to(a.dtype))  # sign(NaN) is 0, as torch's CPU kernel


def _rounding(mode):
    """floor / trunc of a floating tensor (integers are returned as they are)."""

    def lowered(a):
        return lt.div(a, 1, rounding_mode=mode) if a.is_floating_point() else a

    return lowered


register(aten.floor.default)(_rounding("floor"))
register(aten.trunc.default)(_rounding("trunc"))


@register(aten.ceil.default)
def ceil(a):
    return lt.neg(_rounding("floor")(lt.neg(a))) if a.is_floating_point() else a


@register(aten.round.default)
def round_(a):
    """Round half to even (torch.round)."""
    return _round_half_even(a) if a.is_floating_point() else a


@_in_float32
def _round_half_even(a):
    r = lt.div(a + 0.5, 1, rounding_mode="floor")
    tie = lt.eq(r - a, 0.5)
    r = lt.where(tie & lt.ne(lt.remainder(r, 2.0), 0), r - 1, r)
    return lt.where(lt.abs(a) >= 2.0 ** 23, a, r)  # already integral (and a + 0.5 would round)


@register(aten.log1p.default)
@_in_float32
def log1p(a):
    """log(1 + a) without cancellation for small a: log(u) * a / (u - 1), u = 1 + a (Goldberg)."""
    u = a + 1
    out = lt.where(u == 1, a, lt.log(u) * (a / (u - 1)))
    return lt.where(a == float("inf"), a, out)


@register(aten.expm1.default)
@_in_float32
def expm1(a):
    """exp(a) - 1 without cancellation for small a: (u - 1) * a / log(u), u = exp(a) (Kahan)."""
    u = lt.exp(a)
    out = lt.where(u == 1, a, (u - 1) * (a / lt.log(u)))
    out = lt.where(u - 1 == -1, -1.0, out)
    return lt.where(a == float("inf"), a, out)


@register(aten.fmod.Tensor, aten.fmod.Scalar)
def fmod(a, b):
    """The remainder with the sign of the dividend: torch's remainder, less b where the signs differ."""
    r = lt.remainder(a, b)
    return lt.where(lt.ne(r, 0) & lt.ne(r < 0, a < 0), r - b, r)


@register(aten.hardtanh.default)
def hardtanh(a, min_val=-1.0, max_val=1.0):
    return lt.clamp(a, min_val, max_val)


@register(aten.leaky_relu.default)
def leaky_relu(a, negative_slope=0.01):
    return lt.where(a > 0, a, a * negative_slope)


@register(aten.elu.default)
def elu(a, alpha=1.0, scale=1.0, input_scale=1.0):
    negative = expm1(a * input_scale) * (alpha * scale)
    return lt.where(a > 0, a * scale, negative.to(a.dtype))


# Ops torch's optimizers use in place (lerp_, addcmul_, addcdiv_, fill_): the core
# decompositions turn them into a dozen ops each, which the lazy device would dispatch
# one by one on every step; here each is the arithmetic of torch's CPU kernel.

def _opmath(fn):
    """fn computed in float32 where the result is bf16/f16 (torch's CPU kernels
    compute these ops in float and round once)."""

    def lowered(a, *tensors, **kwargs):
        out = a.dtype
        if out not in (lt.bfloat16, lt.float16) or any(is_tensor(t) and t.dtype != out for t in tensors):
            return fn(a, *tensors, **kwargs)  # mixed dtypes: each op promotes as torch's does
        up = [t.float() if is_tensor(t) else t for t in (a, *tensors)]
        return fn(*up, **kwargs).to(out)

    lowered.__name__ = fn.__name__
    return lowered


@register(aten.lerp.Scalar, aten.lerp.Tensor)
@_opmath
def lerp(a, end, weight):
    """a + weight * (end - a) for |weight| < 0.5, else end - (end - a) * (1 - weight)
    (torch's kernel: exact at both ends)."""
    diff = lt.sub(end, a)
    if not is_tensor(weight):
        return lt.add(a, diff * weight) if abs(weight) < 0.5 else lt.sub(end, diff * (1 - weight))
    return lt.where(lt.abs(weight) < 0.5, lt.add(a, weight * diff), lt.sub(end, diff * (1 - weight)))


@register(aten.addcmul.default)
@_opmath
def addcmul(a, t1, t2, value=1):
    """a + value * t1 * t2."""
    prod = lt.mul(t1, t2) if value == 1 else lt.mul(lt.mul(t1, value), t2)
    return lt.add(a, prod)


@register(aten.addcdiv.default)
@_opmath
def addcdiv(a, t1, t2, value=1):
    """a + value * (t1 / t2); torch refuses integer t1 and t2."""
    if not t1.is_floating_point() and not t2.is_floating_point():
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release addcdiv "
                           "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can "
                           "be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
                           "addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), "
                           "for all dtypes.")
    quot = lt.div(t1, t2)
    return lt.add(a, quot if value == 1 else lt.mul(quot, value))


@register(aten.fill.Scalar, aten.fill.Tensor)
def fill(a, value):
    """a's shape and dtype, every element `value` (a number or a 0-d tensor)."""
    if is_tensor(value):
        return value.to(a.dtype).expand(*a.shape) if a.dim() else value.to(a.dtype)
    return lt.full(list(a.shape), value, dtype=a.dtype)
