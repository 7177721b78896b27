"""Matrix products and the fused neural-network ops lazytrain has whole:
layer norm, softmax, attention (forward and backward), dropout, embedding."""
import math

import torch

import lazytrain as lt

from . import register
from ._common import to_dtype

aten = torch.ops.aten


@register(aten.mm.default, aten.bmm.default, aten.matmul.default)
def mm(a, b):
    return lt.matmul(a, b)


@register(aten.addmm.default)
def addmm(bias, a, b, beta=1, alpha=1):
    product = lt.matmul(a, b)
    if alpha != 1:
        product = product * alpha
    return product + (bias if beta == 1 else bias * beta)


@register(aten.baddbmm.default)
def baddbmm(bias, a, b, beta=1, alpha=1):
    return addmm(bias, a, b, beta, alpha)


@register(aten.embedding.default)
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return lt.embedding(weight, indices)


@register(aten.native_layer_norm.default)
def native_layer_norm(x, normalized_shape, weight, bias, eps):
    """(output, mean, rstd): lazytrain's fused layer_norm, and the statistics
    the backward graph reads (shape of x with the normalised dims kept as 1,
    computed in float32 and returned in x's dtype, as torch's meta function
    gives them and so as AOTAutograd traced the graph that reads them)."""
    dims = list(range(x.dim() - len(normalized_shape), x.dim()))
    if weight is None:
        weight = lt.ones(list(normalized_shape), dtype=x.dtype)
    if bias is None:
        bias = lt.zeros(list(normalized_shape), dtype=x.dtype)
    out = lt.layer_norm(x.float(), list(normalized_shape), weight.float(), bias.float(), eps)
    if out.dtype != x.dtype:  # torch normalises a bf16/f16 x in float32 and rounds once
        out = out.to(x.dtype)
    stats = x if x.dtype == lt.float32 else x.float()
    mean = lt.mean(stats, dims, True)
    var = lt.var(stats, dims, keepdim=True, correction=0)
    rstd = lt.rsqrt(var + eps)
    if stats is not x:  # torch's meta function (what AOTAutograd traced with) gives x's dtype
        mean, rstd = mean.to(x.dtype), rstd.to(x.dtype)
    return out, mean, rstd


@register(aten._softmax.default)
def softmax(x, dim, half_to_float):
    return lt.softmax(x, dim, dtype=lt.float32 if half_to_float else None)


@register(aten._log_softmax.default)
def log_softmax(x, dim, half_to_float):
    return lt.log_softmax(x, dim, dtype=lt.float32 if half_to_float else None)


@register(aten._to_copy.default)
def to_copy(x, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None):
    return to_dtype(x, dtype)


@register(aten.native_dropout.default)
def native_dropout(x, p, train):
    """(output, keep mask): lazytrain's generator draws the mask (torch's
    random stream cannot be reproduced)."""
    if not train or p == 0:
        return x, lt.ones(list(x.shape), dtype=lt.bool)
    keep = lt.rand(list(x.shape)) >= p
    return x * keep * (1.0 / (1.0 - p)), keep


def _scores(q, k, attn_mask, is_causal, scale):
    """q k^T * scale with the mask applied: [..., L, S] in float32."""
    scores = lt.matmul(q.float(), k.float().transpose(-2, -1)) * scale
    length, source = q.shape[-2], k.shape[-2]
    if is_causal:
        causal = lt.tril(lt.ones([length, source], dtype=lt.bool))
        scores = lt.where(causal, scores, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == lt.bool:
            scores = lt.where(attn_mask, scores, float("-inf"))
        else:
            scores = scores + attn_mask.float()
    return scores


def _scale(q, scale):
    return 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale


def _attention_dropout(node):
    """Attention dropout is not lowered (the backward would need the mask)."""
    dropout_p = node.args[3] if len(node.args) > 3 else node.kwargs.get("dropout_p", 0.0)
    return f"attention dropout (dropout_p={dropout_p}) is not lowered" if dropout_p else None


@register(aten._scaled_dot_product_flash_attention_for_cpu.default, unsupported=_attention_dropout)
def sdpa_flash_cpu(q, k, v, dropout_p=0.0, is_causal=False, attn_mask=None, scale=None):
    """(output [..., L, Ev], logsumexp [..., L] float32): lazytrain's fused
    attention, and the row log-sum-exp of the masked scores the backward uses."""
    if dropout_p:
        raise NotImplementedError("attention dropout (dropout_p > 0) is not lowered; set attention dropout to 0")
    out = lt.scaled_dot_product_attention(q, k, v, attn_mask, 0.0, is_causal, _scale(q, scale))
    lse = lt.logsumexp(_scores(q, k, attn_mask, is_causal, _scale(q, scale)), -1)
    return out, lt.where(lse == float("-inf"), 0.0, lse)  # a fully masked row: torch's lse is 0


@register(aten._scaled_dot_product_flash_attention_for_cpu_backward.default)
def sdpa_flash_cpu_backward(grad_out, q, k, v, out, lse, dropout_p, is_causal, attn_mask=None, scale=None):
    """(grad_q, grad_k, grad_v) of softmax(q k^T * scale + mask) v, from the
    saved output and log-sum-exp (FlashAttention-2's backward, Dao 2023 §3.1)."""
    s = _scale(q, scale)
    probs = lt.exp(_scores(q, k, attn_mask, is_causal, s) - lse.unsqueeze(-1))
    probs = lt.where(probs == probs, probs, 0.0)  # rows masked out entirely give 0, not NaN
    g = grad_out.float()
    grad_v = lt.matmul(probs.transpose(-2, -1), g)
    grad_p = lt.matmul(g, v.float().transpose(-2, -1))
    delta = lt.sum(g * out.float(), -1, True)
    grad_s = probs * (grad_p - delta) * s
    grad_q = lt.matmul(grad_s, k.float())
    grad_k = lt.matmul(grad_s.transpose(-2, -1), q.float())
    return grad_q.to(q.dtype), grad_k.to(k.dtype), grad_v.to(v.dtype)
