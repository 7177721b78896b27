"""Reductions and sorting with torch's signatures, results and errors.

max/min (values and, along a dim, ``(values, indices)``), amax/amin,
argmax/argmin (with and without a dim), prod, any, all, var/std (``correction``,
``unbiased``), norm (p = 2, 'fro', 1, inf, -inf, 0, any other float), median
(the lower median) and sort/argsort/topk. The C++ ops (tensor/ops.h) do the
work; here are torch's signatures, the ``torch.return_types``-like named tuples
and torch's exception types: an empty reduced dim raises IndexError
("Expected reduction dim 0 to have non-zero size"), a reduction over every dim
of an empty tensor RuntimeError, a dim named twice RuntimeError.

NaN counts as the largest value everywhere, as in torch: max/argmax give the
(first) NaN, min/argmin too, sort puts NaNs last (first when descending),
median gives NaN with its first NaN's index.
"""
import builtins
import collections
import math
import os
import sys
import types

from . import _C
from ._C import Tensor, dtype as _dtype

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _called_from():
    """' (called from file:line)' naming the first frame outside lazytrain, as C++ errors do."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return ""
    return f" (called from {os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno})"


def _return_type(name, fields=("values", "indices")):
    """A named tuple like torch.return_types.<name>: unpacks as a tuple, with .values/.indices."""
    cls = collections.namedtuple(name, fields)
    cls.__module__ = "lazytrain.return_types"
    cls.__qualname__ = name
    return cls


return_types = types.SimpleNamespace(**{n: _return_type(n) for n in ("max", "min", "median", "sort", "topk")})


def _dim(dim, ndim, op):
    """dim in [0, ndim) (a 0-d tensor takes 0 and -1); IndexError as torch otherwise."""
    if not isinstance(dim, builtins.int) or isinstance(dim, builtins.bool):
        raise TypeError(f"{op}(): dim must be an int, got {type(dim).__name__} ({dim!r})")
    rank = builtins.max(ndim, 1)
    if not -rank <= dim < rank:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, {rank - 1}], but got {dim})"
                         + _called_from())
    return dim % rank


def _dims(dim, ndim, op):
    """dim None/int/sequence as a list of dims in [0, ndim) ([] for every dim)."""
    if dim is None:
        return []
    if isinstance(dim, builtins.int):
        return [_dim(dim, ndim, op)]
    return [_dim(d, ndim, op) for d in dim]


def _require_nonempty(x, dims, op):
    """torch's errors for a reduction without an identity over nothing."""
    if not dims:
        if x.numel() == 0:
            raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument." + _called_from())
        return
    for d in dims:
        if x.ndim and x.shape[d] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size." + _called_from())


# ---- max / min ------------------------------------------------------------------------------


def amax(input, dim=(), keepdim=False):
    """torch.amax: the largest values over dim (int or tuple; () or None: all), NaN propagating.
    IndexError for an empty reduced dim, RuntimeError for every dim of an empty tensor."""
    dims = _dims(None if dim == () else dim, input.ndim, "amax")
    _require_nonempty(input, dims, "amax")
    return _C.amax(input, dims or None, keepdim)


def amin(input, dim=(), keepdim=False):
    """torch.amin: the smallest values over dim (int or tuple; () or None: all), NaN propagating.
    Computed directly (exact for bool and the int64 limits). Errors as amax."""
    dims = _dims(None if dim == () else dim, input.ndim, "amin")
    _require_nonempty(input, dims, "amin")
    return _C._amin(input, dims or None, keepdim)


def _arg(op, input, dim, keepdim):
    if input.dtype == _dtype.bool:
        raise RuntimeError(f"{op}(): does not support bool input" + _called_from())
    fn = _C.argmax if op == "argmax" else _C._argmin
    if dim is None:
        if input.numel() == 0:
            raise IndexError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0." + _called_from())
        flat = fn(input.reshape([-1]), 0, False)
        return flat.reshape([1] * input.ndim) if keepdim else flat
    d = _dim(dim, input.ndim, op)
    _require_nonempty(input, [d], op)
    return fn(input, d, keepdim)


def argmax(input, dim=None, keepdim=False):
    """torch.argmax: int64 index of the first maximum along dim (None: of the flattened input).
    A NaN counts as the maximum (its first index). IndexError for an empty dim; RuntimeError for bool."""
    return _arg("argmax", input, dim, keepdim)


def argmin(input, dim=None, keepdim=False):
    """torch.argmin: int64 index of the first minimum along dim (None: of the flattened input).
    A NaN counts as the minimum (its first index). Errors as argmax."""
    return _arg("argmin", input, dim, keepdim)


