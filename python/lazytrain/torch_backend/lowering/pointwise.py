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
    return lt.div(a, b, rounding_mode=rounding_mode)


@register(aten.remainder.Tensor, aten.remainder.Scalar)
@_either_side
def remainder(a, b):
    return lt.remainder(a, b)


@register(aten.pow.Tensor_Scalar, aten.pow.Tensor_Tensor, aten.pow.Scalar)
def pow_(a, b):
    return lt.pow(a, b) if is_tensor(a) else _scalar_first(lt.pow, a, b)


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
