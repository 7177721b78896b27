"""torch's views and in-place ops over lazytrain's functional IR (src/tensor/view.h).

A view op (view, reshape, transpose, permute, squeeze, unsqueeze, expand, slicing,
split, chunk, select, narrow, detach) marks its result as a view of its input's
base. Every in-place op (``add_``, ``x += 1``, ``x[i] = v``, ``copy_``, ...)
computes its result out of place from a clone and hands it to
``_C._inplace_update``, which writes it into the tensor and, through the view
chain, into its base, with torch's checks (dtype, shape, leaves that require
grad) and autograd recorded. docs/design/views.md tells the design.

``install()`` runs last in ``lazytrain/__init__.py``, so it wraps the final
spelling of every view op.
"""
import builtins
import functools

from . import _C
from ._C import Tensor


# ---------------------------------------------------------------------------------------------
# View ops: the result is marked as a view of the input
# ---------------------------------------------------------------------------------------------
def _reshape_view(original, strict=False):
    """view-like ops: a view where torch's strides allow it; otherwise view() raises
    torch's error (strict) and reshape() returns the copy torch's makes."""
    @functools.wraps(original)
    def method(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        return _C._make_view(self, out, "reshape", strict=strict) if isinstance(out, Tensor) else out

    return method


def _expand_view(original):
    @functools.wraps(original)
    def method(self, *args, **kwargs):
        return _C._make_view(self, original(self, *args, **kwargs), "expand")

    return method


def _transpose_view(original):
    @functools.wraps(original)
    def method(self, dim0, dim1):
        out = original(self, dim0, dim1)
        n = self.ndim
        if n == 0:
            return _C._make_view(self, out, "reshape")
        perm = list(range(n))
        a, b = dim0 % n, dim1 % n
        perm[a], perm[b] = perm[b], perm[a]
        return _C._make_view(self, out, "permute", perm)

    return method


def _t_view(original):
    @functools.wraps(original)
    def method(self):
        if self.ndim < 2:
            return _C._make_view(self, self, "reshape")
        return _C._make_view(self, original(self), "permute", [1, 0])

    return method


def _permute_view(original):
    @functools.wraps(original)
    def method(self, *dims):
        out = original(self, *dims)
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        n = self.ndim
        return _C._make_view(self, out, "permute", [builtins.int(d) % n for d in dims] if n else [])

    return method


def _slice_view(original):
    @functools.wraps(original)
    def method(self, dim, start, end, step):
        out = original(self, dim, start, end, step)
        return _C._make_view(self, out, "slice", [dim % self.ndim, start, end, step])

    return method


def _pieces_view(original):
    """split/chunk: each piece is a slice of the input along dim."""
    @functools.wraps(original)
    def method(self, *args, **kwargs):
        pieces = original(self, *args, **kwargs)
        dim = kwargs.get("dim", args[1] if len(args) > 1 else 0) % builtins.max(self.ndim, 1)
        out, offset = [], 0
        for p in pieces:
            size = p.shape[dim]
            out.append(_C._make_view(self, p, "slice", [dim, offset, offset + size, 1]))
            offset += size
        return type(pieces)(out) if isinstance(pieces, tuple) else out

    return method


def _narrow(self, dim, start, length):
    """torch.narrow: the view x[..., start:start + length, ...] along dim."""
    size = self.shape[dim]
    if not -size <= start <= size or length < 0 or (start % builtins.max(size, 1)) + length > size:
        raise IndexError(f"narrow(): start ({start}) + length ({length}) exceeds dimension size ({size}).")
    start = start + size if start < 0 else start
    return self._slice(dim, start, start + length, 1)


def _select(self, dim, index):
    """torch.select: the view x[..., index, ...] (dim removed)."""
    size = self.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(self.shape)} at dimension {dim}")
    index = index + size if index < 0 else index
    return self._slice(dim, index, index + 1, 1).squeeze(dim)


def _unbind(self, dim=0):
    """torch.unbind: the views x.select(dim, i) for every i."""
    return tuple(_select(self, dim, i) for i in range(self.shape[dim]))


# ---------------------------------------------------------------------------------------------
# In-place ops
# ---------------------------------------------------------------------------------------------
def _inplace(name, compute, any_cast=False):
    """The in-place spelling `name` of `compute(x, *args)`, computed from a clone of
    self (ops recorded before keep the value they saw) and written through
    _C._inplace_update."""
    def method(self, *args, **kwargs):
        value = compute(_C.clone(self), *args, **kwargs)
        if not isinstance(value, Tensor):
            raise TypeError(f"{name}: expected a tensor result, got {type(value).__name__}")
        _C._inplace_update(self, value, name, any_cast)
        return self

    method.__name__ = name
    method.__doc__ = f"``torch.Tensor.{name}``: the in-place form (writes reach views and bases; autograd records it)."
    return method


def _as_tensor_like(value, like):
    if isinstance(value, Tensor):
        return value
    from ._tensor import tensor
    return tensor(value, dtype=like.dtype, device=like.device)


def _copy(x, src, non_blocking=False):
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    return src.to(x.device)


