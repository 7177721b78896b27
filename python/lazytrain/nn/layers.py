"""The layers of today's language models, with torch.nn's names, parameters and
default initialisation (drawn from lazytrain's host generator, nn/init.py)."""
import math

from .. import _C
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


def _empty(shape, dtype):
    return Parameter(_C._zeros(list(shape), _C.dtype.float32 if dtype is None else dtype))


class Linear(Module):
    """y = x @ weight^T + bias; weight [out_features, in_features], bias [out_features].
    Initialised as torch: U(-1/sqrt(in_features), 1/sqrt(in_features)) for both."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = _empty((out_features, in_features), dtype)
        self.bias = _empty((out_features,), dtype) if bias else None
        if not bias:
            self.register_parameter("bias", None)
        self.reset_parameters()
        if device is not None:
            self.to(device)

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Embedding(Module):
    """weight [num_embeddings, embedding_dim] ~ N(0, 1); the padding_idx row starts
    at zero and gets no gradient from lookups."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, device=None, dtype=None):
        super().__init__()
        if padding_idx is not None and padding_idx < 0:
            padding_idx += num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.weight = _empty((num_embeddings, embedding_dim), dtype)
        self.reset_parameters()
        if device is not None:
            self.to(device)

    def reset_parameters(self):
        self.weight.data = _C._normal_init([self.num_embeddings, self.embedding_dim], 1.0,
                                           -1 if self.padding_idx is None else self.padding_idx).to(self.weight.dtype)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self):
        pad = f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"


class LayerNorm(Module):
    """Normalises the trailing normalized_shape; weight 1, bias 0."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        dt = _C.dtype.float32 if dtype is None else dtype
        if elementwise_affine:
            self.weight = Parameter(_C._ones(list(self.normalized_shape), dt))
            self.bias = Parameter(_C._zeros(list(self.normalized_shape), dt)) if bias else None
        else:
            self.weight = None
            self.bias = None
        if device is not None:
            self.to(device)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class RMSNorm(Module):
    """torch.nn.RMSNorm: x / sqrt(mean(x^2) + eps) * weight (Zhang & Sennrich 2019); weight 1."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        dt = _C.dtype.float32 if dtype is None else dtype
        self.weight = Parameter(_C._ones(list(self.normalized_shape), dt)) if elementwise_affine else None
        if device is not None:
            self.to(device)

    def forward(self, input):
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class Dropout(Module):
    """Zeroes elements with probability p in training mode; identity in eval mode."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p

    def forward(self, input):
        return F.dropout(input, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"


class GELU(Module):
    """approximate "none" (erf) or "tanh"."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    def forward(self, input):
        return F.silu(input)


class ReLU(Module):
    def forward(self, input):
        return F.relu(input)


class Tanh(Module):
    def forward(self, input):
        return input.tanh()


class Identity(Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input
