"""Writes by index, torch's out-of-place forms (their in-place spellings ``scatter_``,
``index_fill_``, ... and ``x[idx] = v`` go through _views.py):
scatter, index_fill, index_add, index_copy, index_put.

All are built on scatter_add (an HLO scatter) and where: the elements an index
addresses are found by scattering ones, so overwriting needs no new lowering.
Where an index names one element twice, torch leaves the result unspecified;
here the written values are summed.
"""
import builtins

from . import _C
from ._C import Tensor, dtype as _dtype


def _as_index(index, what):
    if not isinstance(index, Tensor):
        from ._tensor import tensor
        index = tensor(index, dtype=_dtype.int64)
    if index.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(f"{what}(): Expected dtype int64 for index, got {index.dtype!r}")
    return index if index.dtype == _dtype.int64 else index.long()


def _wrap_negative(index, size):
    """Negative entries count from the end (torch's index_* and x[idx] rules)."""
    return _C.where(index < 0, index + size, index)


def _hits(x, dim, index):
    """A bool mask of the elements of x that `index` (torch.scatter's index) addresses."""
    from ._tensor import zeros, ones
    marks = _C.scatter_add(zeros(*x.shape, dtype=_dtype.int32, device=x.device), dim, index,
                           ones(*index.shape, dtype=_dtype.int32, device=x.device))
    return marks > 0


def _placed(x, dim, index, src):
    """src's elements at the positions index names, zeros elsewhere (x's dtype)."""
    from ._tensor import zeros
    work = _dtype.int32 if x.dtype == _dtype.bool else x.dtype
    placed = _C.scatter_add(zeros(*x.shape, dtype=work, device=x.device), dim, index, src.to(work))
    return placed.to(x.dtype)


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """torch.scatter: input with input[index[i][j]][j] = src[i][j] (dim 0; likewise for other dims).
    `src` may be a tensor or a number (torch's scatter(dim, index, value)). reduce: None, 'add' or 'multiply'."""
    if src is None and value is None:
        raise TypeError("scatter(): expected src or value")
    if value is None and not isinstance(src, Tensor):
        src, value = None, src
    index = _as_index(index, "scatter")
    dim = dim % builtins.max(input.ndim, 1)
    if reduce not in (None, "add", "multiply"):
        raise RuntimeError(f"scatter(): reduce argument must be either add or multiply, got {reduce!r}")
    if reduce == "multiply":
        raise NotImplementedError("scatter(reduce='multiply') is not supported by lazytrain")
    if value is not None and reduce is None:
        # Every addressed element takes the value, however often it is named.
        from ._tensor import full
        return _C.where(_hits(input, dim, index), full(tuple(input.shape), value, dtype=input.dtype,
                                                        device=input.device), input)
    if value is not None:
        from ._tensor import full
        src = full(tuple(index.shape), value, dtype=input.dtype, device=input.device)
    if reduce == "add":
        return _C.scatter_add(input, dim, index, src.to(input.dtype))
    return _C.where(_hits(input, dim, index), _placed(input, dim, index, src), input)


def _along(index, dim, shape):
    """A 1-D index along dim as a scatter index of `shape` (shape[dim] == len(index))."""
    view = [1] * len(shape)
    view[dim] = -1
    return index.reshape(view).expand(*shape)


def _check_1d(index, what):
    if index.ndim > 1:
        raise IndexError(f"{what}(): Index is supposed to be a vector")
    return index.reshape([-1]) if index.ndim == 0 else index


def index_fill(input, dim, index, value):
    """torch.index_fill: input with the slices index names along dim set to value."""
    dim = dim % builtins.max(input.ndim, 1)
    index = _wrap_negative(_check_1d(_as_index(index, "index_fill"), "index_fill"), input.shape[dim] if input.ndim else 1)
    shape = list(input.shape) or [1]
    shape[dim] = index.shape[0]
    x = input if input.ndim else input.reshape([1])
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with {value.ndim} dimension(s).")
        value = value.item()
    out = scatter(x, dim, _along(index, dim, shape), value=value)
    return out if input.ndim else out.reshape([])


def _at_least_1d(f):
    """A 0-d input (and source) works as one element of a 1-d one, as in torch."""
    def op(input, dim, index, source, **kwargs):
        if input.ndim:
            return f(input, dim, index, source, **kwargs)
        return f(input.reshape([1]), dim, index, source.reshape([-1]), **kwargs).reshape([])

    op.__name__, op.__doc__ = f.__name__, f.__doc__
    return op


