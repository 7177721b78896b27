"""Tensor factories. torch's dtype inference applies when dtype is None: bool
for a bool fill, int64 for an int, the default float32 otherwise. device,
layout and pin_memory arguments are those of a CPU graph and are ignored."""
import torch

import lazytrain as lt

from . import register
from .._common import lt_dtype

aten = torch.ops.aten


def _infer(value, dtype):
    if dtype is not None:
        return lt_dtype(dtype)
    if isinstance(value, bool):
        return lt.bool
    if isinstance(value, int):
        return lt.int64
    return lt.float32


@register(aten.full.default)
def full(size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None):
    return lt.full(list(size), fill_value, dtype=_infer(fill_value, dtype))


@register(aten.full_like.default)
def full_like(x, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return lt.full(list(x.shape), fill_value, dtype=x.dtype if dtype is None else lt_dtype(dtype))


@register(aten.zeros.default, aten.empty.memory_format)
def zeros(size, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return lt.full(list(size), 0, dtype=lt.float32 if dtype is None else lt_dtype(dtype))


@register(aten.ones.default)
def ones(size, *, dtype=None, layout=None, device=None, pin_memory=None):
    return lt.full(list(size), 1, dtype=lt.float32 if dtype is None else lt_dtype(dtype))


@register(aten.zeros_like.default, aten.empty_like.default)
def zeros_like(x, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return full_like(x, 0, dtype=dtype)


@register(aten.ones_like.default)
def ones_like(x, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return full_like(x, 1, dtype=dtype)


@register(aten.new_zeros.default, aten.new_empty.default)
def new_zeros(x, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    return lt.full(list(size), 0, dtype=x.dtype if dtype is None else lt_dtype(dtype))


@register(aten.new_ones.default)
def new_ones(x, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    return lt.full(list(size), 1, dtype=x.dtype if dtype is None else lt_dtype(dtype))


@register(aten.new_full.default)
def new_full(x, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None):
    return lt.full(list(size), fill_value, dtype=x.dtype if dtype is None else lt_dtype(dtype))


@register(aten.scalar_tensor.default)
def scalar_tensor(value, *, dtype=None, layout=None, device=None, pin_memory=None):
    return lt.scalar_tensor(value, lt.float32 if dtype is None else lt_dtype(dtype))


@register(aten.arange.start_step, aten.arange.start, aten.arange.default)
def arange(start, end=None, step=1, *, dtype=None, layout=None, device=None, pin_memory=None):
    if end is None:
        start, end = 0, start
    if dtype is None:
        dtype = torch.int64 if all(isinstance(v, int) for v in (start, end, step)) else torch.float32
    return lt.arange(start, end, step, dtype=lt_dtype(dtype))


@register(aten.new_empty_strided.default)
def new_empty_strided(x, size, stride, *, dtype=None, layout=None, device=None, pin_memory=None):
    # Undefined values in torch; a functional graph never reads them before writing. Strides are layout only.
    return new_zeros(x, size, dtype=dtype)