def _extreme(op, input, dim, keepdim, other):
    if isinstance(dim, Tensor):  # torch.max(a, b): the elementwise maximum
        dim, other = None, dim
    if other is not None:
        return (_C.maximum if op == "max" else _C.minimum)(input, other)
    reduce = _C.amax if op == "max" else _C._amin
    if dim is None:
        _require_nonempty(input, [], op)
        return reduce(input, None, False)
    d = _dim(dim, input.ndim, op)
    _require_nonempty(input, [d], op)
    # argmax refuses bool (torch's rule); max(dim) does not: index the bool as int.
    keyed = input.long() if input.dtype == _dtype.bool else input
    indices = (_C.argmax if op == "max" else _C._argmin)(keyed, d, keepdim)
    if input.requires_grad and input.ndim:
        # torch sends max(dim)'s gradient to the chosen index only (amax shares it between ties).
        picked = indices if keepdim else indices.unsqueeze(d)
        values = input.gather(d, picked)
        return getattr(return_types, op)(values if keepdim else values.squeeze(d), indices)
    return getattr(return_types, op)(reduce(input, [d], keepdim), indices)


def max(input, dim=None, keepdim=False, *, other=None):  # noqa: A001 (torch.max)
    """torch.max: the largest value (0-d); with an int dim, max(values, indices) along it (the first
    maximum's index, a NaN counting as the maximum); with a tensor, the elementwise maximum."""
    return _extreme("max", input, dim, keepdim, other)


def min(input, dim=None, keepdim=False, *, other=None):  # noqa: A001 (torch.min)
    """torch.min: the smallest value (0-d); with an int dim, min(values, indices) along it; with a
    tensor, the elementwise minimum. Exact for bool and int64's limits (never -max(-x))."""
    return _extreme("min", input, dim, keepdim, other)


# ---- prod / any / all -------------------------------------------------------------------------


def prod(input, dim=None, keepdim=False, *, dtype=None):
    """torch.prod over every element or one dim: integer and bool inputs give int64; 1 over nothing.
    The gradient is the product of the other elements (also at zeros), as torch's."""
    if dtype is not None:
        input = input.to(dtype)
    if dim is None:
        return _C._prod(input, None, False)
    return _C._prod(input, [_dim(dim, input.ndim, "prod")], keepdim)


def any(input, dim=None, keepdim=False):  # noqa: A001 (torch.any)
    """torch.any: whether any element != 0 (NaN counts), over all or dim (int or tuple); bool."""
    return _C._any(input, _dims(dim, input.ndim, "any") or None, keepdim)


def all(input, dim=None, keepdim=False):  # noqa: A001 (torch.all)
    """torch.all: whether every element != 0, over all or dim (int or tuple); bool (True over nothing)."""
    return _C._all(input, _dims(dim, input.ndim, "all") or None, keepdim)


# ---- var / std --------------------------------------------------------------------------------


def _correction(op, dim, unbiased, correction):
    if isinstance(dim, builtins.bool):  # x.var(False): the old unbiased positional
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"{op}(): cannot pass both unbiased and correction" + _called_from())
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return dim, correction


def _var(input, dim, unbiased, keepdim, correction, op):
    """var in float32 for bf16/f16 input (rounded once, by the caller)."""
    dim, correction = _correction(op, dim, unbiased, correction)
    if not input.dtype.is_floating_point:
        raise RuntimeError("std and var only support floating point and complex dtypes" + _called_from())
    dims = _dims(dim, input.ndim, "var")
    x = input.float() if input.dtype in (_dtype.bfloat16, _dtype.float16) else input
    n = 1
    for d in dims or range(input.ndim):
        n *= input.shape[d]
    centered = x - x.mean(dims or None, keepdim=True)
    squares = (centered * centered).sum(dims or None, keepdim=keepdim)
    return squares / builtins.float(builtins.max(0, n - correction))


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """torch.var: sum((x - mean)^2) / max(0, N - correction) over dim (None: all; int or tuple);
    correction 1 unless given (unbiased=False: 0). N - correction <= 0 gives inf or nan, as torch.
    Floating inputs only (RuntimeError otherwise); bf16/f16 accumulate in float32."""
    out = _var(input, dim, unbiased, keepdim, correction, "var")
    return out.to(input.dtype) if out.dtype != input.dtype else out


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """torch.std: sqrt(var(...)) with var's arguments and rules (the root taken before rounding bf16/f16)."""
    out = _var(input, dim, unbiased, keepdim, correction, "std").sqrt()
    return out.to(input.dtype) if out.dtype != input.dtype else out


