"""Shape and layout ATen ops. The graphs are functional, so a view op's
result is a new value: reshape, permute, expand and slice suffice."""
import torch

import lazytrain as lt

from . import register
from ._common import norm_dim

aten = torch.ops.aten


@register(aten.view.default, aten._unsafe_view.default, aten.reshape.default)
def view(x, shape):
    return lt.reshape(x, list(shape))


@register(aten.permute.default)
def permute(x, dims):
    return lt.permute(x, list(dims))


@register(aten.t.default)
def t(x):
    return x if x.dim() < 2 else lt.transpose(x, 0, 1)


@register(aten.transpose.int)
def transpose(x, dim0, dim1):
    return lt.transpose(x, dim0, dim1)


@register(aten.expand.default)
def expand(x, size, implicit=False):
    return x.expand(*size)


@register(aten.unsqueeze.default)
def unsqueeze(x, dim):
    return lt.unsqueeze(x, dim)


@register(aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default)
def squeeze(x, dim=None):
    if dim is None:
        return lt.squeeze(x)
    dims = [dim] if isinstance(dim, int) else list(dim)
    for d in sorted((norm_dim(d, x.dim()) for d in dims), reverse=True):
        if x.dim() and x.shape[d] == 1:
            x = lt.squeeze(x, d)
    return x


@register(aten.slice.Tensor)
def slice_(x, dim=0, start=None, end=None, step=1):
    dim = norm_dim(dim, x.dim())
    size = x.shape[dim]
    start = 0 if start is None else start
    end = size if end is None else end
    start, end = _clip(start, size), _clip(end, size)
    end = max(end, start)
    index = [slice(None)] * dim + [slice(start, end, step)]
    return x[tuple(index)]


def _clip(i, size):
    if i < 0:
        i += size
    return min(max(i, 0), size)


@register(aten.select.int)
def select(x, dim, index):
    dim = norm_dim(dim, x.dim())
    return x[tuple([slice(None)] * dim + [index])]


@register(aten.alias.default, aten.clone.default, aten.lift_fresh_copy.default, aten.detach.default)
def alias(x, memory_format=None):
    # A functional graph never writes through an alias: the value itself serves.
    return x


@register(aten.cat.default)
def cat(tensors, dim=0):
    tensors = [t for t in tensors if not (t.dim() == 1 and t.shape[0] == 0)] or list(tensors[:1])
    return lt.cat(tensors, dim)


@register(aten.stack.default)
def stack(tensors, dim=0):
    return lt.stack(list(tensors), dim)


@register(aten.split.Tensor)
def split(x, split_size, dim=0):
    return tuple(lt.split(x, split_size, dim))


@register(aten.split_with_sizes.default)
def split_with_sizes(x, sizes, dim=0):
    return tuple(lt.split(x, list(sizes), dim))


@register(aten.slice_scatter.default)
def slice_scatter(x, src, dim=0, start=None, end=None, step=1):
    return lt.slice_scatter(x, src, dim, start, end, step)


@register(aten.repeat.default)
def repeat(x, repeats):
    return x.repeat(*repeats)


@register(aten.constant_pad_nd.default)
def constant_pad_nd(x, pad, value=0):
    """torch.nn.functional.pad(mode="constant"): pad pairs from the last dim
    backwards; a negative pad crops."""
    for i in range(len(pad) // 2):
        dim = x.dim() - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        if before < 0:
            x = slice_(x, dim, -before, None)
        if after < 0:
            x = slice_(x, dim, 0, x.shape[dim] + after)
        parts = []
        for n in (max(before, 0), None, max(after, 0)):
            if n is None:
                parts.append(x)
            elif n:
                shape = list(x.shape)
                shape[dim] = n
                parts.append(lt.full(shape, value, dtype=x.dtype))
        if len(parts) > 1:
            x = lt.cat(parts, dim)
    return x


@register(aten.copy.default)
def copy(x, src, non_blocking=False):
    """x's values replaced by src's (broadcast to x's shape, in x's dtype): the functional copy_."""
    src = src.to(x.dtype) if src.dtype != x.dtype else src
    return src.expand(*x.shape) if list(src.shape) != list(x.shape) else lt.clone(src)

