"""torch's view ops as lazytrain views (docs/design/views.md).

A view op's result is a lazytrain view of the input's lazytrain tensor (made
by lazytrain.Tensor's view methods, which record the view chain), so a later
in-place write through either reaches the other, as in torch. The strides
and storage offset torch reports for the result are torch's own: the op run
on a storage-less "meta" tensor with the input's sizes and strides.

A torch view op that is not listed here raises (_dispatch.py): treating it as
a copy would silently lose writes made through it.
"""
import torch

from .._common import LazytrainError

aten = torch.ops.aten


def _clip(i, size):
    if i < 0:
        i += size
    return min(max(i, 0), size)


def _slice(x, dim=0, start=None, end=None, step=1):
    dim = dim % max(x.dim(), 1)
    size = x.shape[dim]
    start = _clip(0 if start is None else start, size)
    end = max(_clip(size if end is None else end, size), start)
    return x._slice(dim, start, end, step)


def _squeeze(x, dim=None):
    if dim is None:
        dims = [d for d in range(x.dim()) if x.shape[d] == 1]
    else:
        dims = [d % max(x.dim(), 1) for d in ([dim] if isinstance(dim, int) else dim)]
        dims = [d for d in dims if x.dim() and x.shape[d] == 1]
    if not dims:
        return _alias(x)
    shape = [s for d, s in enumerate(x.shape) if d not in dims]
    return x.view(*shape) if shape else x.view(())


def _alias(x):
    return x.view(*x.shape) if x.dim() else x.view(())


def _as_strided(x, size, stride, storage_offset=None):
    raise LazytrainError("aten.as_strided: lazytrain's views are chains of slices, reshapes, permutations and "
                         "expands; an arbitrary as_strided view has no lazytrain counterpart")


def _diagonal(x, offset=0, dim1=0, dim2=1):
    """torch.diagonal as a lazytrain view: over the last two dims, in order,
    of a tensor whose last two dims merge (row-major), the diagonal is a
    strided slice of the merged dim. Other layouts raise (a copy would lose
    the writes made through the view)."""
    n = x.dim()
    d1, d2 = dim1 % max(n, 1), dim2 % max(n, 1)
    if n < 2 or (d1, d2) != (n - 2, n - 1):
        raise LazytrainError(f"aten.diagonal(dim1={dim1}, dim2={dim2}) of a {n}-d tensor: lazytrain makes the view "
                             "over the last two dims only; move them there first (x.movedim)")
    rows, cols = x.shape[-2], x.shape[-1]
    start = offset if offset >= 0 else -offset * cols
    length = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    flat = x.view(*x.shape[:-2], rows * cols)
    if length == 0:
        return flat._slice(n - 2, 0, 0, 1)
    return flat._slice(n - 2, start, start + (length - 1) * (cols + 1) + 1, cols + 1)


VIEWS = {
    aten.view.default: lambda x, size: x.view(*size) if len(size) else x.view(()),
    aten._reshape_alias.default: lambda x, size, stride: x.view(*size) if len(size) else x.view(()),
    aten.t.default: lambda x: x.t(),
    aten.transpose.int: lambda x, d0, d1: x.transpose(d0, d1),
    aten.permute.default: lambda x, dims: x.permute(*dims),
    aten.expand.default: lambda x, size, implicit=False: x.expand(*size),
    aten.unsqueeze.default: lambda x, dim: x.unsqueeze(dim),
    aten.squeeze.default: _squeeze,
    aten.squeeze.dim: _squeeze,
    aten.squeeze.dims: _squeeze,
    aten.slice.Tensor: _slice,
    aten.select.int: lambda x, dim, index: x.select(dim, index),
    aten.alias.default: _alias,
    aten.detach.default: lambda x: x.detach(),
    aten.split.Tensor: lambda x, size, dim=0: x.split(size, dim),
    aten.split_with_sizes.default: lambda x, sizes, dim=0: x.split(list(sizes), dim),
    aten.unbind.int: lambda x, dim=0: x.unbind(dim),
    aten.as_strided.default: _as_strided,
    aten.diagonal.default: _diagonal,
}


# ---- torch's strides of a view, computed in Python for the common view ops ------------------------------------
# f(sizes, strides, offset, out_shape, *args) -> (strides, offset); None: ask a meta tensor.
def _contiguous(sizes, strides):
    expected = 1
    for size, stride in zip(reversed(sizes), reversed(strides)):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def _view_strides(sizes, strides, offset, shape, *args):
    if not _contiguous(sizes, strides):
        return None
    from ._tensor import contiguous_strides
    return contiguous_strides(tuple(shape)), offset


def _t_strides(sizes, strides, offset, shape):
    return (strides[::-1] if len(strides) == 2 else strides), offset


def _transpose_strides(sizes, strides, offset, shape, d0, d1):
    out = list(strides)
    if out:
        d0, d1 = d0 % len(out), d1 % len(out)
        out[d0], out[d1] = out[d1], out[d0]
    return tuple(out), offset


def _permute_strides(sizes, strides, offset, shape, dims):
    n = len(strides)
    return tuple(strides[d % n] for d in dims), offset


def _expand_strides(sizes, strides, offset, shape, size, implicit=False):
    lead = len(shape) - len(sizes)
    out = [0] * lead
    for size_in, stride, size_out in zip(sizes, strides, shape[lead:]):
        out.append(stride if size_in == size_out else 0)
    return tuple(out), offset


def _unsqueeze_strides(sizes, strides, offset, shape, dim):
    n = len(sizes)
    dim = dim % (n + 1)
    stride = sizes[dim] * strides[dim] if dim < n else 1
    return tuple(strides[:dim]) + (stride,) + tuple(strides[dim:]), offset


def _select_strides(sizes, strides, offset, shape, dim, index):
    dim = dim % len(sizes)
    index = index + sizes[dim] if index < 0 else index
    return tuple(strides[:dim]) + tuple(strides[dim + 1:]), offset + index * strides[dim]


def _slice_strides(sizes, strides, offset, shape, dim=0, start=None, end=None, step=1):
    dim = dim % max(len(sizes), 1)
    start = _clip(0 if start is None else start, sizes[dim])
    out = list(strides)
    out[dim] *= step
    return tuple(out), offset + start * strides[dim]


def _same_strides(sizes, strides, offset, shape, *args):
    return tuple(strides), offset


STRIDES = {
    aten.view.default: _view_strides,
    aten._reshape_alias.default: _view_strides,
    aten.t.default: _t_strides,
    aten.transpose.int: _transpose_strides,
    aten.permute.default: _permute_strides,
    aten.expand.default: _expand_strides,
    aten.unsqueeze.default: _unsqueeze_strides,
    aten.select.int: _select_strides,
    aten.slice.Tensor: _slice_strides,
    aten.alias.default: _same_strides,
    aten.detach.default: _same_strides,
}


def meta_of(t):
    """A storage-less tensor with `t`'s sizes, strides and dtype."""
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")
