"""lazytrain.nn.functional: torch.nn.functional's names for lazytrain's ops."""
import math

from .. import _C
from .._C import (  # noqa: F401
    embedding as _embedding, layer_norm as _layer_norm, dropout as _dropout, gelu, relu,
    softmax, log_softmax, linear,
)
from ._losses import cross_entropy, nll_loss, mse_loss  # noqa: F401


def embedding(input, weight, padding_idx=None):
    """weight [num_embeddings, dim] rows at int `input` → [..., dim]; the padding_idx row gets no gradient."""
    return _embedding(weight, input, -1 if padding_idx is None else padding_idx)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalises over the trailing normalized_shape (biased variance), then weight and bias."""
    if isinstance(normalized_shape, int):
        normalized_shape = [normalized_shape]
    if weight is None:
        weight = _C._ones(list(normalized_shape), input.dtype)
    if bias is None:
        bias = _C._zeros(list(normalized_shape), input.dtype)
    return _layer_norm(input, list(normalized_shape), weight, bias, eps)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes elements with probability p and scales the rest by 1/(1-p) when training."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return _dropout(input, p, training)


def _op(name):
    return getattr(_C, name, None)


def sigmoid(input):
    """1 / (1 + exp(-x))."""
    op = _op("sigmoid")
    return op(input) if op else 1.0 / (1.0 + (-input).exp())


def silu(input):
    """x * sigmoid(x) (SiLU / swish)."""
    op = _op("silu")
    return op(input) if op else input * sigmoid(input)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2 over normalized_shape) + eps) * weight (torch.nn.functional.rms_norm;
    eps None: the dtype's machine epsilon, as torch)."""
    if isinstance(normalized_shape, int):
        normalized_shape = [normalized_shape]
    op = _op("rms_norm")
    if op:
        return op(input, list(normalized_shape), weight, eps)
    if eps is None:
        eps = 1.1920928955078125e-07
    dims = list(range(-len(normalized_shape), 0))
    y = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return y * weight if weight is not None else y


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """softmax(q k^T * scale + mask) v over q [..., L, E], k [..., S, E], v [..., S, Ev]:
    a bool attn_mask keeps where True, a float one is added; is_causal masks j > i."""
    op = _op("scaled_dot_product_attention")
    if op:
        return op(query, key, value, attn_mask, dropout_p, is_causal, scale)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = (query @ key.transpose(-2, -1)) * scale
    L, S = query.shape[-2], key.shape[-2]
    if is_causal:
        rows = _C._arange(0, L, 1, _C.dtype.int64).unsqueeze(-1)
        cols = _C._arange(0, S, 1, _C.dtype.int64).unsqueeze(0)
        scores = scores.masked_fill(cols > rows, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == _C.dtype.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    probs = scores.softmax(-1)
    if dropout_p > 0.0:
        probs = _dropout(probs, dropout_p, True)
    return probs @ value
