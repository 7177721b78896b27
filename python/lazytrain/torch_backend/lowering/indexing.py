"""Gathers and scatters: index, index_put, gather, scatter, index_select."""
import torch

import lazytrain as lt

from . import register
from ._common import norm_dim

aten = torch.ops.aten


def _index_tuple(indices):
    return tuple(slice(None) if i is None else i for i in indices)


@register(aten.index.Tensor)
def index(x, indices):
    return x[_index_tuple(indices)]


@register(aten.index_put.default)
def index_put(x, indices, values, accumulate=False):
    if not accumulate:
        out = lt.clone(x)
        out[_index_tuple(indices)] = values
        return out
    return _index_put_accumulate(x, indices, values)


def _index_put_accumulate(x, indices, values):
    """x with values summed in at the indexed positions, duplicates summed (as
    torch's accumulate=True): the indexed leading dims are flattened into one
    linear index and added with index_add."""
    if any(i is None for i in indices):
        raise NotImplementedError("index_put(accumulate=True) with a None (full-slice) index is not lowered")
    k = len(indices)
    lead = list(x.shape[:k])
    rest = list(x.shape[k:])
    index = _broadcast(list(indices))
    linear = None
    for dim, i in enumerate(index):
        i = lt.where(i < 0, i + lead[dim], i)
        linear = i if linear is None else linear * lead[dim] + i
    flat_index = lt.reshape(linear, [-1])
    n = flat_index.shape[0]
    flat_values = lt.reshape(values.expand(*(list(linear.shape) + rest)), [n] + rest)
    flat = lt.reshape(x, [_prod(lead)] + rest)
    return lt.reshape(lt.index_add(flat, 0, flat_index, flat_values.to(x.dtype)), list(x.shape))


def _broadcast(tensors):
    shape = []
    for t in tensors:
        s = list(t.shape)
        shape = [max(a, b) for a, b in zip([1] * (len(s) - len(shape)) + shape, [1] * (len(shape) - len(s)) + s)]
    return [t.expand(*shape) if list(t.shape) != shape else t for t in tensors]


def _prod(values):
    out = 1
    for v in values:
        out *= v
    return out


@register(aten.gather.default)
def gather(x, dim, index, sparse_grad=False):
    return lt.gather(x, dim, index)


@register(aten.scatter.value)
def scatter_value(x, dim, index, value):
    return lt.scatter(x, dim, index, value=value)


@register(aten.scatter.src)
def scatter_src(x, dim, index, src):
    return lt.scatter(x, dim, index, src)


@register(aten.scatter_add.default)
def scatter_add(x, dim, index, src):
    return lt.scatter_add(x, dim, index, src)


@register(aten.index_select.default)
def index_select(x, dim, index):
    return lt.index_select(x, norm_dim(dim, x.dim()), index)
