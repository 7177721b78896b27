"""Helpers the lowerings share: argument conversion that torch's ATen graphs
leave to the backend (dtypes, dims, Python scalars) in one place."""
from ... import _C
from .._common import lt_dtype

Tensor = _C.Tensor


def is_tensor(x):
    return isinstance(x, Tensor)


def to_dtype(x, dtype):
    """x converted to torch dtype `dtype` (no-op when it has it already)."""
    target = lt_dtype(dtype)
    return x if target is None or x.dtype == target else x.to(target)


def scalar_tensor(value, dtype):
    """A 0-dim lazytrain tensor of torch dtype `dtype` holding Python `value`."""
    return _C.scalar_tensor(value, lt_dtype(dtype))


def norm_dim(dim, ndim):
    """A dim in [0, ndim) (negative counts from the end; ndim 0 takes 0/-1)."""
    n = max(ndim, 1)
    return dim + n if dim < 0 else dim


def norm_dims(dims, ndim):
    """A list of dims (None or [] means all), each in [0, ndim)."""
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(ndim))
    if isinstance(dims, int):
        dims = [dims]
    return [norm_dim(d, ndim) for d in dims]