@_at_least_1d
def index_add(input, dim, index, source, *, alpha=1):
    """torch.index_add: input with source's slices added at the rows index names along dim."""
    dim = dim % builtins.max(input.ndim, 1)
    index = _wrap_negative(_check_1d(_as_index(index, "index_add"), "index_add"), input.shape[dim])
    if alpha != 1:
        source = source * alpha
    return _C.scatter_add(input, dim, _along(index, dim, source.shape), source.to(input.dtype))


@_at_least_1d
def index_copy(input, dim, index, source):
    """torch.index_copy: input with the rows index names along dim replaced by source's."""
    dim = dim % builtins.max(input.ndim, 1)
    index = _wrap_negative(_check_1d(_as_index(index, "index_copy"), "index_copy"), input.shape[dim])
    return scatter(input, dim, _along(index, dim, source.shape), source)


def _is_basic(part):
    return part is None or part is Ellipsis or isinstance(part, slice) or (
        isinstance(part, builtins.int) and not isinstance(part, builtins.bool))


def _value_tensor(value, like):
    if isinstance(value, Tensor):
        return value
    from ._tensor import tensor
    return tensor(value, dtype=like.dtype, device=like.device)


def setitem(self, index, value):
    """x[index] = value, as torch: basic indices (ints, slices, None, ...) write
    through a view; a bool mask, or one index tensor/list along a dim, writes as
    index_put_. value broadcasts to the indexed shape and is cast to x's dtype."""
    parts = index if isinstance(index, tuple) else (index,)
    if builtins.all(_is_basic(p) for p in parts):
        view = self[index]
        view.copy_(_value_tensor(value, self))
        return
    if len(parts) == 1 and isinstance(parts[0], Tensor) and parts[0].dtype == _dtype.bool:
        mask = parts[0]
        if tuple(mask.shape) != tuple(self.shape[:mask.ndim]):
            raise IndexError(f"The shape of the mask {list(mask.shape)} does not match the shape of the indexed "
                             f"tensor {list(self.shape)}")
        v = _value_tensor(value, self)
        if v.ndim > self.ndim - mask.ndim:
            raise NotImplementedError("x[mask] = values with one value per selected element needs the count of True "
                                      "values; write x.masked_scatter_(mask, values) or use where()")
        m = mask.reshape(list(mask.shape) + [1] * (self.ndim - mask.ndim))
        _C._inplace_update(self, _C.where(m, v.to(self.dtype), _C.clone(self)), "index_put_", True)
        return
    from ._indexing import _parts
    norm = _parts(index, self.ndim)
    advanced = [i for i, p in enumerate(norm) if not _is_basic(p)]
    if len(advanced) != 1 or builtins.any(p is None for p in norm) or builtins.any(
            not (isinstance(p, slice) and p == slice(None)) for i, p in enumerate(norm) if i != advanced[0]):
        raise NotImplementedError("lazytrain's x[index] = value takes basic indices, one bool mask, or one index "
                                  "tensor with full slices (:) elsewhere; use index_copy_/scatter_ for other forms")
    dim = advanced[0]
    idx = _as_index(norm[dim], "index_put_")
    size = self.shape[dim]
    if not isinstance(norm[dim], Tensor):
        bad = [i for i in idx.tolist() if not -size <= i < size] if idx.ndim == 1 else []
        if bad:
            raise IndexError(f"index {bad[0]} is out of bounds for dimension {dim} with size {size}")
    flat = _wrap_negative(idx.reshape([-1]), size)
    target = list(self.shape)
    target[dim:dim + 1] = list(idx.shape)
    v = _value_tensor(value, self).to(self.dtype).expand(*target)
    shape = list(self.shape)
    shape[dim] = flat.shape[0]
    v = v.reshape(shape)
    _C._inplace_update(self, index_copy(_C.clone(self), dim, flat, v), "index_put_", True)


def install():
    T = Tensor
    T.scatter = lambda self, dim, index, src=None, value=None, reduce=None: scatter(
        self, dim, index, src, value=value, reduce=reduce)
    T.index_fill = index_fill
    T.index_add = lambda self, dim, index, source, alpha=1: index_add(self, dim, index, source, alpha=alpha)
    T.index_copy = index_copy
    if not hasattr(T, "scatter_add"):
        T.scatter_add = lambda self, dim, index, src: _C.scatter_add(self, dim, index, src)
        """torch.Tensor.scatter_add: this tensor with src's values added at the positions index names
        along dim (self[index[i][j]][j] += src[i][j] for dim 0)."""
    T.__setitem__ = setitem