def _fill(x, value):
    from ._tensor import full
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions.")
        return value
    return full(x.shape, value, dtype=x.dtype, device=x.device)


def _zero(x):
    from ._tensor import zeros
    return zeros(*x.shape, dtype=x.dtype, device=x.device)


def _add(x, other, alpha=1):
    return x + (other * alpha if alpha != 1 else other)


def _sub(x, other, alpha=1):
    return x - (other * alpha if alpha != 1 else other)


def _div(x, other, rounding_mode=None):
    if rounding_mode is None:
        return x / other
    return x.div(other, rounding_mode=rounding_mode)


def _masked_fill(x, mask, value):
    if isinstance(value, Tensor):
        return _C.where(mask, value.to(x.dtype), x)
    return x.masked_fill(mask, value)


def _shape_inplace(name, method_name):
    """unsqueeze_, squeeze_, t_, transpose_: the object takes the new shape."""
    def method(self, *args):
        """The in-place form of unsqueeze, squeeze, t or transpose (torch's): this
        tensor takes the result's shape and is returned."""
        _C._rebind(self, getattr(self, method_name)(*args))
        return self

    method.__name__ = name
    return method


# Unary in-place spellings, installed where the out-of-place method exists.
_UNARY = ("neg", "exp", "log", "sqrt", "rsqrt", "abs", "relu", "sigmoid", "tanh", "sin", "cos", "erf",
          "logical_not", "floor", "ceil", "round", "trunc", "reciprocal", "square", "sign", "log1p", "expm1")
# Methods with arguments whose in-place spelling is the same call.
_WITH_ARGS = ("pow", "clamp", "clamp_min", "clamp_max", "tril", "triu", "floor_divide", "remainder", "fmod", "lerp",
              "addcmul", "addcdiv", "logical_and", "logical_or", "bitwise_and", "bitwise_or", "bitwise_xor",
              "index_fill", "index_add", "index_copy", "scatter", "scatter_add", "masked_scatter", "baddbmm", "addmm")


def _method_call(name):
    return lambda x, *a, **k: getattr(x, name)(*a, **k)


def install():
    T = Tensor
    for name in ("view", "reshape", "unsqueeze", "squeeze", "flatten", "view_as", "reshape_as"):
        if hasattr(T, name):
            setattr(T, name, _reshape_view(getattr(T, name), strict=name in ("view", "view_as")))
    for name in ("expand", "expand_as"):
        if hasattr(T, name):
            setattr(T, name, _expand_view(getattr(T, name)))
    T.transpose = _transpose_view(T.transpose)
    T.swapaxes = T.swapdims = T.transpose
    T.t = _t_view(T.t)
    T.permute = _permute_view(T.permute)
    T._slice = _slice_view(T._slice)
    for name in ("split", "chunk"):
        setattr(T, name, _pieces_view(getattr(T, name)))
    T.narrow = _narrow
    T.select = _select
    T.unbind = _unbind
    T.detach = lambda self: _C._detach_alias(self)
    T.detach.__doc__ = "torch's detach(): the same values without history; in-place writes reach this tensor."
    data = T.__dict__["data"]
    T.data = property(lambda self: _C._detach_alias(self), data.fset, None,
                      "The value without autograd history (writes to it reach this tensor); assigning replaces the value.")
    T.clone = lambda self, memory_format=None: _C.clone(self)
    T.is_contiguous = lambda self, memory_format=None: _C._is_contiguous(self)
    """torch.Tensor.is_contiguous: whether this tensor's elements lie in row-major order without gaps
    (a transposed or expanded view's do not)."""
    T.contiguous = lambda self, memory_format=None: self if _C._is_contiguous(self) else _C.clone(self)
    """torch.Tensor.contiguous: this tensor if it is contiguous, else a contiguous copy."""

    T.add_ = _inplace("add_", _add)
    T.sub_ = _inplace("sub_", _sub)
    T.mul_ = _inplace("mul_", lambda x, o: x * o)
    T.div_ = _inplace("div_", _div)
    T.copy_ = _inplace("copy_", _copy, any_cast=True)
    T.fill_ = _inplace("fill_", _fill, any_cast=True)
    T.zero_ = _inplace("zero_", _zero, any_cast=True)
    T.masked_fill_ = _inplace("masked_fill_", _masked_fill)
    for name in _UNARY + _WITH_ARGS:
        if hasattr(T, name):
            setattr(T, name + "_", _inplace(name + "_", _method_call(name)))
    for name in ("unsqueeze", "squeeze", "t", "transpose"):
        setattr(T, name + "_", _shape_inplace(name + "_", name))

    import operator
    for op, dunder in ((operator.add, "__iadd__"), (operator.sub, "__isub__"), (operator.mul, "__imul__"),
                       (operator.truediv, "__itruediv__"), (operator.floordiv, "__ifloordiv__"),
                       (operator.mod, "__imod__"), (operator.pow, "__ipow__"), (operator.and_, "__iand__"),
                       (operator.or_, "__ior__"), (operator.xor, "__ixor__")):
        setattr(T, dunder, _inplace(dunder, op))
