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
    lead = 0
    while lead < len(indices) and indices[lead] is None:
        lead += 1
    if any(i is None for i in indices[lead:]):
        raise NotImplementedError("index_put(accumulate=True) with a None (full-slice) index after an index "
                                  "tensor is not lowered")
    if lead:
        return _index_put_accumulate_after_slices(x, lead, list(indices[lead:]), values)
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


def _index_put_accumulate_after_slices(x, lead, indices, values):
    """x[:, ..., i, j] += values with `lead` full slices first: the indexed
    dims moved to the front, accumulated, and moved back."""
    n, ndim = len(indices), x.dim()
    perm = list(range(lead, lead + n)) + list(range(lead)) + list(range(lead + n, ndim))
    index = _broadcast(indices)
    rank = index[0].dim()
    shape = list(x.shape[:lead]) + list(index[0].shape) + list(x.shape[lead + n:])
    values = values.expand(*shape) if list(values.shape) != shape else values
    value_perm = list(range(lead, lead + rank)) + list(range(lead)) + list(range(lead + rank, len(shape)))
    out = _index_put_accumulate(lt.permute(x, perm), index, lt.permute(values, value_perm))
    inverse = [perm.index(d) for d in range(ndim)]
    return lt.permute(out, inverse)


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