# ---- norm -------------------------------------------------------------------------------------


def _safe_sqrt(s):
    """sqrt(s) whose gradient is 0, not nan, where s == 0 (torch's norm gradient at 0)."""
    zero = s == 0
    one = _C._ones([], s.dtype)
    return _C.where(zero, _C._zeros([], s.dtype), _C.where(zero, one, s).sqrt())


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """torch.norm / torch.linalg.vector_norm over dim (None: all; int or tuple): p 'fro' or 2
    (sqrt of the sum of squares, gradient 0 at 0), 1, inf (max ``|x|``), -inf, 0 (count of non-zeros),
    or any other number ``(sum |x|^p)^(1/p)``. Floating inputs only (RuntimeError otherwise)."""
    if dtype is not None:
        input = input.to(dtype)
    if not input.dtype.is_floating_point:
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           + _TORCH_NAMES.get(input.dtype, str(input.dtype)) + _called_from())
    dims = _dims(dim, input.ndim, "norm") or None
    if p == "fro" or p == 2:
        return _safe_sqrt((input * input).sum(dims, keepdim=keepdim))
    if isinstance(p, str):
        raise NotImplementedError(f"norm(): p={p!r} is not supported (only 'fro' and numbers)")
    a = input.abs()
    if p == math.inf:
        return amax(a, () if dims is None else dims, keepdim)
    if p == -math.inf:
        return amin(a, () if dims is None else dims, keepdim)
    if p == 0:
        return (input != 0).to(input.dtype).sum(dims, keepdim=keepdim)
    if p == 1:
        return a.sum(dims, keepdim=keepdim)
    return (a ** builtins.float(p)).sum(dims, keepdim=keepdim) ** (1.0 / p)


_TORCH_NAMES = {_dtype.int64: "Long", _dtype.int32: "Int", _dtype.bool: "Bool"}


# ---- sort / topk / median ---------------------------------------------------------------------


def topk(input, k, dim=-1, largest=True, sorted=True):
    """torch.topk: topk(values, indices) of the k largest (smallest) along dim, sorted, ties
    lowest index first, NaN above every number. Only the values carry a gradient."""
    values, indices = _C.topk(input, k, dim, largest, sorted)
    return return_types.topk(values, indices)


def sort(input, dim=-1, descending=False, stable=False):
    """torch.sort: sort(values, indices) along dim, ascending (descending), always stable (ties keep
    their order, which also satisfies stable=False); NaNs last ascending, first descending."""
    del stable  # always stable
    d = _dim(dim, input.ndim, "sort")
    n = input.shape[d] if input.ndim else 1
    values, indices = _C.topk(input, n, d, descending, True)
    return return_types.sort(values, indices)


def argsort(input, dim=-1, descending=False, stable=False):
    """torch.argsort: the int64 indices that sort input along dim (stable; see sort)."""
    return sort(input, dim, descending, stable).indices


def median(input, dim=None, keepdim=False):
    """torch.median: the lower median ((n - 1) // 2-th smallest); a NaN makes it NaN (the first NaN's
    index). No dim: of the flattened input, 0-d (nan when empty). With dim: median(values, indices);
    IndexError for an empty dim."""
    if dim is None:
        if input.numel() == 0:
            return _C._full([], math.nan, input.dtype)
        return median(input.reshape([-1]), 0).values
    d = _dim(dim, input.ndim, "median")
    if input.ndim == 0:
        return return_types.median(input, _C._zeros([], _dtype.int64))
    _require_nonempty(input, [d], "median")
    n = input.shape[d]
    values, indices = sort(input, d)
    position = _C._full([], builtins.float((n - 1) // 2), _dtype.int64)
    if input.dtype.is_floating_point:
        # NaNs sort last, in their order: the first one sits at n - count.
        nans = (input != input).long().sum(d, keepdim=True)
        position = _C.where(nans > 0, n - nans, position)
    shape = list(input.shape)
    shape[d] = 1
    position = position.expand(shape) if position.ndim else position.reshape([1] * input.ndim).expand(shape)
    out_v, out_i = values.gather(d, position), indices.gather(d, position)
    if not keepdim:
        out_v, out_i = out_v.squeeze(d), out_i.squeeze(d)
    return return_types.median(out_v, out_i)


# ---- installation -----------------------------------------------------------------------------

__all__ = ["max", "min", "amax", "amin", "argmax", "argmin", "prod", "any", "all", "var", "std", "norm",
           "topk", "sort", "argsort", "median", "return_types"]


def _install():
    T = Tensor
    for name in __all__:
        if name != "return_types":
            setattr(T, name, globals()[name])


_install()
