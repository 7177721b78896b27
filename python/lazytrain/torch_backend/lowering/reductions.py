"""Reductions and scans. dtype arguments are applied the way torch does:
the input is converted first, then reduced."""
import torch

import lazytrain as lt

from . import register
from ._common import norm_dims, to_dtype

aten = torch.ops.aten


@register(aten.sum.dim_IntList, aten.sum.default)
def sum_(x, dim=None, keepdim=False, dtype=None):
    if dtype is not None:
        x = to_dtype(x, dtype)
    return lt.sum(x, norm_dims(dim, x.dim()) if x.dim() else None, keepdim)


@register(aten.mean.dim, aten.mean.default)
def mean(x, dim=None, keepdim=False, dtype=None):
    if dtype is not None:
        x = to_dtype(x, dtype)
    return lt.mean(x, norm_dims(dim, x.dim()) if x.dim() else None, keepdim)


@register(aten.amax.default)
def amax(x, dim=(), keepdim=False):
    return lt.amax(x, norm_dims(dim, x.dim()) if x.dim() else (), keepdim)


@register(aten.amin.default)
def amin(x, dim=(), keepdim=False):
    return lt.amin(x, norm_dims(dim, x.dim()) if x.dim() else (), keepdim)


@register(aten.any.dim, aten.any.dims, aten.any.default)
def any_(x, dim=None, keepdim=False):
    return lt.any(x, dim, keepdim) if dim is not None else lt.any(x)


@register(aten.all.dim, aten.all.dims, aten.all.default)
def all_(x, dim=None, keepdim=False):
    return lt.all(x, dim, keepdim) if dim is not None else lt.all(x)


@register(aten.argmax.default)
def argmax(x, dim=None, keepdim=False):
    return lt.argmax(x, dim, keepdim)


@register(aten.argmin.default)
def argmin(x, dim=None, keepdim=False):
    return lt.argmin(x, dim, keepdim)


@register(aten.cumsum.default)
def cumsum(x, dim, dtype=None):
    if dtype is None and x.dtype in (lt.bfloat16, lt.float16):
        return lt.cumsum(x.float(), dim).to(x.dtype)  # torch accumulates bf16/f16 in float32
    return lt.cumsum(x, dim, dtype=None if dtype is None else to_dtype(x, dtype).dtype)


@register(aten.max.dim)
def max_dim(x, dim, keepdim=False):
    r = lt.max(x, dim, keepdim)
    return r[0], r[1]


@register(aten.min.dim)
def min_dim(x, dim, keepdim=False):
    r = lt.min(x, dim, keepdim)
    return r[0], r[1]


@register(aten.max.default)
def max_(x):
    return lt.max(x)


@register(aten.min.default)
def min_(x):
    return lt.min(x)


@register(aten.sort.default)
def sort(x, dim=-1, descending=False):
    r = lt.sort(x, dim=dim, descending=descending)
    return r[0], r[1]


@register(aten.sort.stable)
def sort_stable(x, *, stable=None, dim=-1, descending=False):
    return sort(x, dim, descending)  # lazytrain's sort is always stable


@register(aten.topk.default)
def topk(x, k, dim=-1, largest=True, sorted=True):
    r = lt.topk(x, k, dim, largest, sorted)
    return r[0], r[1]


@register(aten.var.correction)
def var(x, dim=None, *, correction=None, keepdim=False):
    dims = norm_dims(dim, x.dim()) if x.dim() else None
    return lt.var(x, dims, keepdim=keepdim, correction=1 if correction is None else correction)


@register(aten.var_mean.correction)
def var_mean(x, dim=None, *, correction=None, keepdim=False):
    dims = norm_dims(dim, x.dim()) if x.dim() else None
    return var(x, dim, correction=correction, keepdim=keepdim), lt.mean(x, dims, keepdim)


@register(aten.prod.default)
def prod(x, *, dtype=None):
    return lt.prod(x if dtype is None else to_dtype(x, dtype))


@register(aten.prod.dim_int)
def prod_dim(x, dim, keepdim=False, *, dtype=None):
    return lt.prod(x if dtype is None else to_dtype(x, dtype), dim, keepdim)


@register(aten.linalg_vector_norm.default)
def linalg_vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.vector_norm (clip_grad_norm_'s per-tensor norms): reduced
    in float32 for bf16/f16 inputs, returned in the input's (or dtype's) dtype."""
    if dtype is not None:
        x = to_dtype(x, dtype)
    out_dtype = x.dtype
    if out_dtype in (lt.bfloat16, lt.float16):
        x = x.float()
    dims = norm_dims(dim, x.dim()) if x.dim() else None
    a = lt.abs(x)
    if ord == float("inf"):
        r = lt.amax(a, dims or (), keepdim)
    elif ord == float("-inf"):
        r = lt.amin(a, dims or (), keepdim)
    elif ord == 0:
        r = lt.sum(lt.ne(x, 0).to(x.dtype), dims, keepdim)
    elif ord == 1:
        r = lt.sum(a, dims, keepdim)
    elif ord == 2:
        r = lt.sqrt(lt.sum(x * x, dims, keepdim))
    else:
        r = lt.pow(lt.sum(lt.pow(a, ord), dims, keepdim), 1.0 / ord)
    return r.to(out_dtype) if r.dtype != out_dtype else r


@register(aten.multinomial.default)
def multinomial(w, num_samples, replacement=False, generator=None):
    """torch.multinomial: int64 [..., num_samples] indices drawn from the
    rows of non-negative weights `w` ([n] or [rows, n], not necessarily
    normalised), by Gumbel-max (argmax of log w + Gumbel noise is a draw with
    probability w / sum w; the top k without replacement are draws without
    replacement). lazytrain's generator, not torch's stream, draws."""
    x = w.float() if w.dtype != lt.float32 else w
    shape = list(x.shape)
    if replacement and num_samples > 1:
        shape = shape[:-1] + [num_samples, shape[-1]]
        x = lt.unsqueeze(x, -2)
    u = lt.rand(shape)
    scores = lt.log(x) - lt.log(-lt.log(u))  # log w + Gumbel(0, 1); w = 0 is -inf, never drawn
    if replacement and num_samples > 1:
        return lt.argmax(scores, -1)
    return lt.topk(scores, num_samples, -1)[1]
