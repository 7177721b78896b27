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
}


def meta_of(t):
    """A storage-less tensor with `t`'s sizes, strides and dtype."""
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")
